from pathlib import Path

from condorpy.machine.memory import cgroup_memory_limit, detected_memory_mb, virtual_memory_kb
from tests.machine.fakehost import meminfo, roots, write

GIB = 1024 ** 3


def _host(tmp: Path, total_kb: int = 16 * 1024 * 1024) -> None:
    write(tmp / "proc/meminfo", meminfo(total_kb, 2048, 1024))


def test_meminfo_without_cgroup(tmp_path: Path) -> None:
    _host(tmp_path)
    assert detected_memory_mb(roots(tmp_path)) == 16384
    assert virtual_memory_kb(roots(tmp_path)) == 16 * 1024 * 1024 + 1024


def test_cgroup_v2_max_caps_memory(tmp_path: Path) -> None:
    _host(tmp_path)
    write(tmp_path / "proc/self/cgroup", "0::/system.slice/condor.service\n")
    cg = tmp_path / "sys/fs/cgroup"
    write(cg / "cgroup.controllers", "cpu memory pids\n")
    write(cg / "system.slice/condor.service/memory.max", f"{4 * GIB}\n")
    write(cg / "system.slice/condor.service/memory.high", "max\n")
    assert detected_memory_mb(roots(tmp_path)) == 4096


def test_cgroup_v2_high_is_preferred_and_max_means_unlimited(tmp_path: Path) -> None:
    _host(tmp_path)
    write(tmp_path / "proc/self/cgroup", "0::/a/b\n")
    cg = tmp_path / "sys/fs/cgroup"
    write(cg / "cgroup.controllers", "memory\n")
    write(cg / "a/b/memory.high", f"{2 * GIB}\n")
    write(cg / "a/b/memory.max", f"{3 * GIB}\n")
    assert cgroup_memory_limit(roots(tmp_path)) == 2 * GIB
    write(cg / "a/b/memory.high", "max\n")
    write(cg / "a/b/memory.max", "max\n")
    assert cgroup_memory_limit(roots(tmp_path)) == 0
    # unlimited here, but the parent is limited
    write(cg / "a/memory.max", f"{GIB}\n")
    assert detected_memory_mb(roots(tmp_path)) == 1024


def test_cgroup_limit_above_ram_does_not_raise_memory(tmp_path: Path) -> None:
    _host(tmp_path, total_kb=1024 * 1024)
    write(tmp_path / "proc/self/cgroup", "0::/x\n")
    write(tmp_path / "sys/fs/cgroup/cgroup.controllers", "memory\n")
    write(tmp_path / "sys/fs/cgroup/x/memory.max", f"{8 * GIB}\n")
    assert detected_memory_mb(roots(tmp_path)) == 1024


def test_cgroup_v1_limit_in_bytes(tmp_path: Path) -> None:
    _host(tmp_path)
    write(tmp_path / "proc/self/cgroup", "9:name=systemd:/\n4:memory:/job/7\n0::/\n")
    write(tmp_path / "sys/fs/cgroup/memory/job/7/memory.limit_in_bytes", f"{3 * GIB}\n")
    assert detected_memory_mb(roots(tmp_path)) == 3072
    # v1 reports "no limit" as a huge page-aligned number
    write(tmp_path / "sys/fs/cgroup/memory/job/7/memory.limit_in_bytes", "9223372036854771712\n")
    assert detected_memory_mb(roots(tmp_path)) == 16384


def test_hybrid_layout_reads_the_unified_mount(tmp_path: Path) -> None:
    _host(tmp_path)
    write(tmp_path / "proc/self/cgroup", "0::/svc\n")
    write(tmp_path / "sys/fs/cgroup/unified/svc/memory.max", f"{GIB}\n")
    assert detected_memory_mb(roots(tmp_path)) == 1024


def test_missing_cgroup_files_mean_no_cap(tmp_path: Path) -> None:
    _host(tmp_path)
    write(tmp_path / "proc/self/cgroup", "0::/gone\n")
    assert detected_memory_mb(roots(tmp_path)) == 16384
