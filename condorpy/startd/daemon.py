"""`condorpy startd`: the execution point daemon.

One thread, one event loop (selectors): the control socket, each starter's socket, a
self-pipe for signals, and timers (the policy cycle every ``poll_interval()``, the
owner-activity probe every second). It runs the policy engine built down the one path
(:mod:`condorpy.startd.core`) on the system clock, carries out every action the engine
decides, feeds starter events back into it, runs jobs from its local queue
(:mod:`condorpy.queue.jobstore`) through a local matchmaker that claims and activates
slots through the same engine entry points a pool's schedd uses, and answers the
commands of :mod:`condorpy.startd.control`.

SIGTERM (and SIGINT) stop the daemon and leave running jobs running: the queue, every
claim and every starter are in the job store, and the next daemon re-adopts them.
Ending jobs is what ``condorpy off`` is for. SIGHUP re-reads the configuration.
"""

from __future__ import annotations

import logging
import os
import pwd
import re
import secrets
import selectors
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from condorpy.classad import Budget, CallContext, ClassAd
from condorpy.clock import Clock, SteadyWallClock, SystemClock
from condorpy.config import Config, load_config
from condorpy.errors import ClassAdError, CondorpyError, QueueError, StartdError
from condorpy.machine.probe import measure_activity
from condorpy.policy import job_policy
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import (Action, ClaimAccepted, ClaimEnded, ClaimRefused,
                                     Continue, CreateSlot, DeleteSlot, DrainCancelled,
                                     DrainComplete, DrainRefused, DrainStarted, Exit,
                                     HardKill, KillBackfill, KillStarter, Output,
                                     RunBenchmarks, SoftKill, StartBackfill, StartJob,
                                     StateChange, Suspend)
from condorpy.policy.states import State
from condorpy.startd import control
from condorpy.startd.commands import Commands
from condorpy.startd.control_socket import ControlSocket
from condorpy.startd.core import Core, load_core
from condorpy.startd.children import ChildRunner
from condorpy.startd.cron import StartdCron
from condorpy.startd.hooks import JobHooks
from condorpy.startd.metrics import Metrics
from condorpy.queue.jobstore import (HistoryLimits, JobId, JobRecord, JobStatus, JobStore,
                                     StarterRecord)
from condorpy.startd.forkserver import ForkServer, LaunchRequest, Launched, same_process
from condorpy.startd import journal
from condorpy.startd.journal import fields
from condorpy.startd.notify import Notifier, status_line
from condorpy.startd.placement import Placement, place
from condorpy.startd.poolside import PoolLink, pool_settings, previous_port, remember_port
from condorpy.startd import pool_restart
from condorpy.startd.results import read_result
from condorpy.starter import reserved
from condorpy.startd.paths import StatePaths, check_state_dirs, daemon_paths, make_dirs
from condorpy.starter.userlog import UserLog
from condorpy.startd.starters import StarterLink, kill_quietly
from condorpy.slots.manager import SlotManager
from condorpy.slots.model import Refusal

log = logging.getLogger("condorpy.startd")

# Attributes the starter needs from the slot; the rest of a slot ad is context.
_ACTIVITY_PROBE_S = 1.0
_CONNECT_TIMEOUT_S = 30.0
_MATCH_BATCH = 64            # jobs started per matchmaking pass before yielding
# Attributes the queue keeps itself: a starter's report never overwrites them.
_QUEUE_OWNED = frozenset({"jobstatus", "clusterid", "procid", "owner", "user",
                          "lastjobstatus", "enteredcurrentstatus"})


@dataclass
class RunningJob:
    job_id: JobId
    claim_id: str
    slot: str
    launched: Launched | None = None
    link: StarterLink | None = None
    connect_by: float = 0.0
    # What the job becomes when its starter ends (rm -> REMOVED, hold -> HELD), and why.
    after: JobStatus | None = None
    after_reason: str = ""
    after_code: int = 0
    after_subcode: int = 0
    evicted: bool = False            # the policy took the slot back: requeue the job
    hard_kill_at: float | None = None
    cpu: tuple[float, float] | None = None   # (cpu seconds, monotonic) of the last usage
    state: str = "starting"
    socket_gone: bool = False        # the starter closed its socket without "done"
    queued: list[str] = field(default_factory=list)   # told before the link was up
    job_pid: int | None = None


