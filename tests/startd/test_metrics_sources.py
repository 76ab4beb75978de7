"""The metrics fed from outside the slots: the local queue's depth, reconfigs, policy
evaluation errors, cgroup enforcement, the pool link, hold codes at zero, and an
endpoint whose address was in use. Each is asserted in the exposition a scrape reads
(prometheus-client's own registry and parser)."""

from __future__ import annotations

import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.policy.engine import PolicyEngine
from condorpy.queue.records import JobStatus
from condorpy.startd.core import Core
from condorpy.startd.metric_sources import HOLD_CODES, JOB_STATUS_NAMES
from condorpy.startd.metrics import BIND_RETRY_S, Metrics, scrape_text
from condorpy.startd.policy_timers import PolicyTimers

PSLOT = "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"


def _setup(extra: str = "", address: str = "127.0.0.1:0"
           ) -> tuple[PolicyEngine, Metrics, ManualClock]:
    text = ("NUM_CPUS = 4\nMEMORY = 4096\nDISK = 100000\nRUNBENCHMARKS = False\n"
            "START = True\nSUSPEND = False\nPREEMPT = False\nKILL = False\n"
            f"CONDORPY_METRICS_ADDRESS = {address}\n" + PSLOT + extra)
    cfg = Config.from_text(text, source="<test>", env={}, detected=VIRTUAL_DETECTED)
    clock = ManualClock(1000.0)
    eng = Core(cfg, virtual_inventory(cfg)).engine(clock)
    eng.set(1000, {"KeyboardIdle": 100000, "LoadAvg": 0.0})
    eng.cycle(1000)
    return eng, Metrics.from_config(cfg, eng, clock), clock


