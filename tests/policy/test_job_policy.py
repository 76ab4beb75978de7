"""The job's own policy expressions, in HTCondor's order and with its hold codes and
reasons (user_job_policy: TimerRemove, PeriodicHold, PeriodicRelease, PeriodicRemove,
then OnExitHold and OnExitRemove; a job's expression before the system knob)."""

from __future__ import annotations

from condorpy.classad import CallContext, ClassAd
from condorpy.policy.job_policy import (JobAction, SystemPolicy, at_exit, periodic)

NOW = 1_700_000_000.0
CTX = CallContext(now=lambda: NOW)
NONE = SystemPolicy({})
IDLE, RUNNING, HELD = 1, 2, 5


def _ad(text: str) -> ClassAd:
    return ClassAd.parse_old("PeriodicHold = false\nPeriodicRelease = false\n"
                             "PeriodicRemove = false\nOnExitHold = false\n"
                             "OnExitRemove = true\n" + text, source="<test>")


def test_nothing_fires_by_default() -> None:
    assert periodic(_ad(""), IDLE, NONE, CTX, NOW) is None
    assert at_exit(_ad("ExitCode = 0\nExitBySignal = false\n"), RUNNING, NONE, CTX, NOW) is None


def test_periodic_hold_with_the_jobs_reason_and_subcode() -> None:
    ad = _ad("PeriodicHold = time() - QDate > 60\nQDate = %d\n"
             'PeriodicHoldReason = "ran too long"\nPeriodicHoldSubCode = 7\n' % (NOW - 61))
    got = periodic(ad, RUNNING, NONE, CTX, NOW)
    assert got is not None and got.action is JobAction.HOLD
    assert (got.reason, got.code, got.subcode) == ("ran too long", 3, 7)
    # a held job is not held again, and the expression is false a second earlier
    assert periodic(ad, HELD, NONE, CTX, NOW) is None
    assert periodic(ad, RUNNING, NONE, CallContext(now=lambda: NOW - 2), NOW - 2) is None


def test_default_reason_names_the_expression() -> None:
    got = periodic(_ad("PeriodicRemove = JobStatus == 1\nJobStatus = 1\n"), IDLE, NONE,
                   CTX, NOW)
    assert got is not None and got.action is JobAction.REMOVE
    assert got.reason == "The job attribute PeriodicRemove expression 'JobStatus == 1' " \
                         "evaluated to TRUE"


def test_release_only_for_held_jobs_and_hold_wins_over_remove() -> None:
    ad = _ad("PeriodicRelease = true\n")
    assert periodic(ad, IDLE, NONE, CTX, NOW) is None
    got = periodic(ad, HELD, NONE, CTX, NOW)
    assert got is not None and got.action is JobAction.RELEASE
    both = periodic(_ad("PeriodicHold = true\nPeriodicRemove = true\n"), IDLE, NONE, CTX, NOW)
    assert both is not None and both.action is JobAction.HOLD
    # a held job's remove still fires
    gone = periodic(_ad("PeriodicHold = true\nPeriodicRemove = true\n"), HELD, NONE, CTX, NOW)
    assert gone is not None and gone.action is JobAction.REMOVE


def test_undefined_holds_a_running_job_with_code_5_and_leaves_a_queued_one() -> None:
    ad = _ad("PeriodicHold = NoSuchAttr > 3\n")
    assert periodic(ad, IDLE, NONE, CTX, NOW) is None
    got = periodic(ad, RUNNING, NONE, CTX, NOW, running=True)
    assert got is not None and got.action is JobAction.HOLD and got.code == 5
    assert got.reason.endswith("evaluated to UNDEFINED")


def test_timer_remove_fires_once_its_time_has_passed() -> None:
    assert periodic(_ad(f"TimerRemove = {int(NOW) + 10}\n"), IDLE, NONE, CTX, NOW) is None
    got = periodic(_ad(f"TimerRemove = {int(NOW) - 1}\n"), IDLE, NONE, CTX, NOW)
    assert got is not None and got.action is JobAction.REMOVE


def test_system_policy_after_the_jobs_own_with_its_codes() -> None:
    system = SystemPolicy.from_config({
        "SYSTEM_PERIODIC_HOLD": "NumJobStarts > 2",
        "SYSTEM_PERIODIC_HOLD_REASON": 'strcat("started ", NumJobStarts, " times")',
        "SYSTEM_PERIODIC_HOLD_SUBCODE": "42"}.get)
    ad = _ad("NumJobStarts = 3\n")
    got = periodic(ad, IDLE, system, CTX, NOW)
    assert got is not None and (got.action, got.code, got.subcode, got.reason) == \
        (JobAction.HOLD, 26, 42, "started 3 times")
    assert got.fired == "SYSTEM_PERIODIC_HOLD"
    own = periodic(_ad("NumJobStarts = 3\nPeriodicHold = true\n"), IDLE, system, CTX, NOW)
    assert own is not None and own.code == 3
    plain = SystemPolicy.from_config({"SYSTEM_PERIODIC_REMOVE": "NumJobStarts > 2"}.get)
    got = periodic(ad, IDLE, plain, CTX, NOW)
    assert got is not None and got.reason == \
        "The system macro SYSTEM_PERIODIC_REMOVE expression 'NumJobStarts > 2' evaluated to TRUE"
    # a system expression that is not a boolean does nothing
    odd = SystemPolicy.from_config({"SYSTEM_PERIODIC_HOLD": "NoSuch"}.get)
    assert periodic(ad, RUNNING, odd, CTX, NOW, running=True) is None


def test_at_exit_hold_requeue_and_complete() -> None:
    held = at_exit(_ad("OnExitHold = ExitCode =!= 0\nExitCode = 3\n"), RUNNING, NONE, CTX, NOW)
    assert held is not None and held.action is JobAction.HOLD and held.code == 3
    assert held.reason == "The job attribute OnExitHold expression 'ExitCode isnt 0' " \
                          "evaluated to TRUE"
    again = at_exit(_ad("OnExitRemove = ExitCode == 0\nExitCode = 1\n"), RUNNING, NONE, CTX, NOW)
    assert again is not None and again.action is JobAction.REQUEUE
    assert at_exit(_ad("OnExitRemove = ExitCode == 0\nExitCode = 0\n"), RUNNING, NONE, CTX,
                   NOW) is None
    # by a signal, ExitCode is undefined: the shadow holds with code 5
    odd = at_exit(_ad("OnExitRemove = ExitCode == 0\nExitBySignal = true\n"), RUNNING, NONE,
                  CTX, NOW)
    assert odd is not None and odd.action is JobAction.HOLD and odd.code == 5
    # the periodic expressions are checked first at exit too
    first = at_exit(_ad("PeriodicRemove = true\nOnExitHold = true\n"), RUNNING, NONE, CTX, NOW)
    assert first is not None and first.action is JobAction.REMOVE
