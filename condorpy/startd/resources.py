"""The resource manager: owns the policy engine's running side and every starter handle,
and carries out what the engine decides (start, suspend, continue, vacate, kill, end a
claim) through narrow ports (:mod:`condorpy.startd.ports`): a launcher, the starters'
channel, the pool side, the job store and the local queue.

Decisions are made by the engine, by each :class:`StarterHandle` (what a starter's
message or a deadline means) and by :mod:`condorpy.startd.job_end` (what a job's end
makes of it); this module wires their answers to the ports, so that tests run it
in-process with a manual clock and fakes behind the ports.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.errors import CondorpyError, StartdError
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import (STARTD_HELD_JOB, Action, ClaimEnded, ClaimRefused,
                                     Continue, Exit, HardKill, KillBackfill, KillStarter,
                                     Output, RunBenchmarks, SoftKill, StartBackfill,
                                     StartJob, StateChange, Suspend)
from condorpy.queue.records import number_of
from condorpy.queue.jobstore import JobId, JobStatus, StarterRecord
from condorpy.startd import job_end, job_update
from condorpy.startd import pool_restart
from condorpy.startd.results import read_result
from condorpy.startd.forkserver_wire import LaunchRequest, Launched
from condorpy.startd.hooks import FETCHED
from condorpy.startd.job_log import JobLog
from condorpy.startd.loop import guard
from condorpy.startd.job_pressure import JobPressure
from condorpy.starter.transferlist import SPOOL_ATTR
from condorpy.starter.users import SUBMITTER_ATTR
from condorpy.startd.journal import fields
from condorpy.startd.metrics import MetricsStats
from condorpy.startd.ports import (HooksPort, JobRows, Launcher, NoHooks, PoolSide,
                                   QueuePort, StarterChannel)
from condorpy.startd.starter_logs import StarterLogs
from condorpy.startd.starter_handle import (Effect, Finish, JobStarted, KillProcess,
                                            LocalJob, NeverListened, Origin, Phase,
                                            PoolClaim, StarterHandle, StarterSays,
                                            StopOrder, Tell, Unsent, UpdateCadence,
                                            UsageReport)
from condorpy.starter import reserved
from condorpy.starter.knobs import JobUpdates

log = logging.getLogger("condorpy.startd")
# How often a starter that is cleaning up is looked for (a /proc read): it has no socket
# left to say when it is gone.
_REAP_POLL = 0.05


@dataclass
class Launching:
    """What every launch is given, whatever the job's origin."""

    spool: Path
    execute: Path
    knobs: dict[str, str] = field(default_factory=dict)   # the starter's configuration
    cgroup: str | None = None                             # where starters go
    logs: StarterLogs | None = None     # per-slot StarterLog; None: one file per starter
    # how usage reaches the job ad; None: with every report, MemoryUsage as measured
    updates: JobUpdates | None = None

    @property
    def memory_metric(self) -> str | None:
        return self.updates.memory_metric if self.updates is not None else None

    def cadence(self) -> UpdateCadence | None:
        u = self.updates
        return UpdateCadence(u.initial_s, u.interval_s) if u is not None else None


def _held(reason: str, subcode: int | None) -> StopOrder:
    """What the slot's WANT_HOLD makes of the job (HTCondor's StartdHeldJob)."""
    return StopOrder(JobStatus.HELD, reason, STARTD_HELD_JOB, subcode or 0)


