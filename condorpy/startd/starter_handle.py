"""The daemon's handle on one starter: where its job is in its life.

A handle is a checked state machine (:class:`Phase`, :data:`MOVES`): every change of
phase goes through :meth:`StarterHandle._move`, which refuses a move the table does not
list, naming the job. Its ``on_*`` methods are pure: they take what happened (the
starter answered, sent a message, closed its socket, a deadline passed, the policy or
the queue asked for a vacate, a kill, a suspend) and return frozen records of what the
resource manager is to do (:class:`Tell` the starter a command, :class:`Finish` the
job, :class:`KillProcess` its starter ...). The handle does no I/O and reads no clock:
times come in as arguments.

A handle's :data:`Origin` says whose job it is: a job of the local queue
(:class:`LocalJob`) or a job a pool's shadow runs on a claim (:class:`PoolClaim`). Both
go down one launch path; only where the job's end is recorded differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Union

from condorpy.errors import StartdError
from condorpy.machine.pressure import Pressure, from_wire
from condorpy.queue.records import number_of
from condorpy.queue.jobstore import JobId, JobStatus
from condorpy.startd.forkserver_wire import Launched

# How long a launched starter has to start listening on its socket.
CONNECT_TIMEOUT_S = 30.0


class StarterMoveError(StartdError):
    """A starter handle was asked to make a move its transition table does not list."""

    def __init__(self, message: str, *, job: str) -> None:
        super().__init__(message)
        self.job = job


@dataclass(frozen=True)
class LocalJob:
    """A job of this daemon's own queue."""

    job_id: JobId

    def __str__(self) -> str:
        return str(self.job_id)


@dataclass(frozen=True)
class PoolClaim:
    """A job a pool's shadow runs on claim ``eid``; ``number`` names its directory
    (``spool/pool/<number>``) and its starter's row in the job store."""

    eid: str
    number: int

    def __str__(self) -> str:
        return f"pool#{self.number}"


Origin = Union[LocalJob, PoolClaim]


class Phase(Enum):
    LAUNCHING = "launching"     # the claim is active; no starter yet
    PREPARING = "preparing"     # a PREPARE_JOB hook runs before the launch
    CONNECTING = "connecting"   # the starter is launched; its socket not yet reached
    RUNNING = "running"
    SUSPENDED = "suspended"
    VACATING = "vacating"       # asked to stop softly (the job's KillSig)
    KILLING = "killing"         # asked to stop hard
    CLOSED = "closed"           # the starter closed its socket with no final word
    DONE = "done"               # the job's end is recorded; the handle is dropped


P = Phase
_LEAVING = frozenset({P.VACATING, P.KILLING})
MOVES: dict[Phase, frozenset[Phase]] = {
    P.LAUNCHING: frozenset({P.PREPARING, P.CONNECTING, *_LEAVING, P.DONE}),
    P.PREPARING: frozenset({P.LAUNCHING, P.CONNECTING, *_LEAVING, P.DONE}),
    # a command that comes before the socket is reached waits for it
    P.CONNECTING: frozenset({P.RUNNING, P.SUSPENDED, *_LEAVING, P.CLOSED, P.DONE}),
    P.RUNNING: frozenset({P.SUSPENDED, *_LEAVING, P.CLOSED, P.DONE}),
    P.SUSPENDED: frozenset({P.RUNNING, P.CONNECTING, *_LEAVING, P.CLOSED, P.DONE}),
    P.VACATING: frozenset({P.KILLING, P.CLOSED, P.DONE}),
    P.KILLING: frozenset({P.CLOSED, P.DONE}),
    P.CLOSED: frozenset({P.DONE}),
    P.DONE: frozenset(),
}


def check_move(job: str, src: Phase, dest: Phase) -> None:
    """Raise unless ``src -> dest`` is in :data:`MOVES`."""
    if dest not in MOVES[src]:
        raise StarterMoveError(f"job {job}: its starter cannot go from {src.value} to "
                               f"{dest.value}", job=job)


