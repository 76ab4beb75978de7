"""Jobs from a 25.14.1 schedd and shadow on condorpy's partitionable slot: claims with
leftovers, activation, the shadow's syscalls, exit and usage, DEACTIVATE_CLAIM_JOB_DONE
(413, sent by 24.7+ shadows to a starter advertising 24.7+), condor_rm and
condor_hold/condor_release."""

from __future__ import annotations

import pytest

from tests.pool.test_pool_jobs import (  # noqa: F401
    daemon, test_condor_hold_and_release_of_a_running_job,
    test_condor_rm_of_a_running_job_ends_it_on_condorpy,
    test_ten_jobs_with_mixed_requests_complete_on_a_partitionable_slot)

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
# every test has its own daemon and job directory: the pool lane's workers may share
# them out (tests/pool/conftest.py)
POOL_TESTS_APART = True
