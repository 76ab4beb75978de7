"""What goes in and out of the engine: events, state changes, actions, claims, jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from condorpy.policy.states import Activity, State


@dataclass(frozen=True)
class StateChange:
    t: float
    slot: str
    state: State
    activity: Activity
    transition: str          # a key of states.TRANSITIONS, or "start" for a first line
    letter: str | None
    reason: str

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": self.t, "slot": self.slot, "state": self.state.value,
                               "activity": self.activity.value,
                               "transition": self.transition, "reason": self.reason}
        if self.letter:
            out["letter"] = self.letter
        return out


@dataclass(frozen=True)
class Action:
    """Something the daemon must do; ``detail`` carries signal, claim id, level, ..."""

    t: float
    slot: str
    action: str
    detail: tuple[tuple[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": self.t, "slot": self.slot, "action": self.action}
        out.update(self.detail)
        return out


Output = StateChange | Action


class EvictWhy(Enum):
    """Why a claim is being taken away: decides where Preempting leads."""

    OWNER = "owner"          # PREEMPT, START false, vacate: back to Owner
    RANK = "rank"            # a better claim waits: on to Claimed/Idle with it
    RELEASE = "release"      # the schedd let the claim go
    LEASE = "lease"          # keep-alives stopped
    WORKLIFE = "worklife"    # CLAIM_WORKLIFE over
    DRAIN = "drain"
    SHUTDOWN = "shutdown"


@dataclass
class Job:
    """The running job of a claim, with its clocks."""

    ad: Any
    start: float
    universe: int = 5
    suspended_total: float = 0.0
    suspended_since: float | None = None
    soft_killed: bool = False
    hard_killed: bool = False

    def run_time(self, now: float) -> float:
        susp = self.suspended_total
        if self.suspended_since is not None:
            susp += now - self.suspended_since
        return now - self.start - susp


@dataclass
class Claim:
    id: str
    ad: Any                     # the job ad the claim was requested with
    created: float
    rank: float
    last_alive: float
    lease: float
    job: Job | None = None
    jobs_run: int = 0
    universe: int | None = None       # the job's JobUniverse, read once
    run_total: float = 0.0            # run time of this claim's finished jobs
    suspend_total: float = 0.0


@dataclass
class Retirement:
    """A claim in retirement: why, and any override of the retirement time."""

    why: EvictWhy
    since: float
    deadline: float | None = None     # absolute end forced by drain coordination
    override: float | None = None     # 0 for fast/quick, inf for peaceful


@dataclass
class Slot:
    """One slot's policy state. The ad is the backend's ClassAd for this slot."""

    name: str
    slot_id: int
    ad: Any
    kind: str = "static"              # static | partitionable | dynamic
    parent: str | None = None
    resources: dict[str, float] = field(default_factory=dict)
    state: State = State.OWNER
    activity: Activity = Activity.IDLE
    entered_state: float = 0.0
    entered_activity: float = 0.0
    claim: Claim | None = None
    pending: Claim | None = None      # a better (RANK) claim waiting for this one to go
    retirement: Retirement | None = None
    evict_why: EvictWhy | None = None
    vacate_deadline: float | None = None
    killing_since: float | None = None
    starter_killed: bool = False
    matched_since: float | None = None
    backfill_next: str | None = None  # where Backfill leads once the client is gone
    backfill_claim: Claim | None = None
    totals: dict[str, float] = field(default_factory=dict)
    latched: dict[str, Any] = field(default_factory=dict)
    deleted: bool = False
    inputs_gen: int = -1              # generation of machine inputs last put in the ad
