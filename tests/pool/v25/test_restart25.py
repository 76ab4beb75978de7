"""A condorpy daemon killed under a job a 25.14.1 shadow runs on it: the shadow
reconnects to the restarted daemon (CA_LOCATE_STARTER / CA_RECONNECT_JOB from a 25.x
shadow) and the job completes once."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.test_pool_restart import \
    test_a_pool_job_survives_a_daemon_restart_and_completes_once as restart_under_job

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
# every test has its own daemon and job directory: the pool lane's workers may share
# them out (tests/pool/conftest.py)
POOL_TESTS_APART = True


def test_a_pool_job_survives_a_sigkill_restart_under_a_25_shadow(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:  # noqa: F811
    restart_under_job(tmp_path, refpool, jobdir, signal.SIGKILL, "")
