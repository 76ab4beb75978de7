"""Broken slots in the engine: a broken d-slot's claim goes, its resources stay lost to
the p-slot (BrokenSlot*, shrunk TotalSlot*), nothing is claimed on a broken static
slot, and mending gives everything back."""

from __future__ import annotations

from condorpy.clock import ManualClock
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
