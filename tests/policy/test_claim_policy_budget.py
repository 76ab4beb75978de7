"""The administrator's policy expressions that read the job (issue 25): a job that makes
one of them costly (an attribute PREEMPT reads, set to a doubling expression) is
refused at claim time saying which, as START, Requirements and RANK are; one that
becomes costly while the job runs is an ERROR there (not True: the job is neither
suspended nor preempted by it) and is counted with the policy's evaluation errors."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd
from condorpy.policy.records import Action, ClaimAccepted, ClaimRefused
from tests.policy.engines import engine_from_text

QUIET = "RUNBENCHMARKS = False\nNUM_SLOTS = 1\nCONDORPY_EVAL_STEP_LIMIT = 1000\n"


def _doubling(levels: int) -> str:
    return "A0 = 1\n" + "".join(f"A{i} = A{i - 1} + A{i - 1}\n" for i in range(1, levels + 1))


def _job(levels: int) -> ClassAd:
    return ClassAd.parse_old('JobUniverse = 5\nOwner = "alice"\n' + _doubling(levels))


@pytest.mark.parametrize("knob", ["WANT_SUSPEND", "SUSPEND", "CONTINUE", "PREEMPT",
                                  "WANT_VACATE", "KILL", "MAXJOBRETIREMENTTIME",
                                  "WANT_HOLD"])
def test_a_claim_whose_job_makes_a_policy_expression_costly_is_refused(knob: str) -> None:
    eng = engine_from_text(QUIET + f"{knob} = TARGET.A22 > 0\n")
    out = eng.request_claim(0.0, "c1", _job(22), None)
    refused = [o for o in out if isinstance(o, ClaimRefused)]
    assert refused and not [o for o in out if isinstance(o, ClaimAccepted)]
    assert refused[0].reason == (f"{knob} exceeded the evaluation budget (1000 steps, "
                                 "0.1 s) against this job")
    # a job for which the same policy is cheap is claimed
    out = eng.request_claim(0.0, "c2", _job(5), None)
    assert [o for o in out if isinstance(o, ClaimAccepted)]


def test_the_vanilla_variant_the_slot_would_use_is_the_one_checked_and_named() -> None:
    eng = engine_from_text(QUIET + "PREEMPT = False\nPREEMPT_VANILLA = TARGET.A22 > 0\n")
    out = eng.request_claim(0.0, "c1", _job(22), None)
    refused = [o for o in out if isinstance(o, ClaimRefused)]
    assert refused and refused[0].reason.startswith("PREEMPT_VANILLA exceeded the "
                                                    "evaluation budget")


def test_a_policy_made_costly_while_the_job_runs_is_an_error_not_a_preemption() -> None:
    eng = engine_from_text(QUIET + "PREEMPT = isError(TARGET.A22) || TARGET.A22 > 0\n"
                           "WANT_SUSPEND = isError(TARGET.A22) || TARGET.A22 > 0\n"
                           "SUSPEND = True\n")
    eng.cycle(0)
    out = eng.request_claim(0.0, "c1", _job(5), None)
    assert [o for o in out if isinstance(o, ClaimAccepted)]
    eng.activate(1.0, "c1", _job(22))      # the shadow's job ad: costly
    actions: list[Action] = []
    for t in range(2, 12, 2):
        actions += [o for o in eng.cycle(float(t)) if isinstance(o, Action)]
    # had the overrun's error been swallowed (isError(...) is true once the budget is
    # spent), the slot would have suspended or retired the job
    assert not [a for a in actions if a.kind in ("suspend", "vacate", "hard_kill")], \
        actions
    slot = next(iter(eng.slots.values()))
    assert (slot.state.value, slot.activity.value) == ("Claimed", "Busy")
    errors = eng.evaluation_errors()
    assert errors.get("WANT_SUSPEND", 0) >= 5 and errors.get("PREEMPT", 0) >= 5, errors