def _v(m: Metrics, metric: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(metric, labels)  # type: ignore[no-any-return]


def _job(i: int) -> dict[str, Any]:
    return {"JobUniverse": 5, "Owner": "u", "RequestCpus": 1, "RequestMemory": 256,
            "RequestDisk": 1000, "ClusterId": i, "ProcId": 0}


def _names(m: Metrics) -> set[str]:
    return {s.name for fam in text_string_to_metric_families(scrape_text(m.registry))
            for s in fam.samples}


def test_no_start_time_of_our_own_the_process_collector_has_it() -> None:
    _eng, m, _ = _setup()
    m.publish(0.0)
    names = _names(m)
    assert "condorpy_start_time_seconds" not in names
    assert "process_start_time_seconds" in names


def test_every_hold_code_the_daemon_gives_is_there_at_zero() -> None:
    _eng, m, _ = _setup()
    m.publish(0.0)
    # by a user, job policy (and undefined), WANT_HOLD, system policy (and undefined),
    # and the starter's: cannot start, open files, transfer, iwd, user log, account,
    # out of resources
    for code in ("1", "3", "5", "6", "7", "8", "12", "13", "14", "21", "22", "23", "26",
                 "27", "34"):
        assert code in HOLD_CODES
        assert _v(m, "condorpy_job_holds_total", code=code) == 0, code
    m.stats.job_held(21)
    m.stats.job_held(21)
    m.publish(1.0)
    assert _v(m, "condorpy_job_holds_total", code="21") == 2


def test_queue_depth_by_job_status() -> None:
    _eng, m, clock = _setup()
    m.publish(clock.monotonic())
    for name in JOB_STATUS_NAMES.values():       # before any queue is attached
        assert _v(m, "condorpy_queue_jobs", status=name) == 0
    counts = {JobStatus.IDLE: 4, JobStatus.RUNNING: 2, JobStatus.HELD: 1}
    m.attach(lambda: counts, None)
    m.publish(clock.monotonic())
    assert _v(m, "condorpy_queue_jobs", status="Idle") == 4
    assert _v(m, "condorpy_queue_jobs", status="Running") == 2
    assert _v(m, "condorpy_queue_jobs", status="Held") == 1
    assert _v(m, "condorpy_queue_jobs", status="Suspended") == 0
    assert _v(m, "condorpy_queue_jobs", status="Transferring Output") == 0
    # the store is counted again only after a while, not at every publish
    counts[JobStatus.IDLE] = 3
    m.publish(clock.monotonic())
    assert _v(m, "condorpy_queue_jobs", status="Idle") == 4
    clock.advance(5.0)
    m.publish(clock.monotonic())
    assert _v(m, "condorpy_queue_jobs", status="Idle") == 3


def test_reconfig_results_and_last_success() -> None:
    _eng, m, clock = _setup()
    m.publish(0.0)
    assert _v(m, "condorpy_reconfigs_total", result="succeeded") == 0
    assert _v(m, "condorpy_reconfigs_total", result="failed") == 0
    # the configuration read at start is the first success
    assert _v(m, "condorpy_last_reconfig_success_timestamp_seconds") == 1000.0
    assert _v(m, "condorpy_last_reconfig_successful") == 1
    m.stats.reconfigured(False, 1100.0)
    m.publish(1.0)
    assert _v(m, "condorpy_reconfigs_total", result="failed") == 1
    assert _v(m, "condorpy_last_reconfig_successful") == 0
    assert _v(m, "condorpy_last_reconfig_success_timestamp_seconds") == 1000.0
    m.stats.reconfigured(True, 1200.0)
    m.publish(2.0)
    assert _v(m, "condorpy_reconfigs_total", result="succeeded") == 1
    assert _v(m, "condorpy_last_reconfig_successful") == 1
    assert _v(m, "condorpy_last_reconfig_success_timestamp_seconds") == 1200.0


def test_policy_expressions_that_evaluate_to_error_are_counted() -> None:
    # START is ERROR when matched against a job; WANT_SUSPEND is ERROR for a busy slot
    eng, m, _ = _setup('WANT_SUSPEND = MY.Cpus / "x"\nIS_OWNER = "a" + 1\n')
    m.publish(0.0)
    base = _v(m, "condorpy_policy_evaluation_errors_total", expression="IS_OWNER") or 0
    assert base >= 1            # IS_OWNER, evaluated in the first cycle
    assert _v(m, "condorpy_policy_evaluation_errors_total", expression="PREEMPT") == 0
    assert _v(m, "condorpy_policy_evaluation_errors_total", expression="KILL") == 0
    eng.request_claim(1001, "c1", _job(1))
    eng.activate(1001, "c1")
    eng.cycle(1010)
    m.publish(1.0)
    assert (_v(m, "condorpy_policy_evaluation_errors_total", expression="WANT_SUSPEND")
            or 0) >= 1
    assert (_v(m, "condorpy_policy_evaluation_errors_total", expression="IS_OWNER")
            or 0) > base


def test_start_that_is_error_for_a_job_is_counted_and_refuses_it() -> None:
    # true for the slot alone (no job), ERROR against a job
    eng, m, _ = _setup("START = ifThenElse(TARGET.RequestCpus =?= undefined, True, "
                       'TARGET.RequestCpus / "x")\n')
    m.publish(0.0)
    assert _v(m, "condorpy_policy_evaluation_errors_total", expression="START") == 0
    eng.request_claim(1001, "c1", _job(1))
    assert not eng.has_claim("c1")
    m.publish(1.0)
    assert _v(m, "condorpy_policy_evaluation_errors_total", expression="START") == 1


def test_a_failed_policy_cycle_is_counted() -> None:
    eng, m, clock = _setup()

    class Broken:
        def cycle(self, now: float) -> list[Any]:
            raise RuntimeError("bug")

        def poll_interval(self) -> int:
            return 5
    timers = PolicyTimers(Broken(), clock, m, lambda o: None,  # type: ignore[arg-type]
                          measure=lambda: None,  # type: ignore[arg-type,return-value]
                          publish=lambda: None, cycled=lambda: None)
    with pytest.raises(RuntimeError):
        timers.cycle()
    m.publish(0.0)
    assert _v(m, "condorpy_policy_cycle_failures_total") == 1


def test_cgroup_limits_enforced_per_controller(tmp_path: Path) -> None:
    _eng, m, _ = _setup()
    m.publish(0.0)
    for c in ("cpu", "memory", "pids"):     # not placed yet: nothing enforced
        assert _v(m, "condorpy_cgroup_limits_enforced", controller=c) == 0
    scope = tmp_path / "condorpy-jobs.scope"
    scope.mkdir()
    (scope / "cgroup.controllers").write_text("cpuset cpu io memory\n")
    m.placed(str(scope / "starters.leaf"))
    m.publish(1.0)
    assert _v(m, "condorpy_cgroup_limits_enforced", controller="cpu") == 1
    assert _v(m, "condorpy_cgroup_limits_enforced", controller="memory") == 1
    assert _v(m, "condorpy_cgroup_limits_enforced", controller="pids") == 0
    m.placed(None)              # starters stay in the daemon's cgroup: no delegation
    m.publish(2.0)
    assert _v(m, "condorpy_cgroup_limits_enforced", controller="memory") == 0


def test_pool_link_figures_only_in_a_pool() -> None:
    eng, m, clock = _setup()
    m.publish(clock.monotonic())
    assert not any(n.startswith("condorpy_pool_") for n in _names(m))
    eng.request_claim(1001, "e1", _job(1))
    eng.activate(1001, "e1")
    eng.request_claim(1001, "e2", _job(2))
    eng.request_claim(1001, "local", _job(3))       # the local queue's: not the pool's
    pool = SimpleNamespace(
        advertiser=SimpleNamespace(updates_sent=7, failures=2),
        table=[SimpleNamespace(eid="e1"), SimpleNamespace(eid="e2"),
               SimpleNamespace(eid="waiting")],
        reconnects=SimpleNamespace(reconnected=1))
    m.attach(None, pool)  # type: ignore[arg-type]
    m.publish(clock.monotonic())
    assert _v(m, "condorpy_pool_collector_updates_total", result="sent") == 7
    assert _v(m, "condorpy_pool_collector_updates_total", result="failed") == 2
    assert _v(m, "condorpy_pool_claims", state="Running") == 1
    assert _v(m, "condorpy_pool_claims", state="Idle") == 1
    assert _v(m, "condorpy_pool_claims", state="Suspended") == 0
    assert _v(m, "condorpy_pool_claims", state="Killing") == 0
    assert _v(m, "condorpy_pool_shadow_reconnects_total") == 1


def test_an_address_in_use_is_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    _eng, m, clock = _setup(address=f"127.0.0.1:{port}")
    try:
        m.start()
        assert m.bound is None
        assert "trying again every 60 s" in caplog.text
        clock.advance(BIND_RETRY_S)
        m.after_step(0)               # still in use: quietly tried
        assert m.bound is None
        busy.close()
        m.after_step(0)               # not yet due
        assert m.bound is None
        clock.advance(BIND_RETRY_S)
        m.after_step(0)
        assert m.bound == ("127.0.0.1", port)
    finally:
        busy.close()
        m.close()


def test_a_reconfig_tries_an_address_in_use_again_at_once() -> None:
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    _eng, m, _clock = _setup(address=f"127.0.0.1:{port}")
    try:
        m.start()
        assert m.bound is None
        busy.close()
        cfg = Config.from_text(f"CONDORPY_METRICS_ADDRESS = 127.0.0.1:{port}\n",
                               source="<test>", env={}, detected=VIRTUAL_DETECTED)
        m.reconfig(cfg)               # the same address: no error, tried at the next step
        m.after_step(0)
        assert m.bound == ("127.0.0.1", port)
    finally:
        busy.close()
        m.close()
