"""HTCondor's hold reason codes that the starter can produce, and the hold exception.

The numbers are HTCondor's (``CONDOR_HOLD_CODE``); a schedd and its users know them.
"""

from __future__ import annotations

from enum import Enum, IntEnum

from condorpy.errors import JobAdError


class HoldCode(IntEnum):
    FAILED_TO_CREATE_PROCESS = 6     # subcode: errno of the failed exec
    UNABLE_TO_OPEN_OUTPUT = 7        # subcode: errno
    UNABLE_TO_OPEN_INPUT = 8         # subcode: errno
    TRANSFER_OUTPUT_ERROR = 12       # subcode: errno
    TRANSFER_INPUT_ERROR = 13        # subcode: errno
    IWD_ERROR = 14                   # subcode: errno
    UNABLE_TO_INIT_USER_LOG = 22
    FAILED_TO_ACCESS_USER_ACCOUNT = 23
    JOB_OUT_OF_RESOURCES = 34
    INVALID_DOCKER_IMAGE = 35        # the container's image cannot be used


class JobHold(JobAdError):
    """The job cannot run (or stopped) for a reason that puts it on hold."""

    def __init__(self, message: str, code: HoldCode, subcode: int = 0, *,
                 attribute: str | None = None, job: str | None = None) -> None:
        super().__init__(message, attribute=attribute, hold_code=int(code),
                         hold_subcode=subcode, job=job)
        self.code = code
        self.reason = message


OUT_OF_RESOURCES_MEMORY = 102        # HTCondor's subcode of a hold for memory


class OomVerdict(Enum):
    """What an OOM kill of the job means for it."""
    HOLD = "hold"          # the job outgrew its own limit: it would again, anywhere
    REQUEUE = "requeue"    # the machine ran short: the job may run fine elsewhere


# HTCondor's margin: the starter's last sample may lag the usage that hit the limit.
OWN_OOM_FRACTION = 0.9
# What a job requeued because the node ran out of memory carries as its vacate reason
# (HTCondor's text; code 0, Unspecified). The startd's table is
# condorpy.policy.vacate_reasons.SYSTEM_OOM, a layer below this one: a test keeps the
# two the same.
SYSTEM_OOM_VACATE = {"VacateReason": "Worker node is out of memory",
                     "VacateReasonCode": 0, "VacateReasonSubCode": 0}


def oom_verdict(*, always_hold: bool, limit_ooms: int, used_bytes: int,
                limit_bytes: int | None) -> OomVerdict:
    """Tell a job's own OOM from a system OOM (STARTER_ALWAYS_HOLD_ON_OOM false).

    The kernel counts ``oom`` in the job's memory.events only when the job's own
    memory.max ran out; a kill for the machine's sake (a global OOM, or a limit of an
    ancestor) does not move it. Where it did not move, HTCondor's test decides: usage
    at 90% of the limit (the slot's memory where no memory.max is set) or more is the
    job's own doing.
    """
    if always_hold or limit_ooms > 0:
        return OomVerdict.HOLD
    if limit_bytes is not None and used_bytes >= OWN_OOM_FRACTION * limit_bytes:
        return OomVerdict.HOLD
    return OomVerdict.REQUEUE
