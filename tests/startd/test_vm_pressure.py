"""A job's memory pressure on a real kernel (run in the `tests/vm/run` lane as root): a
job that allocates past its cgroup's memory.high is throttled by reclaim, its slot ad
shows non-zero JobPressureMemorySomeAvg10, and a PREEMPT/WANT_HOLD over its stall time
(2 s, so the averages are seen first) holds the job."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest

from tests.startd.daemon_helpers import (Daemon, counts, running, slot_values, submit,
                                         wait_for)

pytestmark = pytest.mark.vm
MOUNT = Path("/sys/fs/cgroup")
PY = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"

# memory.high 24 MB under a 256 MB memory.max, no swap: past 24 MB every allocation
# is reclaimed for and throttled (a memory stall), none is killed
CONFIG = """BASE_CGROUP = condorpy.psitest
CGROUP_MEMORY_LIMIT_POLICY = custom
CGROUP_HARD_MEMORY_LIMIT_EXPR = 256
CGROUP_SOFT_MEMORY_LIMIT_EXPR = 24
DISABLE_SWAP_FOR_JOB = true
WANT_SUSPEND = False
PREEMPT = (JobPressureMemorySomeTotal ?: 0) > 2000000
WANT_HOLD = (JobPressureMemorySomeTotal ?: 0) > 2000000
WANT_HOLD_REASON = "job stalled on memory"
"""

JOB = ("import time\\n"
       "keep = [b\"x\" * (8 << 20) for _ in range(5)]\\n"
       "end = time.monotonic() + 90\\n"
       "while time.monotonic() < end:\\n"
       "    keep.append(b\"y\" * (8 << 20)); keep.pop(0)\\n")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    if not (MOUNT / "cgroup.pressure").exists() and not Path("/proc/pressure").exists():
        pytest.skip("kernel without PSI")
    with open(MOUNT / "cgroup.subtree_control", "w") as fh:
        fh.write("+cpu +memory +pids")
    with running(Daemon(tmp_path, extra=CONFIG)) as d:
        yield d


def test_vm_job_memory_pressure_in_its_slot_ad_and_held_by_policy(daemon: Daemon,
                                                                  tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "hog.py").write_text(JOB.replace("\\n", "\n"))
    submit(daemon, f"executable = {PY}\narguments = {work / 'hog.py'}\n"
                   "request_memory = 256\nrequest_disk = 10\nqueue\n", work)
    seen: list[float] = []

    def pressured() -> bool:
        for ad in slot_values(daemon):
            v = ad.get("JobPressureMemorySomeAvg10")
            if isinstance(v, float) and v > 0:
                seen.append(v)
        return bool(seen) or counts(daemon).get(5) == 1

    wait_for(pressured, 120, daemon.output)
    # the machine's figures are in the ads too (the job's stalls are the machine's)
    assert any(isinstance(ad.get("MachinePressureMemorySomeTotal"), int)
               for ad in slot_values(daemon))
    wait_for(lambda: counts(daemon).get(5) == 1, 120, daemon.output)
    held = daemon.cli("q", "-hold").stdout
    assert "job stalled on memory" in held, held
    assert " 21/" in held, held
    assert seen, "no slot ad showed the job's memory pressure before its hold"
