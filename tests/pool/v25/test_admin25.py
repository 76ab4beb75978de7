"""25.14.1's tools against condorpy's command port: condor_status -direct,
condor_config_val -startd, condor_drain (and -cancel), condor_vacate."""

from __future__ import annotations

import pytest

from tests.pool.test_pool_admin import (  # noqa: F401
    daemon, test_condor_config_val_startd_reads_the_daemons_live_knob,
    test_condor_drain_and_cancel_go_through_the_daemons_drain,
    test_condor_status_direct_lists_the_slots_like_the_daemons_own_status,
    test_condor_vacate_evicts_the_running_jobs)

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
