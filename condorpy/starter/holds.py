"""HTCondor's hold reason codes that the starter can produce, and the hold exception.

The numbers are HTCondor's (``CONDOR_HOLD_CODE``); a schedd and its users know them.
"""

from __future__ import annotations

from enum import IntEnum

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


class JobHold(JobAdError):
    """The job cannot run (or stopped) for a reason that puts it on hold."""

    def __init__(self, message: str, code: HoldCode, subcode: int = 0, *,
                 attribute: str | None = None, job: str | None = None) -> None:
        super().__init__(message, attribute=attribute, hold_code=int(code),
                         hold_subcode=subcode, job=job)
        self.code = code
        self.reason = message
