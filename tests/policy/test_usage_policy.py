"""The slot's policy over the job's usage: the starter's updates reach the claim's job
ad (``PolicyEngine.job_update``), PREEMPT over MemoryUsage acts at once, and WANT_HOLD
turns the eviction into a hold with HTCondor's code 21 and the template's subcode."""

from __future__ import annotations

from pathlib import Path

from condorpy.classad import Undefined, parse_expr
from condorpy.policy.records import HardKill, SoftKill, StateChange, STARTD_HELD_JOB
from tests.policy.engines import engine_from_text
from tests.policy.sim import simulate

BASE = "NUM_SLOTS = 1\nMEMORY = 128\nRUNBENCHMARKS = False\n"
JOB = {"JobUniverse": 5, "Owner": "alice", "RequestMemory": 128}
USAGE_400MB = {"ResidentSetSize": 409600,
               "MemoryUsage": parse_expr("((ResidentSetSize+1023)/1024)")}


def _running(text: str):  # type: ignore[no-untyped-def]
    eng = engine_from_text(BASE + text)
    eng.cycle(0.0)
    eng.request_claim(0.0, "c1", JOB)
    eng.activate(0.0, "c1")
    return eng


def test_hold_if_memory_exceeded_holds_with_code_21_subcode_102() -> None:
    eng = _running("use POLICY : Hold_If_Memory_Exceeded\n")
    assert eng.job_update(5.0, "c1", {"ResidentSetSize": 1024,
                                      "MemoryUsage": USAGE_400MB["MemoryUsage"]}) == []
    out = eng.job_update(10.0, "c1", USAGE_400MB)
    kills = [o for o in out if isinstance(o, SoftKill)]
    assert len(kills) == 1
    assert kills[0].hold_reason == "memory usage exceeded request_memory"
    assert kills[0].hold_subcode == 102
    assert STARTD_HELD_JOB == 21
    states = [(o.state.value, o.activity.value) for o in out if isinstance(o, StateChange)]
    assert ("Preempting", "Vacating") in states
    # the vacate time ends in a hard kill that still says hold
    out = eng.cycle(10.0 + 601)
    hard = [o for o in out if isinstance(o, HardKill)]
    assert hard and hard[0].hold_subcode == 102


def test_preempt_if_memory_exceeded_evicts_without_hold() -> None:
    eng = _running("use POLICY : Preempt_If_Memory_Exceeded\n")
    out = eng.job_update(10.0, "c1", USAGE_400MB)
    kills = [o for o in out if isinstance(o, SoftKill)]
    assert len(kills) == 1 and kills[0].hold_reason is None
    assert "hold_reason" not in kills[0].as_json()


def test_memory_under_the_slot_changes_nothing() -> None:
    eng = _running("use POLICY : Hold_If_Memory_Exceeded\n")
    out = eng.job_update(10.0, "c1", {"ResidentSetSize": 100 * 1024,
                                      "MemoryUsage": USAGE_400MB["MemoryUsage"]})
    assert out == []
    assert eng.slots["slot1"].claim is not None
    assert eng.slots["slot1"].claim.ad.evaluate("MemoryUsage") == 100


def test_want_hold_without_reason_says_what_htcondor_says() -> None:
    eng = _running("PREEMPT = MemoryUsage > Memory\nWANT_HOLD = True\n")
    out = eng.job_update(10.0, "c1", {"MemoryUsage": 400})
    kill = next(o for o in out if isinstance(o, SoftKill))
    assert kill.hold_reason == ("The startd put this job on hold.  (At preemption time, "
                                "WANT_HOLD evaluated to true: WANT_HOLD = True)")
    assert kill.hold_subcode == 0


def test_want_hold_needs_preempt_to_have_been_true() -> None:
    """A vacate for another reason (an administrator's) is no hold, even with WANT_HOLD."""
    eng = _running("WANT_HOLD = True\n")
    out = eng.vacate(10.0)
    kill = next(o for o in out if isinstance(o, SoftKill))
    assert kill.hold_reason is None


def test_updates_after_the_claim_ended_are_ignored() -> None:
    eng = _running("")
    eng.job_exit(5.0, "c1", 0)
    eng.release(5.0, "c1")
    assert eng.job_update(6.0, "c1", USAGE_400MB) == []
    assert eng.job_update(6.0, "unknown", USAGE_400MB) == []


def test_policy_simulate_takes_job_updates(tmp_path: Path) -> None:
    recs = simulate(tmp_path, BASE + "use POLICY : Hold_If_Memory_Exceeded\n", [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "job_update", "id": "c1",
         "attrs": {"ResidentSetSize": 409600,
                   "MemoryUsage": "/Expr((ResidentSetSize+1023)/1024)/"}}])
    kill = next(r for r in recs if r.get("action") == "soft_kill")
    assert kill["t"] == 10 and kill["hold_subcode"] == 102
    assert kill["hold_reason"] == "memory usage exceeded request_memory"


def test_the_claimed_slot_ad_carries_the_jobs_usage() -> None:
    """SYSTEM_STARTD_JOB_ATTRS (and STARTD_JOB_ATTRS): the slot's own copies, so that
    MY.MemoryUsage in a policy, and condor_status -l, see the job's usage."""
    eng = _running("STARTD_JOB_ATTRS = Owner\nPREEMPT = MY.MemoryUsage > 300\n")
    ad = eng.slots["slot1"].ad
    assert ad.evaluate("Owner") == "alice" and ad.evaluate("MemoryUsage") is Undefined
    out = eng.job_update(10.0, "c1", {"ResidentSetSize": 200 * 1024,
                                      "MemoryUsage": USAGE_400MB["MemoryUsage"]})
    assert out == [] and ad.evaluate("MemoryUsage") == 200
    assert str(ad.lookup("MemoryUsage")) == "((ResidentSetSize + 1023) / 1024)"
    out = eng.job_update(20.0, "c1", USAGE_400MB)
    assert any(isinstance(o, SoftKill) for o in out)
    eng.job_exit(30.0, "c1", 0)
    eng.cycle(31.0)
    assert eng.slots["slot1"].ad.evaluate("MemoryUsage") is Undefined
