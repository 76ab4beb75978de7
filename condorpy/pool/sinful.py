"""HTCondor addresses: ``host``, ``host:port`` and sinful strings ``<ip:port?params>``
(``condor_sinful.cpp``); the collector's port defaults to 9618."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

from condorpy.errors import PoolError

COLLECTOR_PORT = 9618


@dataclass(frozen=True)
class Address:
    host: str
    port: int
    params: tuple[tuple[str, str], ...] = ()

    @property
    def shared_port_id(self) -> str | None:
        return dict(self.params).get("sock")

    def hostport(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def sinful(self, **extra: str) -> str:
        params = dict(self.params)
        params.update(extra)
        tail = "&".join(f"{k}={v}" if v else k for k, v in params.items())
        return f"<{self.hostport()}{'?' + tail if tail else ''}>"


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
        params = tuple(parse_qsl(query, keep_blank_values=True))
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
