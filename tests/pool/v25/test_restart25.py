"""A condorpy daemon restarting under a job a 25.14.1 shadow runs on it.

Stopped by SIGTERM, the daemon ends the job and tells the shadow, as with 23.9.6. After
a SIGKILL the 25.14.1 shadow does not write 23.9.6's "Shadow exception!": it tries to
reconnect, is refused ("Reconnect is not supported"), and logs "Job reconnection
failed" and an eviction (code 1008) instead; that case belongs with the reconnect work
(pool_reconnect.py), which changes what the restarted daemon answers."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.test_pool_jobs import jobdir  # noqa: F401
from tests.pool.test_pool_restart import \
    test_a_restart_under_a_pool_job_stops_it_and_it_runs_again_once as restart_under_job

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool


def test_a_sigterm_restart_under_a_25_shadows_job_stops_it_and_it_runs_again_once(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:  # noqa: F811
    restart_under_job(tmp_path, refpool, jobdir, signal.SIGTERM)
