from pathlib import Path

import pytest

from condorpy.machine.load import boot_time, read_loadavg
from condorpy.machine.network import hostnames, most_public
from condorpy.machine.opsys import probe_os, version_code
from condorpy.machine.roots import Uname
from tests.machine.fakehost import NOW, roots, write


def test_debian_12_as_htcondor_publishes_it(tmp_path: Path) -> None:
    write(tmp_path / "etc/issue", "Debian GNU/Linux 12 \\n \\l\n\n")
    a = probe_os(roots(tmp_path)).attrs()
    assert a["OpSysLongName"] == "Debian GNU/Linux 12"
    assert (a["OpSys"], a["OpSysName"], a["OpSysShortName"]) == ("LINUX", "Debian", "Debian")
    assert (a["OpSysAndVer"], a["OpSysMajorVer"], a["OpSysVer"]) == ("Debian12", 12, 1200)
    assert a["Arch"] == "X86_64"
    assert a["UtsnameRelease"] == "6.1.0-18-amd64"


def test_generic_issue_falls_through_to_redhat_release(tmp_path: Path) -> None:
    write(tmp_path / "etc/issue", "\\S\nKernel \\r on an \\m\n")
    write(tmp_path / "etc/redhat-release", "Rocky Linux release 9.2 (Blue Onyx)\n")
    a = probe_os(roots(tmp_path)).attrs()
    assert (a["OpSysName"], a["OpSysAndVer"], a["OpSysVer"]) == ("Rocky", "Rocky9", 902)


def test_os_release_pretty_name_fallback(tmp_path: Path) -> None:
    write(tmp_path / "etc/os-release", 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.3 LTS"\n')
    a = probe_os(roots(tmp_path)).attrs()
    assert (a["OpSysLongName"], a["OpSysAndVer"], a["OpSysVer"]) == ("Ubuntu 22.04.3 LTS", "Ubuntu22", 2204)


def test_unknown_distribution(tmp_path: Path) -> None:
    a = probe_os(roots(tmp_path, uname=lambda: Uname("Linux", "n", "6.1", "#1", "aarch64"))).attrs()
    assert (a["OpSysLongName"], a["OpSysName"], a["OpSysMajorVer"]) == ("Unknown", "LINUX", 0)
    assert a["Arch"] == "aarch64"


@pytest.mark.parametrize("text,code", [("12", 1200), ("8.10", 810), ("7.9.2009", 709), ("x", 0)])
def test_version_code(text: str, code: int) -> None:
    assert version_code(text) == code


def test_loadavg_and_boot_time(tmp_path: Path) -> None:
    write(tmp_path / "proc/loadavg", "1.50 0.75 0.25 3/200 999\n")
    write(tmp_path / "proc/stat", "cpu  1 2 3\nbtime 1799990000\n")
    r = roots(tmp_path)
    la = read_loadavg(r)
    assert (la.one, la.five, la.fifteen) == (1.5, 0.75, 0.25)
    assert boot_time(r) == 1799990000.0
    (tmp_path / "proc/stat").unlink()
    write(tmp_path / "proc/uptime", "100.5 50.0\n")
    assert boot_time(r) == NOW - 100.5
    assert read_loadavg(roots(tmp_path / "none")).one == 0.0


def test_hostnames(tmp_path: Path) -> None:
    assert hostnames(roots(tmp_path)) == ("node1.example.org", "node1")
    # a resolver answering "localhost" tells nothing about the host
    assert hostnames(roots(tmp_path, fqdn=lambda n: "localhost")) == ("node1", "node1")


def test_most_public_address_prefers_global_over_private_over_loopback() -> None:
    addrs = ["127.0.0.1", "10.1.2.3", "fe80::1", "8.8.4.4", "fd00::2"]
    assert most_public(addrs, 4) == "8.8.4.4"
    assert most_public(["127.0.0.1", "10.1.2.3"], 4) == "10.1.2.3"
    assert most_public(addrs, 6) == "fd00::2"
    assert most_public(["127.0.0.1"], 6) is None
