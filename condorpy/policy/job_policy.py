"""A job's own policy: the periodic and on-exit expressions the schedd evaluates
(``periodic_hold``, ``periodic_release``, ``periodic_remove``, ``on_exit_hold``,
``on_exit_remove``, ``TimerRemove`` and the administrator's ``SYSTEM_PERIODIC_*``).

The order and the outcomes are HTCondor's user job policy: the first check that fires
wins, in the order TimerRemove, PeriodicHold (a job not held), PeriodicRelease (a held
job), PeriodicRemove, then at exit OnExitHold and OnExitRemove. A job's own expression
is consulted before the system one of the same kind. A job expression that is present
but does not evaluate to a boolean holds a running job (code 5, "evaluated to
UNDEFINED"), as the shadow does, and changes nothing for a job waiting in the queue, as
the schedd does; a system expression that does not is ignored. An expression that runs
out of its evaluation budget (the context's :class:`~condorpy.classad.Allowance`)
holds the job whatever its state, saying so (code 5 for the job's own expression, 27
for a system one), so that it does not cost the schedd as much again at every
interval. A job already held gains nothing by that hold, so an expression of a held job
that runs out is remembered against the ad as it is (:class:`Overruns`) and not
evaluated again until the ad changes (a qedit, a release), the policy, or the budget.
Pure: ads, knob texts and the clock come in, a decision goes out.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from condorpy.classad import CallContext, ClassAd, Error, Undefined, parse_expr
from condorpy.errors import ClassAdError

# HoldReasonCode values (HTCondor's condor_holdcodes.h)
HOLD_JOB_POLICY = 3
HOLD_JOB_POLICY_UNDEFINED = 5
HOLD_SYSTEM_POLICY = 26
HOLD_SYSTEM_POLICY_UNDEFINED = 27


class JobAction(Enum):
    HOLD = "hold"
    RELEASE = "release"
    REMOVE = "remove"
    REQUEUE = "requeue"     # at exit only: OnExitRemove is false, the job runs again


@dataclass(frozen=True)
class JobDecision:
    action: JobAction
    reason: str
    code: int = 0           # HoldReasonCode, for a hold
    subcode: int = 0
    fired: str = ""         # the attribute or knob that decided
    over_budget: bool = False   # held because the expression ran out of its budget


@dataclass(frozen=True)
class SystemPolicy:
    """The SYSTEM_PERIODIC_{HOLD,RELEASE,REMOVE} knobs with their _REASON and _SUBCODE
    companions, as texts (an empty or missing knob is no policy)."""

    knobs: Mapping[str, str]

    @classmethod
    def from_config(cls, get: Any) -> "SystemPolicy":
        names = [f"SYSTEM_PERIODIC_{k}{s}" for k in ("HOLD", "RELEASE", "REMOVE")
                 for s in ("", "_REASON", "_SUBCODE")]
        return cls({n: v for n in names if (v := get(n))})


# Job status codes, as in the queue
_HELD = 5
_PERIODIC = (("PeriodicHold", "SYSTEM_PERIODIC_HOLD", JobAction.HOLD),
             ("PeriodicRelease", "SYSTEM_PERIODIC_RELEASE", JobAction.RELEASE),
             ("PeriodicRemove", "SYSTEM_PERIODIC_REMOVE", JobAction.REMOVE))


def periodic(ad: ClassAd, status: int, system: SystemPolicy, ctx: CallContext,
             now: float, *, running: bool = False,
             skip: frozenset[str] = frozenset()) -> JobDecision | None:
    """What the periodic expressions decide for a job in ``status`` now, if anything;
    ``running``: the job has a starter (an undefined expression then holds it);
    ``skip``: the attributes and knobs not to evaluate (taken as not firing)."""
    got = _periodic(ad, status, system, ctx, now, skip)
    if got is not None and got.code == HOLD_JOB_POLICY_UNDEFINED and not running \
            and not got.over_budget:
        return None
    return got


def _spent(ctx: CallContext) -> int:
    """How many evaluations with ``ctx`` have run out of their budget so far."""
    return 0 if ctx.allowance is None else ctx.allowance.exceeded


def _over_budget(ad: ClassAd, attr: str, ctx: CallContext, before: int, *,
                 knob: str = "") -> JobDecision | None:
    """The hold for an expression that ran out of its budget since ``before``."""
    allowance = ctx.allowance
    if allowance is None or allowance.exceeded == before:
        return None
    if knob:
        return JobDecision(JobAction.HOLD,
                           f"The system macro {knob} expression '{attr}' exceeded its "
                           f"evaluation budget ({allowance.describe()})",
                           HOLD_SYSTEM_POLICY_UNDEFINED, fired=knob, over_budget=True)
    return JobDecision(JobAction.HOLD,
                       f"The job attribute {attr} expression '{ad.lookup(attr)}' exceeded "
                       f"its evaluation budget ({allowance.describe()})",
                       HOLD_JOB_POLICY_UNDEFINED, fired=attr, over_budget=True)


def _periodic(ad: ClassAd, status: int, system: SystemPolicy, ctx: CallContext,
              now: float, skip: frozenset[str]) -> JobDecision | None:
    if ad.lookup("TimerRemove") is not None and "TimerRemove" not in skip:
        before = _spent(ctx)
        timer = ad.evaluate("TimerRemove", None, ctx)
        over = _over_budget(ad, "TimerRemove", ctx, before)
        if over is not None:
            return over
        if not isinstance(timer, (int, float)) or isinstance(timer, bool):
            return _undefined(ad, "TimerRemove", JobAction.HOLD)
        if 0 <= timer < now:
            return JobDecision(JobAction.REMOVE,
                               _default_reason(ad, "TimerRemove", True), HOLD_JOB_POLICY,
                               fired="TimerRemove")
    for attr, knob, action in _PERIODIC:
        if action is JobAction.HOLD and status == _HELD:
            continue
        if action is JobAction.RELEASE and status != _HELD:
            continue
        got = _single(ad, attr, knob, action, system, ctx, skip)
        if got is not None:
            return got
    return None


def at_exit(ad: ClassAd, status: int, system: SystemPolicy, ctx: CallContext,
            now: float) -> JobDecision | None:
    """What happens to a job whose ad carries its exit (ExitCode or ExitSignal, and
    ExitBySignal): a periodic decision first, then OnExitHold, then OnExitRemove;
    None means it completed."""
    got = periodic(ad, status, system, ctx, now, running=True)
    if got is not None:
        return got
    for attr, action in (("OnExitHold", JobAction.HOLD), ("OnExitRemove", JobAction.REQUEUE)):
        if ad.lookup(attr) is None:
            continue
        before = _spent(ctx)
        value = ad.evaluate(attr, None, ctx)
        over = _over_budget(ad, attr, ctx, before)
        if over is not None:
            return over
        if not isinstance(value, bool):
            return _undefined(ad, attr, JobAction.HOLD)
        if attr == "OnExitHold" and value:
            code, sub, reason = _custom(ad, attr, ctx, HOLD_JOB_POLICY)
            return JobDecision(JobAction.HOLD, reason or _default_reason(ad, attr, True),
                               code, sub, attr)
        if attr == "OnExitRemove" and not value:
            return JobDecision(JobAction.REQUEUE,
                               _default_reason(ad, attr, False), fired=attr)
    return None


def _single(ad: ClassAd, attr: str, knob: str, action: JobAction, system: SystemPolicy,
            ctx: CallContext, skip: frozenset[str] = frozenset()) -> JobDecision | None:
    if ad.lookup(attr) is not None and attr not in skip:
        before = _spent(ctx)
        value = ad.evaluate(attr, None, ctx)
        over = _over_budget(ad, attr, ctx, before)
        if over is not None:
            return over
        if not isinstance(value, bool):
            return _undefined(ad, attr, JobAction.HOLD)
        if value:
            code, sub, reason = _custom(ad, attr, ctx, HOLD_JOB_POLICY)
            return JobDecision(action, reason or _default_reason(ad, attr, True), code, sub,
                               attr)
    text = system.knobs.get(knob)
    if not text or knob in skip:
        return None
    before = _spent(ctx)
    fired = _knob_value(ad, text, ctx)
    over = _over_budget(ad, text, ctx, before, knob=knob)
    if over is not None:
        return over
    if fired is not True:
        return None
    reason = _knob_value(ad, system.knobs.get(f"{knob}_REASON", ""), ctx)
    sub = _knob_value(ad, system.knobs.get(f"{knob}_SUBCODE", ""), ctx)
    if not isinstance(reason, str) or not reason:
        reason = f"The system macro {knob} expression '{text}' evaluated to TRUE"
    return JobDecision(action, reason, HOLD_SYSTEM_POLICY,
                       sub if isinstance(sub, int) and not isinstance(sub, bool) else 0, knob)


def _knob_value(ad: ClassAd, text: str, ctx: CallContext) -> Any:
    if not text.strip():
        return Undefined
    try:
        return parse_expr(text).evaluate(ad, None, ctx)
    except ClassAdError:
        return Error


def _custom(ad: ClassAd, attr: str, ctx: CallContext, code: int) -> tuple[int, int, str]:
    """``<attr>Reason`` and ``<attr>SubCode`` as the job set them (submit's
    periodic_hold_reason and friends)."""
    reason = ad.evaluate(f"{attr}Reason", None, ctx)
    sub = ad.evaluate(f"{attr}SubCode", None, ctx)
    return (code, sub if isinstance(sub, int) and not isinstance(sub, bool) else 0,
            reason if isinstance(reason, str) else "")


def _default_reason(ad: ClassAd, attr: str, value: bool) -> str:
    expr = ad.lookup(attr)
    return (f"The job attribute {attr} expression '{expr}' evaluated to "
            f"{'TRUE' if value else 'FALSE'}")


def _undefined(ad: ClassAd, attr: str, action: JobAction) -> JobDecision:
    expr = ad.lookup(attr)
    return JobDecision(action, f"The job attribute {attr} expression '{expr}' evaluated to "
                       "UNDEFINED", HOLD_JOB_POLICY_UNDEFINED, fired=attr)


@dataclass
class _Overrun:
    mark: int                 # what the ad, the policy and the budget were
    names: frozenset[str]     # its attributes and knobs that ran out against them
    seen: bool = True


class Overruns:
    """The periodic expressions of held jobs that ran out of their budget, per job:
    one small entry each (a fingerprint and the names), kept while the job is seen in
    the queue's walks (:meth:`sweep` forgets the others)."""

    def __init__(self) -> None:
        self._jobs: dict[Hashable, _Overrun] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def skip(self, job: Hashable, mark: Callable[[], int]) -> frozenset[str]:
        """What not to evaluate for ``job`` now: what ran out against the same
        ``mark()`` (computed only for a job that has an entry)."""
        entry = self._jobs.get(job)
        if entry is None:
            return frozenset()
        entry.seen = True
        if entry.mark != mark():
            del self._jobs[job]         # the ad or the policy changed: evaluate afresh
            return frozenset()
        return entry.names

    def note(self, job: Hashable, mark: int, name: str) -> None:
        entry = self._jobs.get(job)
        if entry is None or entry.mark != mark:
            self._jobs[job] = _Overrun(mark, frozenset((name,)))
        else:
            entry.names |= {name}
            entry.seen = True

    def sweep(self) -> None:
        """After a walk of the whole queue: forget the jobs it did not meet (gone)."""
        self._jobs = {job: e for job, e in self._jobs.items() if e.seen}
        for entry in self._jobs.values():
            entry.seen = False


