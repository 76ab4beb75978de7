"""Startd cron and benchmarks: children that publish attributes into the slot ads.

``STARTD_CRON_JOBLIST`` names the jobs; each is configured by ``STARTD_CRON_<name>_*``
(EXECUTABLE, ARGS, ENV, CWD, PERIOD, MODE, PREFIX, RECONFIG, RECONFIG_RERUN, KILL,
JOB_LOAD, CONDITION, SLOTS) as HTCondor reads them. What a job prints
(:mod:`condorpy.startd.hookproto`) is merged into the slot ads it routes to and the
policy is evaluated at once, so START sees a new value in the same cycle.

Benchmarks are the ``OnDemand`` jobs of ``BENCHMARKS_JOBLIST`` (default ``mips
kflops``), run one at a time when the policy asks (RUNBENCHMARKS) and never while
other cron jobs run; their ``Mips`` and ``KFlops`` go into every slot ad.

A job with ``STARTD_CRON_<name>_METRICS`` is a resource monitor: its per-device
samples are accumulated (:mod:`condorpy.startd.cron_metrics`) rather than merged as
they come, and the running job's share reaches its job ad (:meth:`StartdCron.job_usage`).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from condorpy.classad import ClassAd, Undefined
from condorpy.classad.expr import Expr
from condorpy.config import Config
from condorpy.errors import CondorpyError, HookError, JobAdError
from condorpy.clock import Clock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.startd.children import Child, ChildResult, ChildRunner
from condorpy.startd.cron_metrics import JobKey, Metric, MonitorUsage, parse_metrics
from condorpy.startd.hookproto import CronAd, CronMode, CronParser, parse_mode, parse_period
from condorpy.startd.hookproto import route, values
from condorpy.startd.hooks import HookStats, excerpt, hook_env
from condorpy.startd.metrics import MetricsStats
from condorpy.starter.arguments import job_environment


log = logging.getLogger("condorpy.startd")

DEFAULT_TIMEOUT_S = 3600.0       # a run of a non-continuous job (CONDORPY extension)


@dataclass(frozen=True)
class CronSpec:
    name: str
    executable: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    period: int = 0
    mode: CronMode = CronMode.PERIODIC
    prefix: str = ""
    reconfig: bool = False
    reconfig_rerun: bool = False
    kill: bool = False
    job_load: float = 0.01
    condition: Expr | None = field(default=None, compare=False)
    condition_text: str = ""
    slots: tuple[int, ...] | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    metrics: tuple[Metric, ...] = ()        # a resource monitor's (METRICS)


def read_specs(cfg: Config, prefix: str, listname: str) -> list[CronSpec]:
    """The jobs of ``<prefix>_JOBLIST``; a job with a bad knob is skipped, saying why."""
    out = []
    seen: set[str] = set()
    for name in cfg.get_list(listname):
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        try:
            spec = _spec(cfg, prefix, name)
        except CondorpyError as exc:
            log.error("%s job %s skipped: %s", prefix, name, exc)
            continue
        if spec is not None:
            out.append(spec)
    return out


def _spec(cfg: Config, prefix: str, name: str) -> CronSpec | None:
    def knob(k: str) -> str:
        return f"{prefix}_{name}_{k}"
    exe = cfg.get(knob("EXECUTABLE"))
    if not exe:
        log.error("%s job %s skipped: no path found for job (%s)", prefix, name,
                  knob("EXECUTABLE"))
        return None
    mode = parse_mode(cfg.get(knob("MODE")), knob("MODE"))
    ptext = cfg.get(knob("PERIOD"))
    period = parse_period(ptext, knob("PERIOD")) if ptext else None
    if mode in (CronMode.PERIODIC, CronMode.WAIT_FOR_EXIT) and period is None:
        raise HookError(f"no job period found ({knob('PERIOD')})", hook=name)
    if mode is CronMode.PERIODIC and not period:
        raise HookError(f"{knob('PERIOD')} must not be 0 for a Periodic job", hook=name)
    if mode is CronMode.ONE_SHOT and period:
        log.warning("%s job %s: PERIOD is ignored for a OneShot job", prefix, name)
    pfx = cfg.get(knob("PREFIX")) or ""
    if pfx and not pfx.replace("_", "").isalnum():
        raise HookError(f"{knob('PREFIX')} = {pfx} is not alphanumeric", hook=name)
    args_text = cfg.get(knob("ARGS")) or ""
    try:
        env = job_environment(None, cfg.get(knob("ENV"))) \
            if not (cfg.get(knob("ENV")) or "").strip().startswith('"') else \
            job_environment((cfg.get(knob("ENV")) or "").strip().strip('"'), None)
    except JobAdError as exc:
        raise HookError(f"{knob('ENV')}: {exc}", hook=name) from None
    cond_text = cfg.get(knob("CONDITION"))
    cond = cfg.get_expr(knob("CONDITION")) if cond_text else None
    slots_text = cfg.get_list(knob("SLOTS"))
    slots = None
    if slots_text:
        try:
            slots = tuple(int(s) for s in slots_text)
        except ValueError:
            raise cfg.invalid(knob("SLOTS"), "a list of slot numbers") from None
    load = cfg.get_float(knob("JOB_LOAD"), 0.01)
    try:
        metrics = parse_metrics(cfg.get(knob("METRICS")) or "")
    except ValueError as exc:
        raise cfg.invalid(knob("METRICS"), f"a list of SUM:<resource> and "
                          f"PEAK:<resource> ({exc})") from None
    exe, args = exe.strip(), tuple(args_text.split())
    if os.path.basename(exe) == "condor_gpu_utilization" and not os.path.isfile(exe):
        # HTCondor's GPU monitor is not installed: condorpy's reports the same
        exe, args = sys.executable, ("-m", "condorpy.machine.gpu_utilization", *args)
    return CronSpec(name, exe, args, tuple(env.items()),
                    cfg.get(knob("CWD")) or None, period or 0, mode, pfx,
                    cfg.get_bool(knob("RECONFIG"), False),
                    cfg.get_bool(knob("RECONFIG_RERUN"), False),
                    cfg.get_bool(knob("KILL"), False), min(max(load, 0.0), 100.0),
                    cond, cond_text or "", slots,
                    cfg.get_float(knob("TIMEOUT"), DEFAULT_TIMEOUT_S), metrics)


@dataclass
class _Job:
    spec: CronSpec
    next_at: float | None = 0.0      # monotonic; None: not scheduled
    child: Child | None = None
    parser: CronParser | None = None
    last_success: float | None = None


@dataclass
class CronPorts:
    """Everything startd cron and the benchmarks use, and nothing more."""

    engine: PolicyEngine
    children: ChildRunner
    clock: Clock
    metrics: MetricsStats
    config: Callable[[], Config]                 # the daemon's configuration now
    apply: Callable[[list[Output]], None]        # carry out the engine's outputs
    wake: Callable[[], None]                     # evaluate the policy at once
    stopping: Callable[[], bool]
    env: dict[str, str]


class StartdCron:
    def __init__(self, ports: CronPorts, stats: HookStats) -> None:
        self.d = ports
        self.stats = stats
        self.jobs: dict[str, _Job] = {}
        self.ads: dict[str, tuple[CronAd, CronSpec]] = {}   # ad name -> latest ad
        self._applied_all: dict[str, Any] = {}
        self._applied_slot: dict[str, dict[str, Any]] = {}
        self.monitors: dict[str, MonitorUsage] = {}         # job name -> its samples
        self.started = ports.clock.time()
        self.max_load = 0.1
        self.bench = Benchmarks(ports, self)

    # ------------------------------------------------------------ configuration
    def configure(self, reconfig: bool = False) -> None:
        cfg = self.d.config()
        try:
            self.max_load = cfg.get_float("STARTD_CRON_MAX_JOB_LOAD", 0.1)
        except CondorpyError as exc:
            log.error("%s", exc)
        specs = {s.name: s for s in read_specs(cfg, "STARTD_CRON", "STARTD_CRON_JOBLIST")}
        try:
            advertise = cfg.get_bool("ADVERTISE_CMR_UPTIME_SECONDS", False)
        except CondorpyError as exc:
            log.error("%s", exc)
            advertise = False
        for name in list(self.monitors):
            spec = specs.get(name)
            if spec is None or spec.metrics != self.monitors[name].metrics:
                del self.monitors[name]
        for name, spec in specs.items():
            if spec.metrics:
                mon = self.monitors.setdefault(
                    name, MonitorUsage(spec.metrics, self.started, advertise))
                mon.advertise_uptime = advertise
        now = self.d.clock.monotonic()
        for name, job in list(self.jobs.items()):
            new = specs.get(name)
            if new is None or new != job.spec:
                if job.child is not None:
                    self.d.children.kill(job.child, "its configuration changed")
                del self.jobs[name]
                for ad_name in [n for n, (_, s) in self.ads.items() if s.name == name]:
                    del self.ads[ad_name]
            elif reconfig:
                spec = job.spec
                if spec.mode is CronMode.WAIT_FOR_EXIT and spec.reconfig and \
                        job.child is not None and job.child.exit_code is None:
                    try:
                        os.killpg(job.child.pid, signal.SIGHUP)
                    except OSError:
                        pass
                if spec.reconfig_rerun and job.child is None:
                    job.next_at = now
        self.d.metrics.declare_cron(specs)
        for name, spec in specs.items():
            if name not in self.jobs:
                self.jobs[name] = _Job(spec, None if spec.mode is CronMode.ON_DEMAND else now)
        self.bench.configure()
        self.publish()

    # ------------------------------------------------------------ running
    def step(self, now: float) -> None:
        if self.d.stopping():
            return
        for job in self.jobs.values():
            if job.next_at is None or now < job.next_at:
                continue
            spec = job.spec
            if job.child is not None:
                if spec.kill and spec.mode is not CronMode.WAIT_FOR_EXIT:
                    self.d.children.kill(job.child, "its next run is due (KILL = true)")
                job.next_at = now + max(spec.period, 1)
                continue
            if self._load() + spec.job_load > self.max_load + 1e-9:
                job.next_at = now + 1.0
                continue
            if not self._condition(spec):
                job.next_at = self._after_run(spec, now)
                continue
            self._start(job, now)
        self.bench.step(now)

    def next_due(self) -> float | None:
        due = [j.next_at for j in self.jobs.values() if j.next_at is not None]
        if self.bench.waiting and self.bench.child is None:
            due.append(self.d.clock.monotonic() + (0.2 if self.running() else 0.0))
        return min(due) if due else None

    def _after_run(self, spec: CronSpec, now: float) -> float | None:
        if spec.mode is CronMode.PERIODIC:
            return now + max(spec.period, 1)
        return None

    def _load(self) -> float:
        return sum(j.spec.job_load for j in self.jobs.values() if j.child is not None)

    def running(self) -> bool:
        """Whether a cron job runs that benchmarks must wait for (a continuous one
        never ends, so it does not count)."""
        return any(j.child is not None and j.spec.mode is not CronMode.WAIT_FOR_EXIT
                   for j in self.jobs.values())

    def _condition(self, spec: CronSpec) -> bool:
        if spec.condition is None:
            return True
        slot = next((s for s in self.d.engine.slots.values() if not s.deleted), None)
        v = spec.condition.evaluate(slot.ad if slot is not None else ClassAd(), None,
                                    self.d.engine.ctx)
        return v is True

    def _start(self, job: _Job, now: float) -> None:
        spec = job.spec
        # Periodic jobs count their period between starts.
        job.next_at = self._after_run(spec, now)
        job.parser = CronParser(spec.name, spec.prefix)
        env = hook_env(self.d.env)
        env.update(dict(spec.env))
        streaming = spec.mode is CronMode.WAIT_FOR_EXIT
        parser = job.parser
        # a Python module run by this interpreter needs its real argv[0]
        argv0 = spec.executable if spec.executable == sys.executable else spec.name
        job.child = self.d.children.spawn(
            f"STARTD_CRON_{spec.name}", [argv0, *spec.args],
            lambda r: self._ended(job, parser, r), executable=spec.executable, env=env,
            cwd=spec.cwd or "/", timeout=None if streaming else spec.timeout,
            on_output=(lambda text: self._output(job, parser, text)) if streaming else None)

    def _output(self, job: _Job, parser: CronParser, text: str) -> None:
        got = parser.feed(text)
        if got:
            self._take(job.spec, got)

    def _ended(self, job: _Job, parser: CronParser, result: ChildResult) -> None:
        spec = job.spec
        job.child = None
        self.stats.count(spec.name, result)
        now = self.d.clock.monotonic()
        problem = result.problem()
        self.d.metrics.cron_run(spec.name, problem is None)
        if problem is not None:
            log.warning("STARTD_CRON job %s (%s) %s%s", spec.name, spec.executable, problem,
                        excerpt(" stderr: ", result.stderr))
        if result.error is None and not result.timed_out and not result.overflow:
            got = parser.feed(result.stdout) if spec.mode is not CronMode.WAIT_FOR_EXIT \
                else []
            got += parser.close()
            if got:
                self._take(spec, got)
            if problem is None:
                job.last_success = self.d.clock.time()
        for bad in parser.bad[:5]:
            log.warning("STARTD_CRON job %s: ignored %s", spec.name, bad)
        if spec.mode is CronMode.WAIT_FOR_EXIT and self.jobs.get(spec.name) is job:
            # At least a second: a continuous job that dies at once must not spin.
            job.next_at = now + max(spec.period, 1)

    def _take(self, spec: CronSpec, ads: list[CronAd]) -> None:
        monitor = self.monitors.get(spec.name)
        slots: dict[str, ClassAd] = {}
        jobs: dict[str, JobKey | None] = {}
        if monitor is not None:
            slots = {s.name: s.ad for s in self.d.engine.slots.values() if not s.deleted}
            jobs = self._jobs()
        for cad in ads:
            if spec.prefix:
                cad.ad[f"{spec.prefix}LastUpdate"] = int(self.d.clock.time())
            self.ads[cad.name] = (cad, spec)
            if monitor is not None:
                monitor.sample(cad.name, values(cad.ad), self.d.clock.time(),
                               {n: jobs.get(n) for n in route(cad.ad, slots, spec.slots)})
        self.publish()
        # The policy sees the new values now, not at the next POLLING_INTERVAL.
        self.d.wake()

    # ------------------------------------------------------------ publishing
    def publish(self) -> None:
        """Merge every cron ad into the slot ads it routes to (through the engine's
        measurements, so each cycle and each new d-slot keeps them)."""
        if not self.ads and not self._applied_all and not self._applied_slot:
            return
        engine = self.d.engine
        now = self.d.clock.time()
        for_all: dict[str, Any] = {}
        per_slot: dict[str, dict[str, Any]] = {}
        slots: dict[str, ClassAd] = {}
        if self._applied_slot or any(_routed(cad.ad) or spec.slots is not None or
                                     spec.metrics for cad, spec in self.ads.values()):
            slots = {s.name: s.ad for s in engine.slots.values() if not s.deleted}
        devices: dict[tuple[str, str], list[str]] = {}    # (slot, monitor) -> its ads
        for cad, spec in self.ads.values():
            vals = values(cad.ad)
            monitor = self.monitors.get(spec.name)
            if monitor is not None:
                # the samples are accumulated, not merged as they stand
                vals = {k: v for k, v in vals.items() if not monitor.is_metric(k)}
            elif not _routed(cad.ad) and spec.slots is None:
                for_all.update(vals)
                continue
            for name in route(cad.ad, slots, spec.slots):
                per_slot.setdefault(name, {}).update(vals)
                if monitor is not None:
                    devices.setdefault((name, spec.name), []).append(cad.name)
        # a job's figures leave its slot at the first publish after it ends (each
        # policy cycle publishes)
        jobs = self._jobs() if self.monitors else {}
        for (name, mname), devs in sorted(devices.items()):
            per_slot.setdefault(name, {}).update(
                self.monitors[mname].slot_values(name, devs, jobs.get(name), now))
        for monitor in self.monitors.values():
            monitor.forget(monitor.slots() - set(slots))
        changed = {k: v for k, v in for_all.items() if self._applied_all.get(k, _NONE) != v}
        for k in self._applied_all:
            if k not in for_all:
                changed[k] = Undefined
        if changed:
            engine.set(now, changed)
            self._applied_all = dict(for_all)
        for name in set(per_slot) | set(self._applied_slot):
            if name not in slots:
                self._applied_slot.pop(name, None)
                continue
            want = per_slot.get(name, {})
            had = self._applied_slot.get(name, {})
            diff = {k: v for k, v in want.items() if had.get(k, _NONE) != v}
            for k in had:
                if k not in want:
                    diff[k] = for_all.get(k, Undefined)
            if diff:
                engine.set(now, diff, slot=name)
                self._applied_slot[name] = dict(want)

    def job_usage(self, slot: str) -> dict[str, Any]:
        """The resource monitors' figures for the job running on ``slot`` now
        (GPUsUsage, GPUsAverageUsage, GPUsMemoryUsage ...), for its job ad."""
        job = self._jobs().get(slot)
        out: dict[str, Any] = {}
        for monitor in self.monitors.values():
            out.update(monitor.job_values(slot, job))
        return out

    def _jobs(self) -> dict[str, JobKey | None]:
        """Each slot's running job, told apart by its claim and start."""
        out: dict[str, JobKey | None] = {}
        for s in self.d.engine.slots.values():
            if s.deleted:
                continue
            claim = s.claim
            job = claim.job if claim is not None else None
            out[s.name] = (claim.id, job.start) if claim is not None and job is not None \
                else None
        return out

    def close(self) -> None:
        for job in self.jobs.values():
            if job.child is not None:
                self.d.children.kill(job.child, "the daemon stops")


