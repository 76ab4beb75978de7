"""Host names, network interfaces and the "most public" addresses.

Interfaces and addresses come from psutil (getifaddrs, which asks netlink), in the
kernel's interface order; where that fails, from netlink through pyroute2's IPRoute; and
when that fails too, the addresses the resolver gives for the host name. psutil comes
first because the daemon keeps what it imports for its whole life: pyroute2 is about 20
MB of its memory, psutil under 3.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from condorpy.machine.roots import HostRoots


@dataclass(frozen=True)
class Interface:
    name: str
    addresses: tuple[str, ...]
    up: bool = True


@dataclass(frozen=True)
class NetworkInfo:
    full_hostname: str
    hostname: str
    interfaces: tuple[Interface, ...]
    ipv4: str | None
    ipv6: str | None

    @property
    def ip_address(self) -> str:
        return self.ipv4 or self.ipv6 or "127.0.0.1"


def hostnames(roots: HostRoots) -> tuple[str, str]:
    """(FULL_HOSTNAME, HOSTNAME): the resolver's canonical name and its first label."""
    node = roots.uname().nodename or "localhost"
    try:
        full = roots.fqdn(node) or node
    except OSError:
        full = node
    # a resolver that maps the name to "localhost" says nothing about this host
    if full.split(".")[0] in ("localhost", "") and node not in ("localhost", ""):
        full = node
    return full, full.split(".")[0]


def _netlink_interfaces() -> list[Interface]:
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        names: dict[int, tuple[str, bool]] = {}
        for link in ipr.get_links():
            up = link.get_attr("IFLA_OPERSTATE") in ("UP", "UNKNOWN")
            names[link["index"]] = (str(link.get_attr("IFLA_IFNAME")), up)
        addrs: dict[int, list[str]] = {}
        for msg in ipr.get_addr():
            addr = msg.get_attr("IFA_ADDRESS") or msg.get_attr("IFA_LOCAL")
            if addr:
                addrs.setdefault(msg["index"], []).append(str(addr))
    return [Interface(name, tuple(addrs.get(idx, ())), up) for idx, (name, up) in sorted(names.items())]


def _psutil_interfaces() -> list[Interface]:
    import psutil

    stats = psutil.net_if_stats()
    out = []
    for name, addrs in psutil.net_if_addrs().items():
        ips = tuple(a.address.split("%")[0] for a in addrs
                    if a.family in (socket.AF_INET, socket.AF_INET6))
        out.append(Interface(name, ips, bool(stats[name].isup) if name in stats else True))
    return sorted(out, key=lambda itf: _index(itf.name))


def _index(name: str) -> int:
    try:
        return socket.if_nametoindex(name)
    except OSError:
        return 1 << 30


def _resolver_interfaces(full: str) -> list[Interface]:
    try:
        infos = socket.getaddrinfo(full, None)
    except OSError:
        return []
    ips = tuple(dict.fromkeys(str(i[4][0]) for i in infos))
    return [Interface("?", ips)]


def _publicness(addr: str) -> int:
    ip = ipaddress.ip_address(addr)
    if ip.is_loopback or ip.is_link_local or ip.is_unspecified:
        return 0
    if ip.is_private:
        return 1
    return 2


def most_public(addresses: list[str], version: int) -> str | None:
    best: tuple[int, int] | None = None
    choice = None
    for i, a in enumerate(addresses):
        try:
            ip = ipaddress.ip_address(a)
        except ValueError:
            continue
        if ip.version != version:
            continue
        rank = (_publicness(a), -i)
        if best is None or rank > best:
            best, choice = rank, a
    return choice


def probe_network(roots: HostRoots) -> NetworkInfo:
    full, short = hostnames(roots)
    interfaces: list[Interface] = []
    for source in (_psutil_interfaces, _netlink_interfaces):
        try:
            interfaces = source()
        except Exception:  # noqa: BLE001 - any failure of an optional source means "try the next"
            interfaces = []
        if interfaces:
            break
    if not interfaces:
        interfaces = _resolver_interfaces(full)
    addrs = [a for itf in interfaces if itf.up for a in itf.addresses]
    return NetworkInfo(full, short, tuple(interfaces), most_public(addrs, 4), most_public(addrs, 6))
