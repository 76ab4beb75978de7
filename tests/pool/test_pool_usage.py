"""A pool job's usage reaches the 23.9.6 pool: condorpy's starter updates go to the
shadow (register_job_info), so the job's periodic_hold over MemoryUsage acts in the
shadow and condor_q shows the usage; condorpy's own `use POLICY :
Hold_If_Memory_Exceeded` holds the job in the schedd with code 21, subcode 102."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pool.jobs import submit
from tests.pool.refpool import RefPool
from tests.pool.test_pool_jobs import CONFIG, HOST
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool
POOL_TESTS_APART = True

# the memory limit is not the kernel's to enforce here: the policies are under test
USAGE = "CGROUP_MEMORY_LIMIT_POLICY = none\nSTARTER_UPDATE_INTERVAL = 2\n"
HOG = """\
executable = /usr/bin/python3
arguments = "-c 'import time; b = b""x"" * (300 << 20); time.sleep(300)'"
request_memory = 128
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
"""


def _daemon(tmp_path: Path, refpool: RefPool, extra: str = "") -> Daemon:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST) + USAGE
               + extra, cpus=4)
    d.start()
    return d


def _held(refpool: RefPool, cluster: int, d: Daemon) -> list[str]:
    def af() -> list[str]:
        out = refpool.condor("condor_q", str(cluster), "-af:,", "JobStatus",
                             "HoldReasonCode", "HoldReasonSubCode", "MemoryUsage",
                             "ResidentSetSize", "HoldReason",
                             check=False).stdout.strip().split(",")
        return [part.strip() for part in out]
    wait_for(lambda: af()[0] == "5", 180, lambda: f"{af()}; {d.output()[-3000:]}")
    return af()


def test_periodic_hold_in_the_shadow_sees_the_usage(tmp_path: Path, refpool: RefPool,
                                                    jobdir: Path) -> None:
    d = _daemon(tmp_path, refpool)
    try:
        cluster = submit(refpool, jobdir, HOG + "periodic_hold = MemoryUsage > 200\nqueue\n")
        status, code, _sub, memory, rss, _why = _held(refpool, cluster, d)
        assert code == "3"
        assert int(memory) > 200 and int(rss) > 200 * 1024
    finally:
        d.stop()
        d.kill_leftovers()


def test_hold_if_memory_exceeded_holds_the_pool_job(tmp_path: Path, refpool: RefPool,
                                                   jobdir: Path) -> None:
    d = _daemon(tmp_path, refpool, "use POLICY : Hold_If_Memory_Exceeded\n")
    try:
        cluster = submit(refpool, jobdir, HOG + "queue\n")
        status, code, sub, memory, _rss, why = _held(refpool, cluster, d)
        assert (code, sub) == ("21", "102")
        # the shadow names the execution slot, as for any hold a starter asks for
        assert why == f"Error from slot1_1@{HOST}: memory usage exceeded request_memory"
        assert int(memory) > 128
        assert "Job was held" in (jobdir / "job.log").read_text()
    finally:
        d.stop()
        d.kill_leftovers()