class Startd:
    def __init__(self, config_path: str | None, *, clock: Clock | None = None,
                 env: dict[str, str] | None = None, foreground: bool = True,
                 fresh_queue: bool = False) -> None:
        self.config_path = config_path
        # a wall clock stepped back must not stop the engine (it refuses the past)
        self.clock = SteadyWallClock(clock or SystemClock())
        self.env = dict(os.environ if env is None else env)
        self.foreground = foreground
        self.core: Core = load_core(config_path, env=self.env)
        self.cfg: Config = self.core.config
        pool_cfg = pool_settings(self.cfg)   # a bad pool knob stops the start here
        history = HistoryLimits.from_config(self.cfg)
        self.paths, notes = daemon_paths(self.cfg, self.env)
        make_dirs(self.paths)
        if os.geteuid() == 0:
            check_state_dirs(self.paths, os.geteuid())
        _setup_logging(self.paths, foreground, self.env)
        self.notify = Notifier.from_env(self.env)      # systemd: READY, STATUS, WATCHDOG
        self.placement = Placement(None, "the daemon's cgroup")
        for note in notes:
            log.info("%s", note)
        self.store = self._open_store(history, fresh_queue)
        self.engine: PolicyEngine = self.core.engine(self.clock)
        self.metrics = Metrics.from_config(self.cfg, self.engine, self.clock)
        self.starter_knobs = _starter_knobs(config_path, self.env)
        self.launcher = ForkServer.start(env=self.env)
        self.sel = selectors.DefaultSelector()
        self.running: dict[JobId, RunningJob] = {}
        self.by_claim: dict[str, JobId] = {}
        self.commands = Commands(self)
        self.control: ControlSocket | None = None
        self.stopping: str | None = None       # why the loop ends
        self.exit_code = 0
        self.need_match = True
        self.next_cycle = 0.0
        self.last_cycle = 0.0
        self.next_probe = 0.0
        self.next_periodic = 0.0
        self.last_keyboard: Any = None
        self.uid = os.geteuid()
        self.started_at = self.clock.time()
        self._sig_r, self._sig_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._pending_signals: list[int] = []
        self.cycle_times: list[float] = []      # seconds per policy cycle, the last 100
        self.idle_jobs: dict[JobId, JobRecord] | None = None
        # Job hooks, startd cron and benchmarks (hooks.py, cron.py): children of the loop.
        self.children = ChildRunner(self.sel, self.clock)
        self.hooks = JobHooks(self)
        self.cron = StartdCron(self, self.hooks.stats)
        # joining an HTCondor pool (COLLECTOR_HOST): condorpy/startd/poolside/
        self.pool: PoolLink | None = None
        if pool_cfg is not None:
            try:
                self.pool = PoolLink(pool_cfg, self.engine, self.sel, self.clock,
                                     self._apply, self,
                                     previous_port(self.store))
                remember_port(self.store, self.pool)
            except CondorpyError:
                self.launcher.close()
                raise

    def _open_store(self, history: HistoryLimits, fresh: bool) -> JobStore:
        """The job store; one that is there but unusable stops the start (StoreUnusable)
        unless the administrator said -fresh-queue, which moves it aside first."""
        try:
            store = JobStore(self.paths.spool, fresh=fresh, history=history)
        except QueueError as exc:
            if not self.foreground:      # detached: the command's stderr is gone
                log.error("%s", exc)
            raise
        for src, dst in store.set_aside:
            log.warning("-fresh-queue: moved %s aside to %s (it is kept, not deleted)",
                        src, dst)
        if store.damage is not None:
            log.warning("-fresh-queue: the job store %s was unusable (%s); starting "
                        "with a new, empty queue", store.path, store.damage.problem)
        elif fresh:
            log.info("-fresh-queue: the job store %s is sound and is kept as it is",
                     store.path)
        if store.cluster_floor_raised is not None:
            was, now = store.cluster_floor_raised
            log.warning("job store: the next cluster id was %d, below ids it holds; it "
                        "is now %d", was, now)
        return store

    # ------------------------------------------------------------------ start-up
    def start(self) -> None:
        self.placement = place(self.cfg, self.env, [os.getpid(), self.launcher.pid])
        self._apply(self.engine.take_output())
        self._adopt()
        self._open_control()
        self.metrics.start()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, self._on_signal)
        signal.set_wakeup_fd(self._sig_w, warn_on_full_buffer=False)
        self.sel.register(self._sig_r, selectors.EVENT_READ, ("signal", None))
        self.cron.configure()
        self._cycle()
        log.info("condorpy startd started: %d slots, control socket %s, state in %s; "
                 "starters in %s", len(self.engine.slots), self.paths.socket,
                 self.paths.spool, self.placement.describe)
        self.notify.ready(self._status_line())

    def _status_line(self) -> str:
        return status_line(((s.state.value, s.activity.value) for s in
                            self.engine.slots.values() if not s.deleted), len(self.running))

    def _open_control(self) -> None:
        per_user = self.cfg.get_int(control.MAX_CONNECTIONS_PER_USER_KNOB,
                                    control.DEFAULT_MAX_CONNECTIONS_PER_USER)
        self.control = ControlSocket(self.paths.socket, self.sel, self.commands.dispatch,
                                     self.uid, lambda: self.cfg.get("CONDORPY_ADMIN_GROUP"),
                                     monotonic=self.clock.monotonic, per_user=per_user)

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._pending_signals.append(signum)

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        try:
            while self.stopping is None:
                self.step(self._timeout())
        finally:
            self._shutdown()
        return self.exit_code

    def _timeout(self) -> float:
        now = self.clock.monotonic()
        due = min(self.next_cycle, self.next_probe, self.next_periodic)
        for rj in self.running.values():
            if rj.link is None and rj.launched is not None:
                due = min(due, now + 0.002)
            if rj.hard_kill_at is not None:
                due = min(due, rj.hard_kill_at)
        for extra in (self.children.next_due(), self.hooks.next_due(), self.cron.next_due()):
            if extra is not None:
                due = min(due, extra)
        if self.pool is not None:
            due = min(due, now + self.pool.timeout(now))
        if self.control is not None:
            due = min(due, self.control.next_due() or due)
        if self.need_match:
            due = now
        due = min(due, self.notify.next_due() or due)
        return max(0.0, due - now)

    def step(self, timeout: float) -> None:
        """One pass of the loop: wait for I/O up to ``timeout``, then run what is due.
        A failure while handling one event is logged and the daemon carries on."""
        for key, mask in self.sel.select(timeout):
            kind, obj = key.data
            self._guard(kind, lambda: self._event(kind, obj, mask))
        self._guard("signals", self._handle_signals)
        now = self.clock.monotonic()
        if self.control is not None:
            self._guard("listen", lambda: self.control.tick(now) if self.control else None)
        self._guard("starters", lambda: self._connect_starters(now))
        self._guard("kills", lambda: self._hard_kills(now))
        if now >= self.next_probe:
            self._guard("probe", self._probe)
        self._guard("hook children", self.children.step)
        self._guard("startd cron", lambda: self.cron.step(now))
        self._guard("fetch work", lambda: self.hooks.step(now))
        # A claim made since the last cycle shortens the interval at once
        # (UPDATE_INTERVAL while unclaimed, POLLING_INTERVAL while claimed).
        self.next_cycle = min(self.next_cycle,
                              self.last_cycle + max(1, self.engine.poll_interval()))
        if now >= self.next_cycle:
            self._guard("policy cycle", self._cycle)
        if now >= self.next_periodic:
            self._guard("job policy", self._job_policy)
        if self.need_match and self.stopping is None:
            self._guard("matchmaking", self._match)
        self._guard("metrics", lambda: self.metrics.after_step(len(self.running)))
        if self.pool is not None:
            pool = self.pool
            self._guard("pool", lambda: pool.tick(self.clock.monotonic()))
        self._guard("notify", lambda: self.notify.tick(self.clock.monotonic(),
                                                       self._status_line))

    def _event(self, kind: str, obj: Any, mask: int) -> None:
        if kind == "listen" and self.control is not None:
            self.control.accept()
        elif kind == "control" and self.control is not None:
            self.control.io(obj, mask)
        elif kind == "starter":
            self._starter_io(obj)
        elif kind == "child":
            self.children.on_event(obj, mask)
        elif kind == "pool" and self.pool is not None:
            self.pool.handle(obj, mask)
        elif kind == "signal":
            try:
                os.read(self._sig_r, 512)
            except BlockingIOError:
                pass

    def _guard(self, what: str, work: Callable[[], None]) -> None:
        try:
            work()
        except CondorpyError as exc:
            log.error("%s: %s", what, exc)
        except Exception:   # a bug must not take the machine's jobs down with it
            log.exception("%s: internal error", what)

    def _handle_signals(self) -> None:
        while self._pending_signals:
            sig = self._pending_signals.pop(0)
            if sig in (signal.SIGTERM, signal.SIGINT):
                log.info("got %s: stopping; running jobs keep running and will be "
                         "re-adopted by the next condorpy startd", signal.Signals(sig).name)
                self.stopping = "signal"
            elif sig == signal.SIGHUP:
                self.reconfig()
            elif sig == signal.SIGCHLD:
                self.children.reap_all()

    # ------------------------------------------------------------------ policy
    def _probe(self) -> None:
        now_mono = self.clock.monotonic()
        self.next_probe = now_mono + _ACTIVITY_PROBE_S
        try:
            act = measure_activity(self.cfg)
        except (OSError, CondorpyError) as exc:
            log.warning("cannot measure owner activity: %s", exc)
            return
        console = act.console_idle if act.console_idle is not None else act.keyboard_idle
        now = self.clock.time()
        self.engine.set(now, {"KeyboardIdle": act.keyboard_idle, "ConsoleIdle": console,
                              "LoadAvg": act.total_load_avg})
        self.metrics.owner_activity(act.keyboard_idle, console, act.total_load_avg)
        # The owner came back: evaluate at once, not at the next POLLING_INTERVAL.
        if self.last_keyboard is not None and act.keyboard_idle < self.last_keyboard:
            self.next_cycle = now_mono
        self.last_keyboard = act.keyboard_idle

    def _cycle(self) -> None:
        t0 = self.clock.monotonic()
        self.cron.publish()
        outputs = self.engine.cycle(self.clock.time())
        self.cycle_times.append(self.clock.monotonic() - t0)
        self.metrics.stats.policy_cycle(self.cycle_times[-1], self.clock.time())
        del self.cycle_times[:-100]
        self._apply(outputs)
        self.last_cycle = t0
        self.next_cycle = t0 + max(1, self.engine.poll_interval())
        self.need_match = True

    def _apply(self, outputs: list[Output]) -> None:
        for o in outputs:
            self.metrics.observe(o)
            if isinstance(o, StateChange):
                log.info("%s: %s/%s (transition %s%s) %s", o.slot, o.state.value,
                         o.activity.value, o.transition,
                         f"/{o.letter}" if o.letter else "", o.reason,
                         extra=fields(event="state_change", slot=o.slot,
                                      state=o.state.value, activity=o.activity.value,
                                      transition=o.transition))
                continue
            self._act(o)

    def _act(self, a: Action) -> None:
        log.info("%s: action %s %s", a.slot, a.kind,
                 " ".join(f"{k}={v}" for k, v in a.details().items()))
        rj = self.running.get(self.by_claim.get(getattr(a, "claim", ""), JobId(0, 0)))
        if isinstance(a, StartJob):
            self._launch(a.claim, a.slot)
        elif isinstance(a, Suspend) and rj is not None:
            self._tell(rj, "suspend")
            self._set_status(rj.job_id, JobStatus.SUSPENDED)
            self._pool_job_update(rj, {"JobState": "Suspended"})
        elif isinstance(a, Continue) and rj is not None:
            self._tell(rj, "continue")
            self._pool_job_update(rj, {"JobState": "Running"})
            if self.store.job(rj.job_id) is not None:
                self._set_status(rj.job_id, JobStatus.RUNNING)
        elif isinstance(a, SoftKill) and rj is not None:
            rj.evicted = rj.after is None
            self._tell(rj, "soft_kill")
        elif isinstance(a, (HardKill, KillStarter)) and rj is not None:
            rj.evicted = rj.after is None
            self._tell(rj, "hard_kill")
            if isinstance(a, KillStarter) and rj.launched is not None:
                kill_quietly(rj.launched.pid, signal.SIGKILL)
        elif isinstance(a, ClaimEnded):
            self.store.release_claim(a.claim)
            self.by_claim.pop(a.claim, None)
        elif isinstance(a, ClaimRefused):
            self.store.release_claim(a.claim)
        elif isinstance(a, RunBenchmarks):
            self.cron.bench.request(a.slot)
        elif isinstance(a, (StartBackfill, KillBackfill)):
            self._apply(self.engine.backfill_exited(self.clock.time(), a.slot))
        elif isinstance(a, Exit):
            log.info("exiting: %s", a.reason)
            self.stopping = "exit"
        elif isinstance(a, (CreateSlot, DeleteSlot, ClaimAccepted, DrainStarted,
                            DrainComplete, DrainCancelled, DrainRefused)):
            pass

    # ------------------------------------------------------------- matchmaking
    def _match(self) -> None:
        """Offer idle jobs to slots, priority then submission order, through the engine's
        claim request and activation (what a pool's schedd does)."""
        self.need_match = False
        if self.engine.machine.draining or self.engine.machine.shutting_down:
            return
        idle = [r for r in self._idle().values() if r.job_id not in self.running]
        idle.sort(key=lambda r: (-_number(r.ad.evaluate("JobPrio"), 0), r.job_id))
        started = 0
        for rec in idle:
            if started >= _MATCH_BATCH:
                self.need_match = True
                break
            if not self._free_slots():
                break
            if self._try_start(rec):
                started += 1
                self._idle().pop(rec.job_id, None)

    def _idle(self) -> dict[JobId, JobRecord]:
        """The idle jobs, read from the store once and then kept by every change the
        daemon makes (it is the store's only writer)."""
        if self.idle_jobs is None:
            self.idle_jobs = {r.job_id: r for r in self.store.jobs()
                              if r.status is JobStatus.IDLE}
        return self.idle_jobs

    def _set_status(self, job_id: JobId, status: JobStatus, **why: Any) -> None:
        if job_id.cluster < 0:
            return      # a pool job: its queue is the pool's schedd
        rec = self.store.set_status(job_id, status, **why)
        if status is JobStatus.IDLE:
            self._idle()[job_id] = rec
            self.need_match = True
        else:
            self._idle().pop(job_id, None)

    def _free_slots(self) -> list[str]:
        out = []
        for s in self.engine.slots.values():
            if s.deleted or s.leaving or s.kind == "dynamic" or s.state is not State.UNCLAIMED:
                continue
            if s.kind == "partitionable" and s.resources.get("Cpus", 0) <= 0:
                continue        # nothing left to carve a job from
            out.append(s.name)
        return out

    def _try_start(self, rec: JobRecord) -> bool:
        now = self.clock.time()
        candidates = []
        # The job's Requirements and Rank are the user's: against every free slot
        # together they get one evaluation's default budget, not one per slot.
        ctx = self._job_ctx()
        ctx.budget = budget = Budget(clock=self.clock.monotonic)
        for name in self._free_slots():
            slot = self.engine.slots[name]
            req = rec.ad.evaluate("Requirements", slot.ad, ctx)
            if budget.exceeded:
                break
            if req is not True:
                continue
            # A partitionable slot that cannot carve this job is not asked: no claim,
            # nothing written.
            if slot.kind == "partitionable" and \
                    isinstance(self.engine.layout.sized(slot.layer, rec.ad, slot.ad), Refusal):
                continue
            rank = _number(rec.ad.evaluate("Rank", slot.ad, ctx), 0.0)
            if budget.exceeded:
                break
            candidates.append((-rank, slot.slot_id, name))
        if budget.exceeded:
            # Held rather than left idle: an idle job would cost this again on every
            # match cycle, and its owner would never learn why it does not run.
            reason = ("the job's Requirements and Rank exceeded their evaluation budget "
                      f"({budget.steps} steps, {budget.seconds:g} s) when matched")
            log.warning("job %s: %s: held", rec.job_id, reason)
            self._stop_job(rec, JobStatus.HELD, reason, job_policy.HOLD_SYSTEM_POLICY)
            return False
        for _, _, name in sorted(candidates):
            claim_id = f"<condorpy>#{int(self.started_at)}#{secrets.token_hex(12)}"
            out = self.engine.request_claim(now, claim_id, rec.ad, name)
            self._apply(out)
            if not self.engine.has_claim(claim_id):
                continue
            # The claim is on disk before the job is started on it.
            self.store.record_claim(claim_id, self._slot_of(claim_id), "claimed", rec.job_id)
            self.by_claim[claim_id] = rec.job_id
            self.running[rec.job_id] = RunningJob(rec.job_id, claim_id, name)
            self._apply(self.engine.activate(self.clock.time(), claim_id))
            if rec.job_id in self.running and self.running[rec.job_id].launched is None \
                    and self.running[rec.job_id].state != "preparing":
                # not activated: give the claim back and leave the job idle
                self.running.pop(rec.job_id, None)
                self._apply(self.engine.release(self.clock.time(), claim_id))
                continue
            return True
        return False

    # ---------------------------------------------------------------- starters
    def _launch(self, claim_id: str, slot_name: str) -> None:
        if self.pool is not None and self.pool.owns(claim_id):
            self.pool.launch(self, claim_id, slot_name)
            return
        activated = self.clock.monotonic()
        job_id = self.by_claim.get(claim_id)
        rec = self.store.job(job_id) if job_id is not None else None
        if job_id is None or rec is None:
            log.error("claim %s was activated without a job", claim_id)
            return
        rj = self.running.setdefault(job_id, RunningJob(job_id, claim_id, slot_name))
        rj.slot = slot_name
        if self.hooks.prepare(rj, rec, claim_id, slot_name):
            return          # launched once PREPARE_JOB has said go
        slot = self.engine.slots[slot_name]
        job_dir = self.paths.spool / "jobs" / str(job_id)
        # A queue written before submissions were checked may hold a submitter's
        # internal attributes: the starter gets only those this daemon sets now.
        job_ad, _ = reserved.strip_internal(rec.ad.copy())
        job_ad["CondorpyActivatedAt"] = self.clock.time()   # for latency measurements
        user_log = job_ad.evaluate("UserLog")
        if isinstance(user_log, str) and job_ad.lookup("StarterUserLog") is None:
            # This daemon is the job's schedd and shadow too: the starter writes the
            # execution events into the job's own log.
            job_ad["StarterUserLog"] = user_log
        try:
            job_dir.mkdir(parents=True, exist_ok=True)
            (job_dir / "job.ad").write_text(job_ad.to_old())
        except OSError as exc:
            raise StartdError(f"job {job_id}: cannot write {job_dir}: {exc.strerror}") \
                from None
        request = LaunchRequest(str(job_id), job_ad.to_old(), slot.ad.to_old(),
                                str(self.paths.execute), str(job_dir / "final.ad"),
                                knobs=self.starter_knobs, cgroup=self.placement.starters)
        try:
            launched = self.launcher.launch(request)
        except CondorpyError as exc:
            log.error("job %s: %s", job_id, exc)
            self._finish(rj, {"HoldReason": str(exc), "HoldReasonCode": 6})
            return
        rj.launched = launched
        self.metrics.stats.job_launched(job_id, activated)
        rj.connect_by = self.clock.monotonic() + _CONNECT_TIMEOUT_S
        self._connect(rj)
        self.store.start_job(job_id, StarterRecord(
            job_id, launched.pid, launched.boot_id, launched.start_ticks,
            launched.socket_path, str(job_dir), slot_name, int(self.clock.time())),
            claim_id=claim_id)
        log.info("job %s: starter %d launched in %s", job_id, launched.pid, slot_name,
                 extra=fields(event="job_start", job_id=job_id, slot=slot_name,
                              claim_id=claim_id, starter_pid=launched.pid,
                              owner=rec.ad.evaluate("Owner")))

    def _connect_starters(self, now: float) -> None:
        for rj in list(self.running.values()):
            if rj.link is not None or rj.launched is None:
                continue
            if not rj.socket_gone and self._connect(rj):
                continue
            if self._result_ready(rj):
                continue
            if not rj.socket_gone and now > rj.connect_by:
                log.error("job %s: starter %d never listened on %s", rj.job_id,
                          rj.launched.pid, rj.launched.socket_path)
                kill_quietly(rj.launched.pid, signal.SIGKILL)
                self._finish(rj, None)

    def _connect(self, rj: RunningJob) -> bool:
        assert rj.launched is not None
        link = StarterLink(rj.launched.socket_path)
        try:
            ok = link.connect()
        except CondorpyError as exc:
            log.warning("job %s: %s", rj.job_id, exc)
            return False
        if ok:
            rj.link = link
            self.sel.register(link.fileno(), selectors.EVENT_READ, ("starter", rj))
            queued, rj.queued = rj.queued, []
            for cmd in queued:
                self._tell(rj, cmd)
        return ok

    def _result_ready(self, rj: RunningJob) -> bool:
        """Once the starter process is gone, its result file tells how the job ended
        (a starter may end before the daemon connects, or close its socket before it
        writes the file); no file means the job is lost and goes back to the queue."""
        assert rj.launched is not None
        if same_process(rj.launched.pid, rj.launched.start_ticks, rj.launched.boot_id):
            return False
        self._finish(rj, read_result(Path(rj.launched.result_path)))
        return True

    def _starter_io(self, rj: RunningJob) -> None:
        link = rj.link
        if link is None:
            return
        for msg in link.receive():
            self._starter_message(rj, msg)
        if link.closed and rj.job_id in self.running:
            # No "done" yet: the result file will say, once the starter has exited.
            self.sel.unregister(link.fileno())
            link.close()
            rj.link = None
            rj.socket_gone = True

    def _starter_message(self, rj: RunningJob, msg: dict[str, Any]) -> None:
        event = msg.get("event")
        now = self.clock.time()
        if event in ("hello", "state"):
            if isinstance(msg.get("job_pid"), int):
                rj.job_pid = msg["job_pid"]
                self.metrics.stats.job_running(rj.job_id, self.clock.monotonic())
            # start_job made the job Running when its starter was launched
            rj.state = str(msg.get("state", rj.state))
        elif event == "usage":
            usage = msg.get("usage") or {}
            cpu = _number(usage.get("RemoteUserCpu"), 0.0) + _number(usage.get("RemoteSysCpu"), 0.0)
            mono = self.clock.monotonic()
            if rj.cpu is not None and mono > rj.cpu[1]:
                load = max(0.0, (cpu - rj.cpu[0]) / (mono - rj.cpu[1]))
                self.engine.set(now, {"CondorLoadAvg": round(load, 3)}, slot=rj.slot)
            rj.cpu = (cpu, mono)
            attrs = {k: v for k, v in usage.items() if isinstance(v, (int, float, str))
                     and k.lower() not in _QUEUE_OWNED}
            if attrs and rj.job_id.cluster > 0:
                self.store.update(rj.job_id, attrs)
            self.hooks.usage(rj, usage)
            self._pool_job_update(rj, attrs)
        elif event == "done":
            ad = msg.get("ad") if isinstance(msg.get("ad"), dict) else {}
            self._finish(rj, ad)
        elif event == "error":
            log.warning("job %s: starter says: %s", rj.job_id, msg.get("message"))

    def _tell(self, rj: RunningJob, cmd: str) -> None:
        if rj.link is None and rj.launched is not None and not rj.socket_gone:
            # The starter is still starting: the command goes as soon as it listens
            # (a vacate right after a start must not be lost).
            rj.queued.append(cmd)
            return
        if rj.link is None or not rj.link.send(cmd):
            log.warning("job %s: cannot send %s to its starter", rj.job_id, cmd)

    def _hard_kills(self, now: float) -> None:
        for rj in self.running.values():
            if rj.hard_kill_at is not None and now >= rj.hard_kill_at:
                rj.hard_kill_at = None
                self._tell(rj, "hard_kill")

    def _finish(self, rj: RunningJob, final: dict[str, Any] | None) -> None:
        """The job's starter ended: record the job's end once, then tell the engine."""
        if self.running.get(rj.job_id) is not rj:
            return
        del self.running[rj.job_id]
        if rj.link is not None:
            try:
                self.sel.unregister(rj.link.fileno())
            except (KeyError, ValueError):
                pass
            rj.link.close()
        rec = self.store.job(rj.job_id)
        sent = _sent_ad(self.paths.spool / "jobs" / str(rj.job_id))
        # Only what the starter found out: the rest of its final ad is the job ad as it
        # was sent, which the queue has moved on from (NumJobStarts, ...).
        attrs = {k: v for k, v in (final or {}).items()
                 if isinstance(v, (bool, int, float, str)) and k.lower() not in _QUEUE_OWNED
                 and (sent is None or sent.evaluate(k) != v or sent.lookup(k) is None)}
        status, reason, code, subcode = self.hooks.outcome(
            rj, rec, *self._outcome(rj, rec, attrs, final is not None))
        self.metrics.stats.job_ended(rj.job_id, rj.claim_id, status, code,
                                     rj.evicted or final is None)
        if rec is not None:
            started = rec.ad.evaluate("JobCurrentStartDate")
            now_i = int(self.clock.time())
            if isinstance(started, int):
                wall = _number(rec.ad.evaluate("RemoteWallClockTime"), 0.0)
                attrs["RemoteWallClockTime"] = wall + max(0, now_i - started)
                attrs["LastRemoteWallClockTime"] = float(max(0, now_i - started))
            new = self.store.end_job(rj.job_id, attrs, status, reason=reason or None,
                                     code=code or None, subcode=subcode or None,
                                     claim_id=rj.claim_id)
            if status is JobStatus.IDLE:
                self._idle()[rj.job_id] = new
                self.need_match = True
            if rj.after is not None or (final is None and status is JobStatus.HELD):
                self._log_stop(rec.ad, status, reason, code, subcode)
        else:
            self.store.forget_starter(rj.job_id)
        exit_code = attrs.get("ExitCode")
        pool_name = self.pool.job_name(rj.claim_id) if self.pool is not None else None
        log.info("job %s%s: ended in %s: %s%s", rj.job_id,
                 f" (pool job {pool_name})" if pool_name else "", rj.slot, status.name.lower(),
                 f" ({reason})" if reason else "",
                 extra=fields(event="job_exit", job_id=rj.job_id, slot=rj.slot,
                              claim_id=rj.claim_id, job_status=status.name,
                              exit_code=exit_code if isinstance(exit_code, int) else None,
                              hold_code=code or None, reason=reason or None))
        self._guard("job hooks", lambda: self.hooks.job_ended(rj, rec, status, attrs))
        now = self.clock.time()
        if self.engine.has_claim(rj.claim_id):
            code_ = attrs.get("ExitCode")
            self._apply(self.engine.job_exit(now, rj.claim_id,
                                             code_ if isinstance(code_, int) else None))
        pool_claim = self.pool is not None and self.pool.owns(rj.claim_id)
        if self.engine.has_claim(rj.claim_id) and not pool_claim:
            # a fresh time: the calls above may have moved the engine's clock on
            self._apply(self.engine.release(self.clock.time(), rj.claim_id))
        self.by_claim.pop(rj.claim_id, None)
        self.need_match = True
        if self.pool is not None and pool_claim:
            self.pool.job_ended(rj.claim_id, final, rj.evicted)   # the shadow hears of it

    def _outcome(self, rj: RunningJob, rec: JobRecord | None, attrs: dict[str, Any],
                 ended: bool) -> tuple[JobStatus, str, int, int]:
        if rj.after is not None:
            return rj.after, rj.after_reason, rj.after_code, rj.after_subcode
        if "HoldReasonCode" in attrs:
            sub = attrs.get("HoldReasonSubCode")
            return (JobStatus.HELD, str(attrs.get("HoldReason", "held by the starter")),
                    int(attrs["HoldReasonCode"]), sub if isinstance(sub, int) else 0)
        if not ended and not rj.evicted and rec is not None and \
                not (self.pool is not None and self.pool.owns(rj.claim_id)):
            return self._starter_failed(rec, attrs)
        if rj.evicted or not ended:
            return JobStatus.IDLE, "", 0, 0
        if rec is not None:
            final = rec.ad.copy()
            for k, v in attrs.items():
                final[k] = v
            got = job_policy.at_exit(final, int(JobStatus.RUNNING), self._system_policy(),
                                     self._job_ctx(), self.clock.time())
            if got is not None:
                return _DECIDED[got.action], got.reason, got.code, got.subcode
        return JobStatus.COMPLETED, "", 0, 0

    def _starter_failed(self, rec: JobRecord, attrs: dict[str, Any]) -> \
            tuple[JobStatus, str, int, int]:
        """A starter that ended without a final ad (it could not start, or died) puts
        its job back in the queue, but not forever: a job whose starter fails at once
        would otherwise be restarted in a tight loop. The failures count in
        NumShadowExceptions, as HTCondor counts a shadow's; at the limit the job is held."""
        failures = int(_number(rec.ad.evaluate("NumShadowExceptions"), 0.0)) + 1
        attrs["NumShadowExceptions"] = failures
        limit = max(1, self.cfg.get_int("CONDORPY_MAX_STARTER_FAILURES", 5))
        if failures < limit:
            return JobStatus.IDLE, "", 0, 0
        return (JobStatus.HELD, f"the job's starter failed {failures} times without "
                f"reporting how the job ended (CONDORPY_MAX_STARTER_FAILURES is {limit}); "
                "the startd's log says why", 6, 0)

    # ------------------------------------------------------------ job policy
    def _system_policy(self) -> job_policy.SystemPolicy:
        return job_policy.SystemPolicy.from_config(self.cfg.get)

    def _job_ctx(self) -> CallContext:
        return CallContext(now=self.clock.time, tz_offset=self.clock.utc_offset)

    def _job_policy(self) -> None:
        """The jobs' periodic_hold, periodic_release and periodic_remove (and the
        SYSTEM_PERIODIC_* knobs), every PERIODIC_EXPR_INTERVAL as the schedd does."""
        self.next_periodic = self.clock.monotonic() + \
            max(1, self.cfg.get_int("PERIODIC_EXPR_INTERVAL", 60))
        system, ctx, now = self._system_policy(), self._job_ctx(), self.clock.time()
        for rec in self.store.jobs():
            if rec.status in (JobStatus.COMPLETED, JobStatus.REMOVED):
                if not self.store.left_in_queue(rec):
                    self.store.to_history(rec.job_id)
                continue
            rj = self.running.get(rec.job_id)
            if rj is not None and rj.after is not None:
                continue        # already on its way out
            got = job_policy.periodic(rec.ad, int(rec.status), system, ctx, now,
                                      running=rj is not None)
            if got is None:
                continue
            log.info("job %s: %s (%s)", rec.job_id, got.action.value, got.reason)
            if got.action is job_policy.JobAction.RELEASE:
                self._set_status(rec.job_id, JobStatus.IDLE)
                why = got.reason
                self._log_event(rec.ad, lambda ul: ul.released(why))
            elif got.action is job_policy.JobAction.HOLD and rec.status is not JobStatus.HELD:
                self._stop_job(rec, JobStatus.HELD, got.reason, got.code, got.subcode)
            elif got.action is job_policy.JobAction.REMOVE:
                self._stop_job(rec, JobStatus.REMOVED, got.reason, 0)

    # ------------------------------------------- jobs run for a pool's shadow (pool_link.py)
    def pool_command(self, command: str, args: dict[str, Any], user: str) -> Any:
        """A pool tool's command (condor_vacate, condor_drain, ...), authorised by the
        command port's ALLOW lists, through the local CLI's own handler."""
        log.info("pool command %s from %s", command, user)
        return self.commands.dispatch(command, args,
                                      control.Peer(os.getpid(), self.uid, os.getegid()))

    def launch_pool_job(self, eid: str, slot: str, job_ad: ClassAd, number: int) -> None:
        job_id = JobId(number, 0)     # negative: not in the local queue
        job_dir = self.paths.spool / "pool" / str(-number)
        try:
            job_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StartdError(f"cannot make {job_dir}: {exc.strerror}") from None
        name = f"{job_ad.evaluate('ClusterId')}.{job_ad.evaluate('ProcId')} (pool)"
        request = LaunchRequest(name, job_ad.to_old(), self.engine.slots[slot].ad.to_old(),
                                str(self.paths.execute), str(job_dir / "final.ad"),
                                knobs=self.starter_knobs, cgroup=self.placement.starters)
        rj = RunningJob(job_id, eid, slot)
        rj.launched = self.launcher.launch(request)
        pool_restart.record_pool_starter(self.store, job_id, rj.launched, str(job_dir), slot,
                                         self.clock.time())
        rj.connect_by = self.clock.monotonic() + _CONNECT_TIMEOUT_S
        self.running[job_id] = rj
        self.by_claim[eid] = job_id
        self._connect(rj)

    def _pool_job_update(self, rj: RunningJob, attrs: dict[str, Any]) -> None:
        if self.pool is not None and rj.job_id.cluster < 0 and attrs:
            self.pool.job_update(rj.claim_id, attrs)   # to the shadow: register_job_info

    def signal_pool_job(self, eid: str, command: str) -> None:
        rj = self.running.get(self.by_claim.get(eid, JobId(0, 0)))
        if rj is not None:
            self._tell(rj, command)

    # -------------------------------------------------------------- adoption
    def _adopt(self) -> None:
        """Take back every starter the previous daemon left running; record the ends of
        those that finished meanwhile; requeue jobs whose starter vanished."""
        now = self.clock.time()
        for srec in self.store.starters():
            rec = self.store.job(srec.job_id)
            launched = Launched(str(srec.job_id), srec.pid, srec.process_start, srec.boot_id,
                                srec.socket_path, str(Path(srec.execute_dir) / "final.ad"),
                                "")
            alive = same_process(srec.pid, srec.process_start, srec.boot_id)
            claim_id = next((c.claim_id for c in self.store.claims()
                             if c.job_id == srec.job_id), None) or \
                f"<condorpy>#{int(self.started_at)}#{secrets.token_hex(12)}"
            if rec is None:
                if pool_restart.is_pool_job(srec.job_id) and \
                        self._adopt_pool(srec, launched, alive):
                    continue    # its shadow may reconnect to it
                if pool_restart.is_pool_job(srec.job_id) and alive:
                    self._stop_orphan(srec.job_id, launched, srec.slot)
                else:
                    self.store.forget_starter(srec.job_id)
                continue
            rj = RunningJob(srec.job_id, claim_id, srec.slot, launched=launched,
                            connect_by=self.clock.monotonic() + _CONNECT_TIMEOUT_S)
            # Rebuild the claim in the engine as the job had it, without launching.
            self.by_claim[claim_id] = srec.job_id
            self.running[srec.job_id] = rj
            target = srec.slot.split("_")[0]
            # A fresh time for each call: applying one (benchmarks) may move the engine on.
            self._apply([o for o in self.engine.request_claim(self.clock.time(), claim_id,
                                                              rec.ad, target)
                         if not isinstance(o, StartJob)])
            if self.engine.has_claim(claim_id):
                slot = self.engine.slots[self._slot_of(claim_id)]
                rj.slot = slot.name
                self._apply([o for o in self.engine.activate(self.clock.time(), claim_id)
                             if not isinstance(o, StartJob)])
            if alive:
                log.info("job %s: re-adopted starter %d in %s", srec.job_id, srec.pid,
                         rj.slot, extra=fields(event="job_adopted", job_id=srec.job_id,
                                               slot=rj.slot, claim_id=claim_id,
                                               starter_pid=srec.pid))
                self.metrics.stats.adopted("adopted")
            else:
                result = Path(launched.result_path)
                if result.exists():
                    log.info("job %s: its starter %d ended while the daemon was away",
                             srec.job_id, srec.pid)
                    self.metrics.stats.adopted("finished")
                    self._finish(rj, read_result(result))
                else:
                    log.warning("job %s: its starter %d vanished; the job goes back to "
                                "the queue", srec.job_id, srec.pid)
                    rj.evicted = True
                    self.metrics.stats.adopted("lost")
                    self._finish(rj, None)
        if self.pool is not None:
            self.pool.adopt_rest()
        # Claims the store holds for jobs that never got a starter recorded.
        for c in self.store.claims():
            if c.job_id is None or c.job_id not in self.running:
                self.store.release_claim(c.claim_id)
        for rec in self.store.jobs():
            if rec.status in (JobStatus.RUNNING, JobStatus.SUSPENDED) and \
                    rec.job_id not in self.running:
                self._set_status(rec.job_id, JobStatus.IDLE)
        if self.pool is not None:
            self.pool.skip_numbers(pool_restart.last_pool_number(self.store))

    def _adopt_pool(self, srec: StarterRecord, launched: Launched, alive: bool) -> bool:
        """The pool side's answer for a pool job's starter (poolside/adoption.py).
        False: no claim to take it back to; the caller stops the job as before."""
        got = self.pool.adopt_starter(-srec.job_id.cluster, srec.execute_dir, alive) \
            if self.pool is not None else None
        if got is None:
            return False
        if got.gone:
            self.store.forget_starter(srec.job_id)
            return True
        rj = RunningJob(srec.job_id, got.eid, got.slot, launched=launched,
                        connect_by=self.clock.monotonic() + _CONNECT_TIMEOUT_S)
        self.running[srec.job_id] = rj
        self.by_claim[got.eid] = srec.job_id
        if alive:
            log.info("job %s: re-adopted the starter %d of pool job %s in %s; waiting for "
                     "its shadow to reconnect", srec.job_id, srec.pid, got.job_name, rj.slot)
            self.metrics.stats.adopted("adopted")
        else:
            self.metrics.stats.adopted("finished")
            self._finish(rj, got.final)
        return True

    def _stop_orphan(self, job_id: JobId, launched: Launched, slot: str) -> None:
        """A pool job whose starter outlived a killed daemon: its shadow cannot take it
        back (pool_restart.py), so it is stopped; its end is recorded as any job's."""
        log.warning("job %s: its shadow's connection died with the previous daemon; "
                    "starter %d is stopped", job_id, launched.pid)
        rj = RunningJob(job_id, f"<orphan>#{secrets.token_hex(12)}", slot, launched=launched,
                        connect_by=self.clock.monotonic() + _CONNECT_TIMEOUT_S)
        rj.evicted = True
        rj.queued.append("hard_kill")
        self.running[job_id] = rj
        self.by_claim[rj.claim_id] = job_id

    def _slot_of(self, claim_id: str) -> str:
        for s in self.engine.slots.values():
            if s.claim is not None and s.claim.id == claim_id:
                return s.name
        raise StartdError(f"claim {claim_id} has no slot")

    def _log_stop(self, ad: ClassAd, status: JobStatus, reason: str, code: int,
                  subcode: int = 0) -> None:
        if status is JobStatus.REMOVED:
            self._log_event(ad, lambda ul: ul.aborted(reason))
        elif status is JobStatus.HELD:
            self._log_event(ad, lambda ul: ul.held(reason, code, subcode))

    def _log_event(self, ad: ClassAd, write: Callable[[UserLog], None]) -> None:
        """Write one event to the job's user log as its owner (never as root). A log
        that cannot be written (not a regular file: a FIFO would block this loop)
        loses the event, with one warning naming the file and the job."""
        path = ad.evaluate("UserLog")
        cluster, proc = ad.evaluate("ClusterId"), ad.evaluate("ProcId")
        if not isinstance(path, str) or not isinstance(cluster, int) or \
                not isinstance(proc, int):
            return
        uid = gid = None
        groups: tuple[int, ...] | None = None
        owner = ad.evaluate("Owner")
        if self.uid == 0:
            if not isinstance(owner, str):
                return          # root writes no log on nobody's behalf
            try:
                pw = pwd.getpwnam(owner)
                uid, gid = pw.pw_uid, pw.pw_gid
                groups = tuple(os.getgrouplist(owner, pw.pw_gid))
            except (KeyError, OSError):
                return
        try:
            ul = UserLog.open(path, cluster, proc, uid=uid, gid=gid, groups=groups,
                              wall=self.clock.time)
        except OSError as exc:
            log.warning("job %d.%d: cannot write its log %s: %s", cluster, proc, path,
                        exc.strerror)
            return
        try:
            write(ul)
        except OSError as exc:
            log.warning("job %d.%d: cannot write its log %s: %s", cluster, proc, path,
                        exc.strerror)
        finally:
            ul.close()

    def _stop_job(self, rec: JobRecord, status: JobStatus, reason: str, code: int,
                  subcode: int = 0) -> None:
        rj = self.running.get(rec.job_id)
        if rj is None:
            self._set_status(rec.job_id, status, reason=reason, code=code or None,
                             subcode=subcode or None)
            self._log_stop(rec.ad, status, reason, code, subcode)
            if status is JobStatus.HELD:
                self.metrics.stats.job_held(code)
            return
        rj.after, rj.after_reason, rj.after_code = status, reason, code
        rj.after_subcode = subcode
        # As the shadow does: a soft kill with the job's KillSig, then a hard kill
        # once the vacate time (the job's JobMaxVacateTime, else 600 s) has passed.
        grace = _number(rec.ad.evaluate("JobMaxVacateTime"), 600.0)
        rj.hard_kill_at = self.clock.monotonic() + grace
        self._tell(rj, "soft_kill")

    def reconfig(self) -> set[str]:
        """Re-read the configuration and apply what changed without touching jobs. The
        whole new configuration is read and checked first (every policy expression
        parses, the slot types, pool, history and starter knobs read): one that does
        not is refused whole, and the daemon keeps the old configuration object, the
        engine as it was and every resource. A new slot layout applies to slots as
        they become free."""
        self.notify.reloading(self.clock.monotonic())
        try:
            new, changed = self.cfg.reload()
            core = Core(new, self.core.inventory)
            layout = SlotManager.from_config(new, core.inventory, started_at=self.started_at,
                                             clock=self.clock)
            from_cfg = core.settings(layout)    # compiles every policy expression
            new_pool = pool_settings(new)       # a bad pool knob keeps the old config
            history = HistoryLimits.from_config(new)
            starter_knobs = _starter_knobs(self.config_path, self.env)
            self.metrics.reconfig(new)          # last: it applies what it checks
        except CondorpyError as exc:
            log.error("reconfig refused, the old configuration stays in force: %s", exc)
            self.notify.ready(f"reload failed, old configuration kept: {exc}")
            raise
        self.cfg = new
        self.core = core
        self.engine.reconfigure(from_cfg)
        change = self.engine.relayout(layout)
        self._apply(self.engine.take_output())
        if self.pool is not None:
            self.pool.reconfig(new_pool)
        self.starter_knobs = starter_knobs
        self.store.set_history_limits(history)
        self.hooks.reconfig()
        self.cron.configure(reconfig=True)
        for name in sorted(changed):
            log.info("reconfig: %s changed", name)
        sized = sorted(n for n in changed if _sizes_machine(n))
        if sized:
            log.warning("reconfig: %s size the machine, which is measured at start: "
                        "restart the daemon to apply them", ", ".join(sized))
        pending = self.engine.layout_pending
        if change.empty:
            log.info("reconfig: %d knob(s) changed; the slot layout is unchanged", len(changed))
        elif pending is None:
            log.info("reconfig: %d knob(s) changed; new slot layout in place (%s left, %s "
                     "came)", len(changed), ", ".join(change.going) or "none",
                     ", ".join(f"slot{p.slot_id}" for p in change.coming) or "none")
        else:
            log.info("reconfig: %d knob(s) changed; new slot layout: %s leave as they "
                     "become free, then %s come", len(changed), ", ".join(pending.going),
                     ", ".join(f"slot{p.slot_id}" for p in pending.coming) or "no slot")
        self.need_match = True
        self.next_cycle = self.clock.monotonic()
        self.notify.ready(self._status_line())
        return changed

    def _schedd_name(self) -> str:
        return f"condorpy@{self.engine.hostname}"

    # ------------------------------------------------------------------ stop
    def _shutdown(self) -> None:
        self.notify.stopping(f"stopping; {len(self.running)} job(s) left running")
        if self.pool is not None:
            self._guard("pool", self.pool.stop)
        for rj in self.running.values():
            if rj.link is not None:
                rj.link.close()
        if self.control is not None:
            self.control.close()
        # No hook or cron job outlives the daemon.
        self.cron.close()
        self.children.close()
        self.metrics.close()
        # The fork server goes; the starters it launched run on.
        self.launcher.close()
        self.store.close()
        log.info("condorpy startd stopped (%s); %d job(s) left running", self.stopping,
                 len(self.running))


