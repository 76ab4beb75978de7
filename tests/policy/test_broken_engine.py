"""Broken slots in the engine: a broken d-slot's claim goes, its resources stay lost to
the p-slot (BrokenSlot*, shrunk TotalSlot*), nothing is claimed on a broken static
slot, and mending gives everything back."""

from __future__ import annotations

from condorpy.clock import ManualClock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import ClaimRefused
from condorpy.policy.states import Activity, State
from condorpy.slots.broken import BrokenCause, BrokenCode
from tests.policy.engines import engine_from_text

PSLOT = "NUM_CPUS = 4\nMEMORY = 4096\nRUNBENCHMARKS = False\n"
JOB = {"Owner": "alice", "RequestCpus": 2, "RequestMemory": 1000, "RequestDisk": 10}


def _ad(eng: object, slot: str, attr: str) -> object:
    return eng.slots[slot].ad.evaluate(attr)   # type: ignore[attr-defined]


def test_broken_dslot_leaves_its_resources_lost_until_mended() -> None:
    eng = engine_from_text(PSLOT, ManualClock(0))
    eng.cycle(0)
    eng.request_claim(0, "c1", JOB)
    eng.activate(1, "c1")
    eng.job_exit(10, "c1", 0, cleaning=True)
    cause = BrokenCause.leftover_processes([4242])
    eng.report_broken(11, "slot1_1", cause, {"JobId": "1.0"})
    assert _ad(eng, "slot1_1", "SlotBrokenCode") == 6
    assert _ad(eng, "slot1_1", "Requirements") == cause.reason
    assert eng.broken.get("slot1_1") is not None
    assert eng.broken.get("slot1_1").context["JobId"] == "1.0"   # type: ignore[union-attr]
    eng.starter_reaped(12, "c1")
    for t in range(13, 40, 5):
        eng.cycle(t)
    assert "slot1_1" not in eng.slots              # the claim went, the d-slot deleted
    assert _ad(eng, "slot1", "Cpus") == 2          # its 2 cpus not given back
    assert _ad(eng, "slot1", "BrokenSlotCpus") == 2
    assert _ad(eng, "slot1", "TotalSlotCpus") == 2
    assert eng.broken.daemon_attrs()["slot1_1BrokenReason"] == cause.reason
    eng.mend(50, "slot1_1", BrokenCode.HUNG_PROCESSES)
    assert _ad(eng, "slot1", "Cpus") == 4 and _ad(eng, "slot1", "TotalSlotCpus") == 4
    assert "BrokenSlotCpus" not in eng.slots["slot1"].ad.keys()
    assert eng.broken.daemon_attrs() == {}


def test_broken_static_slot_refuses_claims_until_mended() -> None:
    eng = engine_from_text("NUM_SLOTS = 1\nNUM_CPUS = 1\nRUNBENCHMARKS = False\n",
                           ManualClock(0))
    eng.cycle(0)
    eng.report_broken(1, "slot1", BrokenCause.cleanup_failed("sandbox not removed"))
    assert _ad(eng, "slot1", "Cpus") == 0
    out = eng.request_claim(2, "c1", {"Owner": "alice"}, "slot1")
    assert any(isinstance(o, ClaimRefused) and "broken" in o.reason for o in out)
    eng.mend(3, "slot1", BrokenCode.UNCLEAN_VOLUME)     # not its cause: still broken
    assert eng.broken.is_broken("slot1")
    eng.mend(4, "slot1")
    assert _ad(eng, "slot1", "Cpus") == 1
    assert "SlotBrokenReason" not in eng.slots["slot1"].ad.keys()
    eng.request_claim(5, "c2", {"Owner": "alice"}, "slot1")
    assert eng.slots["slot1"].state is State.CLAIMED


def test_idle_claim_on_a_broken_slot_is_given_up() -> None:
    eng = engine_from_text("NUM_SLOTS = 1\nNUM_CPUS = 1\nRUNBENCHMARKS = False\n",
                           ManualClock(0))
    eng.cycle(0)
    eng.request_claim(0, "c1", {"Owner": "alice"}, "slot1")
    eng.activate(1, "c1")
    eng.job_exit(5, "c1", 0)
    assert eng.slots["slot1"].activity is Activity.IDLE
    eng.report_broken(6, "slot1", BrokenCause.volume_not_removed("vg/job1"))
    # the idle claim is given up at once, and the slot matches nothing meanwhile
    assert eng.slots["slot1"].state is State.UNCLAIMED and not eng.has_claim("c1")
    assert eng.slots["slot1"].ad.evaluate("SlotBrokenCode") == 5


def _broken_dslot(eng: PolicyEngine) -> None:
    eng.cycle(0)
    eng.request_claim(0, "c1", JOB)
    eng.activate(1, "c1")
    eng.job_exit(10, "c1", 0, cleaning=True)
    eng.report_broken(11, "slot1_1", BrokenCause.of(BrokenCode.HUNG_PROCESSES),
                      {"JobId": "1.0"})
    eng.starter_reaped(12, "c1")
    for t in range(13, 40, 5):
        eng.cycle(t)


def test_a_new_dslot_does_not_take_a_broken_ones_name_until_it_is_mended() -> None:
    eng = engine_from_text(PSLOT, ManualClock(0))
    _broken_dslot(eng)
    assert "slot1_1" not in eng.slots
    eng.request_claim(40, "c2", JOB)
    assert "slot1_2" in eng.slots and eng.broken.get("slot1_2") is None
    assert "SlotBrokenReason" not in eng.slots["slot1_2"].ad.keys()
    eng.release(41, "c2")
    for t in range(42, 60, 5):
        eng.cycle(t)
    eng.mend(60, "slot1_1", BrokenCode.HUNG_PROCESSES)
    eng.request_claim(61, "c3", JOB)
    assert "slot1_1" in eng.slots                    # the name is free again


def test_an_earlier_daemons_broken_dslot_is_restored_lost_to_its_parent() -> None:
    eng = engine_from_text(PSLOT, ManualClock(0))
    _broken_dslot(eng)
    item = eng.broken.get("slot1_1")
    assert item is not None
    fresh = engine_from_text(PSLOT, ManualClock(100))       # the next daemon
    fresh.cycle(100)
    fresh.restore_broken(101, item)
    assert fresh.broken.get("slot1_1") == item               # its time and context kept
    assert _ad(fresh, "slot1", "Cpus") == 2 and _ad(fresh, "slot1", "BrokenSlotCpus") == 2
    fresh.mend(102, "slot1_1", BrokenCode.HUNG_PROCESSES)
    assert _ad(fresh, "slot1", "Cpus") == 4


def test_a_static_slot_is_broken_again_with_its_first_time() -> None:
    text = "NUM_SLOTS = 1\nNUM_CPUS = 1\nRUNBENCHMARKS = False\n"
    eng = engine_from_text(text, ManualClock(0))
    eng.cycle(0)
    eng.report_broken(5, "slot1", BrokenCause.of(BrokenCode.HUNG_CGROUP))
    item = eng.broken.get("slot1")
    assert item is not None and item.cause.reason == "Could not cleanup CGroup for slot"
    fresh = engine_from_text(text, ManualClock(100))
    fresh.cycle(100)
    fresh.restore_broken(101, item)
    restored = fresh.broken.get("slot1")
    assert restored is not None and restored.since == 5
    assert _ad(fresh, "slot1", "SlotBrokenCode") == 7 and _ad(fresh, "slot1", "Cpus") == 0
