"""condor_now's merge of claims (COALESCE_SLOTS) in the policy engine: idle d-slots of
one partitionable slot give their resources back and one new d-slot, born claimed,
is carved for the now-job; refusals say why and whether the schedd may ask again."""

from __future__ import annotations

from condorpy.clock import ManualClock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import ClaimEnded, CoalesceRefused, CreateSlot, DeleteSlot
from condorpy.policy.states import Activity, State
from tests.policy.engines import engine_from_text

CONFIG = """RUNBENCHMARKS = False
NUM_CPUS = 4
MEMORY = 4096
use FEATURE : PartitionableSlot
"""
JOB = {"JobUniverse": 5, "Owner": "alice", "RequestCpus": 1, "RequestMemory": 512,
       "RequestDisk": 1024}


def engine() -> PolicyEngine:
    return engine_from_text(CONFIG, ManualClock(0.0))


def claimed(e: PolicyEngine, cid: str, cpus: int = 1) -> str:
    e.request_claim(1.0, cid, {**JOB, "RequestCpus": cpus}, "slot1")
    return next(s.name for s in e.slots.values() if s.claim is not None and s.claim.id == cid)


def test_two_idle_claims_become_one_claimed_dslot_of_their_size() -> None:
    e = engine()
    a, b = claimed(e, "a", 1), claimed(e, "b", 2)
    assert e.slots["slot1"].resources["Cpus"] == 1
    out = e.coalesce(2.0, ["a", "b", "a"], "now", {**JOB, "RequestCpus": 3})
    assert not [o for o in out if isinstance(o, CoalesceRefused)]
    assert {o.slot for o in out if isinstance(o, DeleteSlot)} == {a, b}
    assert {o.claim for o in out if isinstance(o, ClaimEnded)} == {"a", "b"}
    assert [dict(o.resources)["Cpus"] for o in out if isinstance(o, CreateSlot)] == [3]
    assert not e.has_claim("a") and not e.has_claim("b") and e.has_claim("now")
    slot = next(s for s in e.slots.values() if s.claim is not None)
    assert (slot.state, slot.activity, slot.kind) == (State.CLAIMED, Activity.IDLE, "dynamic")
    assert slot.resources["Cpus"] == 3 and e.slots["slot1"].resources["Cpus"] == 1
    # the new claim runs a job as any claim does
    e.activate(3.0, "now")
    assert slot.activity is Activity.BUSY


def test_a_busy_claim_is_refused_for_now_and_may_be_asked_again() -> None:
    e = engine()
    claimed(e, "a")
    e.activate(1.5, "a")
    out = e.coalesce(2.0, ["a"], "now", JOB)
    refused = [o for o in out if isinstance(o, CoalesceRefused)]
    assert [(r.reason, r.retry) for r in refused] == [("given slot is not idle", True)]
    assert e.has_claim("a") and not e.has_claim("now")
    e.job_exit(3.0, "a")
    out = e.coalesce(4.0, ["a"], "now", JOB)
    assert not [o for o in out if isinstance(o, CoalesceRefused)] and e.has_claim("now")


def test_unknown_claims_and_static_slots_are_refused_for_good() -> None:
    e = engine()
    claimed(e, "a")
    r = [o for o in e.coalesce(2.0, ["a", "nope"], "now", JOB)
         if isinstance(o, CoalesceRefused)]
    assert [(x.reason, x.retry) for x in r] == [("can't find slot with given claim ID", False)]
    assert e.has_claim("a")
    s = engine_from_text("RUNBENCHMARKS = False\nNUM_CPUS = 2\nuse FEATURE : StaticSlots\n",
                         ManualClock(0.0))
    s.request_claim(1.0, "x", JOB, "slot1")
    r = [o for o in s.coalesce(2.0, ["x"], "now", JOB) if isinstance(o, CoalesceRefused)]
    assert [x.reason for x in r] == ["given slot is not dynamic"]


def test_machine_is_the_host_the_slot_names_carry() -> None:
    # the pool's tools find a startd by host name through Machine (daemon_ad.py)
    e = engine_from_text(CONFIG + "FULL_HOSTNAME = ep.example\n", ManualClock(0.0))
    ad = e.ads()[0]
    assert (ad["Name"], ad["Machine"]) == ("slot1@ep.example", "ep.example")