_DECIDED = {job_policy.JobAction.HOLD: JobStatus.HELD,
            job_policy.JobAction.REMOVE: JobStatus.REMOVED,
            job_policy.JobAction.REQUEUE: JobStatus.IDLE,
            job_policy.JobAction.RELEASE: JobStatus.IDLE}

_MACHINE_SIZE_KNOBS = frozenset({"NUM_CPUS", "MAX_NUM_CPUS", "MEMORY", "RESERVED_MEMORY",
                                  "RESERVED_DISK", "RESERVED_SWAP", "COUNT_HYPERTHREAD_CPUS",
                                  "DISK", "EXECUTE"})


def _sizes_machine(knob: str) -> bool:
    name = knob.upper()
    return name in _MACHINE_SIZE_KNOBS or name.startswith("MACHINE_RESOURCE_")


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value)


# The knobs a starter reads (condorpy/starter/knobs.py), sent with every launch so the
# fork server needs no configuration of its own.
_STARTER_KNOBS = ("CGROUP_MEMORY_LIMIT_POLICY", "DISABLE_SWAP_FOR_JOB", "MEMORY",
                  "CONDORPY_CGROUP_PIDS_MAX", "CONDORPY_CGROUP_CPU_MAX", "USE_PID_NAMESPACES",
                  "STARTER_ALLOW_RUNAS_OWNER", "CONDORPY_ALLOW_ROOT_JOBS", "BASE_CGROUP",
                  "CONDORPY_USE_CGROUPS", "KILLING_TIMEOUT", "STARTER_UPDATE_INTERVAL",
                  "FULL_HOSTNAME", "CGROUP_HARD_MEMORY_LIMIT_EXPR",
                  "CGROUP_SOFT_MEMORY_LIMIT_EXPR", "UID_DOMAIN", "FILESYSTEM_DOMAIN",
                  "CONDORPY_ENFORCE_DISK_USAGE")


