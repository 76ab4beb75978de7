"""25.14.1's daemons with SSL-only daemon authentication (refpool.py's "ssl" variant on
the package's ``use security:recommended``): the collector admits condorpy's slots by
SSL, a condor_submit job runs on them, and 25.x's condor_vacate reaches condorpy's
command port by SSL (the tests of test_pool_ssl.py)."""

from __future__ import annotations

import pytest

from tests.pool.test_pool_ssl import (  # noqa: F401
    daemon, jobdir, pki, ssl_pool, test_a_submitted_job_runs_on_condorpy,
    test_the_collector_admits_condorpys_slots_by_ssl, test_the_pools_tools_reach_condorpy_by_ssl)

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