def fingerprint(ad: ClassAd, system: SystemPolicy, ctx: CallContext) -> int:
    """What an expression's cost against ``ad`` depends on: the ad's whole text (an
    expression reads other attributes), the system policy and the budget."""
    allowance = ctx.allowance
    budget = (allowance.steps, allowance.seconds) if allowance is not None else None
    return hash((ad.to_old(), tuple(sorted(system.knobs.items())), budget))


def periodic_remembering(ad: ClassAd, status: int, system: SystemPolicy,
                         ctx: CallContext, now: float, *, job: Hashable,
                         overruns: Overruns, running: bool = False
                         ) -> tuple[JobDecision | None, list[JobDecision]]:
    """:func:`periodic` for a job of the queue, with ``overruns``: a held job's
    expression that ran out of its budget is remembered and passed over, and the
    others are evaluated on. The decision, and the overruns remembered now (each
    worth one log line)."""
    marks: list[int] = []

    def mark() -> int:
        if not marks:
            marks.append(fingerprint(ad, system, ctx))
        return marks[0]

    skip = overruns.skip(job, mark)
    noted: list[JobDecision] = []
    while True:
        got = periodic(ad, status, system, ctx, now, running=running, skip=skip)
        if got is None or not got.over_budget or status != _HELD or got.fired in skip:
            return got, noted
        overruns.note(job, mark(), got.fired)
        skip = skip | {got.fired}
        noted.append(got)
