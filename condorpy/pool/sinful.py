"""HTCondor addresses: ``host``, ``host:port`` and sinful strings ``<ip:port?params>``
as ``condor_sinful.cpp`` writes them; the collector's port defaults to 9618.

A sinful string's parameters are ``&``-separated, ``%``-escaped (never ``+`` for a
space: ``+`` separates the alternatives of ``addrs``). Those condorpy acts on:
``sock`` (the daemon sits behind condor_shared_port under that id), ``addrs`` (the
daemon's addresses, ``ip-port`` joined by ``+``, IPv6 in brackets), ``alias``
(its host name), ``noUDP``, and ``PrivNet``/``CCBID`` (reachable only through a CCB
broker, which condorpy does not speak).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from condorpy.errors import PoolError

COLLECTOR_PORT = 9618
# condor_shared_port opens ``DAEMON_SOCKET_DIR/<id>``: anything else could name a path
_SOCK_ID = re.compile(r"[A-Za-z0-9._-]+\Z")


@dataclass(frozen=True)
class Address:
    host: str
    port: int
    params: tuple[tuple[str, str], ...] = ()

    def _param(self, name: str) -> str | None:
        for k, v in self.params:
            if k == name:
                return v
        return None

    @property
    def shared_port_id(self) -> str | None:
        return self._param("sock") or None

    @property
    def alias(self) -> str | None:
        return self._param("alias") or None

    @property
    def ccb_id(self) -> str | None:
        return self._param("CCBID") or None

    @property
    def private_network(self) -> str | None:
        return self._param("PrivNet") or None

    @property
    def no_udp(self) -> bool:
        return self._param("noUDP") is not None

    @property
    def alternatives(self) -> tuple[tuple[str, int], ...]:
        """The ``addrs`` list, checked when the address was parsed."""
        text = self._param("addrs")
        return _parse_addrs(text, f"<{self.hostport()}>") if text else ()

    def hostport(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def sinful(self, **extra: str) -> str:
        params = dict(self.params)
        params.update(extra)
        tail = "&".join(f"{k}={quote(v, safe='[]:+-._')}" if v else k
                        for k, v in params.items())
        return f"<{self.hostport()}{'?' + tail if tail else ''}>"


def _parse_addrs(text: str, source: str) -> tuple[tuple[str, int], ...]:
    out: list[tuple[str, int]] = []
    for item in text.split("+"):
        if item.startswith("["):
            # HTCondor writes an IPv6 address here with '-' for ':' ([fd00--2] is
            # fd00::2) so that it survives inside a CCB id
            host, _, rest = item[1:].partition("]")
            host = host.replace("-", ":")
            port_text = rest[1:] if rest.startswith("-") else ""
        else:
            host, _, port_text = item.rpartition("-")
        if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise PoolError(f"bad addrs entry {item!r} in {source}")
        out.append((host, int(port_text)))
    return tuple(out)


def _parse_params(query: str, text: str, source: str) -> tuple[tuple[str, str], ...]:
    params: list[tuple[str, str]] = []
    for part in query.split("&") if query else ():
        if not part:
            continue
        key, _, value = part.partition("=")
        params.append((unquote(key), unquote(value)))
    found = dict(params)
    sock = found.get("sock")
    if sock is not None and not _SOCK_ID.match(sock):
        raise PoolError(f"bad shared port id {sock!r} in {text!r} in {source}")
    if found.get("addrs"):
        _parse_addrs(found["addrs"], f"{text!r} in {source}")
    return tuple(params)


def parse_address(text: str, default_port: int = COLLECTOR_PORT,
                  source: str = "an address") -> Address:
    """``text`` as an :class:`Address`; a bad one raises PoolError naming ``source``."""
    t = text.strip()
    params: tuple[tuple[str, str], ...] = ()
    if t.startswith("<"):
        if not t.endswith(">"):
            raise PoolError(f"bad sinful string {text!r} in {source}")
        t = t[1:-1]
        t, _, query = t.partition("?")
        params = _parse_params(query, text, source)
    elif "?" in t:
        # COLLECTOR_HOST = host:port?sock=collector, as HTCondor's manual shows it
        t, _, query = t.partition("?")
        params = _parse_params(query, text, source)
    if t.startswith("["):
        host, _, rest = t[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif t.count(":") == 1:
        host, _, port_text = t.partition(":")
    else:
        host, port_text = t, ""
    if not host or any(c.isspace() for c in host):
        raise PoolError(f"bad address {text!r} in {source}")
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise PoolError(f"bad port in {text!r} in {source}")
        port = int(port_text)
    else:
        port = default_port
    return Address(host, port, params)


# --- a daemon's own address, and the order to try a peer's ------------------------
def own_address(ip: str, port: int, alias: str | None) -> str:
    """The sinful string a daemon listening on ``ip:port`` advertises (MyAddress), in
    HTCondor's form: the address again in ``addrs``, its host name as ``alias``
    (HOST_ALIAS, by default FULL_HOSTNAME) and ``noUDP``, the parameters in name
    order as HTCondor writes them."""
    entry = f"[{ip.replace(':', '-')}]-{port}" if ":" in ip else f"{ip}-{port}"
    params: list[tuple[str, str]] = [("addrs", entry), ("noUDP", "")]
    if alias:
        params.append(("alias", alias))
    return Address(ip, port, tuple(sorted(params))).sinful()


def connect_order(addr: Address) -> tuple[Address, ...]:
    """Where to connect to reach ``addr``, in the order to try: its ``addrs`` entries
    as listed (HTCondor lists the IPv4 address first, as its primary), without an IPv6
    link-local one (no scope id makes it usable), else the primary address alone. Each
    keeps the parameters (the shared port id)."""
    listed = [(h, p) for h, p in addr.alternatives if not h.lower().startswith("fe80:")]
    if not listed:
        return (addr,)
    return tuple(Address(host, port, addr.params) for host, port in dict.fromkeys(listed))
