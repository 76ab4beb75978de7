"""A held job's periodic expression that runs out of its evaluation budget (issue 25) is
remembered against the ad as it is and not evaluated again until the ad, the system
policy or the budget changes; the job's other expressions are evaluated on; a job not
held is held as before; jobs no longer in the queue are forgotten."""

from __future__ import annotations

from condorpy.classad import Allowance, CallContext, ClassAd
from condorpy.policy.job_policy import (JobAction, Overruns, SystemPolicy,
                                        periodic_remembering)

NOW = 1_700_000_000.0
IDLE, HELD = 1, 5


def _job(extra: str) -> ClassAd:
    doubling = "A0 = 1\n" + "".join(f"A{i} = A{i - 1} + A{i - 1}\n" for i in range(1, 23))
    return ClassAd.parse_old('JobUniverse = 5\nOwner = "alice"\n' + doubling + extra)


def _ctx(allowance: Allowance) -> CallContext:
    return CallContext(now=lambda: NOW, allowance=allowance)


def test_a_held_jobs_costly_release_is_evaluated_once_per_version_of_its_ad() -> None:
    ad = _job("PeriodicRelease = A22 > 0\n")
    allowance, overruns = Allowance(1000), Overruns()
    got, noted = periodic_remembering(ad, HELD, SystemPolicy({}), _ctx(allowance), NOW,
                                      job="1.0", overruns=overruns)
    assert got is None and allowance.exceeded == 1
    assert [n.fired for n in noted] == ["PeriodicRelease"]
    assert "PeriodicRelease expression 'A22 > 0' exceeded its evaluation budget" \
        in noted[0].reason
    for _ in range(5):                  # every later interval: not evaluated, not said
        got, noted = periodic_remembering(ad, HELD, SystemPolicy({}), _ctx(allowance),
                                          NOW, job="1.0", overruns=overruns)
        assert got is None and noted == []
    assert allowance.exceeded == 1
    # a qedit changes the ad: evaluated (and remembered) again
    ad["Note"] = "edited"
    got, noted = periodic_remembering(ad, HELD, SystemPolicy({}), _ctx(allowance), NOW,
                                      job="1.0", overruns=overruns)
    assert allowance.exceeded == 2 and len(noted) == 1
    # so does another budget (a reconfiguration)
    allowance.resize(2000)
    got, noted = periodic_remembering(ad, HELD, SystemPolicy({}), _ctx(allowance), NOW,
                                      job="1.0", overruns=overruns)
    assert allowance.exceeded == 3 and len(noted) == 1
    # and a release makes it a job not held: its PeriodicRelease is not asked at all
    ad["JobStatus"] = IDLE
    got, noted = periodic_remembering(ad, IDLE, SystemPolicy({}), _ctx(allowance), NOW,
                                      job="1.0", overruns=overruns)
    assert got is None and noted == [] and allowance.exceeded == 3


def test_the_held_jobs_other_expressions_are_evaluated_past_the_costly_one() -> None:
    ad = _job("PeriodicRelease = A22 > 0\nPeriodicRemove = A3 == 8\n")
    allowance, overruns = Allowance(1000), Overruns()
    for _ in range(2):
        got, _noted = periodic_remembering(ad, HELD, SystemPolicy({}), _ctx(allowance),
                                           NOW, job="1.0", overruns=overruns)
        assert got is not None and got.action is JobAction.REMOVE
        assert got.fired == "PeriodicRemove"
    assert allowance.exceeded == 1


def test_a_costly_system_expression_is_remembered_until_the_policy_changes() -> None:
    ad = _job("")
    allowance, overruns = Allowance(1000), Overruns()
    system = SystemPolicy({"SYSTEM_PERIODIC_REMOVE": "A22 > 100"})
    for _ in range(3):
        got, _noted = periodic_remembering(ad, HELD, system, _ctx(allowance), NOW,
                                           job="1.0", overruns=overruns)
        assert got is None
    assert allowance.exceeded == 1
    changed = SystemPolicy({"SYSTEM_PERIODIC_REMOVE": "A21 > 100"})
    got, noted = periodic_remembering(ad, HELD, changed, _ctx(allowance), NOW,
                                      job="1.0", overruns=overruns)
    assert allowance.exceeded == 2 and [n.fired for n in noted] == ["SYSTEM_PERIODIC_REMOVE"]
    assert noted[0].reason.startswith("The system macro SYSTEM_PERIODIC_REMOVE expression "
                                      "'A21 > 100' exceeded its evaluation budget")


def test_a_job_not_held_is_held_by_its_costly_expression_and_nothing_is_remembered(
        ) -> None:
    ad = _job("PeriodicHold = A22 > 0\n")
    overruns = Overruns()
    got, noted = periodic_remembering(ad, IDLE, SystemPolicy({}), _ctx(Allowance(1000)),
                                      NOW, job="1.0", overruns=overruns)
    assert got is not None and got.action is JobAction.HOLD and got.over_budget
    assert noted == [] and len(overruns) == 0


def test_jobs_a_walk_did_not_meet_are_forgotten() -> None:
    allowance, overruns = Allowance(1000), Overruns()
    ads = {job: _job("PeriodicRelease = A22 > 0\n") for job in ("1.0", "1.1")}
    for job, ad in ads.items():
        periodic_remembering(ad, HELD, SystemPolicy({}), _ctx(allowance), NOW, job=job,
                             overruns=overruns)
    overruns.sweep()
    assert len(overruns) == 2
    # the next walk meets 1.1 only (1.0 was removed)
    periodic_remembering(ads["1.1"], HELD, SystemPolicy({}), _ctx(allowance), NOW,
                         job="1.1", overruns=overruns)
    overruns.sweep()
    assert len(overruns) == 1 and allowance.exceeded == 2
