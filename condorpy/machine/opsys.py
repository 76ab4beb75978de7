"""Operating-system facts: Arch, OpSys and the OpSys* family, uname fields.

The derivations follow what HTCondor 25 publishes on Linux (checked against its
behaviour on Debian 12: OpSysLongName "Debian GNU/Linux 12", OpSysName "Debian",
OpSysAndVer "Debian12", OpSysMajorVer 12, OpSysVer 1200): the long name is the first
line of the first of /etc/issue, /etc/redhat-release, /etc/system-release and
/etc/issue.net that names a known distribution (with getty escapes such as ``\\n \\l``
removed), falling back to PRETTY_NAME of /etc/os-release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from condorpy.machine.roots import HostRoots, Uname, read_text

_ISSUE_FILES = ("issue", "redhat-release", "system-release", "issue.net")

# substring tests on the lower-cased long name, first match wins
_DISTROS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("red", "hat"), "RedHat"),
    (("fedora",), "Fedora"),
    (("ubuntu",), "Ubuntu"),
    (("debian",), "Debian"),
    (("scientific", "cern"), "SLCern"),
    (("scientific", "slf"), "SLFermi"),
    (("scientific",), "SL"),
    (("centos",), "CentOS"),
    (("rocky",), "Rocky"),
    (("almalinux",), "AlmaLinux"),
    (("amazon linux",), "AmazonLinux"),
    (("opensuse",), "openSUSE"),
    (("suse",), "SUSE"),
)

_ARCHES = {
    "i86pc": "INTEL", "i686": "INTEL", "i586": "INTEL", "i486": "INTEL", "i386": "INTEL",
    "ia64": "IA64", "x86_64": "X86_64", "amd64": "X86_64",
    "ppc": "PPC", "ppc32": "PPC", "ppc64": "PPC64",
}


@dataclass(frozen=True)
class OsInfo:
    arch: str
    opsys: str
    long_name: str
    name: str
    short_name: str
    major_version: int
    version: int
    versioned: str
    legacy: str
    uname: Uname

    def attrs(self) -> dict[str, Any]:
        """The machine-ad attributes, with HTCondor's names."""
        return {
            "Arch": self.arch,
            "OpSys": self.opsys,
            "OpSysAndVer": self.versioned,
            "OpSysLegacy": self.legacy,
            "OpSysLongName": self.long_name,
            "OpSysMajorVer": self.major_version,
            "OpSysName": self.name,
            "OpSysShortName": self.short_name,
            "OpSysVer": self.version,
            "UtsnameSysname": self.uname.sysname,
            "UtsnameNodename": self.uname.nodename,
            "UtsnameRelease": self.uname.release,
            "UtsnameVersion": self.uname.version,
            "UtsnameMachine": self.uname.machine,
        }


def distro_name(long_name: str) -> str:
    low = long_name.lower()
    for needles, name in _DISTROS:
        if all(n in low for n in needles):
            return name
    return "LINUX"


def _clean_issue_line(text: str) -> str:
    line = text.splitlines()[0] if text else ""
    # getty escapes (\n hostname, \l tty, ...) trail the Debian/Ubuntu issue line
    line = line.rstrip()
    while True:
        stripped = re.sub(r"\s*\\[nl]$", "", line).rstrip()
        if stripped == line:
            return line
        line = stripped


def linux_long_name(roots: HostRoots) -> str:
    for name in _ISSUE_FILES:
        text = read_text(roots.etc / name)
        if text is None:
            continue
        line = _clean_issue_line(text) or "Unknown"
        if distro_name(line) != "LINUX":
            return line
    for raw in (read_text(roots.etc / "os-release") or "").splitlines():
        key, sep, value = raw.partition("=")
        if sep and key.strip() == "PRETTY_NAME":
            return value.strip().strip('"').strip("'") or "Unknown"
    return "Unknown"


def leading_number(text: str) -> tuple[int, str]:
    """The first run of digits in ``text`` and what follows it; (0, '') when none."""
    m = re.search(r"\d+", text)
    if not m:
        return 0, ""
    return int(m.group(0)), text[m.end():]


def version_code(text: str) -> int:
    """HTCondor's OpSysVer: major*100 + up to two digits of minor ("12" -> 1200, "8.10" -> 810)."""
    if text == "Unknown":
        return 0
    major, rest = leading_number(text)
    minor = 0
    m = re.match(r"\.(\d{1,2})", rest)
    if m:
        minor = int(m.group(1))
    return major * 100 + minor


def translate_arch(machine: str) -> str:
    return _ARCHES.get(machine, machine)


def probe_os(roots: HostRoots) -> OsInfo:
    un = roots.uname()
    arch = translate_arch(un.machine)
    if un.sysname.lower() == "linux":
        long_name = linux_long_name(roots)
        name = distro_name(long_name)
        opsys = "LINUX"
        legacy = "LINUX"
    else:
        long_name = f"{un.sysname}{un.release}"
        name = un.sysname
        opsys = legacy = un.sysname.upper()
    major = 0 if long_name == "Unknown" else leading_number(long_name)[0]
    return OsInfo(arch=arch, opsys=opsys, long_name=long_name, name=name, short_name=name,
                  major_version=major, version=version_code(long_name),
                  versioned=f"{name}{major}", legacy=legacy, uname=un)