_NONE: Any = object()


def _routed(ad: ClassAd) -> bool:
    return any(ad.lookup(a) is not None for a in
               ("SlotMergeConstraint", "SlotName", "Name", "SlotTypeId", "SlotId"))


class Benchmarks:
    """RUNBENCHMARKS: the BENCHMARKS_JOBLIST jobs, one at a time, then every slot that
    asked goes back to Unclaimed/Idle (benchmarks_done)."""

    def __init__(self, ports: CronPorts, cron: StartdCron) -> None:
        self.d = ports
        self.cron = cron
        self.specs: list[CronSpec] = []
        self.waiting: set[str] = set()
        self.queue: list[CronSpec] = []
        self.child: Child | None = None
        self.results: dict[str, Any] = {}

    def configure(self) -> None:
        cfg = self.d.config()
        names = cfg.get_list("BENCHMARKS_JOBLIST") if cfg.get("BENCHMARKS_JOBLIST") \
            is not None else ["mips", "kflops"]
        specs = []
        for name in names:
            exe = cfg.get(f"BENCHMARKS_{name}_EXECUTABLE")
            builtin = name.lower() in ("mips", "kflops")
            if (not exe or not os.path.isfile(exe)) and builtin:
                # HTCondor's condor_mips/condor_kflops are not here: ours measure the same.
                specs.append(CronSpec(name, sys.executable,
                                      ("-m", "condorpy.startd.benchmarks", name.lower()),
                                      mode=CronMode.ON_DEMAND, job_load=1.0, timeout=300.0))
                continue
            try:
                spec = _spec(cfg, "BENCHMARKS", name)
            except CondorpyError as exc:
                log.error("benchmark %s skipped: %s", name, exc)
                continue
            if spec is not None:
                specs.append(spec)
        self.specs = specs

    def request(self, slot: str) -> None:
        self.waiting.add(slot)
        if self.child is None and not self.queue:
            self.queue = list(self.specs)
            self.results = {}
            log.info("benchmarks: running %s", " ".join(s.name for s in self.queue) or
                     "nothing (BENCHMARKS_JOBLIST is empty)")

    def step(self, now: float) -> None:
        if self.child is not None or not self.waiting:
            return
        if not self.queue:
            self._finish()
            return
        if self.cron.running():
            return              # never while other cron jobs run
        spec = self.queue.pop(0)
        parser = CronParser(spec.name, spec.prefix)
        argv = [spec.executable, *spec.args] if spec.executable == sys.executable else \
            [spec.name, *spec.args]
        self.child = self.d.children.spawn(
            f"BENCHMARKS_{spec.name}", argv, lambda r: self._ended(spec, parser, r),
            executable=spec.executable, env=hook_env(self.d.env), cwd="/",
            timeout=spec.timeout)

    def _ended(self, spec: CronSpec, parser: CronParser, result: ChildResult) -> None:
        self.child = None
        self.cron.stats.count(f"BENCHMARKS_{spec.name}", result)
        problem = result.problem()
        if problem is not None:
            log.warning("benchmark %s (%s) %s%s", spec.name, spec.executable, problem,
                        excerpt(" stderr: ", result.stderr))
            return
        for cad in parser.feed(result.stdout) + parser.close():
            self.results.update(values(cad.ad))
        for bad in parser.bad[:5]:
            log.warning("benchmark %s: ignored %s", spec.name, bad)

    def _finish(self) -> None:
        d = self.d
        now = d.clock.time()
        if self.results:
            log.info("benchmarks done: %s",
                     " ".join(f"{k}={v}" for k, v in sorted(self.results.items())))
            d.engine.set(now, self.results)
        for slot in sorted(self.waiting):
            if slot in d.engine.slots:
                d.apply(d.engine.benchmarks_done(now, slot))
        self.waiting.clear()
        d.wake()
