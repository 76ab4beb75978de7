"""The memory knobs of issue 27 on a real kernel (the `tests/vm/run` lane, as root):
the cgroup files a job gets, its own OOM held, an OOM for want of memory above it
requeued, and the final kill through cgroup.kill (and without it) leaving nothing.
The decisions themselves are tested on the host in test_memory.py."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from condorpy.starter.cgroup import JobCgroup, compute_limits, open_tree
from condorpy.starter.protocol import Command
from condorpy.starter.settings import MemoryPolicy

from .helpers import run, start
from .test_vm_cgroup import BASE, MOUNT, py, settings, wait_file, work  # noqa: F401

pytestmark = pytest.mark.vm
MIB = 1024 * 1024


def read(path: Path) -> str:
    return path.read_text().strip()


def test_memory_files_of_a_running_job(work: Path) -> None:  # noqa: F811
    ready = work / "out" / "ready"
    s = settings(work, memory_policy=MemoryPolicy.HARD, disable_swap=True,
                 low_memory_mb=32, memory_high_percent=90)
    running = start({"Cmd": "/bin/sh", "Arguments": f"-c 'touch {ready}; sleep 300'"},
                    {"Name": "slot1@vm", "Memory": 128}, s, tag="memfiles")
    client = running.client(timeout_s=60)
    client.wait_for("event", "hello")
    wait_file(ready)
    slice_ = Path(MOUNT, BASE, "job_memfiles.slice")
    scope = slice_ / "job.scope"
    try:
        assert read(slice_ / "memory.max") == str(128 * MIB)
        page = os.sysconf("SC_PAGE_SIZE")           # the kernel keeps whole pages
        assert int(read(slice_ / "memory.high")) == 128 * MIB * 90 // 100 // page * page
        assert read(slice_ / "memory.low") == str(32 * MIB)
        # no memory controller below the slice: the leaf's pages are the slice's
        assert not (scope / "memory.low").exists()
        assert read(slice_ / "memory.oom.group") == "1"
        swap = slice_ / "memory.swap.max"
        if swap.exists():                  # kernels without swap accounting lack it
            assert read(swap) == "0"
    finally:
        client.send(Command.HARD_KILL)
        client.wait_for("event", "done")
        client.close()
        running.outcome(timeout_s=60)
    assert not slice_.exists()


def test_own_oom_is_held_even_when_not_always_holding(work: Path) -> None:  # noqa: F811
    # STARTER_ALWAYS_HOLD_ON_OOM = false: the kernel's "oom" count in the job's
    # memory.events says the job's own limit ran out, however little was sampled
    s = settings(work, memory_policy=MemoryPolicy.HARD, disable_swap=True,
                 always_hold_on_oom=False)
    out = run(py("b = b\"x\" * (300 << 20)"), {"Name": "slot1@vm", "Memory": 64}, s)
    assert out.hold is not None, out.attributes
    assert (out.attributes["HoldReasonCode"], out.attributes["HoldReasonSubCode"]) \
        == (34, 102), out.attributes


def test_oom_for_want_of_memory_above_the_job_requeues(work: Path) -> None:  # noqa: F811
    # The machine's shortage, made small: the cgroup the jobs live in may hold 96 MB,
    # the job's slot promises it 1000 MB. The kill is not the job's doing.
    base = Path(MOUNT, BASE)
    base.mkdir()
    (base / "memory.max").write_text(str(96 * MIB))
    if (base / "memory.swap.max").exists():
        (base / "memory.swap.max").write_text("0")
    job = py("b = b\"x\" * (300 << 20)")
    slot = {"Name": "slot1@vm", "Memory": 1000}
    lenient = settings(work, memory_policy=MemoryPolicy.HARD, disable_swap=True,
                       always_hold_on_oom=False)
    out = run(job, slot, lenient)
    assert out.hold is None and out.vacated, out.attributes
    assert out.attributes["ExitSignal"] == 9
    assert any("out of memory" in n for n in out.notices), out.notices
    # the reason the startd files in the job's history (HTCondor's text, code 0)
    assert out.attributes["VacateReason"] == "Worker node is out of memory"
    assert out.attributes["VacateReasonCode"] == 0
    # HTCondor's default, STARTER_ALWAYS_HOLD_ON_OOM = true, holds it all the same
    strict = settings(work, memory_policy=MemoryPolicy.HARD, disable_swap=True)
    held = run(job, slot, strict)
    assert held.hold is not None and held.attributes["HoldReasonCode"] == 34


def spawn_family(cg: JobCgroup, marker: str) -> subprocess.Popen[bytes]:
    """A shell in the job's leaf with a child that left its session."""
    def enter() -> None:
        with open(cg.procs_file, "w") as fh:
            fh.write(str(os.getpid()))
    return subprocess.Popen(
        ["/bin/sh", "-c", f"setsid sh -c 'exec -a {marker} sleep 300' & exec sleep 300"],
        preexec_fn=enter, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("at_once", [True, False])
def test_final_kill_leaves_nothing(work: Path, at_once: bool,  # noqa: F811
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tree = open_tree(MOUNT, "/" + BASE)
    cg = JobCgroup(tree, f"kill_{int(at_once)}")
    cg.create(compute_limits(policy="none", slot_memory_mb=None, slot_vm_kb=None,
                             machine_memory_mb=None, custom_hard_mb=None,
                             custom_soft_mb=None, disable_swap=True, cpus=1.0,
                             pids_max=None, enforce_cpu_max=False))
    assert Path(cg.slice, "cgroup.kill").exists()     # the lane's kernel is >= 5.14
    if not at_once:                 # as on a kernel before 5.14: pid by pid
        monkeypatch.setattr(cg, "kill_at_once", lambda: False)
    proc = spawn_family(cg, f"memkill{os.getpid()}")
    deadline = time.monotonic() + 10
    while len(cg.pids()) < 2:
        assert time.monotonic() < deadline, cg.pids()
        time.sleep(0.02)
    cg.kill()
    proc.wait(timeout=10)
    assert cg.wait_empty(timeout_s=10) and cg.pids() == []
    cg.remove()
    assert not os.path.isdir(cg.slice)
