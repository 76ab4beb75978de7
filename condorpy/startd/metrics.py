"""Prometheus metrics of the startd: a snapshot published by the loop, a collector that
reads it, and prometheus-client's own HTTP server on ``CONDORPY_METRICS_ADDRESS``
(imported by the first scrape: :mod:`.metrics_endpoint`).

Threads: the event loop is the only writer. It keeps event counters in
:class:`MetricsStats` and, after a step in which something changed (and at least once a
second, for owner activity), publishes one frozen :class:`Snapshot` by assigning a
single attribute. prometheus-client serves each scrape on a thread of its own; the
:class:`StartdCollector` reads that attribute once and builds fresh metric families
from it (:mod:`.metric_families`). No lock is shared with the loop, a scrape never
touches the engine, and a policy cycle never waits for a scrape.

Names follow Prometheus's conventions: the ``condorpy_`` prefix, base units (seconds,
bytes), ``_total`` only on counters, labels from small fixed sets (slot state, activity
and type; outcome; cause; hold code; hook type; cron job name) and never a job or a
d-slot name: d-slots are counted by state.
"""

from __future__ import annotations

import bisect
import logging
import socket
import threading
from operator import attrgetter, methodcaller
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from condorpy.clock import Clock
from condorpy.config import Config
from condorpy.errors import StartdError
from condorpy.machine.pressure import Pressure
from condorpy.policy.records import (EvictWhy, HardKill, KillStarter, Output, Slot,
                                     SoftKill, StateChange)
from condorpy.policy.states import TRANSITIONS, Activity, State
from condorpy.queue.jobstore import JobStatus
from condorpy.startd.metric_records import (HistogramView, Snapshot,
                                            StatsView)
from condorpy.startd.metric_sources import (HOLD_CODES, POLICY_EXPRESSIONS, PoolFigures,
                                            QueueCounts, cgroup_enforcement, pool_claims,
                                            pool_figures, queue_depth)

from condorpy.startd.metrics_endpoint import Endpoint

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from condorpy.policy.engine import PolicyEngine
    from condorpy.queue.jobstore import JobId
    from condorpy.startd.poolside import PoolLink

log = logging.getLogger("condorpy.startd")

KNOB = "CONDORPY_METRICS_ADDRESS"
# 9618 is HTCondor's collector (and shared port); 9619 is the next one up and is used
# by no HTCondor daemon. Loopback only unless the administrator says otherwise.
DEFAULT_PORT = 9619
DEFAULT_ADDRESS = ("127.0.0.1", DEFAULT_PORT)
_REFRESH_S = 1.0        # the longest a snapshot goes unpublished while the loop runs
_FIGURES_MAX_AGE_S = 30.0
_QUEUE_MAX_AGE_S = 5.0  # the queue is counted in the job store at most this often
BIND_RETRY_S = 60.0     # an endpoint address in use is tried again this often

OUTCOMES = ("completed", "removed", "held", "evicted")
CAUSES = ("preempt", "rank", "vacate", "drain", "kill")
VACATE_REASON = "condor_vacate"     # the reason PolicyEngine.vacate gives its moves
ADOPTIONS = ("adopted", "finished", "lost")
RECONFIG_RESULTS = ("succeeded", "failed")
# HTCondor's hook types (<KEYWORD>_HOOK_<TYPE>): startd and starter hooks.
HOOKS = ("FETCH_WORK", "REPLY_FETCH", "EVICT_CLAIM", "PREPARE_JOB_BEFORE_TRANSFER",
         "PREPARE_JOB", "UPDATE_JOB_INFO", "JOB_EXIT")
SLOT_TYPES = ("static", "partitionable", "dynamic")
CYCLE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)



def _valid_pairs() -> tuple[tuple[str, str], ...]:
    """Every (state, activity) a slot can be in: the ends of the manual's arrows."""
    pairs = {(State.OWNER.value, Activity.IDLE.value)}
    for t in TRANSITIONS.values():
        pairs.add((t.dest[0].value, t.dest[1].value))
        if t.source[1] is not None:
            pairs.add((t.source[0].value, t.source[1].value))
    return tuple(sorted(pairs))


