"""GPU requirements in a real HTCondor 23.9.6 pool, on condorpy's simulated GPUs (one
V100, Capability 7.0, and two A100s, 8.0).

condor_submit writes RequireGPUs and the countMatches clause; the 23.9.6 negotiator
matches the job to condorpy's partitionable slot by the GPU property ads the slot
advertises; condorpy carves a d-slot whose GPU satisfies RequireGPUs, and the job sees
that GPU in CUDA_VISIBLE_DEVICES. A job no GPU satisfies is never matched. And
condorpy's own submit writes the GPU attributes as condor_submit -dry-run does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from tests.pool.jobs import submit
from tests.pool.refpool import RefPool
from tests.queue.test_submit_gpus import CASES, submit as condorpy_submit
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool
POOL_TESTS_APART = True

HOST = "condorpy-gpus.example"
V100, A100S = "GPU-a0223334", {"GPU-b1223334", "GPU-c2223334"}

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
UPDATE_INTERVAL = 600
NUM_CPUS = 4
MEMORY = 4096
use FEATURE : GPUs
GPU_DISCOVERY_EXTRA = -extra -simulate:2,1,4,2
use FEATURE : PartitionableSlot
"""

JOB = """\
executable = /bin/sh
arguments = "-c 'echo $CUDA_VISIBLE_DEVICES; sleep 2'"
output = out.$(Cluster).$(Process)
log = job.log
request_memory = 64
request_gpus = 1
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
{commands}
queue {count}
"""


@pytest.fixture
def daemon(tmp_path: Path, refpool: RefPool) -> Iterator[Daemon]:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def _status(pool: RefPool, cluster: int) -> dict[int, str]:
    """JobStatus by proc, from the queue and then the history."""
    out: dict[int, str] = {}
    for tool in ("condor_history", "condor_q"):
        res = pool.condor(tool, str(cluster), "-af", "ProcId", "JobStatus", check=False)
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit():
                out[int(parts[0])] = parts[1]
    return out


def test_the_negotiator_matches_require_gpus_to_a_gpu_that_satisfies_it(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    never = submit(refpool, jobdir, JOB.format(commands="require_gpus = Capability >= 9.5",
                                                count=1))
    a100 = submit(refpool, jobdir, JOB.format(commands="require_gpus = Capability >= 8.0",
                                               count=2))
    v100 = submit(refpool, jobdir, JOB.format(commands="gpus_maximum_capability = 7.5",
                                               count=1))

    def done() -> bool:
        return _status(refpool, a100) == {0: "4", 1: "4"} and _status(refpool, v100) == {0: "4"}

    wait_for(done, 300, lambda: f"{refpool.condor('condor_q', '-nobatch', check=False).stdout}"
                                f"\ndaemon: {daemon.output()[-3000:]}")
    got = {p: (jobdir / f"out.{a100}.{p}").read_text().strip() for p in (0, 1)}
    assert set(got.values()) <= A100S, got
    assert (jobdir / f"out.{v100}.0").read_text().strip() == V100
    # the job no GPU satisfies was never matched, never ran
    assert _status(refpool, never) == {0: "1"}
    assert not (jobdir / f"out.{never}.0").exists()
    assert f"pool job {never}.0" not in (daemon.base / "daemon.out").read_text()


@pytest.mark.parametrize("case", sorted(CASES))
def test_condorpy_submit_writes_gpu_attributes_as_condor_submit_dry_run(
        refpool: RefPool, jobdir: Path, case: str) -> None:
    commands, _ = CASES[case]
    (jobdir / "job.sub").write_text(f"executable = /bin/true\n{commands}\nqueue\n")
    res = refpool.condor("condor_submit", "-dry-run", "-", "job.sub", cwd=str(jobdir))
    theirs = {}
    for line in res.stdout.splitlines():
        name, eq, value = line.partition("=")
        if eq and re.fullmatch(r"\w+", name):
            theirs[name] = value
    ours = condorpy_submit(commands)
    for name in sorted(n for n in set(theirs) | set(ours) if "GPU" in n.upper()):
        mine, their = ours.get(name), theirs.get(name)
        if mine is not None and their is not None:
            # compared as ClassAd expressions: the same tree, whatever the spacing
            mine = str(ClassAd.parse_old(f"X = {mine}").lookup("X"))
            their = str(ClassAd.parse_old(f"X = {their}").lookup("X"))
        assert mine == their, f"{case}: {name}: condorpy {mine!r}, condor_submit {their!r}"
    gpu_clause = [c for c in re.split(r" && (?=\()", theirs["Requirements"]) if "GPUs" in c]
    for clause in gpu_clause:
        assert clause in (ours["Requirements"] or ""), (case, clause)
