"""A GPU job's usage in a real HTCondor 23.9.6 pool: condorpy's GPU monitor figures
(here a stand-in monitor reporting the simulated V100 half busy, 1009 MB in use) reach
the shadow with the running job's updates and its exit, and condor_history keeps GPUsUsage,
GPUsAverageUsage and GPUsMemoryUsage."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.pool.jobs import submit
from tests.pool.refpool import RefPool
from tests.pool.test_gpus_pool import CONFIG, HOST
from tests.startd.daemon_helpers import Daemon, slot_values, wait_for
from tests.startd.test_gpus_daemon import FAKE_MONITOR

pytestmark = pytest.mark.pool
POOL_TESTS_APART = True

JOB = """\
executable = /bin/sh
arguments = "-c 'while [ ! -e {flag} ]; do sleep 0.2; done'"
log = job.log
request_memory = 64
request_gpus = 1
require_gpus = Capability < 8.0
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
"""

ATTRS = ("JobStatus", "GPUsUsage", "GPUsAverageUsage", "GPUsMemoryUsage")


def _af(pool: RefPool, tool: str, cluster: int) -> list[str]:
    out = pool.condor(tool, str(cluster), "-af", *ATTRS, check=False).stdout.split()
    return out if len(out) == len(ATTRS) else []


def test_the_shadow_gets_the_gpu_figures_as_the_job_runs_and_at_its_end(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:
    monitor = tmp_path / "gpu_monitor"
    monitor.write_text(FAKE_MONITOR.format(py=sys.executable))
    monitor.chmod(0o755)
    d = Daemon(tmp_path / "d", CONFIG.format(collector=refpool.collector, host=HOST) +
               f"GPU_MONITOR = {monitor}\nSTARTER_UPDATE_INTERVAL = 2\n", cpus=4)
    d.start()
    try:
        flag = jobdir / "release"
        cluster = submit(refpool, jobdir, JOB.format(flag=flag))

        def diag() -> str:
            return f"{_af(refpool, 'condor_q', cluster)}\ndaemon: {d.output()[-3000:]}"
        # the job runs and its slot has its figures (the shadow has them with the next
        # update; condor_q shows them once the shadow updates the schedd's queue,
        # SHADOW_QUEUE_UPDATE_INTERVAL)
        wait_for(lambda: any(a.get("JobId") == f"{cluster}.0" and
                             isinstance(a.get("GPUsUsage"), float) for a in slot_values(d)),
                 300, diag)
        flag.write_text("")
        wait_for(lambda: _af(refpool, "condor_history", cluster)[:1] == ["4"], 300, diag)
        status, usage, average, memory = _af(refpool, "condor_history", cluster)
        assert 0.25 < float(usage) < 0.75, usage
        assert average == usage
        assert memory == "1009"
    finally:
        d.stop()
        d.kill_leftovers()
