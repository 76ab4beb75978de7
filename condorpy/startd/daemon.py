"""`condorpy startd`: the execution point daemon, as the composition root of its parts.

The policy engine is built down the one path (:mod:`condorpy.startd.core`) on the system
clock. :class:`Startd` wires the parts and owns nothing of their work:

- the event loop (:mod:`.loop`) and its sources (:mod:`.sources`): the control socket,
  the starters' sockets, hook and cron children, the pool side, signals, the timers;
- the resource manager (:mod:`.resources`): the starter handles, and the engine's
  outputs carried out through ports (the fork server, the starters' channel, the pool
  side, the job store); re-adoption at start-up (:mod:`.adoption`);
- the local schedd (:mod:`condorpy.queue.matchmaker`): the matchmaker and the job's own
  policy, claiming through the engine as a pool's schedd does;
- the control commands, job hooks, startd cron, metrics and systemd notification, each
  handed the ports it needs.

SIGTERM (and SIGINT) stop the daemon and leave running jobs running: the queue, every
claim and every starter are in the job store, and the next daemon re-adopts them.
Ending jobs is what ``condorpy off`` is for. SIGHUP re-reads the configuration.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from condorpy.clock import Clock, SteadyWallClock, SystemClock
from condorpy.config import Config, load_config
from condorpy.errors import CondorpyError, QueueError, RequestError, StartdError
from condorpy.machine.input_watch import InputWatch, OwnerWatch
from condorpy.machine.probe import activity_devices, measure_activity
from condorpy.machine.roots import HostRoots
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.queue.claim_rows import PoolClaimRows
from condorpy.queue.jobstore import (SCHEMA_VERSION, HistoryLimits, JobId, JobStatus,
                                     JobStore)
from condorpy.queue.matchmaker import LocalSchedd
from condorpy.slots.manager import SlotManager
from condorpy.startd import control, journal, pool_restart
from condorpy.startd.adoption import Adopter
from condorpy.startd.broken_keeper import BrokenKeeper, ManagerPort, rules_from
from condorpy.startd.docker_health import DockerHealth, slot_attrs
from condorpy.startd.reconcile import Reconciler
from condorpy.startd.children import ChildRunner
from condorpy.startd.commands import CommandPorts, Commands
from condorpy.startd.control_socket import ControlConn, ControlSocket
from condorpy.startd.core import Core, load_core
from condorpy.startd.cron import CronPorts, StartdCron
from condorpy.startd.forkserver import ForkServer
from condorpy.startd.hooks import HookPorts, JobHooks
from condorpy.startd.job_log import JobLog
from condorpy.startd.loop import EventLoop, guard
from condorpy.startd.metrics import Metrics, metrics_address
from condorpy.startd.notify import Notifier, status_line
from condorpy.startd.paths import (StatePaths, check_state_dirs, claim_dirs, daemon_paths,
                                   make_dirs, release_dirs)
from condorpy.startd.placement import Placement, place
from condorpy.startd.policy_timers import PolicyTimers
from condorpy.startd.reconfig_report import ReconfigReport, needs_restart
from condorpy.startd.poolside.settings import pool_settings
from condorpy.startd.ports import ForkLauncher
from condorpy.startd.resources import Launching, ResourceManager
from condorpy.startd.sources import Signals, StarterLinks, Ticker
from condorpy.starter.knobs import job_updates, starter_knobs
from condorpy.startd.starter_logs import StarterLogs, starter_logs
from condorpy.startd.volume_keeper import VolumeKeeper, reminder_interval_s

if TYPE_CHECKING:
    from condorpy.startd.poolside.link import PoolLink

log = logging.getLogger("condorpy.startd")


class PoolHost:
    """What the pool side calls back (its ``JobHost``): launches and signals through
    the resource manager, pool tools' commands through the control commands."""

    def __init__(self, paths: StatePaths, pool_rows: PoolClaimRows, rm: ResourceManager,
                 commands: Commands, uid: int) -> None:
        self.paths = paths
        self._pool_rows = pool_rows
        self.rm = rm
        self.commands = commands
        self.uid = uid

    @property
    def pool_rows(self) -> PoolClaimRows:
        return self._pool_rows

    def launch_pool_job(self, eid: str, slot: str, job_ad: Any, number: int) -> None:
        self.rm.launch_pool_job(eid, slot, job_ad, number)

    def signal_pool_job(self, eid: str, command: str) -> None:
        self.rm.signal_pool_job(eid, command)

    def pool_command(self, command: str, args: dict[str, Any], user: str) -> Any:
        """A pool tool's command (condor_vacate, condor_drain, ...), authorised by the
        command port's ALLOW lists, through the local CLI's own handler."""
        log.info("pool command %s from %s", command, user)
        return self.commands.dispatch(command, args,
                                      control.Peer(os.getpid(), self.uid, os.getegid()))


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
        self.dir_locks = claim_dirs(self.paths)     # another EP on this host: refused
        _setup_logging(self.paths, foreground, self.env)
        self.notify = Notifier.from_env(self.env)      # systemd: READY, STATUS, WATCHDOG
        self.placement = Placement(None, "the daemon's cgroup")
        for note in notes:
            log.info("%s", note)
        self.store = self._open_store(history, fresh_queue)
        self.engine: PolicyEngine = self.core.engine(self.clock)
        self.metrics = Metrics.from_config(self.cfg, self.engine, self.clock)
        self.server = ForkServer.start(env=self.env)
        self.uid = os.geteuid()
        self.started_at = self.clock.time()
        self.stopping: str | None = None       # why the loop ends
        self.restart_requested = False         # condorpy restart: start anew once stopped
        self.exit_code = 0
        self.loop = EventLoop(self.clock)
        sel = self.loop.selector
        self.job_log = JobLog(self.uid, self.clock)
        self.links = StarterLinks(sel)
        execute = _Execute()
        self.schedd = LocalSchedd(
            self.engine, self.store, self.clock, execute, self.job_log,
            started_at=self.started_at, knob=lambda name: self.cfg.get(name),
            periodic_interval=lambda: self.cfg.get_int("PERIODIC_EXPR_INTERVAL", 60),
            stats_held=self.metrics.stats.job_held)
        self.rm = ResourceManager(
            self.engine, self.clock, launcher=ForkLauncher(self.server), channel=self.links,
            store=self.store, queue=self.schedd,
            launching=_launching(self.paths.spool, self.paths.execute, config_path,
                                 self.env, starter_logs(self.cfg, self.paths.log)),
            stats=self.metrics.stats, observe=self.metrics.observe, job_log=self.job_log,
            max_starter_failures=self._max_starter_failures(self.cfg))
        self.links.deliver = self.rm.on_starter_io
        self.broken = BrokenKeeper(
            ManagerPort(self.rm), self.store.broken, rules_from(self.cfg), volumes=lambda: self.volumes,
            interval_s=reminder_interval_s(self.cfg))
        self.rm.on_starter_gone = self.broken.starter_gone
        execute.rm = self.rm
        self.children = ChildRunner(sel, self.clock)
        self.hooks = JobHooks(HookPorts(
            runner=self.rm, engine=self.engine, store=self.store, children=self.children,
            clock=self.clock, stats=self.metrics.stats, config=lambda: self.cfg,
            starter_config=lambda: load_config(config_path, env=self.env,
                                               subsystem="STARTER"),
            set_status=self.schedd.set_status, stopping=lambda: self.stopping is not None,
            env=self.env, uid=self.uid, started_at=self.started_at))
        self.rm.hooks = self.hooks
        watch = InputWatch.open()
        self.owner_watch = OwnerWatch(watch, lambda: activity_devices(self.cfg), HostRoots()) \
            if watch is not None else None
        self.timers = PolicyTimers(
            self.engine, self.clock, self.metrics, self.rm.apply,
            measure=lambda: measure_activity(self.cfg), publish=lambda: self.cron.publish(),
            cycled=self.schedd.wake, owner_input=self.owner_watch)
        self.cron = StartdCron(CronPorts(
            engine=self.engine, children=self.children, clock=self.clock,
            metrics=self.metrics.stats, config=lambda: self.cfg, apply=self.rm.apply,
            wake=self.timers.wake, stopping=lambda: self.stopping is not None,
            env=self.env), self.hooks.stats)
        self.rm.on_benchmarks = self.cron.bench.request
        self.rm.monitor_usage = self.cron.job_usage
        self.rm.pressure.export = self.metrics.job_pressure
        self.rm.on_exit = self._exit
        self.commands = Commands(CommandPorts(
            engine=self.engine, store=self.store, schedd=self.schedd, handles=self.rm,
            clock=self.clock, job_log=self.job_log, config=lambda: self.cfg,
            apply=self.rm.apply, reconfig=self.reconfig,
            cycle_times=lambda: self.timers.cycle_times,
            metrics_bound=lambda: self.metrics.bound, socket=self.paths.socket,
            log_dir=self.paths.log, uid=self.uid, started_at=self.started_at,
            restart=self.restart))
        self.control: ControlSocket | None = None
        self.reconciler: Reconciler | None = None     # set at start-up
        self.volumes: VolumeKeeper | None = None    # STARTD_ENFORCE_DISK_LIMITS
        self.docker: DockerHealth | None = None     # container jobs' runtime
        self.signals = Signals(sel, {signal.SIGTERM: self._stop_signal,
                                     signal.SIGINT: self._stop_signal,
                                     signal.SIGHUP: self._reconfig_signal,
                                     signal.SIGCHLD: lambda sig: self.children.reap_all()})
        # joining an HTCondor pool (COLLECTOR_HOST): condorpy/startd/poolside/
        self.pool: PoolLink | None = None
        self.rm.pool_host = host = PoolHost(self.paths, self.store.pool, self.rm, self.commands,
                                            self.uid)
        if pool_cfg is not None:
            # the pool side only where a pool is configured (its modules' memory too)
            from condorpy.startd.poolside.claimstore import previous_port
            from condorpy.startd.poolside.link import PoolLink, remember_port
            try:
                self.pool = PoolLink(pool_cfg, self.engine, sel, self.clock, self.rm.apply,
                                     host, previous_port(self.store.pool))
                remember_port(self.store.pool, self.pool)
            except CondorpyError:
                self.server.close()
                raise
            self.rm.pool = self.pool
        self.metrics.attach(self.store.counts, self.pool)

    def _docker_changed(self) -> None:
        self.engine.set(self.clock.time(), slot_attrs(self.engine.layout.inventory.facts))
        self.timers.wake()

    @staticmethod
    def _max_starter_failures(cfg: Config) -> int:
        return cfg.get_int("CONDORPY_MAX_STARTER_FAILURES", 5)

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
        if store.upgraded_from is not None:
            log.info("job store %s: schema version %d upgraded to %d", store.path,
                     store.upgraded_from, SCHEMA_VERSION)
        if store.cluster_floor_raised is not None:
            was, now = store.cluster_floor_raised
            log.warning("job store: the next cluster id was %d, below ids it holds; it "
                        "is now %d", was, now)
        return store

    # ------------------------------------------------------------------ start-up
    def start(self) -> None:
        self.placement = place(self.cfg, self.env, [os.getpid(), self.server.pid])
        self.rm.launching.cgroup = self.placement.starters
        self.metrics.placed(self.placement.starters)
        self.rm.apply(self.engine.take_output())
        from condorpy.startd.poolside.adoption import WithoutPool
        # before adoption re-carves d-slots: a broken one's name and resources are
        # then not given to a re-adopted job
        self.broken.restore(self.clock.monotonic())
        adopter = Adopter(self.rm, self.engine, self.store, self.clock, self.metrics.stats,
                          self.schedd,
                          self.pool if self.pool is not None else WithoutPool(self.store.pool),
                          self.started_at)
        adopter.adopt()
        # after adoption: the containers of re-adopted starters are theirs, not left over
        self.docker = DockerHealth.from_config(
            self.cfg, self.engine.layout.inventory.facts, monotonic=self.clock.monotonic,
            execute=str(self.paths.execute), changed=self._docker_changed)
        if self.docker is not None:
            self.docker.start(h.launched.pid for h in self.rm.handles.values()
                              if h.launched is not None)
            self.rm.on_container_failure = self.docker.failed
        self._docker_changed()
        self.reconciler = Reconciler(self.rm, self.engine, self.store, self.clock, adopter,
                                     self.schedd)
        if self.pool is not None:
            self.pool.skip_numbers(pool_restart.last_pool_number(self.store.starters))
        # per-job scratch volumes: after adoption, so re-adopted starters keep theirs
        self.volumes = VolumeKeeper.from_config(self.cfg)
        if self.volumes is not None:
            self.volumes.start(self.clock.monotonic())
            if self.pool is not None:
                self.pool.advertiser.daemon_extra = self.volumes.cleanup_counts
        per_user = self.cfg.get_int(control.MAX_CONNECTIONS_PER_USER_KNOB,
                                    control.DEFAULT_MAX_CONNECTIONS_PER_USER)
        self.control = ControlSocket(self.paths.socket, self.loop.selector,
                                     self._answer, self.uid,
                                     lambda: self.cfg.get("CONDORPY_ADMIN_GROUP"),
                                     monotonic=self.clock.monotonic, per_user=per_user,
                                     on_close=self.commands.submissions.closed)
        self.metrics.start()
        self.signals.install()
        self._add_sources(self.control)
        self.cron.configure()
        self.timers.cycle()
        log.info("condorpy startd started: %d slots, control socket %s, state in %s; "
                 "starters in %s", len(self.engine.slots), self.paths.socket,
                 self.paths.spool, self.placement.describe)
        self.notify.ready(self._status_line())

    def _add_sources(self, ctl: ControlSocket) -> None:
        """The loop's sources, ticked in this order each pass."""
        add, now = self.loop.add, self.clock.monotonic
        add("signals", self.signals, "signal")
        add("listen", Ticker(ctl.tick, ctl.next_due, self._control_ready), "listen", "control")
        add("starters", Ticker(self.rm.tick, lambda: self.rm.next_deadline(now())))
        if self.reconciler is not None:
            add("taken back", Ticker(self.reconciler.tick, self.reconciler.next_deadline))
        add("starter sockets", self.links, "starter")
        add("probe", Ticker(self.timers.probe_tick, self.timers.next_deadline,
                            self.timers.on_input), "input")
        if self.owner_watch is not None:
            self.loop.selector.register(self.owner_watch.fileno(), selectors.EVENT_READ,
                                        ("input", None))
        add("hook children", Ticker(lambda t: self.children.step(), self.children.next_due,
                                    self._child_ready), "child")
        add("startd cron", Ticker(self.cron.step, self.cron.next_due))
        if self.docker is not None:
            add("docker health", Ticker(self.docker.tick, self.docker.next_due))
        add("fetch work", Ticker(self.hooks.step, self.hooks.next_due))
        add("policy cycle", Ticker(self.timers.cycle_tick))
        add("job policy", Ticker(self._queue_tick, self._queue_due))
        subs = self.commands.submissions
        add("submissions", Ticker(subs.tick, subs.next_due))
        add("metrics", Ticker(lambda t: self.metrics.after_step(len(self.rm))))
        if self.pool is not None:
            pool = self.pool
            add("pool", Ticker(lambda t: pool.tick(now()), lambda: now() + pool.timeout(now()),
                               pool.handle), "pool")
        if self.volumes is not None:
            volumes = self.volumes
            add("volumes", Ticker(lambda t: volumes.step(now()), volumes.next_due))
        add("broken slots", Ticker(lambda t: self.broken.step(now()), self.broken.next_due))
        add("notify", Ticker(lambda t: self.notify.tick(now(), self._status_line),
                             self.notify.next_due))

    def _control_ready(self, handle: object, mask: int) -> None:
        if self.control is None:
            return
        if isinstance(handle, ControlConn):
            self.control.io(handle, mask)
        else:
            self.control.accept()

    def _child_ready(self, handle: object, mask: int) -> None:
        self.children.on_event(handle, mask)  # type: ignore[arg-type]

    def _queue_tick(self, now: float) -> None:
        if now >= self.schedd.next_periodic:
            guard("job policy", self.schedd.periodic)
        if self.schedd.need_match and self.stopping is None:
            guard("matchmaking", self.schedd.match)

    def _queue_due(self) -> float:
        if self.schedd.need_match:
            return self.clock.monotonic()
        return self.schedd.next_periodic

    def _status_line(self) -> str:
        return status_line(((s.state.value, s.activity.value) for s in
                            self.engine.slots.values() if not s.deleted), len(self.rm))

    def _stop_signal(self, sig: int) -> None:
        log.info("got %s: stopping; running jobs keep running and will be re-adopted by "
                 "the next condorpy startd", signal.Signals(sig).name)
        self.stopping = "signal"

    def _reconfig_signal(self, sig: int) -> None:
        self.reconfig()

    def _exit(self, reason: str) -> None:
        self.stopping = "exit"

    def restart(self, how: str) -> None:
        """`condorpy restart`: stop as SIGTERM does (``keep``: running jobs keep running
        and the next daemon re-adopts them) or once ``condorpy off -<how>`` has ended
        them, then start anew in this process (:func:`restart_in_place`, called by
        the command that runs the daemon). A configuration that would not start a
        daemon refuses the restart: this one keeps running rather than leave none."""
        try:
            self._check_startable()
        except CondorpyError as exc:
            raise RequestError(f"refused, the daemon keeps running: a new one would not "
                               f"start: {exc}") from None
        self.restart_requested = True
        if how == "keep":
            self.stopping = "restart"
        else:
            self.rm.apply(self.engine.off(self.clock.time(), how))

    def _check_startable(self) -> None:
        """Read and check the configuration as a new daemon would at its start (the
        machine measured, the engine built, every policy expression compiled, the
        pool, history, metrics and starter knobs read); raise what would stop it."""
        core = load_core(self.config_path, env=self.env)
        core.engine(self.clock)
        pool_settings(core.config)
        HistoryLimits.from_config(core.config)
        metrics_address(core.config)
        self._max_starter_failures(core.config)
        starter_logs(core.config, self.paths.log)
        starter_cfg = load_config(self.config_path, env=self.env, subsystem="STARTER")
        starter_knobs(starter_cfg)
        job_updates(starter_cfg)

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        try:
            while self.stopping is None:
                self.step(self.loop.timeout())
        finally:
            self._shutdown()
        return self.exit_code

    def step(self, timeout: float) -> None:
        """One pass of the loop: wait for I/O up to ``timeout``, then run what is due;
        the job store's deferred writes of the pass are committed at its end, in one
        transaction (condorpy/queue/store_db.py, "Group commit")."""
        rollbacks = self.store.rollbacks
        with self.store.group():
            self.loop.step(timeout)
            # a commit that fails (a full or unwritable spool) is logged, as a source's
            # failure is; what waited for it has been told (held starters killed)
            guard("job store", self.store.flush)
        if self.reconciler is not None:
            # and what the turn decided in memory on writes now lost is undone
            # (its own writes, claims released, wait for the end of the block)
            reconciler = self.reconciler
            with self.store.group():
                guard("job store", lambda: reconciler.after_turn(rollbacks))
                guard("job store", self.store.flush)

    def _answer(self, command: str, args: dict[str, Any], peer: control.Peer) -> Any:
        """A command's answer, sent only once every write it may rest on is committed."""
        try:
            return self.commands.dispatch(command, args, peer)
        finally:
            self.store.flush()

    def reconfig(self) -> ReconfigReport:
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
            starter_cfg = load_config(self.config_path, env=self.env, subsystem="STARTER")
            knobs, updates = starter_knobs(starter_cfg), job_updates(starter_cfg)
            logs = starter_logs(new, self.paths.log)
            failures = self._max_starter_failures(new)
            break_rules = rules_from(new)
            self.metrics.reconfig(new)          # last: it applies what it checks
        except CondorpyError as exc:
            log.error("reconfig refused, the old configuration stays in force: %s", exc)
            self.metrics.stats.reconfigured(False, self.clock.time())
            self.notify.ready(f"reload failed, old configuration kept: {exc}")
            raise
        self.cfg = new
        self.core = core
        self.engine.reconfigure(from_cfg)
        change = self.engine.relayout(layout)
        self.rm.apply(self.engine.take_output())
        if self.pool is not None:
            self.pool.reconfig(new_pool)
        self.rm.launching.knobs = knobs
        self.rm.launching.logs = logs
        self.rm.launching.updates = updates
        self.rm.max_starter_failures = failures
        self.broken.rules = break_rules     # for starters reaped from now on
        self.store.history.set_limits(history)
        self.hooks.reconfig()
        self.cron.configure(reconfig=True)
        if self.owner_watch is not None:
            self.owner_watch.refresh()      # CONSOLE_DEVICES, STARTD_HAS_BAD_UTMP
        restart = needs_restart(changed, self.pool is not None, new_pool is not None)
        said = _log_reconfig(self.engine, changed, change, restart)
        self.schedd.wake()
        self.timers.wake()
        self.metrics.stats.reconfigured(True, self.clock.time())
        self.notify.ready(self._status_line())
        return ReconfigReport(tuple(sorted(changed)), tuple(restart), said)

    # ------------------------------------------------------------------ stop
    def _shutdown(self) -> None:
        if self.restart_requested:
            # the same process carries on (restart_in_place): to systemd a reload
            self.notify.reloading(self.clock.monotonic())
        else:
            self.notify.stopping(f"stopping; {len(self.rm)} job(s) left running")
        if self.pool is not None:
            guard("pool", self.pool.stop)
        self.rm.close()
        if self.control is not None:
            self.control.close()
        # No hook or cron job outlives the daemon.
        self.cron.close()
        self.children.close()
        self.metrics.close()
        if self.owner_watch is not None:
            self.owner_watch.close()
        # The fork server goes; the starters it launched run on.
        self.server.close()
        self.store.close()
        release_dirs(self.dir_locks)
        log.info("condorpy startd stopped (%s); %d job(s) left running%s", self.stopping,
                 len(self.rm), "; restarting" if self.restart_requested else "")


