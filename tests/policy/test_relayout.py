"""A reconfigured slot layout applies to slots as they become free (manual §3.5.10:
the number of slots of each type may change at a reconfig): leaving slots take no new
claim, free ones go at once, and the new slots come once everything they replace is
gone. Running jobs are never touched."""

from __future__ import annotations

from condorpy.clock import ManualClock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import ClaimRefused, DeleteSlot, HardKill, SoftKill, Suspend
from condorpy.policy.states import State
from condorpy.slots.manager import SlotManager

from tests.policy.engines import core_from_text

STATIC = "NUM_CPUS = 4\nMEMORY = 4096\nNUM_SLOTS_TYPE_1 = {n}\nSLOT_TYPE_1 = cpus=1, mem=512\n"
PARTITIONABLE = ("NUM_CPUS = 4\nMEMORY = 4096\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
                 "SLOT_TYPE_1_PARTITIONABLE = True\n")
JOB = {"RequestCpus": 1, "RequestMemory": 64, "RequestDisk": 1, "Owner": "alice",
       "JobUniverse": 5}


def _engine(text: str, clock: ManualClock) -> PolicyEngine:
    eng = core_from_text(text).engine(clock)
    eng.cycle(clock.time())
    return eng


def _layout(text: str, eng: PolicyEngine) -> SlotManager:
    core = core_from_text(text)
    return SlotManager.from_config(core.config, core.inventory, started_at=0.0)


def _run_job(eng: PolicyEngine, now: float, claim: str, slot: str) -> None:
    eng.request_claim(now, claim, JOB, slot)
    eng.activate(now, claim)


def test_fewer_slots_free_one_goes_at_once_busy_one_when_free() -> None:
    clock = ManualClock(100.0)
    eng = _engine(STATIC.format(n=3), clock)
    assert sorted(eng.slots) == ["slot1", "slot2", "slot3"]
    _run_job(eng, 100.0, "c3", "slot3")
    assert eng.slots["slot3"].state is State.CLAIMED
    eng.take_output()

    change = eng.relayout(_layout(STATIC.format(n=1), eng))
    assert change.going == ("slot2", "slot3") and change.coming == ()
    out = eng.take_output()
    assert [a.slot for a in out if isinstance(a, DeleteSlot)] == ["slot2"]
    # the busy slot keeps its job: nothing kills, suspends or vacates it
    assert not [a for a in out if isinstance(a, (SoftKill, HardKill, Suspend))]
    assert sorted(eng.slots) == ["slot1", "slot3"]
    assert eng.slots["slot3"].state is State.CLAIMED

    # a leaving slot takes no new claim
    out = eng.request_claim(101.0, "c-new", JOB, "slot3")
    refused = [a for a in out if isinstance(a, ClaimRefused)]
    assert refused and "leaves the layout" in refused[0].reason

    eng.job_exit(110.0, "c3", exit_code=0)
    eng.release(110.0, "c3")
    eng.cycle(111.0)
    assert sorted(eng.slots) == ["slot1"]
    assert eng.layout_pending is None
    assert [s.name for s in eng.layout] == ["slot1"]


def test_static_to_partitionable_comes_after_the_busy_slot_is_free() -> None:
    clock = ManualClock(100.0)
    eng = _engine(STATIC.format(n=2), clock)
    _run_job(eng, 100.0, "c1", "slot1")
    eng.take_output()

    eng.relayout(_layout(PARTITIONABLE, eng))
    # slot2 went at once; the p-slot waits for slot1, which still runs its job
    assert sorted(eng.slots) == ["slot1"]
    assert eng.slots["slot1"].kind == "static"
    pending = eng.layout_pending
    assert pending is not None and pending.going == ("slot1",)

    eng.job_exit(120.0, "c1", exit_code=0)
    eng.release(120.0, "c1")
    eng.cycle(121.0)
    assert eng.layout_pending is None
    slot = eng.slots["slot1"]
    assert slot.kind == "partitionable" and slot.resources["Cpus"] == 4
    assert slot.ad.evaluate("PartitionableSlot") is True
    # the new p-slot carves d-slots as any other
    eng.cycle(122.0)
    out = eng.request_claim(122.0, "c2", JOB, "slot1")
    assert not any(isinstance(a, ClaimRefused) for a in out)
    assert any(s.kind == "dynamic" for s in eng.slots.values())


def test_more_slots_come_at_once_and_an_unchanged_layout_changes_nothing() -> None:
    clock = ManualClock(100.0)
    eng = _engine(STATIC.format(n=1), clock)
    assert eng.relayout(_layout(STATIC.format(n=1), eng)).empty
    change = eng.relayout(_layout(STATIC.format(n=3), eng))
    assert change.going == () and [p.slot_id for p in change.coming] == [2, 3]
    assert sorted(eng.slots) == ["slot1", "slot2", "slot3"]
    eng.cycle(101.0)
    assert eng.slots["slot3"].state in (State.UNCLAIMED, State.OWNER)
    _run_job(eng, 101.0, "c3", "slot3")
    assert eng.slots["slot3"].state is State.CLAIMED