def _starter_knobs(config_path: str | None, env: dict[str, str]) -> dict[str, str]:
    cfg = load_config(config_path, env=env, subsystem="STARTER")
    names = [n for n in cfg.names() if re.fullmatch(r"SLOT\d+_USER", n, re.I)]
    out = {}
    for name in (*_STARTER_KNOBS, *names):
        value = cfg.get(name)
        if value is not None:
            out[name] = value
    return out


def _sent_ad(job_dir: Path) -> ClassAd | None:
    try:
        return ClassAd.parse_old((job_dir / "job.ad").read_text(), source="job.ad")
    except (OSError, UnicodeDecodeError, ClassAdError):
        return None


def _setup_logging(paths: StatePaths, foreground: bool, env: dict[str, str]) -> None:
    logger = logging.getLogger("condorpy")
    logger.setLevel(logging.INFO)
    for h in list(logger.handlers):
        logger.removeHandler(h)
    # The journal when systemd gave us one, else the StartLog file (and stderr with -f).
    handlers, _where = journal.handlers(env, str(paths.start_log()), foreground)
    for h in handlers:
        logger.addHandler(h)
    logger.propagate = False


def daemonize() -> None:
    """Detach as HTCondor daemons do without -f: fork, new session, no terminal."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    fd = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(fd, target)
    if fd > 2:
        os.close(fd)

