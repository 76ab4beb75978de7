"""How a job's run ended, decided without I/O: what of the starter's final ad the queue
keeps, and which status the job goes to (done, back to the queue, held, removed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from condorpy.classad import ClassAd, parse_expr
from condorpy.errors import ClassAdError
from condorpy.policy import vacate_reasons
from condorpy.queue.records import number_of
from condorpy.queue.jobstore import JobRecord, JobStatus
from condorpy.startd.starter_handle import StarterHandle

# Attributes the queue keeps itself: a starter's report never overwrites them.
QUEUE_OWNED = frozenset({"jobstatus", "clusterid", "procid", "owner", "user",
                         "lastjobstatus", "enteredcurrentstatus"})
# A starter that failed this often without a final ad holds its job with this code.
STARTER_FAILED_CODE = 6

Outcome = tuple[JobStatus, str, int, int]     # status, reason, hold code, hold subcode


def kept_attrs(final: dict[str, Any] | None, sent: ClassAd | None) -> dict[str, Any]:
    """Only what the starter found out: the rest of its final ad is the job ad as it
    was sent, which the queue has moved on from (NumJobStarts, ...)."""
    return {k: v for k, v in (final or {}).items()
            if isinstance(v, (bool, int, float, str)) and k.lower() not in QUEUE_OWNED
            and (sent is None or sent.evaluate(k) != v or sent.lookup(k) is None)}


def usage_attrs(usage: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in usage.items() if isinstance(v, (int, float, str))
            and k.lower() not in QUEUE_OWNED}


def outcome(handle: StarterHandle, rec: JobRecord | None, attrs: dict[str, Any],
            ended: bool, *, pool_job: bool, max_failures: int,
            at_exit: Callable[[ClassAd], Outcome | None]) -> Outcome:
    """The status the job goes to. ``ended``: the starter said how the job ended;
    ``at_exit`` is the job's own policy (on_exit_hold, on_exit_remove ...); a starter
    failure is counted into ``attrs``."""
    if handle.stop is not None:
        s = handle.stop
        return s.status, s.reason, s.code, s.subcode
    if "HoldReasonCode" in attrs:
        sub = attrs.get("HoldReasonSubCode")
        return (JobStatus.HELD, str(attrs.get("HoldReason", "held by the starter")),
                int(attrs["HoldReasonCode"]), sub if isinstance(sub, int) else 0)
    if not ended and not handle.evicted and rec is not None and not pool_job:
        return starter_failed(rec, attrs, max_failures)
    if handle.evicted or not ended:
        return JobStatus.IDLE, "", 0, 0
    if rec is not None:
        final = rec.ad.copy()
        for k, v in attrs.items():
            final[k] = v
        got = at_exit(final)
        if got is not None:
            return got
    return JobStatus.COMPLETED, "", 0, 0


def runtime_news(final: dict[str, Any] | None,
                 report: Callable[[str], None]) -> dict[str, Any] | None:
    """A final ad that says the container runtime was down (DockerOfflineReason): the
    machine's news, reported, and not kept as the job's attribute."""
    if final is None or not isinstance(final.get("DockerOfflineReason"), str):
        return final
    rest = dict(final)
    report(str(rest.pop("DockerOfflineReason")))
    return rest


def starter_failed(rec: JobRecord, attrs: dict[str, Any], limit: int) -> Outcome:
    """A starter that ended without a final ad (it could not start, or died) puts its
    job back in the queue, but not forever: a job whose starter fails at once would
    otherwise be restarted in a tight loop. The failures count in NumShadowExceptions,
    as HTCondor counts a shadow's; at the limit the job is held."""
    failures = int(number_of(rec.ad.evaluate("NumShadowExceptions"))) + 1
    attrs["NumShadowExceptions"] = failures
    limit = max(1, limit)
    if failures < limit:
        return JobStatus.IDLE, "", 0, 0
    return (JobStatus.HELD, f"the job's starter failed {failures} times without "
            f"reporting how the job ended (CONDORPY_MAX_STARTER_FAILURES is {limit}); "
            "the startd's log says why", STARTER_FAILED_CODE, 0)


def vacate_of(handle: StarterHandle, status: JobStatus, ended: bool,
              attrs: dict[str, Any] | None = None) -> vacate_reasons.Vacate | None:
    """Why a job that goes back to its queue was interrupted: the starter's own reason
    when it gave one in its final ad (a node out of memory), else what the policy
    recorded, else a starter that ended without saying how the job ended failed to
    start it."""
    if status is not JobStatus.IDLE:
        return None
    code = (attrs or {}).get("VacateReasonCode")
    if isinstance(code, int) and not isinstance(code, bool):
        assert attrs is not None
        sub = attrs.get("VacateReasonSubCode")
        text = attrs.get("VacateReason")
        return vacate_reasons.Vacate(str(text) if isinstance(text, str) else "", code,
                                     sub if isinstance(sub, int) else 0)
    if handle.vacate is not None:
        text, code, sub = handle.vacate
        return vacate_reasons.Vacate(text, code, sub)
    if not ended and not handle.evicted:
        return vacate_reasons.STARTER_FAILED
    return None


def vacate_attrs(ad: ClassAd, vacate: vacate_reasons.Vacate) -> dict[str, Any]:
    """VacateReason, its codes and NumVacatesByReason counted on, for the job's ad."""
    before = ad.evaluate("NumVacatesByReason")
    counts = vacate_reasons.counted(
        {k: before.evaluate(k) for k in before.keys()} if isinstance(before, ClassAd)
        else None, int(vacate.code))
    nested = parse_expr("[ " + "; ".join(f"{k} = {n}" for k, n in counts.items()) + " ]")
    return {**vacate.attrs(), "NumVacatesByReason": nested}


def sent_ad(job_dir: Path) -> ClassAd | None:
    """The job ad as it was handed to the starter."""
    try:
        return ClassAd.parse_old((job_dir / "job.ad").read_text(), source="job.ad")
    except (OSError, UnicodeDecodeError, ClassAdError):
        return None
