"""Machine facts the configuration exposes as computed defaults.

The config layer sits below machine detection, so it takes the facts through this
small record; the daemon fills it from ``condorpy.machine`` and tests pin it. The
default provider reads the real host cheaply (no /proc walks beyond what
``os``/``platform`` offer).

A configuration measures its facts only when a knob it is asked for depends on one
(:class:`LazyFacts`): printing START or finding the daemon's socket asks the resolver
nothing and probes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping


@dataclass(frozen=True)
class DetectedFacts:
    """What HTCondor detects about the host at start-up and publishes as knobs."""

    full_hostname: str
    cpus: int
    cores: int
    physical_cpus: int
    memory_mb: int
    arch: str = "X86_64"
    opsys: str = "LINUX"
    uname_arch: str = "x86_64"
    uname_opsys: str = "Linux"
    ip_address: str = "127.0.0.1"
    # HTCondor publishes the address of each protocol separately; None means "the
    # IPv4 one is ip_address" (when it is IPv4), and "" means the host has none.
    ipv4_address: str | None = None
    ipv6_address: str = ""
    username: str = "root"
    pid: int = 0
    ppid: int = 0
    # Further computed knobs a machine probe knows (OPSYSANDVER, OPSYSMAJORVER, ...);
    # the named fields above win over an entry here.
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def hostname(self) -> str:
        return self.full_hostname.split(".", 1)[0]

    @property
    def ipv4(self) -> str:
        if self.ipv4_address is not None:
            return self.ipv4_address
        return self.ip_address if ":" not in self.ip_address else ""


def _memory_mb() -> int:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        return int(pages * size // (1024 * 1024))
    except (ValueError, OSError):
        return 0


def _username() -> str:
    try:
        import pwd
        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return str(os.getuid())


def host_facts() -> DetectedFacts:
    """Facts of the machine this process runs on, read cheaply."""
    cpus = os.cpu_count() or 1
    # what platform.machine() and platform.system() return on a POSIX host, without
    # the platform module's start-up cost (a client reading UID_DOMAIN measures this)
    uname = os.uname()
    machine = uname.machine or "x86_64"
    system = uname.sysname
    arch = {"x86_64": "X86_64", "amd64": "X86_64", "aarch64": "aarch64",
            "ppc64le": "ppc64le"}.get(machine.lower(), machine.upper())
    return DetectedFacts(
        full_hostname=_full_hostname(), cpus=cpus, cores=cpus, physical_cpus=cpus,
        memory_mb=_memory_mb(), arch=arch, opsys=system.upper() or "LINUX",
        uname_arch=machine, uname_opsys=system or "Linux", ip_address=_ip_address(),
        ipv6_address=_ipv6_address(),
        username=_username(), pid=os.getpid(), ppid=os.getppid())


def _full_hostname() -> str:
    """gethostname(), qualified by the resolver only when it agrees (as HTCondor does)."""
    import socket
    name = socket.gethostname() or "localhost"
    if "." not in name:
        try:
            fqdn = socket.getfqdn(name)
        except OSError:
            fqdn = name
        if fqdn.startswith(name + "."):
            return fqdn
    return name


def _ip_address() -> str:
    """The source address of the default route; connecting a UDP socket sends nothing."""
    import socket
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("192.0.2.1", 9))
            return str(sock.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _ipv6_address() -> str:
    """The source address of the default IPv6 route, or "" where there is none; a
    link-local address does not count, as HTCondor does not advertise one."""
    import socket
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
            sock.connect(("2001:db8::1", 9))
            address = str(sock.getsockname()[0])
    except OSError:
        return ""
    return "" if address.lower().startswith("fe80") or address == "::1" else address


# The knobs fact_defaults() defines from DetectedFacts' own fields (not its ``extra``).
FACT_NAMES = frozenset({
    "FULL_HOSTNAME", "HOSTNAME", "DETECTED_CPUS", "DETECTED_CORES", "DETECTED_PHYSICAL_CPUS",
    "DETECTED_CPUS_LIMIT", "DETECTED_MEMORY", "ARCH", "OPSYS", "UNAME_ARCH", "UNAME_OPSYS",
    "IP_ADDRESS", "IPV4_ADDRESS", "IPV6_ADDRESS", "USERNAME", "PID", "PPID"})


def fact_defaults(facts: DetectedFacts) -> dict[str, str]:
    """The knobs HTCondor computes at start-up from the machine rather than reading from
    a table (the configuration adds SUBSYSTEM and LOCALNAME)."""
    return {
        **{name.upper(): value for name, value in facts.extra.items()},
        "FULL_HOSTNAME": facts.full_hostname,
        "HOSTNAME": facts.hostname,
        "DETECTED_CPUS": str(facts.cpus),
        "DETECTED_CORES": str(facts.cores),
        "DETECTED_PHYSICAL_CPUS": str(facts.physical_cpus),
        "DETECTED_CPUS_LIMIT": str(facts.cpus),
        "DETECTED_MEMORY": str(facts.memory_mb),
        "ARCH": facts.arch,
        "OPSYS": facts.opsys,
        "UNAME_ARCH": facts.uname_arch,
        "UNAME_OPSYS": facts.uname_opsys,
        "IP_ADDRESS": facts.ip_address,
        # an address the host lacks stays undefined rather than empty
        **({"IPV4_ADDRESS": facts.ipv4} if facts.ipv4 else {}),
        **({"IPV6_ADDRESS": facts.ipv6_address} if facts.ipv6_address else {}),
        "USERNAME": facts.username,
        "PID": str(facts.pid),
        "PPID": str(facts.ppid),
    }


class LazyFacts:
    """A machine's facts, measured the first time a knob needs one.

    ``names`` are every knob the facts may define (``FACT_NAMES`` and the names the
    measure puts in ``extra``): a look-up of any other name never measures, so that
    reading a configuration to print one knob costs no probe of the host unless that
    knob's value depends on it."""

    def __init__(self, measure: Callable[[], DetectedFacts],
                 extra_names: Iterable[str] = ()) -> None:
        self._measure = measure
        self._facts: DetectedFacts | None = None
        self.names = FACT_NAMES | {n.upper() for n in extra_names}

    @classmethod
    def of(cls, facts: DetectedFacts) -> LazyFacts:
        """Facts already known (pinned by a test, or measured by the caller)."""
        made = cls(lambda: facts, facts.extra.keys())
        made._facts = facts
        return made

    @property
    def measured(self) -> bool:
        return self._facts is not None

    def get(self) -> DetectedFacts:
        if self._facts is None:
            self._facts = self._measure()
        return self._facts


def lazy_facts(detected: DetectedFacts | LazyFacts | None) -> LazyFacts:
    """What a configuration loader was handed, as LazyFacts: None is this host's cheap
    facts (:func:`host_facts`), measured when first needed."""
    if detected is None:
        return LazyFacts(host_facts)
    if isinstance(detected, DetectedFacts):
        return LazyFacts.of(detected)
    return detected
