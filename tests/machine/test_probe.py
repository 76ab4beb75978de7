import os
import subprocess
from pathlib import Path

import pytest

from condorpy.errors import ConfigError
from condorpy.machine import Activity, HostRoots, detected_facts, measure_activity, probe_machine
from condorpy.machine.disk import free_kb
from condorpy.machine.memory import cgroup_memory_limit
from tests.machine.fakehost import NOW, knobs, meminfo, roots, topology, touch, write


def _host(tmp: Path) -> HostRoots:
    topology(tmp / "sys", [(i, 0, i // 2) for i in range(8)])      # 8 threads on 4 cores
    write(tmp / "proc/meminfo", meminfo(32 * 1024 * 1024, 4096, 2048))
    write(tmp / "proc/loadavg", "0.50 0.40 0.30 1/100 42\n")
    write(tmp / "proc/stat", "btime 1799000000\n")
    write(tmp / "etc/issue", "Debian GNU/Linux 12 \\n \\l\n")
    touch(tmp / "dev/console", NOW - 300)
    (tmp / "execute").mkdir()
    return roots(tmp)


BASE = {"STARTD_DETECT_GPUS": "false"}


def test_defaults_from_a_fake_host(tmp_path: Path) -> None:
    r = _host(tmp_path)
    inv = probe_machine(knobs({**BASE, "EXECUTE": str(tmp_path / "execute")}), r)
    assert (inv.cpus, inv.detected_cpus, inv.detected_cores, inv.detected_physical_cpus) == (8, 8, 8, 4)
    assert inv.memory_mb == inv.detected_memory_mb == 32768
    assert inv.swap_kb == 32 * 1024 * 1024 + 2048
    assert inv.disk_kb == pytest.approx(free_kb(tmp_path / "execute"), rel=0.01)
    assert inv.hostname == "node1.example.org" and inv.facts["Machine"] == "node1.example.org"
    assert inv.facts["OpSysAndVer"] == "Debian12"
    assert (inv.total_load_avg, inv.boot_time) == (0.5, 1799000000.0)
    assert (inv.keyboard_idle, inv.console_idle) == (300, 300)
    assert inv.custom == {}


def test_overrides(tmp_path: Path) -> None:
    r = _host(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    cfg = knobs({**BASE, "COUNT_HYPERTHREAD_CPUS": "false", "MEMORY": "10000", "RESERVED_MEMORY": "1000",
                      "RESERVED_DISK": "1", "EXECUTE": str(tmp_path / "execute"),
                      "SLOT2_EXECUTE": str(other), "SLOT3_EXECUTE": str(tmp_path / "execute")})
    inv = probe_machine(cfg, r)
    assert (inv.cpus, inv.detected_cpus) == (4, 4)
    assert (inv.memory_mb, inv.detected_memory_mb) == (9000, 32768)
    assert inv.disk_kb == pytest.approx(free_kb(tmp_path / "execute") - 1024, rel=0.01)
    assert set(inv.slot_disk_kb) == {2}
    inv = probe_machine(knobs({**BASE, "NUM_CPUS": "32", "DISK": "5000"}), r)
    assert (inv.cpus, inv.detected_cpus, inv.disk_kb) == (32, 8, 5000)
    assert probe_machine(knobs({**BASE, "MAX_NUM_CPUS": "3"}), r).cpus == 3
    with pytest.raises(ConfigError) as info:
        probe_machine(knobs({**BASE, "NUM_CPUS": "lots"}), r)
    assert str(info.value) == "NUM_CPUS = lots at test.conf:2 is not an integer"
    with pytest.raises(ConfigError) as info:
        probe_machine(knobs({**BASE, "MEMORY": "-5"}), r)
    assert str(info.value) == "MEMORY = -5 at test.conf:2 is not a non-negative integer"


def test_detected_facts(tmp_path: Path) -> None:
    r = _host(tmp_path)
    facts = detected_facts(r)
    assert facts["DETECTED_CPUS"] == "8" and facts["DETECTED_PHYSICAL_CPUS"] == "4"
    assert facts["DETECTED_MEMORY"] == "32768"
    assert (facts["FULL_HOSTNAME"], facts["HOSTNAME"]) == ("node1.example.org", "node1")
    assert (facts["ARCH"], facts["OPSYS"], facts["OPSYSANDVER"], facts["OPSYSVER"]) == \
        ("X86_64", "LINUX", "Debian12", "1200")
    assert detected_facts(r, count_hyperthreads=False)["DETECTED_CPUS"] == "4"
    limited = roots(tmp_path, env={"OMP_THREAD_LIMIT": "3"})
    assert detected_facts(limited)["DETECTED_CPUS_LIMIT"] == "3"


def test_this_machine() -> None:
    """The real probes against this host's own tools, once."""
    inv = probe_machine(knobs(BASE), HostRoots())
    assert inv.detected_cpus == os.cpu_count()
    free = subprocess.run(["free", "-m"], capture_output=True, text=True, check=True).stdout
    total_mb = int(next(line for line in free.splitlines() if line.startswith("Mem:")).split()[1])
    cap = cgroup_memory_limit(HostRoots()) // (1024 * 1024)
    expected = min(total_mb, cap) if cap else total_mb
    assert abs(inv.detected_memory_mb - expected) <= expected * 0.01
    assert inv.facts["OpSys"] == "LINUX"
    assert inv.facts["UtsnameRelease"] == os.uname().release


def test_integer_knobs_may_be_expressions(tmp_path: Path) -> None:
    r = _host(tmp_path)
    inv = probe_machine(knobs({**BASE, "MEMORY": "32768 / 4", "NUM_CPUS": "8 - 2"}), r)
    assert (inv.memory_mb, inv.cpus) == (8192, 6)
    with pytest.raises(ConfigError, match=r"^MEMORY = 1 \+ at test.conf:2 is not an integer$"):
        probe_machine(knobs({**BASE, "MEMORY": "1 +"}), r)


def test_slot_execute_beyond_the_cpu_count(tmp_path: Path) -> None:
    r = _host(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    inv = probe_machine(knobs({**BASE, "NUM_CPUS": "2", "slot70_execute": str(other)}), r)
    assert set(inv.slot_disk_kb) == {70}


def test_boolean_knobs_take_htcondor_spellings_only(tmp_path: Path) -> None:
    r = _host(tmp_path)
    assert probe_machine(knobs({**BASE, "COUNT_HYPERTHREAD_CPUS": "1 == 0"}), r).cpus == 4
    with pytest.raises(ConfigError) as info:
        probe_machine(knobs({**BASE, "COUNT_HYPERTHREAD_CPUS": "no"}), r)
    assert str(info.value) == "COUNT_HYPERTHREAD_CPUS = no at test.conf:2 is not a boolean"


def test_activity_for_periodic_updates(tmp_path: Path) -> None:
    r = _host(tmp_path)
    a = measure_activity(knobs({"CONSOLE_DEVICES": "console"}), r)
    assert a == Activity(0.5, 300, 300)
    # no console devices: ConsoleIdle is unknown and KeyboardIdle has no source either
    a = measure_activity(knobs({"CONSOLE_DEVICES": ""}), r)
    assert (a.console_idle, a.keyboard_idle) == (None, int(NOW))
