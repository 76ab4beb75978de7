"""What goes in and out of the engine: events, state changes, actions, claims, jobs."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Callable, ClassVar, TypeVar

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
    """Something the daemon must do, one frozen record per kind.

    ``kind`` is the action's name in `policy simulate`'s JSON; the record's other
    fields are its details, and a detail that is None is left out of the JSON.
    """

    t: float
    slot: str
    kind: ClassVar[str] = ""

    def details(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("t", "slot") and getattr(self, f.name) is not None}

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": self.t, "slot": self.slot, "action": self.kind}
        out.update(self.details())
        return out


def _action(kind: str) -> Callable[[type[_A]], type[_A]]:
    def register(cls: type[_A]) -> type[_A]:
        cls.kind = kind
        ACTION_KINDS[kind] = cls
        return cls
    return register


_A = TypeVar("_A", bound=Action)
ACTION_KINDS: dict[str, type[Action]] = {}


# --- claims -------------------------------------------------------------------------

@_action("claim_accepted")
@dataclass(frozen=True)
class ClaimAccepted(Action):
    claim: str = ""
    preempting: str | None = None     # the claim this better claim will replace


@_action("claim_refused")
@dataclass(frozen=True)
class ClaimRefused(Action):
    claim: str = ""
    reason: str = ""
    # an expression ran out of its evaluation budget against the request's job ad:
    # the job's doing, so its schedd holds it rather than offer it again
    over_budget: bool = False


@_action("claim_ended")
@dataclass(frozen=True)
class ClaimEnded(Action):
    claim: str = ""
    why: str = ""


@_action("claim_unknown")
@dataclass(frozen=True)
class ClaimUnknown(Action):
    """An event for a claim that already ended: noted, otherwise ignored."""

    claim: str = ""
    event: str = ""


@_action("match_ignored")
@dataclass(frozen=True)
class MatchIgnored(Action):
    reason: str = ""


@_action("coalesce_refused")
@dataclass(frozen=True)
class CoalesceRefused(Action):
    """Claims that could not be merged into one slot (condor_now); ``retry``: they may
    be later (a slot not idle yet)."""

    claim: str = ""
    reason: str = ""
    retry: bool = False


@_action("activation_refused")
@dataclass(frozen=True)
class ActivationRefused(Action):
    claim: str = ""
    reason: str = ""


# --- d-slots ------------------------------------------------------------------------

@_action("create_slot")
@dataclass(frozen=True)
class CreateSlot(Action):
    """A d-slot carved from ``slot``: its name and what it holds (Cpus, Memory, Disk,
    custom resources, Assigned<name> device lists)."""

    name: str = ""
    resources: tuple[tuple[str, Any], ...] = ()

    def details(self) -> dict[str, Any]:
        return {"name": self.name, **dict(self.resources)}


@_action("delete_slot")
@dataclass(frozen=True)
class DeleteSlot(Action):
    pass


# --- the job ------------------------------------------------------------------------

@_action("start_job")
@dataclass(frozen=True)
class StartJob(Action):
    claim: str = ""


@_action("suspend")
@dataclass(frozen=True)
class Suspend(Action):
    claim: str = ""


@_action("continue")
@dataclass(frozen=True)
class Continue(Action):
    claim: str = ""


# HTCondor's hold code for a job the startd's WANT_HOLD put on hold (condor_holdcodes.h)
STARTD_HELD_JOB = 21


@_action("soft_kill")
@dataclass(frozen=True)
class SoftKill(Action):
    """Ask the job to stop with its KillSig. With ``hold_reason`` the job is to be held
    (HoldReasonCode 21, STARTD_HELD_JOB, and ``hold_subcode``), not requeued."""
    claim: str = ""
    signal: str = "SIGTERM"
    timeout: float = 0.0              # seconds before a hard kill
    hold_reason: str | None = None
    hold_subcode: int | None = None


@_action("hard_kill")
@dataclass(frozen=True)
class HardKill(Action):
    claim: str = ""
    signal: str = "SIGKILL"
    hold_reason: str | None = None    # as for SoftKill
    hold_subcode: int | None = None


@_action("kill_starter")
@dataclass(frozen=True)
class KillStarter(Action):
    claim: str = ""
    reason: str = ""


@_action("job_exited")
@dataclass(frozen=True)
class JobExited(Action):
    claim: str = ""
    exit_code: int | None = None


# --- benchmarks and backfill --------------------------------------------------------

@_action("run_benchmarks")
@dataclass(frozen=True)
class RunBenchmarks(Action):
    pass


@_action("stop_benchmarks")
@dataclass(frozen=True)
class StopBenchmarks(Action):
    pass


@_action("start_backfill")
@dataclass(frozen=True)
class StartBackfill(Action):
    pass


@_action("kill_backfill")
@dataclass(frozen=True)
class KillBackfill(Action):
    pass


# --- the machine as a whole ----------------------------------------------------------

@_action("drain_started")
@dataclass(frozen=True)
class DrainStarted(Action):
    request_id: str = ""
    how: str = ""


@_action("drain_refused")
@dataclass(frozen=True)
class DrainRefused(Action):
    reason: str = ""


@_action("drain_complete")
@dataclass(frozen=True)
class DrainComplete(Action):
    request_id: str = ""
    badput: int = 0
    unclaimed: int = 0


@_action("drain_cancelled")
@dataclass(frozen=True)
class DrainCancelled(Action):
    request_id: str = ""


@_action("cancel_refused")
@dataclass(frozen=True)
class CancelRefused(Action):
    reason: str = ""


@_action("hibernate")
@dataclass(frozen=True)
class Hibernate(Action):
    level: str = ""


@_action("exit")
@dataclass(frozen=True)
class Exit(Action):
    """The startd should exit (shutdown or drain with exit-on-completion done)."""

    reason: str = ""


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
    preempt_was_true: bool = False    # PREEMPT was true while it ran (WANT_HOLD applies)
    hold: tuple[str, int] | None = None   # (reason, subcode) once WANT_HOLD decided
    vacate: tuple[str, int, int] | None = None  # VacateReason, Code, SubCode once interrupted

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
    client: str | None = None         # the claiming schedd's host (ClientMachine)


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
    leaving: bool = False             # a reconfigured layout drops it once it is free
    inputs_gen: int = -1              # generation of machine inputs last put in the ad
    layer: Any = None                 # the slot layer's record (condorpy.slots.model.Slot)
    requirements: str = "START"       # the slot layer's Requirements, restored after drains
    idle: tuple[Any, ...] = ()        # (KeyboardIdle, ConsoleIdle) last put in the ad
    load: tuple[float, ...] = ()      # (LoadAvg, CondorLoadAvg) last put in the ad
    total_load: tuple[float, ...] = ()
    job_attrs: frozenset[str] = frozenset()   # the job's attributes put in the ad
    quiet: Any = None                 # what its last quiet busy step read (quiet.py)
