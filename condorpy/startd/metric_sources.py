"""What the metrics read besides the policy engine: the local queue's depth, whether
cgroup limits can be enforced, the pool link's figures, and the fixed label sets that
are exported at zero before their first event.

Each reader runs on the event loop when a snapshot is taken and returns plain tuples,
so the scrape thread never touches the job store, cgroupfs or the pool side.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from condorpy.policy.job_policy import (HOLD_JOB_POLICY, HOLD_JOB_POLICY_UNDEFINED,
                                        HOLD_SYSTEM_POLICY, HOLD_SYSTEM_POLICY_UNDEFINED)
from condorpy.policy.records import STARTD_HELD_JOB
from condorpy.policy.states import Activity
from condorpy.queue.records import JobStatus
from condorpy.starter.cgroup import NEEDED_CONTROLLERS
from condorpy.starter.holds import HoldCode

if TYPE_CHECKING:
    from condorpy.policy.engine import PolicyEngine
    from condorpy.startd.poolside import PoolLink

# HoldReasonCode of a hold by a user or an administrator (condorpy hold, condor_hold).
HOLD_BY_USER = 1
# Every HTCondor hold code (CONDOR_HOLD_CODE) this daemon gives a job: by a user, by the
# job's or the system's periodic policy, by the startd's WANT_HOLD, and the starter's
# own (cannot start, cannot open files, transfer, user log, account, resources).
HOLD_CODES: tuple[str, ...] = tuple(str(c) for c in sorted(
    {HOLD_BY_USER, HOLD_JOB_POLICY, HOLD_JOB_POLICY_UNDEFINED, STARTD_HELD_JOB,
     HOLD_SYSTEM_POLICY, HOLD_SYSTEM_POLICY_UNDEFINED} | {int(c) for c in HoldCode}))

# JobStatus as HTCondor names it (condor_q, the JobStatus attribute's documentation).
JOB_STATUS_NAMES: Mapping[JobStatus, str] = {
    JobStatus.IDLE: "Idle", JobStatus.RUNNING: "Running", JobStatus.REMOVED: "Removed",
    JobStatus.COMPLETED: "Completed", JobStatus.HELD: "Held",
    JobStatus.TRANSFERRING_OUTPUT: "Transferring Output",
    JobStatus.SUSPENDED: "Suspended"}

# The startd's policy expressions, exported at zero; another name that evaluates to
# ERROR (a _VANILLA variant, a latched expression) appears with its first error.
POLICY_EXPRESSIONS = ("START", "IS_OWNER", "SUSPEND", "CONTINUE", "PREEMPT", "KILL",
                      "WANT_SUSPEND", "WANT_VACATE", "WANT_HOLD", "RANK",
                      "CLAIM_WORKLIFE", "MAXJOBRETIREMENTTIME")

# HTCondor's claim states (claim.h ClaimState) that a claim holding a slot can be in,
# from the activity of the slot it holds.
CLAIM_STATES = ("Idle", "Running", "Suspended", "Vacating", "Killing")
_CLAIM_STATE = {Activity.IDLE: "Idle", Activity.BUSY: "Running",
                Activity.RETIRING: "Running", Activity.SUSPENDED: "Suspended",
                Activity.VACATING: "Vacating", Activity.KILLING: "Killing",
                Activity.CLEANING: "Running"}

QueueCounts = Callable[[], Mapping[JobStatus, int]]


def queue_depth(counts: QueueCounts | None) -> tuple[tuple[str, int], ...]:
    """Jobs in the local queue by JobStatus, every status present (0 when none)."""
    got = counts() if counts is not None else {}
    return tuple((name, int(got.get(status, 0)))
                 for status, name in JOB_STATUS_NAMES.items())


def cgroup_enforcement(starters: str | None) -> tuple[tuple[str, bool], ...]:
    """For each controller jobs need (cpu, memory, pids), whether job cgroups can get
    it: it is available in the cgroup the starters' leaf sits in, where the job
    cgroups are made. Without a delegated cgroup (``starters`` None) none is."""
    have: set[str] = set()
    if starters is not None:
        try:
            with open(os.path.join(os.path.dirname(starters), "cgroup.controllers")) as f:
                have = set(f.read().split())
        except OSError:
            pass
    return tuple((c, c in have) for c in NEEDED_CONTROLLERS)


@dataclass(frozen=True)
class PoolFigures:
    """The pool link at one moment."""

    updates_sent: int
    updates_failed: int
    claims: tuple[tuple[str, int], ...]     # (HTCondor claim state, claims)
    reconnects: int                         # shadows that reconnected to a running job


def pool_claims(pool: PoolLink, engine: PolicyEngine) -> tuple[tuple[str, int], ...]:
    """The claims the pool's schedds hold, by HTCondor claim state, every state present
    (a claim waiting for a slot it preempts holds none and is not counted)."""
    activity = {s.claim.id: s.activity for s in engine.slots.values()
                if not s.deleted and s.claim is not None}
    claims = dict.fromkeys(CLAIM_STATES, 0)
    for claim in pool.table:
        act = activity.get(claim.eid)
        state = _CLAIM_STATE.get(act) if act is not None else None
        if state is not None:
            claims[state] += 1
    return tuple(claims.items())


def pool_figures(pool: PoolLink, claims: tuple[tuple[str, int], ...]) -> PoolFigures:
    """The collector updates and the shadows' reconnects, with ``claims``."""
    return PoolFigures(pool.advertiser.updates_sent, pool.advertiser.failures, claims,
                       pool.reconnects.reconnected)
