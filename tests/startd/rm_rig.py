"""The daemon's deciding parts in-process: the resource manager, the local schedd and
the policy engine on a manual clock, with a fake launcher and a fake starter channel
behind their ports. No process is started, no socket opened."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from condorpy.clock import ManualClock
from condorpy.errors import StartdError
from condorpy.policy.records import Output
from condorpy.queue.jobstore import JobId, JobStore
from condorpy.queue.matchmaker import LocalSchedd
from condorpy.queue.submit import parse_submit
from condorpy.startd import control
from condorpy.startd.commands import CommandPorts, Commands
from condorpy.startd.forkserver_wire import LaunchRequest, Launched
from condorpy.startd.job_log import JobLog
from condorpy.startd.metrics import MetricsStats
from condorpy.startd.resources import Launching, ResourceManager
from condorpy.startd.reconfig_report import ReconfigReport
from condorpy.startd.starter_handle import LocalJob, Origin, StarterHandle
from tests.policy.engines import core_from_text

BASE = """\
NUM_CPUS = {cpus}
MEMORY = 4096
DISK = 100000000
RUNBENCHMARKS = False
POLLING_INTERVAL = 1
"""


class FakeLauncher:
    """Launches nothing: each launch is a pid that is alive until told otherwise."""

    def __init__(self, sockets: Path) -> None:
        self.sockets = sockets
        self.requests: list[LaunchRequest] = []
        self.alive_pids: set[int] = set()
        self.killed: list[int] = []
        self.released: list[int] = []
        self.fail: str | None = None
        self.next_pid = 1000

    def launch(self, request: LaunchRequest) -> Launched:
        if self.fail is not None:
            raise StartdError(self.fail)
        self.requests.append(request)
        self.next_pid += 1
        self.alive_pids.add(self.next_pid)
        return Launched(request.job_id, self.next_pid, 1, "boot",
                        str(self.sockets / f"{self.next_pid}.sock"), request.result_path, "")

    def release(self, launched: Launched) -> None:
        self.released.append(launched.pid)

    def alive(self, launched: Launched) -> bool:
        return launched.pid in self.alive_pids

    def kill(self, pid: int) -> None:
        self.killed.append(pid)
        self.alive_pids.discard(pid)


class FakeChannel:
    """A starter's socket answers unless ``deaf``; commands are kept."""

    def __init__(self) -> None:
        self.deaf = False
        self.open: set[Origin] = set()
        self.sent: list[tuple[Origin, str]] = []

    def connect(self, origin: Origin, socket_path: str) -> bool:
        if self.deaf:
            return False
        self.open.add(origin)
        return True

    def send(self, origin: Origin, command: str) -> bool:
        if origin not in self.open:
            return False
        self.sent.append((origin, command))
        return True

    def close(self, origin: Origin) -> None:
        self.open.discard(origin)

    def told(self, job: str) -> list[str]:
        return [c for o, c in self.sent if str(o) == job]


