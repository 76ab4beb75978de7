"""A 25.14.1 pool at its package-default security (forky's 00-security: use
security:recommended): condorpy joins with an IDTOKEN, is refused without one, runs a
job, and the tools reach it with FS; on the central manager's host condorpy
authenticates to the collector with FS (25.x's channel-bound form)."""

from __future__ import annotations

import pytest

from tests.pool.test_pool_tokens import (  # noqa: F401
    daemon, jobdir, secure_pool, test_a_submitted_job_runs_on_condorpy_to_completion,
    test_the_collector_admits_the_slots_with_the_token,
    test_the_pools_tools_reach_condorpy_with_fs_authentication,
    test_without_a_token_the_collector_lists_nothing_and_condorpy_says_why, token)

# last: it restarts the pool on a new port, which the module's daemon does not follow
from tests.pool.test_pool_tokens import \
    test_on_the_central_managers_host_fs_suffices  # noqa: E402, F401

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