class _Execute:
    """The local schedd's port to the resource manager (built after the schedd, which
    is its queue port)."""

    rm: ResourceManager

    def apply(self, outputs: list[Output]) -> None:
        self.rm.apply(outputs)

    def activate(self, job_id: JobId, claim_id: str, slot: str) -> bool:
        return self.rm.activate(job_id, claim_id, slot)

    def slot_of(self, claim_id: str) -> str:
        return self.rm.slot_of(claim_id)

    def is_running(self, job_id: JobId) -> bool:
        return self.rm.is_running(job_id)

    def leaving(self, job_id: JobId) -> bool:
        return self.rm.leaving(job_id)

    def stop_running(self, job_id: JobId, status: JobStatus, reason: str, code: int,
                     subcode: int, grace_s: float) -> bool:
        return self.rm.stop_running(job_id, status, reason, code, subcode, grace_s)


def _log_reconfig(engine: PolicyEngine, changed: set[str], change: Any,
                  restart_needed: list[str]) -> str | None:
    """Log what a reconfig changed; the slot layout's change, as its reply says it."""
    for name in sorted(changed):
        log.info("reconfig: %s changed", name)
    if restart_needed:
        log.warning("reconfig: %s are read only at start: restart the daemon to apply "
                    "them", ", ".join(restart_needed))
    pending = engine.layout_pending
    if change.empty:
        log.info("reconfig: %d knob(s) changed; the slot layout is unchanged", len(changed))
        return None
    if pending is None:
        said = (f"new slot layout in place ({', '.join(change.going) or 'none'} left, "
                f"{', '.join(f'slot{p.slot_id}' for p in change.coming) or 'none'} came)")
    else:
        said = (f"new slot layout: {', '.join(pending.going)} leave as they become free, "
                f"then {', '.join(f'slot{p.slot_id}' for p in pending.coming) or 'no slot'}"
                f" come")
    log.info("reconfig: %d knob(s) changed; %s", len(changed), said)
    return said