# ------------------------------------------------------------------- records out
@dataclass(frozen=True)
class Tell:
    """Send ``command`` to the starter now."""
    command: str


@dataclass(frozen=True)
class Unsent:
    """``command`` cannot reach the starter (its socket is gone, or it has none)."""
    command: str


@dataclass(frozen=True)
class KillProcess:
    """SIGKILL the starter process itself."""
    pid: int


@dataclass(frozen=True)
class NeverListened:
    """The starter never listened on its socket in time (it is killed, the job lost)."""
    pid: int
    socket_path: str


@dataclass(frozen=True)
class Finish:
    """The job left its slot. ``final`` is what the starter said of its end (None: it
    said nothing, the job is lost); with ``result_path`` the starter's process is gone
    and the final ad is to be read from that file."""
    final: dict[str, Any] | None
    result_path: str | None = None


@dataclass(frozen=True)
class JobStarted:
    """The starter reported the job's process."""
    job_pid: int


@dataclass(frozen=True)
class UsageReport:
    """A usage report. ``load``: the job's CPU load since the last report, when known.
    ``update``: the job's ad is to be updated with it now (the cadence of
    :class:`UpdateCadence`, or at once after a memory event); ``cpus_usage``: the
    cores the job used on average since it started (HTCondor's CpusUsage)."""
    usage: dict[str, Any]
    load: float | None
    update: bool = False
    cpus_usage: float | None = None
    pressure: Pressure | None = None      # the job's PSI; None: not measured


@dataclass(frozen=True)
class StarterSays:
    """The starter reported a problem (logged)."""
    message: str


Effect = Union[Tell, Unsent, KillProcess, NeverListened, Finish, JobStarted, UsageReport,
               StarterSays]


@dataclass(frozen=True)
class StopOrder:
    """What the queue made of a running job (rm -> REMOVED, hold -> HELD), and why: the
    job becomes this once its starter has ended."""
    status: JobStatus
    reason: str
    code: int = 0
    subcode: int = 0


@dataclass
class UpdateCadence:
    """When a running job's usage goes into its job ad, as HTCondor's starter sends its
    updates (to the startd's copy of the job ad and to the shadow): the first
    STARTER_INITIAL_UPDATE_INTERVAL after the start (never later than the first
    STARTER_UPDATE_INTERVAL), then every STARTER_UPDATE_INTERVAL, and at once after a
    cgroup memory event, which moves the periodic updates not at all. The starter
    measures more often (CONDORPY_USAGE_INTERVAL): an update goes with the first
    measurement that is due. Pure: the monotonic time comes in."""
    initial_s: float
    interval_s: float
    next_at: float | None = None

    def start(self, mono: float) -> None:
        self.next_at = mono + min(self.initial_s, self.interval_s)

    def due(self, mono: float, event: bool = False) -> bool:
        if self.next_at is None:
            self.start(mono)
        assert self.next_at is not None
        if mono >= self.next_at:
            self.next_at = mono + self.interval_s
            return True
        return event


