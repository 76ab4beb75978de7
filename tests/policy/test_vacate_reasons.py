"""The vacate reason table (HTCondor's CONDOR_HOLD_CODE values) and the reason the
policy engine records for each kind of interruption."""

from __future__ import annotations

import pytest

from condorpy.clock import ManualClock
from condorpy.policy import vacate_reasons as vr
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import EvictWhy
from tests.policy.engines import engine_from_text

JOB = {"JobUniverse": 5, "Owner": "alice", "RequestMemory": 16}


def test_codes_are_htcondors() -> None:
    # condor_holdcodes.h: names and values an administrator's policies compare with
    assert vr.VacateCode.StartdHeldJob == 21
    assert vr.VacateCode.JobOutOfResources == 34
    assert vr.VacateCode.StarterError == 1007
    assert vr.VacateCode.ClaimDeactivated == 1009
    assert vr.VacateCode.StartdVacateCommand == 1010
    assert vr.VacateCode.StartdPreemptExpression == 1011
    assert vr.VacateCode.StartdShutdown == 1013
    assert vr.VacateCode.StartdDraining == 1014
    assert vr.VacateCode.StartdCoalesce == 1015
    assert vr.VacateCode.StartdReleaseCommand == 1017
    assert vr.VacateCode.StartdPreemptingClaimRank == 1018
    assert vr.VacateCode.StartdPreemptingClaimUserPrio == 1019
    assert vr.VacateCode.ActivationRefusedNoMatch == 1027
    assert vr.VacateCode.ActivationRefusedClaimNotFound == 1034
    assert vr.VacateCode.StartdRehoming == 1037
    # every code an execution point sends to requeue is at or above VacateBase
    assert all(v.code >= 1000 or v.code == 0 for v in (
        vr.PREEMPT, vr.KILL, vr.RANK, vr.USER_PRIO, vr.VACATE_COMMAND, vr.RELEASED,
        vr.COALESCED, vr.SHUTDOWN, vr.DRAINING, vr.LEASE, vr.STARTER_FAILED, vr.SYSTEM_OOM))


@pytest.mark.parametrize("why,text,rank,want", [
    (EvictWhy.OWNER, "PREEMPT is True", None, vr.PREEMPT),
    (EvictWhy.OWNER, "condor_vacate", None, vr.VACATE_COMMAND),
    (EvictWhy.DRAIN, "draining (graceful)", None, vr.DRAINING),
    (EvictWhy.SHUTDOWN, "shutdown (fast)", None, vr.SHUTDOWN),
    (EvictWhy.RANK, "better claim c2 (RANK 1)", True, vr.RANK),
    (EvictWhy.RANK, "better claim c2 (RANK 0)", False, vr.USER_PRIO),
    (EvictWhy.RELEASE, "claim released by the schedd", None, vr.RELEASED),
    (EvictWhy.RELEASE, "coalesced into a slot for claim c9", None, vr.COALESCED),
    (EvictWhy.LEASE, "claim lease expired", None, vr.LEASE),
    (EvictWhy.OWNER, "KILL is True", None, vr.KILL),
    (EvictWhy.OWNER, "retirement time over", None, None),
])
def test_each_interruption_has_its_reason(why: EvictWhy, text: str, rank: bool | None,
                                          want: vr.Vacate | None) -> None:
    assert vr.for_eviction(why, text, rank_higher=rank) == want


def test_num_vacates_by_reason_counts_by_code_name() -> None:
    got = vr.counted(None, 1011)
    assert got == {"StartdPreemptExpression": 1}
    got = vr.counted(got, 1011)
    got = vr.counted(got, 1010)
    assert got == {"StartdPreemptExpression": 2, "StartdVacateCommand": 1}
    # a code HTCondor does not know counts as Unspecified, as its schedd counts it
    assert vr.counted(None, 4242) == {"Unspecified": 1}


def test_activation_refusals_have_their_codes() -> None:
    assert vr.activation_refusal("no such claim") is vr.VacateCode.ActivationRefusedClaimNotFound
    assert vr.activation_refusal("CLAIM_WORKLIFE expired") is \
        vr.VacateCode.ActivationRefusedWorklifeExpired
    assert vr.activation_refusal("claim is not idle") is vr.VacateCode.ActivationRefusedNotIdle


def _running(cfg: str = "") -> tuple[PolicyEngine, ManualClock]:
    clock = ManualClock(0.0)
    eng = engine_from_text("NUM_SLOTS = 1\n" + cfg, clock)
    eng.request_claim(0.0, "c1", JOB)
    eng.activate(0.0, "c1")
    assert eng.has_running_job("c1") and eng.vacate_reason("c1") is None
    return eng, clock


def test_engine_records_preempt() -> None:
    eng, _ = _running("PREEMPT = (time() - EnteredCurrentActivity) > 10\n"
                      "MAXJOBRETIREMENTTIME = 0\n")
    eng.cycle(30.0)
    assert eng.vacate_reason("c1") == ("PREEMPT expression evaluated to True", 1011, 0)


def test_engine_records_condor_vacate_and_drain_and_shutdown() -> None:
    eng, _ = _running()
    eng.vacate(5.0)
    assert eng.vacate_reason("c1") == ("Claim vacated by the administrator", 1010, 0)
    eng, _ = _running()
    eng.drain(5.0, how="fast")
    assert eng.vacate_reason("c1") == ("Startd was draining", 1014, 0)
    eng, _ = _running()
    eng.off(5.0, how="fast")
    assert eng.vacate_reason("c1") == ("Startd was shutdown", 1013, 0)


def test_engine_records_rank_preemption() -> None:
    eng, _ = _running('RANK = TARGET.Owner == "bob"\nMAXJOBRETIREMENTTIME = 0\n')
    eng.request_claim(10.0, "c2", {**JOB, "Owner": "bob"})
    assert eng.vacate_reason("c1") == ("Preempted for a higher Ranked job", 1018, 0)


def test_kill_keeps_the_cause_already_recorded() -> None:
    eng, _ = _running("PREEMPT = (time() - EnteredCurrentActivity) > 10\n"
                      "MAXJOBRETIREMENTTIME = 0\nKILL = True\n")
    eng.cycle(30.0)
    eng.cycle(40.0)
    assert eng.vacate_reason("c1") == ("PREEMPT expression evaluated to True", 1011, 0)


def test_engine_records_a_release_by_the_schedd() -> None:
    eng, _ = _running("MAXJOBRETIREMENTTIME = 0\n")
    eng.release(5.0, "c1")
    assert eng.vacate_reason("c1") == ("Schedd released the claim", 1017, 0)