class ResourceManager:
    def __init__(self, engine: PolicyEngine, clock: Clock, *, launcher: Launcher,
                 channel: StarterChannel, store: JobRows, queue: QueuePort,
                 launching: Launching, stats: MetricsStats,
                 observe: Callable[[Output], None] = lambda o: None,
                 job_log: JobLog | None = None, max_starter_failures: int = 5) -> None:
        self.engine = engine
        self.clock = clock
        self.launcher = launcher
        self.channel = channel
        self.store = store
        self.queue = queue
        self.launching = launching
        self.stats = stats
        self.observe = observe
        self.job_log = job_log
        self.max_starter_failures = max_starter_failures
        self.pool: PoolSide | None = None
        self.pool_host: Any = None          # what the pool side launches through
        self.hooks: HooksPort = NoHooks()
        self.on_benchmarks: Callable[[str], None] = lambda slot: None
        self.on_exit: Callable[[str], None] = lambda reason: None
        self.on_container_failure: Callable[[str], None] = lambda reason: None  # docker
        # a slot's resource monitors' figures for its running job (GPUsUsage ...)
        self.monitor_usage: Callable[[str], dict[str, Any]] = lambda slot: {}
        self.pressure = JobPressure(lambda: self.engine, self.clock.time)
        self.handles: dict[Origin, StarterHandle] = {}
        self.by_claim: dict[str, Origin] = {}
        # starters whose job has ended but whose process still runs (removing the
        # sandbox, killing leftovers): their slots are in Claimed/Cleaning till reaped,
        # when on_starter_gone reads what they left behind (broken_keeper.py)
        self.cleaning: dict[str, Launched] = {}
        self.on_starter_gone: Callable[[str, str], None] = lambda claim, sock: None

    # ------------------------------------------------------------------ lookups
    def handle(self, origin: Origin) -> StarterHandle | None:
        return self.handles.get(origin)

    def job(self, job_id: JobId) -> StarterHandle | None:
        return self.handles.get(LocalJob(job_id))

    def of_claim(self, claim_id: str) -> StarterHandle | None:
        origin = self.by_claim.get(claim_id)
        return self.handles.get(origin) if origin is not None else None

    def slot_of(self, claim_id: str) -> str:
        for s in self.engine.slots.values():
            if s.claim is not None and s.claim.id == claim_id:
                return s.name
        raise StartdError(f"claim {claim_id} has no slot")

    def __len__(self) -> int:
        return len(self.handles)

    # ------------------------------------------------------------------ the engine
    def apply(self, outputs: list[Output]) -> None:
        for o in outputs:
            self.observe(o)
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
        h = self.of_claim(getattr(a, "claim", ""))
        if isinstance(a, StartJob):
            self.launch(a.claim, a.slot)
        elif isinstance(a, Suspend) and h is not None:
            self._do(h, h.on_suspend())
            if h.job_id is not None:
                self.queue.set_status(h.job_id, JobStatus.SUSPENDED)
            self._pool_update(h, {"JobState": "Suspended"})
        elif isinstance(a, Continue) and h is not None:
            self._do(h, h.on_continue())
            self._pool_update(h, {"JobState": "Running"})
            if h.job_id is not None and self.store.job(h.job_id) is not None:
                self.queue.set_status(h.job_id, JobStatus.RUNNING)
        elif isinstance(a, SoftKill) and h is not None:
            h.vacate = self.engine.vacate_reason(a.claim) or h.vacate
            if a.hold_reason is not None:
                self._do(h, h.on_hold(_held(a.hold_reason, a.hold_subcode), hard=False))
            else:
                self._do(h, h.on_vacate())
        elif isinstance(a, HardKill) and a.hold_reason is not None and h is not None:
            self._do(h, h.on_hold(_held(a.hold_reason, a.hold_subcode), hard=True))
        elif isinstance(a, (HardKill, KillStarter)) and h is not None:
            h.vacate = self.engine.vacate_reason(a.claim) or h.vacate
            self._do(h, h.on_kill(starter_too=isinstance(a, KillStarter)))
        elif isinstance(a, ClaimEnded):
            with self.store.deferred():
                self.store.claims.release(a.claim)
            self.by_claim.pop(a.claim, None)
        elif isinstance(a, ClaimRefused):
            self.store.claims.release(a.claim)
        elif isinstance(a, RunBenchmarks):
            self.on_benchmarks(a.slot)
        elif isinstance(a, (StartBackfill, KillBackfill)):
            self.apply(self.engine.backfill_exited(self.clock.time(), a.slot))
        elif isinstance(a, Exit):
            log.info("exiting: %s", a.reason)
            self.on_exit(a.reason)

    # ------------------------------------------------------------------ claims
    def activate(self, job_id: JobId, claim_id: str, slot: str) -> bool:
        """Activate a claim the local queue (or fetched work) holds for ``job_id``.
        False: the activation started nothing (no starter, no hook), the claim is
        given back and the job stays where it was."""
        origin = LocalJob(job_id)
        h = StarterHandle(origin, claim_id, slot)
        self.handles[origin] = h
        self.by_claim[claim_id] = origin
        self.apply(self.engine.activate(self.clock.time(), claim_id))
        if self.handles.get(origin) is h and not h.started:
            del self.handles[origin]
            self.apply(self.engine.release(self.clock.time(), claim_id))
            self.by_claim.pop(claim_id, None)
            return False
        return True

    def stop_running(self, job_id: JobId, status: JobStatus, reason: str, code: int,
                     subcode: int, grace_s: float) -> bool:
        """Hold or remove a running job: soft kill now, hard kill after ``grace_s``.
        False: the job has no starter here."""
        h = self.job(job_id)
        if h is None:
            return False
        order = StopOrder(status, reason, code, subcode)
        self._do(h, h.on_stop(order, self.clock.monotonic() + grace_s))
        return True

    def is_running(self, job_id: JobId) -> bool:
        return LocalJob(job_id) in self.handles

    def leaving(self, job_id: JobId) -> bool:
        h = self.job(job_id)
        return h is not None and h.stop is not None

    def signal_pool_job(self, eid: str, command: str) -> None:
        h = self.of_claim(eid)
        if h is not None:
            self._do(h, h.on_signal(command))

    def adopt(self, handle: StarterHandle) -> None:
        """A handle re-created at start-up (:mod:`condorpy.startd.adoption`)."""
        if handle.cadence is None:
            handle.cadence = self.launching.cadence()
        self.handles[handle.origin] = handle
        self.by_claim[handle.claim_id] = handle.origin

    # ------------------------------------------------------------------ launching
    def launch(self, claim_id: str, slot_name: str) -> None:
        if self.pool is not None and self.pool.owns(claim_id):
            self.pool.launch(self.pool_host, claim_id, slot_name)
            return
        activated = self.clock.monotonic()
        h = self.of_claim(claim_id)
        job_id = h.job_id if h is not None else None
        rec = self.store.job(job_id) if job_id is not None else None
        if h is None or job_id is None or rec is None:
            log.error("claim %s was activated without a job", claim_id)
            return
        h.slot = slot_name
        if self.hooks.prepare(h, rec, claim_id, slot_name):
            return          # launched once PREPARE_JOB has said go
        job_dir = self.job_dir(h)
        # A queue written before submissions were checked may hold a submitter's
        # internal attributes: the starter gets only those this daemon sets now.
        job_ad, _ = reserved.strip_internal(rec.ad.copy())
        job_ad["CondorpyActivatedAt"] = self.clock.time()   # for latency measurements
        user_log = job_ad.evaluate("UserLog")
        if isinstance(user_log, str) and job_ad.lookup("StarterUserLog") is None:
            # This daemon is the job's schedd and shadow too: the starter writes the
            # execution events into the job's own log.
            job_ad["StarterUserLog"] = user_log
        owner = rec.ad.evaluate("Owner")
        if isinstance(owner, str) and rec.ad.lookup(FETCHED) is None:
            # the queue took the owner from the submitter's peer credentials: the
            # starter writes the log and brings outputs back with that account's rights
            # (fetched work names its Owner itself and moves no files, as HTCondor's
            # starter does for it)
            job_ad[SUBMITTER_ATTR] = owner
            # where an ON_EXIT_OR_EVICT job's output waits for its next run
            job_ad[SPOOL_ATTR] = str(job_dir / "spooled")
        job_text = job_ad.to_old()
        try:
            job_dir.mkdir(parents=True, exist_ok=True)
            (job_dir / "job.ad").write_text(job_text)
        except OSError as exc:
            raise StartdError(f"job {job_id}: cannot write {job_dir}: {exc.strerror}") \
                from None
        try:
            launched = self._start(h, str(job_id), job_text, job_dir)
        except CondorpyError as exc:
            log.error("job %s: %s", job_id, exc)
            self.finish(h, {"HoldReason": str(exc), "HoldReasonCode": 6})
            return
        self.stats.job_launched(h.name, activated)
        with self._released(launched), self.store.deferred():
            self.store.start_job(job_id, StarterRecord(
                job_id, launched.pid, launched.boot_id, launched.start_ticks,
                launched.socket_path, str(job_dir), slot_name, int(self.clock.time())),
                claim_id=claim_id, remote_host=self._slot_ad_name(slot_name))
        log.info("job %s: starter %d launched in %s", job_id, launched.pid, slot_name,
                 extra=fields(event="job_start", job_id=job_id, slot=slot_name,
                              claim_id=claim_id, starter_pid=launched.pid,
                              owner=rec.ad.evaluate("Owner")))

    def _slot_ad_name(self, slot_name: str) -> str | None:
        """The slot's Name as advertised (``slot1_2@host``): a job's RemoteHost."""
        name = self.engine.slots[slot_name].ad.evaluate("Name")
        return name if isinstance(name, str) else None

    def launch_pool_job(self, eid: str, slot: str, job_ad: ClassAd, number: int) -> None:
        """The pool side's launch (its ``JobHost``): the same path as a local job's."""
        origin = PoolClaim(eid, pool_restart.pool_number(number))
        h = StarterHandle(origin, eid, slot)
        job_dir = self.job_dir(h)
        try:
            job_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StartdError(f"cannot make {job_dir}: {exc.strerror}") from None
        name = f"{job_ad.evaluate('ClusterId')}.{job_ad.evaluate('ProcId')} (pool)"
        self.handles[origin] = h
        self.by_claim[eid] = origin
        try:
            launched = self._start(h, name, job_ad.to_old(), job_dir)
        except CondorpyError:
            del self.handles[origin]
            self.by_claim.pop(eid, None)
            raise
        with self._released(launched):
            pool_restart.record_pool_starter(self.store.starters,
                                             pool_restart.row_id(origin), launched,
                                             str(job_dir), slot, self.clock.time())

    @contextlib.contextmanager
    def _released(self, launched: Launched) -> Iterator[None]:
        """Record the held starter (the block), then let it run its job once the
        record is committed (with the rest of the loop's turn: the store's group
        commit). A daemon killed before the commit leaves it to end without running
        anything; a record or a commit that fails ends it here (docs/startd.md,
        "Restart")."""
        try:
            yield
        except BaseException:
            self.launcher.kill(launched.pid)
            raise
        self.store.after_commit(lambda: self._release(launched),
                                lambda: self.launcher.kill(launched.pid))

    def _release(self, launched: Launched) -> None:
        try:
            self.launcher.release(launched)
        except CondorpyError as exc:      # it died meanwhile: its socket tells the rest
            log.warning("starter %d: %s", launched.pid, exc)

    def _start(self, h: StarterHandle, name: str, job_text: str, job_dir: Path) -> Launched:
        """Launch a starter for ``h`` (its job ad in the old format) and reach its
        socket if it is there yet."""
        logs = self.launching.logs
        req = LaunchRequest(name, job_text, self.engine.slots[h.slot].ad.to_old(),
                            str(self.launching.execute), str(job_dir / "final.ad"),
                            knobs=self.launching.knobs, cgroup=self.launching.cgroup,
                            log_path=logs.path_for(h.slot) if logs is not None else "",
                            log_max=logs.max_bytes if logs is not None else 0,
                            hold=True)
        launched = self.launcher.launch(req)
        h.cadence = self.launching.cadence()
        h.on_launched(launched, self.clock.monotonic())
        self._connect(h)
        return launched

    def job_dir(self, h: StarterHandle) -> Path:
        if isinstance(h.origin, PoolClaim):
            return self.launching.spool / "pool" / str(h.origin.number)
        return self.launching.spool / "jobs" / str(h.origin.job_id)

    # ------------------------------------------------------------------ starters
    def _connect(self, h: StarterHandle) -> bool:
        assert h.launched is not None
        if not self.channel.connect(h.origin, h.launched.socket_path):
            return False
        self._do(h, h.on_connected())
        return True

    def tick(self, now: float) -> None:
        """Reach the starters not reached yet, see those gone, kill the overdue."""
        for claim_id, launched in list(self.cleaning.items()):
            if not self.launcher.alive(launched):
                del self.cleaning[claim_id]
                self.on_starter_gone(claim_id, launched.socket_path)  # claim still there
                if self.engine.has_claim(claim_id):
                    self.apply(self.engine.starter_reaped(self.clock.time(), claim_id))
                self.queue.wake()       # the slot may take work again
        for h in list(self.handles.values()):
            if self.handles.get(h.origin) is not h:
                continue
            if h.wants_socket and h.launched is not None:
                if h.phase is not Phase.CLOSED and self._connect(h):
                    continue
                self._do(h, h.on_unreachable(now, self.launcher.alive(h.launched)))
            if self.handles.get(h.origin) is h:
                self._do(h, h.on_deadline(now))

    def next_deadline(self, now: float) -> float | None:
        due: float | None = now + _REAP_POLL if self.cleaning else None
        for h in self.handles.values():
            for t in (now + 0.002 if h.wants_socket else None, h.next_deadline()):
                if t is not None and (due is None or t < due):
                    due = t
        return due

    def on_starter_io(self, origin: Origin, messages: list[dict[str, Any]],
                      closed: bool) -> None:
        h = self.handles.get(origin)
        if h is None:
            return
        for msg in messages:
            if h.phase is Phase.DONE:
                return
            self._do(h, h.on_starter_message(msg, self.clock.monotonic()))
        if closed and self.handles.get(origin) is h:
            # No "done" yet: the result file will say, once the starter has exited.
            self.channel.close(origin)
            h.on_socket_closed()

    def _do(self, h: StarterHandle, effects: list[Effect]) -> None:
        for e in effects:
            if isinstance(e, Tell):
                if not self.channel.send(h.origin, e.command):
                    log.warning("job %s: cannot send %s to its starter", h.name, e.command)
            elif isinstance(e, Unsent):
                log.warning("job %s: cannot send %s to its starter", h.name, e.command)
            elif isinstance(e, KillProcess):
                self.launcher.kill(e.pid)
            elif isinstance(e, NeverListened):
                log.error("job %s: starter %d never listened on %s", h.name, e.pid,
                          e.socket_path)
            elif isinstance(e, Finish):
                final = e.final if e.result_path is None else \
                    read_result(Path(e.result_path))
                self.finish(h, final)
            elif isinstance(e, JobStarted):
                self.stats.job_running(h.name, self.clock.monotonic())
            elif isinstance(e, UsageReport):
                self._usage(h, e)
            elif isinstance(e, StarterSays):
                log.warning("job %s: starter says: %s", h.name, e.message)

    def _usage(self, h: StarterHandle, e: UsageReport) -> None:
        if e.load is not None:
            self.engine.set(self.clock.time(), {"CondorLoadAvg": e.load}, slot=h.slot)
        self.pressure.report(h.slot, e.pressure)
        self.hooks.usage(h, e.usage)
        if not e.update:
            return
        # The job ad's update, as HTCondor's starter sends it to the startd and the
        # shadow: the slot's policy, the local queue's row (and the job's periodic
        # expressions, evaluated at once as the shadow does) and a pool's shadow.
        attrs: dict[str, Any] = job_update.job_ad_update(
            job_end.usage_attrs(e.usage), e.cpus_usage, self.launching.memory_metric)
        if attrs:
            attrs.update(self.monitor_usage(h.slot))
        if not attrs:
            return
        if self.engine.has_claim(h.claim_id):
            self.apply(self.engine.job_update(self.clock.time(), h.claim_id, attrs))
        if h.job_id is not None and self.handles.get(h.origin) is h:
            with self.store.deferred():
                self.store.update(h.job_id, attrs)
            self.queue.job_updated(h.job_id)
        self._pool_update(h, attrs)

    def _pool_update(self, h: StarterHandle, attrs: dict[str, Any]) -> None:
        if self.pool is not None and isinstance(h.origin, PoolClaim) and attrs:
            self.pool.job_update(h.claim_id, attrs)   # to the shadow: register_job_info

    # ------------------------------------------------------------------ the end
    def finish(self, h: StarterHandle, final: dict[str, Any] | None) -> None:
        """The job's starter ended (or never started): record the job's end once, then
        tell the engine."""
        if self.handles.get(h.origin) is not h:
            return
        monitored = self.monitor_usage(h.slot)     # while the slot still runs the job
        if final is not None and monitored:
            final = {**final, **monitored}
        final = job_end.runtime_news(final, self.on_container_failure)
        if h.phase is not Phase.DONE:
            h.finish(final)
        del self.handles[h.origin]
        self.pressure.ended(h.slot)
        self.channel.close(h.origin)
        job_id = h.job_id
        rec = self.store.job(job_id) if job_id is not None else None
        pool_job = isinstance(h.origin, PoolClaim)
        sent = None if pool_job else job_end.sent_ad(self.job_dir(h))
        attrs = job_end.kept_attrs(final, sent)
        status, reason, code, subcode = self.hooks.outcome(h, rec, *job_end.outcome(
            h, rec, attrs, final is not None, pool_job=pool_job,
            max_failures=self.max_starter_failures, at_exit=self.queue.at_exit))
        self.stats.job_ended(h.name, h.claim_id, status, code, h.evicted or final is None)
        vacate = job_end.vacate_of(h, status, final is not None, attrs)
        if rec is not None and job_id is not None:
            if vacate is not None:
                attrs.update(job_end.vacate_attrs(rec.ad, vacate))
            started = rec.ad.evaluate("JobCurrentStartDate")
            now_i = int(self.clock.time())
            if isinstance(started, int):
                wall = number_of(rec.ad.evaluate("RemoteWallClockTime"))
                attrs["RemoteWallClockTime"] = wall + max(0, now_i - started)
                attrs["LastRemoteWallClockTime"] = float(max(0, now_i - started))
            with self.store.deferred():
                new = self.store.end_job(job_id, attrs, status, reason=reason or None,
                                         code=code or None, subcode=subcode or None,
                                         claim_id=h.claim_id)
            if status is JobStatus.IDLE:
                self.queue.job_back(new)
            elif status in (JobStatus.COMPLETED, JobStatus.REMOVED):
                # its ads and any output spooled for a next run are no longer needed
                # once the end is committed (until then its result file is what a
                # restarted daemon would record it from); rmtree does not follow the
                # links a job may have left in it
                job_dir = self.job_dir(h)
                self.store.after_commit(lambda: shutil.rmtree(job_dir, ignore_errors=True))
            if self.job_log is not None and \
                    (h.stop is not None or (final is None and status is JobStatus.HELD)):
                self.job_log.stopped(rec.ad, status, reason, code, subcode)
        else:
            self.store.starters.forget(pool_restart.row_id(h.origin))
        exit_code = attrs.get("ExitCode")
        pool_name = self.pool.job_name(h.claim_id) if self.pool is not None else None
        log.info("job %s%s: ended in %s: %s%s", h.name,
                 f" (pool job {pool_name})" if pool_name else "", h.slot,
                 status.name.lower(), f" ({reason})" if reason else "",
                 extra=fields(event="job_exit", job_id=h.name, slot=h.slot,
                              claim_id=h.claim_id, job_status=status.name,
                              exit_code=exit_code if isinstance(exit_code, int) else None,
                              hold_code=code or None, reason=reason or None))
        try:
            self.hooks.job_ended(h, rec, status, attrs)
        except CondorpyError as exc:
            log.error("job hooks: %s", exc)
        except Exception:   # a hook's bug must not leave the slot claimed
            log.exception("job hooks: internal error")
        code_ = attrs.get("ExitCode")

        def exited() -> None:
            if self.engine.has_claim(h.claim_id):
                launched = h.launched
                cleaning = launched is not None and self.launcher.alive(launched)
                if cleaning and launched is not None:
                    self.cleaning[h.claim_id] = launched
                elif launched is not None:      # already gone: its report is there
                    self.on_starter_gone(h.claim_id, launched.socket_path)
                self.apply(self.engine.job_exit(self.clock.time(), h.claim_id,
                                                code_ if isinstance(code_, int) else None,
                                                cleaning=cleaning))
        pool_claim = self.pool is not None and self.pool.owns(h.claim_id)
        if not pool_claim:
            exited()     # a pool job's engine hears once its shadow has (below)
        if self.engine.has_claim(h.claim_id) and not pool_claim:
            # a fresh time: the calls above may have moved the engine's clock on
            self.apply(self.engine.release(self.clock.time(), h.claim_id))
        self.by_claim.pop(h.claim_id, None)
        self.queue.wake()
        if self.pool is not None and pool_claim:
            # the shadow hears of nothing uncommitted; a commit that fails is logged and
            # the shadow still told: the job has ended, and the next start re-reads it
            guard("job store", self.store.flush)
            if h.stop is not None:      # the slot's WANT_HOLD: the shadow holds the job
                final = {**(final or {}), "HoldReason": h.stop.reason,
                         "HoldReasonCode": h.stop.code, "HoldReasonSubCode": h.stop.subcode}
            elif vacate is not None:    # the shadow writes why into the job's ad
                final = {**(final or {}), **vacate.attrs()}
            self.pool.job_ended(h.claim_id, final, h.evicted, exited)   # the shadow hears

    def close(self) -> None:
        """The daemon stops: its sockets to the starters close, the starters run on."""
        for origin in list(self.handles):
            self.channel.close(origin)
