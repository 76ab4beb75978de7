"""A running job's usage in its job ad: on HTCondor's starter cadence
(STARTER_INITIAL_UPDATE_INTERVAL, then STARTER_UPDATE_INTERVAL) and at once after a
cgroup memory event; the slot's policy (Hold_If_Memory_Exceeded,
Preempt_If_Memory_Exceeded) and the job's periodic expressions act on it. In-process,
on a manual clock (tests/startd/rm_rig.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from condorpy.classad import Expr, Undefined
from condorpy.clock import ManualClock
from condorpy.starter.knobs import JobUpdates
from condorpy.startd.starter_handle import UpdateCadence
from tests.startd.rm_rig import Rig

METRIC = "((ResidentSetSize+1023)/1024)"
JOB = "executable = /bin/sleep\narguments = 300\nrequest_memory = 128\n"


# ------------------------------------------------------------------ the cadence
def test_cadence_first_after_the_initial_interval_then_every_interval() -> None:
    clock = ManualClock(0.0)
    c = UpdateCadence(initial_s=8, interval_s=300)
    c.start(clock.monotonic())
    due = []
    for _ in range(130):                      # a report every 5 s for 650 s
        clock.advance(5)
        if c.due(clock.monotonic()):
            due.append(clock.monotonic())
    assert due == [10.0, 310.0, 610.0]


def test_a_memory_event_updates_at_once_and_leaves_the_cadence_alone() -> None:
    clock = ManualClock(0.0)
    c = UpdateCadence(initial_s=8, interval_s=300)
    c.start(clock.monotonic())
    clock.advance(3)
    assert c.due(clock.monotonic(), event=True)
    clock.advance(2)
    assert not c.due(clock.monotonic())
    clock.advance(5)
    assert c.due(clock.monotonic())           # 10 s: the first periodic update


def test_the_initial_interval_is_never_longer_than_the_interval() -> None:
    c = UpdateCadence(initial_s=8, interval_s=1)
    c.start(0.0)
    assert not c.due(0.5) and c.due(1.0) and not c.due(1.5) and c.due(2.0)


# ------------------------------------------------------------------ through the rig
def _rig(tmp_path: Path, extra: str = "") -> Rig:
    rig = Rig(tmp_path, "PERIODIC_EXPR_INTERVAL = 3600\n" + extra)
    rig.rm.launching.updates = JobUpdates(8.0, 300.0, METRIC)
    return rig


def _usage(rss_kb: int, **more: Any) -> dict[str, Any]:
    return {"event": "usage", "usage": {"RemoteUserCpu": 2.0, "RemoteSysCpu": 0.5,
                                        "ResidentSetSize": rss_kb, "MemoryUsage": 1,
                                        "ImageSize": rss_kb, "DiskUsage": 40}, **more}


def _slot_job_ad(rig: Rig) -> Any:
    claimed = [s for s in rig.engine.slots.values() if s.claim is not None]
    assert len(claimed) == 1
    return claimed[0].claim.ad       # type: ignore[union-attr]


def test_usage_reaches_the_job_ad_on_the_cadence(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.submit(JOB + "queue\n")
    rig.step()
    rig.step(5)
    rig.says("1.0", _usage(1000))
    assert rig.attr("1.0", "ResidentSetSize") is Undefined    # before the initial interval
    rig.step(5)
    rig.says("1.0", _usage(2000))
    rec = rig.store.job(rig.handle("1.0").job_id)        # type: ignore[arg-type]
    assert rec is not None
    assert isinstance(rec.ad.lookup("MemoryUsage"), Expr)  # MEMORY_USAGE_METRIC
    assert rig.attr("1.0", "MemoryUsage") == 2 and rig.attr("1.0", "ResidentSetSize") == 2000
    assert rig.attr("1.0", "DiskUsage") == 40 and rig.attr("1.0", "RemoteUserCpu") == 2.0
    assert rig.attr("1.0", "CpusUsage") == 0.25          # 2.5 CPU-seconds in 10 s
    ad = _slot_job_ad(rig)
    assert ad.evaluate("MemoryUsage") == 2 and ad.evaluate("ResidentSetSize") == 2000
    rig.step(5)
    rig.says("1.0", _usage(3000))                        # not due again for 300 s
    assert rig.attr("1.0", "ResidentSetSize") == 2000


def test_a_memory_event_reaches_the_job_ad_at_once(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.submit(JOB + "queue\n")
    rig.step()
    rig.step(2)
    rig.says("1.0", _usage(1000, memory_events=0))
    assert rig.attr("1.0", "ResidentSetSize") is Undefined
    rig.says("1.0", _usage(5000, memory_events=3))
    assert rig.attr("1.0", "ResidentSetSize") == 5000


def test_hold_if_memory_exceeded_holds_the_job(tmp_path: Path) -> None:
    rig = _rig(tmp_path, "use POLICY : Hold_If_Memory_Exceeded\n")
    rig.submit(JOB + "queue\n")
    rig.step()
    rig.step(10)
    rig.says("1.0", _usage(409600))                      # 400 MB in a 128 MB slot
    assert "soft_kill" in rig.channel.told("1.0")
    assert rig.obey() == ["1.0"]
    assert rig.status("1.0") == 5
    assert rig.attr("1.0", "HoldReasonCode") == 21
    assert rig.attr("1.0", "HoldReasonSubCode") == 102
    assert rig.attr("1.0", "HoldReason") == "memory usage exceeded request_memory"


def test_preempt_if_memory_exceeded_requeues_the_job(tmp_path: Path) -> None:
    rig = _rig(tmp_path, "use POLICY : Preempt_If_Memory_Exceeded\n")
    rig.submit(JOB + "queue\n")
    rig.step()
    rig.step(10)
    rig.says("1.0", _usage(409600))
    assert "soft_kill" in rig.channel.told("1.0")
    rig.obey()
    assert rig.status("1.0") == 1
    assert rig.attr("1.0", "HoldReasonCode") is Undefined


def test_periodic_hold_on_memory_usage_acts_on_the_update(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.submit(JOB + "periodic_hold = MemoryUsage > 200\n"
               "periodic_hold_reason = \"too big\"\nqueue\n")
    rig.step()
    rig.step(10)
    rig.says("1.0", _usage(100 * 1024))
    assert rig.channel.told("1.0") == []
    rig.step(300)
    rig.says("1.0", _usage(409600))
    assert "soft_kill" in rig.channel.told("1.0")
    rig.obey()
    assert rig.status("1.0") == 5
    assert rig.attr("1.0", "HoldReasonCode") == 3
    assert rig.attr("1.0", "HoldReason") == "too big"


def test_periodic_remove_on_remote_user_cpu(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.submit(JOB + "periodic_remove = RemoteUserCpu > 1\nqueue\n")
    rig.step()
    rig.step(10)
    rig.says("1.0", _usage(1000))
    assert "soft_kill" in rig.channel.told("1.0")
    rig.obey()
    assert rig.status("1.0") == 3
