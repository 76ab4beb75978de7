"""cgroup decisions against fake trees; kernel behaviour is in test_vm_cgroup.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from condorpy.starter.cgroup import (CgroupTree, CgroupUnavailable, JobCgroup, compute_limits,
                                     open_tree, own_cgroup, parse_keyed, resolve_base)

MIB = 1024 * 1024


def make_cgroup(path: Path, controllers: str = "cpu memory pids", procs: str = "") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.controllers").write_text(controllers + "\n")
    (path / "cgroup.subtree_control").write_text("")
    (path / "cgroup.procs").write_text(procs)
    return path


def fake_proc(tmp_path: Path, line: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(line)
    return proc


def test_own_cgroup_reads_the_unified_line(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, "4:memory:/x\n0::/system.slice/condor.service\n")
    assert own_cgroup(str(proc)) == "/system.slice/condor.service"


def test_hybrid_hierarchy_is_explained(tmp_path: Path) -> None:
    mount = tmp_path / "cg"
    make_cgroup(mount / "unified", controllers="hugetlb")
    with pytest.raises(CgroupUnavailable, match="hybrid.*hugetlb"):
        open_tree(str(mount), None, proc_root=str(fake_proc(tmp_path, "0::/\n")))


def test_missing_controllers_at_the_root(tmp_path: Path) -> None:
    mount = make_cgroup(tmp_path / "cg", controllers="cpu")
    make_cgroup(mount / "svc", controllers="cpu")
    with pytest.raises(CgroupUnavailable, match=r"root has controllers \[cpu\]"):
        open_tree(str(mount), None, proc_root=str(fake_proc(tmp_path, "0::/svc\n")))


def test_populated_base_is_refused(tmp_path: Path) -> None:
    mount = make_cgroup(tmp_path / "cg")
    make_cgroup(mount / "jobs", procs="1\n2\n")
    with pytest.raises(CgroupUnavailable, match="holds processes"):
        open_tree(str(mount), "/jobs", proc_root=str(fake_proc(tmp_path, "0::/x\n")))


def test_controllers_are_handed_down_to_the_base(tmp_path: Path) -> None:
    mount = make_cgroup(tmp_path / "cg")
    svc = make_cgroup(mount / "svc", controllers="")
    base = make_cgroup(svc / "htcondor", controllers="")
    proc = fake_proc(tmp_path, "0::/svc/startd.leaf\n")
    tree = open_tree(str(mount), "htcondor", proc_root=str(proc))
    assert tree.directory == str(base)
    for cg in (mount, svc, base):
        assert (cg / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"


def test_where_job_cgroups_go() -> None:
    assert resolve_base("/system.slice/condorpy.service/startd.leaf", "htcondor") == \
        "/system.slice/condorpy.service/htcondor"
    assert resolve_base("/system.slice/condorpy.service", None) == \
        "/system.slice/condorpy.service"
    assert resolve_base("/a/b", "/condorpy.test") == "/condorpy.test"
    assert resolve_base("/", "condorpy.test") == "/condorpy.test"


def test_limits_per_policy() -> None:
    common = dict(slot_memory_mb=1000, slot_vm_kb=3000 * 1024, machine_memory_mb=8000,
                  custom_hard_mb=1500, custom_soft_mb=900, cpus=2.0, pids_max=None,
                  enforce_cpu_max=False)
    hard = compute_limits(policy="hard", disable_swap=False, **common)  # type: ignore[arg-type]
    assert hard.memory_max == 1000 * MIB and hard.swap_max == 2000 * MIB
    assert hard.cpu_weight == 200 and hard.oom_group
    soft = compute_limits(policy="soft", disable_swap=True, **common)  # type: ignore[arg-type]
    assert soft.memory_max == 8000 * MIB and soft.swap_max == 0
    custom = compute_limits(policy="custom", disable_swap=False, **common)  # type: ignore[arg-type]
    assert (custom.memory_max, custom.memory_high) == (1500 * MIB, 900 * MIB)
    none = compute_limits(policy="none", disable_swap=True, **common)  # type: ignore[arg-type]
    assert none.memory_max is None and none.swap_max is None


def test_cpu_max_and_weight_bounds() -> None:
    lim = compute_limits(policy="none", slot_memory_mb=None, slot_vm_kb=None,
                         machine_memory_mb=None, custom_hard_mb=None, custom_soft_mb=None,
                         disable_swap=False, cpus=0.5, pids_max=64, enforce_cpu_max=True)
    assert lim.cpu_max == "50000 100000" and lim.pids_max == 64 and lim.cpu_weight == 50
    big = compute_limits(policy="none", slot_memory_mb=None, slot_vm_kb=None,
                         machine_memory_mb=None, custom_hard_mb=None, custom_soft_mb=None,
                         disable_swap=False, cpus=500, pids_max=None, enforce_cpu_max=False)
    assert big.cpu_weight == 10000


def test_sample_reads_usage_and_oom(tmp_path: Path) -> None:
    tree = CgroupTree(str(tmp_path), "/jobs")
    cg = JobCgroup(tree, "job_1", ignore_cache=False)      # memory.peak as the kernel says
    os.makedirs(cg.scope)
    s = Path(cg.slice)
    (s / "cpu.stat").write_text("usage_usec 3000\nuser_usec 2000\nsystem_usec 1000\n")
    (s / "memory.stat").write_text("anon 4096\nfile 999999\nshmem 1024\n")
    (s / "memory.peak").write_text("2000000\n")
    (s / "pids.current").write_text("3\n")
    (s / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n"
                                     "oom_group_kill 0\n")
    sample = cg.sample()
    assert (sample.user_usec, sample.system_usec) == (2000, 1000)
    assert sample.memory_bytes == 5120            # page cache ("file") is not the job's
    assert sample.peak_bytes == 2000000 and sample.pids == 3 and sample.oom_kills == 1


def test_freeze_waits_for_the_kernel_to_confirm(tmp_path: Path) -> None:
    cg = JobCgroup(CgroupTree(str(tmp_path), "/"), "job_2")
    os.makedirs(cg.scope)
    s = Path(cg.slice)
    (s / "cgroup.freeze").write_text("0")
    (s / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    assert cg.freeze(timeout_s=0.05, sleep=lambda _d: None) is False
    assert (s / "cgroup.freeze").read_text() == "1"
    (s / "cgroup.events").write_text("populated 1\nfrozen 1\n")
    assert cg.freeze(timeout_s=0.05) is True


def test_parse_keyed_ignores_junk() -> None:
    assert parse_keyed("a 1\nb x\n\nc 3") == {"a": 1, "c": 3}