VALID_PAIRS = _valid_pairs()


def metrics_address(cfg: Config) -> tuple[str, int] | None:
    """Where the endpoint listens: ``CONDORPY_METRICS_ADDRESS`` (``host:port``), by
    default 127.0.0.1:9619; a knob set to nothing turns it off (None). A bad value is a
    ConfigError naming the knob, its file and line."""
    if cfg.raw(KNOB) is not None and cfg.get(KNOB) is None:
        return None
    return cfg.get_address(KNOB, DEFAULT_ADDRESS)


# ------------------------------------------------------------------ the event counters
class _Histogram:
    """Bucket counts kept by the loop (no lock: one writer, read through snapshots)."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)     # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def view(self) -> HistogramView:
        cum, acc = [], 0
        for c in self.counts:
            acc += c
            cum.append(acc)
        return HistogramView(self.bounds, tuple(cum), self.sum)


class MetricsStats:
    """Counters the daemon bumps on events. Called from the event loop only.

    Hooks and cron report through :meth:`hook_run` and :meth:`cron_run`; both are
    exported at zero for every known hook type and every STARTD_CRON_JOBLIST job."""

    def __init__(self) -> None:
        self.jobs_started = 0
        self.exits = dict.fromkeys(OUTCOMES, 0)
        self.holds = dict.fromkeys(HOLD_CODES, 0)
        self.evictions = dict.fromkeys(CAUSES, 0)
        self.adoptions = dict.fromkeys(ADOPTIONS, 0)
        self.hooks: dict[str, list[int]] = {h: [0, 0] for h in HOOKS}
        self.cron: dict[str, list[int]] = {}
        self.cycle = _Histogram(CYCLE_BUCKETS)
        self.latency = _Histogram(LATENCY_BUCKETS)
        self.last_cycle = 0.0
        self.cycle_failures = 0
        self.reconfigs = dict.fromkeys(RECONFIG_RESULTS, 0)
        self.last_reconfig_success = 0.0
        self.last_reconfig_ok = True
        self.changed = True
        self._launched: dict[str, float] = {}      # job id -> monotonic launch time
        self._cause: dict[str, str] = {}            # claim id -> why it is being evicted
        self._preempt_reason: dict[str, str] = {}   # slot -> reason it left Claimed/Busy

    # jobs -------------------------------------------------------------------------
    def job_launched(self, job_id: JobId | str, mono: float) -> None:
        """A starter was launched for a job (a re-adopted one is not a new start)."""
        self.jobs_started += 1
        self._launched[str(job_id)] = mono
        self.changed = True

    def job_running(self, job_id: JobId | str, mono: float) -> None:
        """The starter reported the job's process: the start latency is measured from
        the activation that launched it."""
        t0 = self._launched.pop(str(job_id), None)
        if t0 is not None:
            self.latency.observe(max(0.0, mono - t0))
            self.changed = True

    def job_ended(self, job_id: JobId | str, claim_id: str, status: JobStatus,
                  hold_code: int, requeued: bool) -> None:
        """A job's run ended with the queue status it went to; ``requeued``: it went
        back to the queue because its slot was taken or its starter was lost."""
        self._launched.pop(str(job_id), None)
        cause = self._cause.pop(claim_id, None)
        if status is JobStatus.REMOVED:
            outcome = "removed"
        elif status is JobStatus.HELD:
            outcome = "held"
            self.job_held(hold_code)
        elif status is JobStatus.IDLE and requeued:
            outcome = "evicted"
            if cause is not None:
                self.evictions[cause] += 1
        else:
            outcome = "completed"
        self.exits[outcome] += 1
        self.changed = True

    def job_held(self, code: int) -> None:
        key = str(int(code))
        self.holds[key] = self.holds.get(key, 0) + 1
        self.changed = True

    def adopted(self, result: str) -> None:
        """A starter found at start-up: ``adopted`` (alive, reconnected), ``finished``
        (it ended while the daemon was away) or ``lost`` (gone without a result)."""
        self.adoptions[result] = self.adoptions.get(result, 0) + 1
        self.changed = True

    # hooks and cron (called by condorpy.startd.hooks* / cron*) ------------------------
    def hook_run(self, hook: str, ok: bool) -> None:
        row = self.hooks.setdefault(hook.upper(), [0, 0])
        row[0] += 1
        row[1] += 0 if ok else 1
        self.changed = True

    def cron_run(self, job: str, ok: bool) -> None:
        row = self.cron.setdefault(job, [0, 0])
        row[0] += 1
        row[1] += 0 if ok else 1
        self.changed = True

    def declare_cron(self, jobs: Iterable[str]) -> None:
        """Cron jobs to export at zero before their first run."""
        for job in jobs:
            self.cron.setdefault(job, [0, 0])

    # policy -----------------------------------------------------------------------
    def policy_cycle(self, seconds: float, wall: float) -> None:
        self.cycle.observe(seconds)
        self.last_cycle = wall
        self.changed = True

    def policy_cycle_failed(self) -> None:
        """A policy cycle raised instead of deciding (a bug, or an expression that
        cannot be evaluated at all)."""
        self.cycle_failures += 1
        self.changed = True

    # configuration ------------------------------------------------------------------
    def reconfigured(self, ok: bool, wall: float) -> None:
        """A reconfig (SIGHUP or ``condorpy reconfig``) was applied or refused."""
        self.reconfigs[RECONFIG_RESULTS[0] if ok else RECONFIG_RESULTS[1]] += 1
        self.last_reconfig_ok = ok
        if ok:
            self.last_reconfig_success = wall
        self.changed = True

    def observe(self, o: Output, engine: PolicyEngine) -> None:
        """Follow the engine's outputs to name the cause of each eviction, decided by
        the first kill a claim gets; it is counted when the job is requeued."""
        if isinstance(o, StateChange):
            if o.reason == VACATE_REASON and (o.state is State.PREEMPTING
                                              or o.activity is Activity.RETIRING):
                # an admin's vacate during a retirement is what takes the slot
                self._preempt_reason[o.slot] = o.reason
            elif o.state is State.PREEMPTING or o.activity is Activity.RETIRING:
                self._preempt_reason.setdefault(o.slot, o.reason)
            elif o.state is not State.CLAIMED or o.activity in (Activity.BUSY, Activity.IDLE):
                # a retirement called off (drain cancelled) leaves no cause behind
                self._preempt_reason.pop(o.slot, None)
            return
        if not isinstance(o, (SoftKill, HardKill, KillStarter)) or o.claim in self._cause:
            return
        slot = engine.slots.get(o.slot)
        why = slot.evict_why if slot is not None else None
        reason = self._preempt_reason.get(o.slot, "")
        if slot is not None and slot.pending is not None or why is EvictWhy.RANK:
            cause = "rank"
        elif why is EvictWhy.DRAIN:
            cause = "drain"
        elif not isinstance(o, SoftKill):
            cause = "kill"           # no vacate grace: SIGKILL at once
        elif why is EvictWhy.SHUTDOWN or reason == VACATE_REASON:
            cause = "vacate"
        else:
            cause = "preempt"
        self._cause[o.claim] = cause

    def view(self) -> StatsView:
        return StatsView(
            self.jobs_started, tuple(self.exits.items()), tuple(sorted(self.holds.items())),
            tuple(self.evictions.items()), tuple(self.adoptions.items()),
            tuple((k, v[0], v[1]) for k, v in sorted(self.hooks.items())),
            tuple((k, v[0], v[1]) for k, v in sorted(self.cron.items())),
            self.cycle.view(), self.latency.view(), self.last_cycle, self.cycle_failures,
            tuple(self.reconfigs.items()), self.last_reconfig_success,
            self.last_reconfig_ok)


# ------------------------------------------------------------------ the snapshot
@dataclass
class _Owner:
    keyboard_idle: float | None = None
    console_idle: float | None = None
    load: float = 0.0
    pressure: Pressure = Pressure()


@dataclass(frozen=True)
class SlotFigures:
    """The slots aggregated: counts by (state, activity, type), resources by state."""

    slots: tuple[tuple[tuple[str, str, str], int], ...]
    resources: tuple[tuple[str, str, float], ...]        # (resource, state, amount)
    machine: tuple[tuple[str, float], ...]               # (resource, total)
    preempting_since: float


def slot_figures(engine: PolicyEngine) -> SlotFigures:
    """One pass over the slots, nothing evaluated; d-slots counted, never named. Every
    valid (state, activity) of the slot types present is there, at 0 when empty (a
    partitionable slot brings the dynamic type with it)."""
    groups: dict[tuple[State, Activity, str], list[Slot]] = {}
    for s in engine.slots.values():
        if not s.deleted:
            key = (s.state, s.activity, s.kind)
            got = groups.get(key)
            if got is None:
                groups[key] = [s]
            else:
                got.append(s)
    inv = engine.layout.inventory
    names = ("Cpus", "Memory", "Disk", *inv.custom)
    kinds = {kind for _s, _a, kind in groups}
    if "partitionable" in kinds:
        kinds.add("dynamic")
    counts = {(st, act, k): 0 for st, act in VALID_PAIRS for k in SLOT_TYPES if k in kinds}
    amounts = {(name, state.value): 0.0 for state in State for name in names}
    oldest = 0.0
    for (state, activity, kind), members in groups.items():
        counts[(state.value, activity.value, kind)] = len(members)
        rows = list(map(_RESOURCES, members))
        for name in names:
            amounts[(name, state.value)] += sum(map(methodcaller("get", name, 0.0), rows))
        if state is State.PREEMPTING:
            first = min(m.entered_state for m in members)
            oldest = first if oldest == 0.0 else min(oldest, first)
    machine = [("Cpus", float(inv.cpus)), ("Memory", float(inv.memory_mb)),
               ("Disk", float(inv.disk_kb))]
    for name, res in inv.custom.items():
        machine.append((name, float(len(res.ids) if res.ids else res.count)))
    return SlotFigures(tuple(sorted(counts.items())),
                       tuple((n, st, a) for (n, st), a in amounts.items()),
                       tuple(machine), oldest)


_RESOURCES = attrgetter("resources")


def take_snapshot(engine: PolicyEngine, stats: StatsView, *, now: float, starters: int,
                  owner: _Owner | None = None, figures: SlotFigures | None = None,
                  queue: tuple[tuple[str, int], ...] = (),
                  cgroup: tuple[tuple[str, bool], ...] = (),
                  pool: PoolFigures | None = None,
                  job_pressure: tuple[Pressure, ...] = ()) -> Snapshot:
    """A snapshot from the slot figures (aggregated now unless given) and the rest."""
    fig = figures if figures is not None else slot_figures(engine)
    condor_load = 0.0
    for s in engine.slots.values():       # the machine-wide figure every slot carries
        if not s.deleted and s.total_load:
            condor_load = s.total_load[1]
            break
    mw = engine.machine
    own = owner or _Owner()
    return Snapshot(
        at=now, slots=fig.slots, resources=fig.resources, machine=fig.machine,
        keyboard_idle=own.keyboard_idle, console_idle=own.console_idle,
        load_average=own.load, jobs_load_average=condor_load,
        drain_how=mw.drain.how if mw.drain is not None else None,
        drain_started=mw.drain.started if mw.drain is not None else 0.0,
        shutting_down=mw.shutting_down, badput=mw.badput, unclaimed=mw.unclaimed,
        preempting_since=fig.preempting_since, starters=starters, stats=stats,
        queue=queue or queue_depth(None), cgroup=cgroup or cgroup_enforcement(None),
        policy_errors=_policy_errors(engine.evaluation_errors()), pool=pool,
        machine_pressure=own.pressure, job_pressure=job_pressure)


def _policy_errors(got: dict[str, int]) -> tuple[tuple[str, int], ...]:
    counts = dict.fromkeys(POLICY_EXPRESSIONS, 0)
    counts.update(got)
    return tuple(sorted(counts.items()))


# ------------------------------------------------------------------ the daemon's handle
@dataclass
class Metrics:
    """The daemon's metrics: its counters, its snapshots and its endpoint."""

    address: tuple[str, int] | None
    engine: PolicyEngine
    clock: Clock
    stats: MetricsStats = field(default_factory=MetricsStats)
    snapshot: Snapshot | None = None            # the latest, swapped whole by the loop
    owner: _Owner = field(default_factory=_Owner)
    queue_counts: QueueCounts | None = None     # the local queue's counts by status
    pool: PoolLink | None = None                # the pool link, when in a pool
    starters_cgroup: str | None = None          # where starters go (placement)
    _registry: CollectorRegistry | None = None
    _registry_lock: threading.Lock = field(default_factory=threading.Lock)
    _server: Endpoint | None = None
    _next_publish: float = 0.0
    _figures: SlotFigures | None = None
    _figures_due: float = 0.0
    _queue: tuple[tuple[str, int], ...] = ()
    _queue_due: float = 0.0
    _cgroup: tuple[tuple[str, bool], ...] = ()
    _claims: tuple[tuple[str, int], ...] = ()
    _bind_retry: float | None = None            # when to try an address in use again
    _job_pressure: dict[str, Pressure] = field(default_factory=dict)   # by slot

    @classmethod
    def from_config(cls, cfg: Config, engine: PolicyEngine, clock: Clock) -> Metrics:
        m = cls(metrics_address(cfg), engine, clock)
        # the configuration read at start is the first one applied
        m.stats.last_reconfig_success = clock.time()
        m.stats.declare_cron(cfg.get_list("STARTD_CRON_JOBLIST"))
        return m

    @property
    def registry(self) -> CollectorRegistry:
        """The private registry: made by the first scrape (on the endpoint's thread),
        or the first reader."""
        with self._registry_lock:
            if self._registry is None:
                from prometheus_client import CollectorRegistry, ProcessCollector
                registry = CollectorRegistry()
                from condorpy.startd.metric_families import StartdCollector
                registry.register(StartdCollector(lambda: self.snapshot))
                # The daemon's own CPU, memory and file descriptors (process_*).
                ProcessCollector(registry=registry)
                self._registry = registry
            return self._registry

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def attach(self, queue: QueueCounts | None, pool: PoolLink | None) -> None:
        """The job store's counts by status, and the pool link if there is one."""
        self.queue_counts, self.pool = queue, pool
        self._queue_due, self._figures = 0.0, None

    def placed(self, starters_cgroup: str | None) -> None:
        """Where starters (and so job cgroups) go: None when not delegated."""
        self.starters_cgroup = starters_cgroup
        self._cgroup = cgroup_enforcement(starters_cgroup)

    @property
    def bound(self) -> tuple[str, int] | None:
        """The address the endpoint listens on (the real port when 0 was asked for)."""
        if self._server is None:
            return None
        return self._server.address

    def start(self) -> None:
        """Listen (prometheus-client's server, on a daemon thread of its own)."""
        if self.address is None:
            return
        self.publish(self.clock.monotonic())
        try:
            self._server = _serve(self.address, self._registry_now)
        except StartdError as exc:
            # The jobs matter more than their figures: run on, try again now and
            # then, and let the scrape's failure (the "metrics endpoint down" alert)
            # tell the operator.
            log.error("%s; running without a metrics endpoint, trying again every "
                      "%d s", exc, BIND_RETRY_S)
            self._bind_retry = self.clock.monotonic() + BIND_RETRY_S
            return
        self._listening()

    def _listening(self) -> None:
        host, port = self.bound or self.address or ("", 0)
        log.info("metrics on http://%s/metrics",
                 f"[{host}]:{port}" if ":" in host else f"{host}:{port}")

    def _retry_bind(self, mono: float) -> None:
        """The address was in use: try it again (quietly; the first failure was
        logged)."""
        if self.address is None:
            self._bind_retry = None
            return
        try:
            self._server = _serve(self.address, self._registry_now)
        except StartdError:
            self._bind_retry = mono + BIND_RETRY_S
            return
        self._bind_retry = None
        self._listening()

    def reconfig(self, cfg: Config) -> None:
        """A new address starts a new endpoint before the old one goes; a bad value or
        an address in use raises and leaves the old endpoint as it was."""
        address = metrics_address(cfg)
        self.stats.declare_cron(cfg.get_list("STARTD_CRON_JOBLIST"))
        if address == self.address:
            if self._server is None and address is not None:
                self._bind_retry = self.clock.monotonic()    # in use still? next step
            return
        new = _serve(address, self._registry_now) if address is not None else None
        self.close()
        self.address, self._server, self._bind_retry = address, new, None
        log.info("reconfig: metrics %s", f"on {address[0]}:{address[1]}" if address
                 else "turned off")

    def observe(self, o: Output) -> None:
        """Every output the daemon applies: slots changed (the figures are taken anew
        at the next publish) and evictions get their cause."""
        if self.address is not None:
            self._figures = None
            self.stats.observe(o, self.engine)

    def owner_activity(self, keyboard_idle: float | None, console_idle: float | None,
                       load: float, pressure: Pressure = Pressure()) -> None:
        self.owner.keyboard_idle, self.owner.console_idle = keyboard_idle, console_idle
        self.owner.load = load
        self.owner.pressure = pressure

    def job_pressure(self, slot: str, pressure: Pressure | None) -> None:
        """A running job's PSI (None: its job is gone); only the highest figures
        among jobs are exported, a slot being no metric label."""
        if pressure is None:
            self._job_pressure.pop(slot, None)
        else:
            self._job_pressure[slot] = pressure

    def after_step(self, starters: int) -> None:
        """End of a loop step: publish when something changed, and every second."""
        if self.address is None:
            return
        mono = self.clock.monotonic()
        if self._bind_retry is not None and mono >= self._bind_retry:
            self._retry_bind(mono)
        if self.stats.changed or mono >= self._next_publish:
            self.publish(mono, starters)

    def publish(self, mono: float, starters: int = 0) -> None:
        self.stats.changed = False
        self._next_publish = mono + _REFRESH_S
        # Slots change only through the engine's outputs, which the daemon shows to
        # observe(): a quiet machine reuses its figures (taken anew now and then all
        # the same, should a change ever come without an output).
        if self._figures is None or mono >= self._figures_due:
            self._figures = slot_figures(self.engine)
            self._figures_due = mono + _FIGURES_MAX_AGE_S
            # a controller taken away (or given) at run time shows within this time
            self._cgroup = cgroup_enforcement(self.starters_cgroup)
            if self.pool is not None:
                self._claims = pool_claims(self.pool, self.engine)
        if mono >= self._queue_due:
            # a GROUP BY in the job store: not at every step of a busy loop
            self._queue = queue_depth(self.queue_counts)
            self._queue_due = mono + _QUEUE_MAX_AGE_S
        self.snapshot = take_snapshot(
            self.engine, self.stats.view(), now=self.clock.time(), starters=starters,
            owner=_Owner(self.owner.keyboard_idle, self.owner.console_idle, self.owner.load,
                         self.owner.pressure),
            figures=self._figures, queue=self._queue, cgroup=self._cgroup,
            pool=pool_figures(self.pool, self._claims) if self.pool is not None else None,
            job_pressure=tuple(self._job_pressure.values()))

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def _registry_now(self) -> CollectorRegistry:
        return self.registry


def _serve(address: tuple[str, int],
           registry: Callable[[], CollectorRegistry]) -> Endpoint:
    host, port = address
    try:
        return Endpoint(address, registry)
    except OSError as exc:
        raise StartdError(f"{KNOB}: cannot listen on {host}:{port}: "
                          f"{exc.strerror or exc}") from None


def scrape_text(registry: CollectorRegistry) -> str:
    """The text a scrape returns (for tests and benchmarks)."""
    from prometheus_client import generate_latest
    return generate_latest(registry).decode()
