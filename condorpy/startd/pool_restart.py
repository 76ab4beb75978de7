"""What becomes of jobs run for a pool's shadow that cannot be reconnected.

A job with a job lease survives a daemon restart (``pool_reconnect.py``). One without
(``JobLeaseDuration`` 0 or missing, no ``GlobalJobId``) must never run on unseen: its
starter is recorded in the job store as it is launched, and a daemon that restarts
after being killed (SIGKILL, a crash) finds the starter still running, stops it and
frees its slot. The shadow has meanwhile lost its connection with no reconnect on
offer and requeues the job; a stopping daemon (SIGTERM) tells the shadow itself
(``job_exit``, requeue) before it goes. Either way the job runs again only once, from
its schedd's queue.
"""

from __future__ import annotations

from condorpy.startd.forkserver import Launched
from condorpy.queue.jobstore import JobId, JobStore, StarterRecord


def is_pool_job(job_id: JobId) -> bool:
    """Jobs run for a pool's shadow have negative numbers: they are not in the local
    queue."""
    return job_id.cluster < 0


def record_pool_starter(store: JobStore, job_id: JobId, launched: Launched,
                        job_dir: str, slot: str, now: float) -> None:
    """Note a pool job's starter, so that a daemon that did not see it end can find it."""
    store.record_starter(StarterRecord(job_id, launched.pid, launched.boot_id,
                                       launched.start_ticks, launched.socket_path,
                                       job_dir, slot, int(now)))


def last_pool_number(store: JobStore) -> int:
    """The highest number a recorded pool job has: new ones must not reuse it (its job
    directory, its place in the daemon's tables)."""
    return max((-s.job_id.cluster for s in store.starters() if is_pool_job(s.job_id)),
               default=0)
