"""Which job-ad attributes a submitter may set, and which only condorpy or its queue may.

One rule for every door a job ad comes in by (a local submission, a pool shadow's job
ad, a fetch-work hook's reply): the daemon and the starter steer a job by attributes
they write into its ad themselves (the scratch directory made for a transferred job,
the user log the starter writes, when the job was activated, which hook fetched it).
Such an attribute taken from a submitter would let that submitter steer root's
starter (issue #30: ``+CondorpyPreparedScratch`` pointed a job at another user's
sandbox). Every attribute whose name starts with ``Condorpy`` is reserved, whatever
its case, as are the few HTCondor-named ones in :data:`INTERNAL_NAMES`.

Besides those, the local queue owns some attributes of every job it accepts, as a
schedd does (HTCondor's ``SYSTEM_IMMUTABLE_JOB_ATTRS`` and the checks of
``SetAttribute`` in ``qmgmt.cpp``): who owns the job, its ids, its state and the
counters the queue keeps. :func:`submission_refusal` and :func:`admit_submitted` say
what a local submission may hold and what the queue writes over.

Pure: no I/O, so the client (``condorpy submit``) and the daemon apply the same rule.
"""

from __future__ import annotations

from condorpy.classad import ClassAd

INTERNAL_PREFIX = "condorpy"
# HTCondor's name for the log the starter writes; the daemon points it at the job's
# UserLog itself, so a submitter's value would be a second log written for the job.
INTERNAL_NAMES = frozenset({"starteruserlog"})

IDLE, HELD = 1, 5
# condor_submit's ``hold = true`` (submit_utils.cpp SetJobStatus), CONDOR_HOLD_CODE
# SubmittedOnHold in condor_holdcodes.h
SUBMITTED_ON_HOLD_CODE = 15
SUBMITTED_ON_HOLD_REASON = "submitted on hold at user's request"

# Counted by the queue from the job's first start: a submitted job has none yet.
_COUNTERS = ("NumJobStarts", "JobRunCount", "NumHolds", "NumShadowStarts",
             "NumSystemHolds", "NumJobCompletions", "NumRestarts")
# Written by the queue when the job runs or ends, or by a schedd the job never met.
_QUEUE_WRITTEN = ("GlobalJobId", "LastJobStatus", "JobCurrentStartDate", "JobStartDate",
                  "RemoteHost", "CompletionDate", "RemoveReason", "ReleaseReason")


def is_internal(name: str) -> bool:
    """Whether ``name`` is an attribute only condorpy itself sets."""
    lc = name.lower()
    return lc.startswith(INTERNAL_PREFIX) or lc in INTERNAL_NAMES


def internal_attributes(ad: ClassAd) -> list[str]:
    """The reserved attributes ``ad`` sets, as the ad spells them."""
    return [name for name in ad.keys() if is_internal(name)]


def strip_internal(ad: ClassAd) -> tuple[ClassAd, list[str]]:
    """A copy of ``ad`` without its reserved attributes, and their names."""
    found = internal_attributes(ad)
    if not found:
        return ad, []
    out = ad.copy()
    for name in found:
        del out[name]
    return out, found


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def submission_refusal(ad: ClassAd) -> tuple[str, str] | None:
    """``(attribute, why)`` for the first attribute of a submitted job ad that no
    submitter may set, or None when the queue can take the ad.

    Refused rather than overwritten: a value the submitter asked for and would not get
    (a job that names a scratch directory, a job submitted as running) is a request
    the queue cannot honour, and saying so loses nothing."""
    for name in ad.keys():
        if is_internal(name):
            return name, "only condorpy sets it"
    status = ad.lookup("JobStatus")
    if status is not None:
        value = ad.get("JobStatus")
        if not _is_int(value) or value not in (IDLE, HELD):
            return (ad.name_of("JobStatus") or "JobStatus",
                    f"a job is submitted idle ({IDLE}) or on hold ({HELD}), "
                    f"not {status}")
    proc = ad.lookup("ProcId")
    if proc is not None:
        value = ad.get("ProcId")
        if not _is_int(value) or value < 0:
            return (ad.name_of("ProcId") or "ProcId",
                    f"ProcId must be a whole number from 0, not {proc}")
    return None


def admit_submitted(ad: ClassAd, *, owner: str, user: str, now: int) -> ClassAd:
    """The ad the queue stores for a submitted job it accepted (see
    :func:`submission_refusal`): the owner is whoever submitted it, whatever the ad
    said, and the state and counters are the queue's own."""
    out = ad.copy()
    out["Owner"] = owner
    out["User"] = user
    held = out.get("JobStatus") == HELD
    out["JobStatus"] = HELD if held else IDLE
    if held:
        reason = out.get("HoldReason")
        if not isinstance(reason, str) or not reason:
            out["HoldReason"] = SUBMITTED_ON_HOLD_REASON
        out["HoldReasonCode"] = SUBMITTED_ON_HOLD_CODE
        out["HoldReasonSubCode"] = 0
    else:
        for name in ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"):
            if name in out:
                del out[name]
    out["EnteredCurrentStatus"] = now
    if not _is_int(out.get("QDate")):
        out["QDate"] = now
    for name in _COUNTERS:
        out[name] = 0
    for name in _QUEUE_WRITTEN:
        if name in out:
            del out[name]
    return out
