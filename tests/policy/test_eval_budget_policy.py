"""The policy side of evaluation budgets (issue #25): a claim whose job's expressions are
too costly is refused saying so, a job policy expression too costly holds the job, and
CONDORPY_EVAL_STEP_LIMIT sizes the budget of each evaluation."""

from __future__ import annotations

import pytest

from condorpy.classad import Allowance, CallContext, ClassAd
from condorpy.classad.budget import DEFAULT_STEPS
from condorpy.config import Config
from condorpy.config.defaults import CODE_DEFAULTS
from condorpy.errors import ConfigError
from condorpy.machine.virtual import VIRTUAL_DETECTED
from condorpy.policy.job_policy import (HOLD_JOB_POLICY_UNDEFINED,
                                        HOLD_SYSTEM_POLICY_UNDEFINED, JobAction,
                                        SystemPolicy, at_exit, periodic)
from condorpy.policy.records import ClaimAccepted, ClaimRefused
from condorpy.policy.settings import settings_from_config
from tests.policy.engines import engine_from_text

QUIET = "RUNBENCHMARKS = False\nNUM_SLOTS = 1\n"
NOW = 1_700_000_000.0
IDLE, RUNNING = 1, 2


def _doubling(levels: int) -> str:
    """A0 = 1; Ai = A(i-1) + A(i-1): 2**levels evaluations of A0 for A<levels>."""
    return "A0 = 1\n" + "".join(f"A{i} = A{i - 1} + A{i - 1}\n" for i in range(1, levels + 1))


def _job(extra: str) -> ClassAd:
    return ClassAd.parse_old('JobUniverse = 5\nOwner = "alice"\n' + _doubling(22) + extra)


def _cfg(text: str) -> Config:
    return Config.from_text(text, source="test.conf", env={}, detected=VIRTUAL_DETECTED)