class Rig:
    def __init__(self, base: Path, extra: str = "", cpus: int = 2) -> None:
        self.clock = ManualClock(1_700_000_000.0)
        self.core = core_from_text(BASE.format(cpus=cpus) + extra)
        self.cfg = self.core.config
        self.engine = self.core.engine(self.clock)
        self.spool = base / "spool"
        self.spool.mkdir(parents=True, exist_ok=True)
        self.store = JobStore(self.spool, clock=self.clock.time)
        self.launcher = FakeLauncher(base)
        self.channel = FakeChannel()
        self.stats = MetricsStats()
        self.job_log = JobLog(os.geteuid(), self.clock)
        self.schedd = LocalSchedd(
            self.engine, self.store, self.clock, _Unwired(), self.job_log,
            started_at=self.clock.time(), knob=self.cfg.get,
            periodic_interval=lambda: self.cfg.get_int("PERIODIC_EXPR_INTERVAL", 60),
            stats_held=self.stats.job_held)
        self.exits: list[str] = []
        self.rm = ResourceManager(
            self.engine, self.clock, launcher=self.launcher, channel=self.channel,
            store=self.store, queue=self.schedd,
            launching=Launching(self.spool, base / "execute"), stats=self.stats,
            observe=lambda o: self.stats.observe(o, self.engine), job_log=self.job_log,
            max_starter_failures=self.cfg.get_int("CONDORPY_MAX_STARTER_FAILURES", 5))
        self.rm.on_exit = self.exits.append
        self.schedd.execute = self.rm
        self.rm.apply(self.engine.take_output())
        self.commands = Commands(CommandPorts(
            engine=self.engine, store=self.store, schedd=self.schedd, handles=self.rm,
            clock=self.clock, job_log=self.job_log, config=lambda: self.cfg,
            apply=self.rm.apply, reconfig=lambda: ReconfigReport(()), cycle_times=lambda: [],
            metrics_bound=lambda: None, socket=base / "socket", log_dir=base / "log",
            uid=os.geteuid(), started_at=self.clock.time()))

    def cli(self, command: str, **args: Any) -> Any:
        """A control command, as the daemon's own user sends it."""
        peer = control.Peer(os.getpid(), os.geteuid(), os.getegid())
        return self.commands.dispatch(command, args, peer)

    # ------------------------------------------------------------------ the queue
    def submit(self, text: str) -> list[str]:
        cluster = self.store.new_cluster_id()
        ads = parse_submit(text, "test.sub", cluster_id=cluster, owner="alice",
                           submit_dir="/tmp", qdate=int(self.clock.time()))
        self.store.submit(ads, cluster_id=cluster)
        records = self.store.jobs(f"ClusterId == {cluster}")
        self.schedd.submitted(records)
        return [str(r.job_id) for r in records]

    def statuses(self) -> dict[str, int]:
        return {str(r.job_id): int(r.status) for r in self.store.jobs()}

    def counts(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for s in self.statuses().values():
            out[s] = out.get(s, 0) + 1
        return out

    def status(self, job: str) -> int:
        return int(self.attr(job, "JobStatus"))

    def attr(self, job: str, name: str) -> Any:
        """An attribute of the job, in the queue or else in the history."""
        rec = self.store.job(_job_id(job)) or self.history().get(job)
        assert rec is not None, f"no job {job}"
        return rec.ad.evaluate(name)

    # ------------------------------------------------------------------ the loop
    def step(self, seconds: float = 0.0) -> None:
        """One pass of the daemon's loop, ``seconds`` later: starters reached and
        checked, the policy cycle when due, the job policy when due, matchmaking."""
        if seconds:
            self.clock.advance(seconds)
        now = self.clock.monotonic()
        self.rm.tick(now)
        self.apply(self.engine.cycle(self.clock.time()))
        if now >= self.schedd.next_periodic:
            self.schedd.periodic()
        if self.schedd.need_match:
            self.schedd.match()

    def apply(self, outputs: list[Output]) -> None:
        self.rm.apply(outputs)

    def handle(self, job: str) -> StarterHandle:
        h = self.rm.job(_job_id(job))
        assert h is not None, f"job {job} has no starter"
        return h

    def says(self, job: str, *messages: dict[str, Any], closed: bool = False) -> None:
        self.rm.on_starter_io(LocalJob(_job_id(job)), list(messages), closed)

    def exits_with(self, job: str, code: int) -> None:
        """The job's starter reports the end and goes."""
        h = self.handle(job)
        assert h.launched is not None
        self.says(job, {"event": "done", "ad": {"ExitCode": code, "ExitBySignal": False}})
        self.launcher.alive_pids.discard(h.launched.pid)

    def obey(self) -> list[str]:
        """Every starter told to stop ends its job by a signal, as a real one does."""
        gone = []
        for h in list(self.rm.handles.values()):
            told = self.channel.told(h.name)
            if "soft_kill" in told or "hard_kill" in told:
                assert h.launched is not None
                self.rm.on_starter_io(h.origin, [{"event": "done",
                                       "ad": {"ExitBySignal": True, "ExitSignal": 15}}], False)
                self.launcher.alive_pids.discard(h.launched.pid)
                gone.append(h.name)
        return gone

    def history(self) -> dict[str, Any]:
        return {str(r.job_id): r for chunk in self.store.history.chunks() for r in chunk}

    def starter_dies(self, job: str) -> None:
        """The starter dies without a word: its socket closes, no result file."""
        h = self.handle(job)
        assert h.launched is not None
        self.launcher.alive_pids.discard(h.launched.pid)
        self.says(job, closed=True)

    def running(self) -> list[str]:
        return sorted(h.name for h in self.rm.handles.values())

    def slot_states(self) -> list[tuple[str, str]]:
        return [(s.state.value, s.activity.value) for s in self.engine.slots.values()
                if not s.deleted]


def _job_id(text: str) -> JobId:
    c, p = text.split(".")
    return JobId(int(c), int(p))


class _Unwired:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError("the schedd's execute port is wired after the manager")

