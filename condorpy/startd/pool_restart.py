"""What becomes of jobs run for a pool's shadow that cannot be reconnected.

A job with a job lease survives a daemon restart (``poolside/reconnect.py``). One without
(``JobLeaseDuration`` 0 or missing, no ``GlobalJobId``) must never run on unseen: its
starter is recorded in the job store as it is launched, and a daemon that restarts
after being killed (SIGKILL, a crash) finds the starter still running, stops it and
frees its slot. The shadow has meanwhile lost its connection with no reconnect on
offer and requeues the job; a stopping daemon (SIGTERM) tells the shadow itself
(``job_exit``, requeue) before it goes. Either way the job runs again only once, from
its schedd's queue.

The job store keeps a pool job's starter in the row of a negative job id (``-N.0``,
``N`` its number); this module is the one place that knows it. The daemon itself tells
pool jobs apart by their handle's origin (:class:`~condorpy.startd.starter_handle.
PoolClaim`).
"""

from __future__ import annotations

from typing import Protocol

from condorpy.queue.jobstore import JobId, StarterRecord
from condorpy.startd.forkserver_wire import Launched
from condorpy.startd.starter_handle import Origin, PoolClaim


class StarterRows(Protocol):
    """The job store's starter rows (``store.starters``)."""

    def record(self, starter: StarterRecord) -> None: ...

    def all(self) -> list[StarterRecord]: ...



def pool_number(number: int) -> int:
    """A pool job's number as the pool side hands it (negative, as the store keeps it)
    or as the daemon keeps it (positive): the latter."""
    return abs(number)


def row_id(origin: Origin) -> JobId:
    """The job store's id for a starter's row."""
    if isinstance(origin, PoolClaim):
        return JobId(-origin.number, 0)
    return origin.job_id


def number_of_row(job_id: JobId) -> int | None:
    """The pool job number a starter row stands for; None: a local job's row."""
    return -job_id.cluster if job_id.cluster < 0 else None


def is_pool_job(job_id: JobId) -> bool:
    """Whether a starter row is a pool job's (not in the local queue)."""
    return number_of_row(job_id) is not None


def record_pool_starter(starters: StarterRows, job_id: JobId, launched: Launched,
                        job_dir: str, slot: str, now: float) -> None:
    """Note a pool job's starter (``job_id``: its row, :func:`row_id`), so that a daemon
    that did not see it end can find it."""
    starters.record(StarterRecord(job_id, launched.pid, launched.boot_id,
                                       launched.start_ticks, launched.socket_path,
                                       job_dir, slot, int(now)))


def last_pool_number(starters: StarterRows) -> int:
    """The highest number a recorded pool job has: new ones must not reuse it (its job
    directory, its place in the daemon's tables)."""
    return max((n for s in starters.all() if (n := number_of_row(s.job_id)) is not None),
               default=0)