def test_the_knob_defaults_to_the_librarys_budget_and_is_read_by_the_settings() -> None:
    assert CODE_DEFAULTS["CONDORPY_EVAL_STEP_LIMIT"] == str(DEFAULT_STEPS)
    assert settings_from_config(_cfg("")).eval_step_limit == DEFAULT_STEPS
    assert settings_from_config(
        _cfg("CONDORPY_EVAL_STEP_LIMIT = 5000\n")).eval_step_limit == 5000


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_limit_below_one_step_is_refused_naming_file_and_line(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_config(_cfg(f"A = 1\nCONDORPY_EVAL_STEP_LIMIT = {value}\n"))
    assert str(info.value) == (f"CONDORPY_EVAL_STEP_LIMIT = {value} at test.conf:2 is not "
                               "a positive integer")


def _claim(config: str, job: ClassAd, claim: str = "c1") -> list[object]:
    eng = engine_from_text(QUIET + config)
    return eng.request_claim(0.0, claim, job, None)


def test_a_claim_whose_requirements_are_too_costly_is_refused_saying_so() -> None:
    out = _claim("CONDORPY_EVAL_STEP_LIMIT = 1000\n", _job("Requirements = A22 > 0\n"))
    refused = [o for o in out if isinstance(o, ClaimRefused)]
    assert refused and not [o for o in out if isinstance(o, ClaimAccepted)]
    assert refused[0].reason == ("the job's Requirements exceeded the evaluation budget "
                                 "(1000 steps, 0.1 s) against this job")


def test_a_start_that_reads_a_costly_job_attribute_is_refused_saying_so() -> None:
    out = _claim("CONDORPY_EVAL_STEP_LIMIT = 1000\nSTART = TARGET.A22 > 0\n", _job(""))
    refused = [o for o in out if isinstance(o, ClaimRefused)]
    assert refused and refused[0].reason.startswith("START exceeded the evaluation budget")


def test_a_rank_that_reads_a_costly_job_attribute_refuses_the_claim() -> None:
    out = _claim("CONDORPY_EVAL_STEP_LIMIT = 1000\nRANK = TARGET.A22\n", _job(""))
    refused = [o for o in out if isinstance(o, ClaimRefused)]
    assert refused and refused[0].reason.startswith("RANK exceeded the evaluation budget")
    assert not [o for o in out if isinstance(o, ClaimAccepted)]


def test_a_cheap_job_is_claimed_and_the_limit_follows_a_reconfiguration() -> None:
    moderate = ClassAd.parse_old('JobUniverse = 5\nOwner = "alice"\n' + _doubling(12) +
                                 "Requirements = A12 > 0\n")     # 4094 steps
    eng = engine_from_text(QUIET + "CONDORPY_EVAL_STEP_LIMIT = 1000\n")
    out = eng.request_claim(0.0, "c1", moderate, None)
    assert [o for o in out if isinstance(o, ClaimRefused)]
    eng.reconfigure(settings_from_config(_cfg(QUIET + "CONDORPY_EVAL_STEP_LIMIT = 100000\n")))
    out = eng.request_claim(0.0, "c2", moderate, None)
    assert [o for o in out if isinstance(o, ClaimAccepted)]
    assert not [o for o in out if isinstance(o, ClaimRefused)]


def test_the_default_limit_refuses_the_doubling_job_of_the_issue() -> None:
    out = _claim("", _job("Requirements = A22 > 0\n"))
    refused = [o for o in out if isinstance(o, ClaimRefused)]
    assert refused and "exceeded the evaluation budget" in refused[0].reason


# --- the job's own policy ------------------------------------------------------------

def _ctx(steps: int = 1000) -> CallContext:
    return CallContext(now=lambda: NOW, allowance=Allowance(steps))


@pytest.mark.parametrize("status", [IDLE, RUNNING])
def test_a_periodic_expression_too_costly_holds_the_job_idle_or_running(status: int) -> None:
    ad = _job("PeriodicHold = A22 > 0\n")
    got = periodic(ad, status, SystemPolicy({}), _ctx(), NOW,
                   running=status == RUNNING)
    assert got is not None and got.action is JobAction.HOLD and got.over_budget
    assert got.code == HOLD_JOB_POLICY_UNDEFINED
    assert got.reason == ("The job attribute PeriodicHold expression 'A22 > 0' exceeded its "
                          "evaluation budget (1000 steps, 0.1 s)")


def test_a_plain_undefined_periodic_expression_still_leaves_an_idle_job_alone() -> None:
    ad = _job("PeriodicHold = NoSuchAttr\n")
    assert periodic(ad, IDLE, SystemPolicy({}), _ctx(), NOW) is None


def test_a_system_expression_too_costly_against_the_job_holds_it() -> None:
    system = SystemPolicy({"SYSTEM_PERIODIC_REMOVE": "A22 > 100"})
    got = periodic(_job(""), IDLE, system, _ctx(), NOW)
    assert got is not None and got.action is JobAction.HOLD
    assert got.code == HOLD_SYSTEM_POLICY_UNDEFINED
    assert got.reason.startswith("The system macro SYSTEM_PERIODIC_REMOVE expression "
                                 "'A22 > 100' exceeded its evaluation budget")


def test_an_exit_expression_too_costly_holds_the_job() -> None:
    ad = _job("ExitCode = 0\nExitBySignal = false\nOnExitRemove = A22 > 0\n")
    got = at_exit(ad, RUNNING, SystemPolicy({}), _ctx(), NOW)
    assert got is not None and got.action is JobAction.HOLD
    assert "OnExitRemove expression 'A22 > 0' exceeded its evaluation budget" in got.reason


def test_cheap_policy_expressions_decide_as_before_under_an_allowance() -> None:
    ad = _job("PeriodicRemove = A5 == 32\n")
    allowance = Allowance(1000)
    got = periodic(ad, IDLE, SystemPolicy({}), CallContext(now=lambda: NOW,
                                                           allowance=allowance), NOW)
    assert got is not None and got.action is JobAction.REMOVE and not got.over_budget
    assert allowance.exceeded == 0
