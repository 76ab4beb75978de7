"""Advertising to a 25.14.1 collector: the slots listed at start, gone after stop, and a
state change reaching it at once."""

from __future__ import annotations

import pytest

from tests.pool.test_pool_collector import (  # noqa: F401
    daemon, test_a_state_change_reaches_the_collector_without_waiting_for_update_interval,
    test_condor_status_lists_the_slots_at_start_and_not_after_stop)

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