def _launching(spool: Path, execute: Path, config_path: str | None,
               env: dict[str, str], logs: StarterLogs) -> Launching:
    """The starter's knobs (:data:`condorpy.starter.knobs.KNOBS`), read as the STARTER
    and sent with every launch so the fork server needs no configuration of its own,
    and the cadence of the job ad's updates (read as the STARTER too)."""
    cfg = load_config(config_path, env=env, subsystem="STARTER")
    return Launching(spool, execute, starter_knobs(cfg), logs=logs,
                     updates=job_updates(cfg))


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


def restart_argv(orig_argv: list[str], executable: str) -> list[str]:
    """The command line that started this daemon, to run again in its place, without
    -fresh-queue (said once, for the start it was given to)."""
    out = [executable, *orig_argv[1:]]
    return [a for a in out if a not in ("-fresh-queue", "--fresh-queue")]


def restart_in_place(orig_argv: list[str], executable: str) -> None:
    """Run the daemon's own command line again in this process (execv).

    Why in place rather than exiting for systemd (Restart=) or another supervisor to
    start a new one: the process id stays, so systemd's MainPID, the watchdog's
    WATCHDOG_PID, the NOTIFY_SOCKET and the service's cgroup (the daemon's leaf) all
    stay right with nothing to tell systemd but RELOADING=1, then READY=1 from the
    new image once it has re-adopted the jobs; an exit would be recorded as a failure
    (Restart=on-failure) or end the service (a clean exit), and a daemon started as a
    detached child would be a process systemd does not track. The jobs are in their
    own scope and their starters outlive any daemon, so they run on as across a stop
    and start. Every descriptor is close-on-exec; the old daemon closed its store,
    sockets and fork server before this."""
    argv = restart_argv(orig_argv, executable)
    log.info("restarting: %s", " ".join(argv))
    logging.shutdown()
    try:
        os.execv(executable, argv)
    except OSError as exc:
        raise StartdError(f"cannot restart ({executable}): {exc.strerror}") from None


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
