"""The memory knobs of issue 27 as decisions: which cgroup file gets which value, what
memory is the job's, and whether an OOM kill holds or requeues. Fake cgroup trees
only; the kernel's side is in test_vm_memory.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from condorpy.config import Config, DetectedFacts
from condorpy.errors import ConfigError
from condorpy.starter.cgroup import (CgroupLimits, CgroupTree, JobCgroup, compute_limits,
                                     peak_memory, slice_settings)
from condorpy.starter.holds import OomVerdict, oom_verdict
from condorpy.starter.knobs import KNOBS, settings_from_knobs
from condorpy.starter.jobspec import SlotSpec
from condorpy.starter.prepare import cgroup_limits

MIB = 1024 * 1024
FACTS = DetectedFacts(full_hostname="ep.example.org", cpus=2, cores=2, physical_cpus=2,
                      memory_mb=4096)


def knobs(values: dict[str, str]) -> Config:
    return Config.from_mapping(values, source="starter.conf", detected=FACTS,
                               subsystem="STARTER")


def limits(**kw: object) -> CgroupLimits:
    args: dict[str, object] = dict(policy="hard", slot_memory_mb=1000, slot_vm_kb=None,
                                   machine_memory_mb=4096, custom_hard_mb=None,
                                   custom_soft_mb=None, disable_swap=True, cpus=1.0,
                                   pids_max=None, enforce_cpu_max=False)
    args.update(kw)
    return compute_limits(**args)  # type: ignore[arg-type]


# --- knobs -------------------------------------------------------------------------

def test_memory_knob_defaults_are_htcondors() -> None:
    s = settings_from_knobs(knobs({}), execute="/x")
    assert s.ignore_cache_memory and s.always_hold_on_oom and s.disable_swap
    assert s.low_memory_mb is None and s.memory_high_percent == 0


def test_memory_knobs_become_settings() -> None:
    s = settings_from_knobs(knobs({"CGROUP_IGNORE_CACHE_MEMORY": "false",
                                   "STARTER_ALWAYS_HOLD_ON_OOM": "false",
                                   "CONDORPY_CGROUP_MEMORY_HIGH_PERCENT": "90"}),
                            execute="/x", low_memory_mb=256)
    assert not s.ignore_cache_memory and not s.always_hold_on_oom
    assert s.memory_high_percent == 90 and s.low_memory_mb == 256


@pytest.mark.parametrize("value", ["100", "-1"])
def test_memory_high_percent_out_of_range_names_the_knob(value: str) -> None:
    with pytest.raises(ConfigError, match="CONDORPY_CGROUP_MEMORY_HIGH_PERCENT"):
        settings_from_knobs(knobs({"CONDORPY_CGROUP_MEMORY_HIGH_PERCENT": value}),
                            execute="/x")


def test_the_startd_sends_the_memory_knobs_to_its_starters() -> None:
    for name in ("CGROUP_LOW_MEMORY_LIMIT", "CGROUP_IGNORE_CACHE_MEMORY",
                 "STARTER_ALWAYS_HOLD_ON_OOM", "CONDORPY_CGROUP_MEMORY_HIGH_PERCENT",
                 "DISABLE_SWAP_FOR_JOB"):
        assert name in KNOBS


# --- which file gets which value ----------------------------------------------------

def test_low_limit_goes_to_the_slice() -> None:
    lim = limits(low_mb=300)
    assert lim.memory_low == 300 * MIB
    assert ("memory.low", str(300 * MIB)) in slice_settings(lim)


@pytest.mark.parametrize("low", [None, 0, -5])
def test_no_low_limit_writes_no_memory_low(low: int | None) -> None:
    lim = limits(low_mb=low)
    assert lim.memory_low is None
    assert "memory.low" not in dict(slice_settings(lim))


def test_oom_group_and_no_swap_by_default() -> None:
    files = dict(slice_settings(limits()))
    assert files["memory.oom.group"] == "1"
    assert files["memory.swap.max"] == "0" and files["memory.max"] == str(1000 * MIB)
    assert "memory.high" not in files


def test_memory_high_throttles_below_the_hard_limit_when_asked() -> None:
    assert limits(high_percent=90).memory_high == 1000 * MIB * 90 // 100
    # a custom soft limit is the administrator's own memory.high: it stays
    custom = limits(policy="custom", custom_hard_mb=800, custom_soft_mb=500,
                    high_percent=90)
    assert custom.memory_high == 500 * MIB
    # "soft" has no limit of the job's to throttle before
    assert limits(policy="soft", high_percent=90).memory_high is None


def test_settings_reach_the_limits() -> None:
    s = settings_from_knobs(knobs({"CONDORPY_CGROUP_MEMORY_HIGH_PERCENT": "80"}),
                            execute="/x", low_memory_mb=100)
    lim = cgroup_limits(s, SlotSpec(name="slot1@ep", slot_id=1, cpus=1.0, memory_mb=500,
                                         virtual_memory_kb=None, assigned_gpus=()))
    assert lim.memory_low == 100 * MIB and lim.memory_high == 400 * MIB
    assert lim.memory_max == 500 * MIB and lim.swap_max == 0


# --- what memory is the job's --------------------------------------------------------

def test_ignore_cache_takes_page_cache_and_inactive_anon_off_the_peak() -> None:
    stat = {"anon": 50, "file": 300, "inactive_anon": 20, "shmem": 5}
    assert peak_memory(1000, stat, ignore_cache=True) == 680
    assert peak_memory(1000, stat, ignore_cache=False) == 1000
    assert peak_memory(None, stat, ignore_cache=True) is None
    # never below zero: a cache larger than the peak leaves the peak as it is
    assert peak_memory(100, stat, ignore_cache=True) == 100


def test_sample_peak_excludes_cache_by_default(tmp_path: Path) -> None:
    cg = JobCgroup(CgroupTree(str(tmp_path), "/"), "job_4")
    os.makedirs(cg.scope)
    s = Path(cg.slice)
    (s / "memory.stat").write_text("anon 4096\nfile 900000\ninactive_anon 100000\n"
                                   "shmem 1024\n")
    (s / "memory.peak").write_text("2000000\n")
    (s / "memory.events").write_text("low 0\nhigh 2\nmax 4\noom 1\noom_kill 1\n")
    sample = cg.sample()
    assert sample.memory_bytes == 5120 and sample.peak_bytes == 1000000
    assert sample.limit_ooms == 1 and sample.oom_kills == 1


# --- own OOM or the machine's ------------------------------------------------------

def test_always_hold_holds_every_oom() -> None:
    assert oom_verdict(always_hold=True, limit_ooms=0, used_bytes=1,
                       limit_bytes=1000 * MIB) is OomVerdict.HOLD


def test_the_kernel_saying_the_limit_ran_out_holds() -> None:
    assert oom_verdict(always_hold=False, limit_ooms=1, used_bytes=10 * MIB,
                       limit_bytes=1000 * MIB) is OomVerdict.HOLD


def test_htcondors_ninety_percent_rule_without_the_kernels_word() -> None:
    near = oom_verdict(always_hold=False, limit_ooms=0, used_bytes=900 * MIB,
                       limit_bytes=1000 * MIB)
    far = oom_verdict(always_hold=False, limit_ooms=0, used_bytes=899 * MIB,
                      limit_bytes=1000 * MIB)
    assert (near, far) == (OomVerdict.HOLD, OomVerdict.REQUEUE)


def test_an_oom_with_no_limit_of_the_jobs_is_the_machines() -> None:
    assert oom_verdict(always_hold=False, limit_ooms=0, used_bytes=10 * MIB,
                       limit_bytes=None) is OomVerdict.REQUEUE


def test_final_kill_falls_back_without_cgroup_kill(tmp_path: Path) -> None:
    cg = JobCgroup(CgroupTree(str(tmp_path), "/"), "job_5")
    os.makedirs(cg.scope)
    assert cg.kill_at_once() is False            # no cgroup.kill: pid by pid
    Path(cg.slice, "cgroup.kill").write_text("")
    assert cg.kill_at_once() is True
    assert Path(cg.slice, "cgroup.kill").read_text() == "1"
