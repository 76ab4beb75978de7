"""A condorpy daemon restarting under a job a 25.14.1 shadow runs on it."""

from __future__ import annotations

import pytest

from tests.pool.test_pool_restart import (  # noqa: F401
    jobdir, test_a_restart_under_a_pool_job_stops_it_and_it_runs_again_once)

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