# ------------------------------------------------------------------- the handle
@dataclass
class StarterHandle:
    origin: Origin
    claim_id: str
    slot: str
    phase: Phase = Phase.LAUNCHING
    launched: Launched | None = None
    connect_by: float = 0.0
    linked: bool = False             # the daemon holds the starter's socket
    stop: StopOrder | None = None
    evicted: bool = False            # the policy took the slot back: requeue the job
    vacate: tuple[str, int, int] | None = None   # why (VacateReason, Code, SubCode)
    hard_kill_at: float | None = None
    cpu: tuple[float, float] | None = None   # (cpu seconds, monotonic) of the last usage
    job_pid: int | None = None
    queued: list[str] = field(default_factory=list)   # told before the socket was reached
    # when the job's ad gets its usage; None: with every report
    cadence: UpdateCadence | None = None
    launched_at: float | None = None          # monotonic
    memory_events: int = 0                    # the starter's count, last seen

    @property
    def name(self) -> str:
        return str(self.origin)

    @property
    def job_id(self) -> JobId | None:
        """The local queue's id of the job; None for a pool's job."""
        return self.origin.job_id if isinstance(self.origin, LocalJob) else None

    @property
    def leaving(self) -> bool:
        """The job is on its way out: its slot was taken back or the queue stopped it."""
        return self.evicted or self.stop is not None

    @property
    def started(self) -> bool:
        """An activation got as far as a starter, or a hook that comes before one."""
        return self.launched is not None or self.phase is Phase.PREPARING

    def _move(self, dest: Phase) -> None:
        check_move(self.name, self.phase, dest)
        self.phase = dest

    def _settle(self, dest: Phase) -> None:
        """Move unless already there."""
        if self.phase is not dest:
            self._move(dest)

    # ------------------------------------------------------------- launching
    def on_preparing(self) -> None:
        self._move(Phase.PREPARING)

    def on_prepared(self) -> None:
        """The PREPARE_JOB hooks said go: the launch comes next."""
        self._move(Phase.LAUNCHING)

    def on_launched(self, launched: Launched, now: float) -> None:
        self._move(Phase.CONNECTING)
        self.launched = launched
        self.connect_by = now + CONNECT_TIMEOUT_S
        self.launched_at = now
        if self.cadence is not None:
            self.cadence.start(now)

    def on_adopted(self, launched: Launched, now: float) -> None:
        """A starter the previous daemon left: as if just launched (its socket is
        reached again, or its result file read)."""
        self.on_launched(launched, now)

    # ------------------------------------------------------------- the starter
    def on_connected(self) -> list[Effect]:
        """The starter's socket is reached: what was asked meanwhile goes now."""
        self.linked = True
        if self.phase is Phase.CONNECTING:
            self._move(Phase.RUNNING)
        queued, self.queued = self.queued, []
        return [Tell(c) for c in queued]

    def on_starter_message(self, msg: dict[str, Any], mono: float) -> list[Effect]:
        event = msg.get("event")
        if event in ("hello", "state"):
            pid = msg.get("job_pid")
            if isinstance(pid, int) and not isinstance(pid, bool):
                self.job_pid = pid
                return [JobStarted(pid)]
            return []
        if event == "usage":
            usage = msg.get("usage") or {}
            if not isinstance(usage, dict):
                return []
            cpu = number_of(usage.get("RemoteUserCpu")) + number_of(usage.get("RemoteSysCpu"))
            load = None
            if self.cpu is not None and mono > self.cpu[1]:
                load = round(max(0.0, (cpu - self.cpu[0]) / (mono - self.cpu[1])), 3)
            self.cpu = (cpu, mono)
            events = msg.get("memory_events")
            event = isinstance(events, int) and events > self.memory_events
            if event and isinstance(events, int):
                self.memory_events = events
            update = self.cadence is None or self.cadence.due(mono, event)
            cpus = None
            if self.launched_at is not None and mono > self.launched_at:
                cpus = round(cpu / (mono - self.launched_at), 3)
            pressure = from_wire(msg["pressure"]) if "pressure" in msg else None
            return [UsageReport(usage, load, update, cpus, pressure)]
        if event == "done":
            ad = msg.get("ad")
            return self._finish(ad if isinstance(ad, dict) else {})
        if event == "error":
            return [StarterSays(str(msg.get("message")))]
        return []

    def on_socket_closed(self) -> None:
        """The starter closed its socket with no "done": the result file will say, once
        its process has ended."""
        self.linked = False
        self._move(Phase.CLOSED)

    def on_unreachable(self, now: float, alive: bool) -> list[Effect]:
        """The socket is not (or no longer) held and cannot be reached just now:
        ``alive`` says whether the starter process still runs."""
        if self.launched is None or self.phase is Phase.DONE:
            return []
        if not alive:
            return self._finish(None, self.launched.result_path)
        if self.phase is not Phase.CLOSED and now > self.connect_by:
            return [NeverListened(self.launched.pid, self.launched.socket_path),
                    KillProcess(self.launched.pid), *self._finish(None)]
        return []

    def on_deadline(self, now: float) -> list[Effect]:
        """The vacate time of a stopped job ran out: kill it hard."""
        if self.hard_kill_at is None or now < self.hard_kill_at:
            return []
        self.hard_kill_at = None
        return self._hard_kill()

    def next_deadline(self) -> float | None:
        return self.hard_kill_at

    @property
    def wants_socket(self) -> bool:
        """A launched starter whose socket is to be reached (or whose end to be seen)."""
        return self.launched is not None and not self.linked and self.phase is not Phase.DONE

    # ------------------------------------------------------------- requests
    def on_suspend(self) -> list[Effect]:
        if self.phase in (Phase.RUNNING, Phase.CONNECTING):
            self._move(Phase.SUSPENDED)
        return self._tell("suspend")

    def on_continue(self) -> list[Effect]:
        if self.phase is Phase.SUSPENDED:
            self._move(Phase.RUNNING if self.linked else Phase.CONNECTING)
        return self._tell("continue")

    def on_vacate(self) -> list[Effect]:
        """The policy takes the slot back softly: the job goes back to its queue, unless
        the queue already stopped it."""
        self.evicted = self.stop is None
        return self._soft_kill()

    def on_kill(self, *, starter_too: bool = False) -> list[Effect]:
        """The policy takes the slot back hard (``starter_too``: the starter process
        itself is killed, not only asked)."""
        self.evicted = self.stop is None
        out = self._hard_kill()
        if starter_too and self.launched is not None:
            out.append(KillProcess(self.launched.pid))
        return out

    def on_stop(self, order: StopOrder, hard_at: float) -> list[Effect]:
        """The queue holds or removes the running job: a soft kill now, a hard one at
        ``hard_at`` (the job's vacate time)."""
        self.stop = order
        self.hard_kill_at = hard_at
        return self._soft_kill()

    def on_hold(self, order: StopOrder, *, hard: bool, starter_too: bool = False
                ) -> list[Effect]:
        """The slot's policy takes the slot back and holds the job (WANT_HOLD): it is
        stopped as for an eviction, then held, not requeued."""
        if self.stop is None:
            self.stop = order
        self.evicted = False
        if not hard:
            return self._soft_kill()
        out = self._hard_kill()
        if starter_too and self.launched is not None:
            out.append(KillProcess(self.launched.pid))
        return out

    def on_signal(self, command: str) -> list[Effect]:
        """A pool shadow's soft_kill or hard_kill."""
        return self._hard_kill() if command == "hard_kill" else self._soft_kill()

    def finish(self, final: dict[str, Any] | None) -> list[Effect]:
        """The job ends here, for a reason found outside the starter (a failed launch,
        a hook's verdict, an adoption's result)."""
        return self._finish(final)

    # ------------------------------------------------------------- inside
    def _soft_kill(self) -> list[Effect]:
        if self.phase in (Phase.LAUNCHING, Phase.PREPARING, Phase.CONNECTING,
                          Phase.RUNNING, Phase.SUSPENDED):
            self._move(Phase.VACATING)
        return self._tell("soft_kill")

    def _hard_kill(self) -> list[Effect]:
        if self.phase not in (Phase.KILLING, Phase.CLOSED, Phase.DONE):
            self._move(Phase.KILLING)
        return self._tell("hard_kill")

    def _tell(self, command: str) -> list[Effect]:
        if self.linked:
            return [Tell(command)]
        if self.launched is not None and self.phase is not Phase.CLOSED:
            # The starter is still starting: the command goes as soon as it listens
            # (a vacate right after a start must not be lost).
            self.queued.append(command)
            return []
        return [Unsent(command)]

    def _finish(self, final: dict[str, Any] | None,
                result_path: str | None = None) -> list[Effect]:
        self._move(Phase.DONE)
        self.linked = False
        self.hard_kill_at = None
        return [Finish(final, result_path)]
