"""The queue's size limits an administrator sets, with HTCondor's names and words:
MAX_JOBS_SUBMITTED (the whole queue), MAX_JOBS_PER_OWNER and MAX_JOBS_PER_SUBMISSION.

Pure: the counts come in, a refusal (or None) goes out. As the schedd counts them, a
limit of N lets the queue hold N jobs: the job that would be the N+1st is refused, and
with it (a submission being one transaction) the whole submission.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["QueueLimits", "KnobInts"]


class KnobInts(Protocol):
    def knob_int(self, name: str) -> int: ...


@dataclass(frozen=True)
class QueueLimits:
    submitted: int        # MAX_JOBS_SUBMITTED
    per_owner: int        # MAX_JOBS_PER_OWNER
    per_submission: int   # MAX_JOBS_PER_SUBMISSION

    @classmethod
    def from_config(cls, cfg: KnobInts) -> QueueLimits:
        return cls(cfg.knob_int("MAX_JOBS_SUBMITTED"), cfg.knob_int("MAX_JOBS_PER_OWNER"),
                   cfg.knob_int("MAX_JOBS_PER_SUBMISSION"))

    def new_cluster_refusal(self, queued: int) -> str | None:
        """Why no cluster may begin while ``queued`` jobs are in the queue."""
        if queued >= self.submitted:
            return (f"MAX_JOBS_SUBMITTED exceeded. Current={queued}, "
                    f"Limit={self.submitted}\n"
                    "Number of submitted jobs would exceed MAX_JOBS_SUBMITTED")
        return None

    def proc_refusal(self, *, queued: int, owners: int, adding: int) -> str | None:
        """Why a submission that brings its count to ``adding`` jobs is refused, with
        ``queued`` jobs in the queue of which ``owners`` are its owner's."""
        if adding <= 0:
            return None
        for over, knob in ((queued + adding > self.submitted, "MAX_JOBS_SUBMITTED"),
                           (owners + adding > self.per_owner, "MAX_JOBS_PER_OWNER"),
                           (adding > self.per_submission, "MAX_JOBS_PER_SUBMISSION")):
            if over:
                return f"Failed to create proc\nNumber of submitted jobs would exceed {knob}"
        return None
