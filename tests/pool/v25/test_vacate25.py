"""A pool job condorpy vacates goes back to a 25.14.1 schedd's queue with HTCondor's
VacateReason and VacateReasonCode in its ad, counted in NumVacatesByReason."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pool.jobs import submit
from tests.pool.refpool import RefPool
from tests.pool.test_pool_jobs import daemon  # noqa: F401
from tests.startd.daemon_helpers import Daemon, wait_for

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
POOL_TESTS_APART = True


def test_a_vacated_pool_job_carries_its_vacate_reason(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:  # noqa: F811
    marker = jobdir / "started"
    cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 'touch {marker}; exec sleep 300'"
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    wait_for(marker.exists, 120, lambda: daemon.output()[-3000:])
    daemon.call("vacate", fast=True)
    wait_for(lambda: "Job was evicted" in (jobdir / "job.log").read_text(), 60,
             lambda: daemon.output()[-3000:])

    def ad() -> list[str]:
        return refpool.condor("condor_q", str(cluster), "-af", "VacateReasonCode",
                              "VacateReason", "NumVacatesByReason").stdout.strip().split(" ", 1)
    wait_for(lambda: ad()[0] == "1010", 60, lambda: f"{ad()}\n{daemon.output()[-2000:]}")
    code, rest = ad()
    assert "Claim vacated by the administrator" in rest
    assert "StartdVacateCommand = 1" in rest
