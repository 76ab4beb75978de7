"""The running job's state and the commands that change it: suspend, continue, soft
and hard kill, asked for over the control socket or by a signal to the starter.

Commands are queued as they arrive (a signal handler may only append) and carried out
by the starter's watch loop between two waits, so a command never interrupts a
measurement or an event being written.
"""

from __future__ import annotations

import os
import selectors
import signal
from collections.abc import Callable
from enum import Enum
from typing import Any

from condorpy.starter.jobspec import JobSpec
from condorpy.starter.proctrack import JobProcesses
from condorpy.starter.protocol import Command, Connection, ControlServer
from condorpy.starter.userlog import UserLog

# How long the end of a job may take to freeze and kill its processes without cgroups.
KILL_SWEEP_S = 10.0


class JobState(Enum):
    STARTING = "starting"
    RUNNING = "running"
    SUSPENDED = "suspended"
    EXITED = "exited"


class JobControl:
    def __init__(self, *, clock: Callable[[], float], say: Callable[[str], None],
                 kill_timeout_s: float) -> None:
        self.clock = clock
        self.say = say
        self.kill_timeout_s = kill_timeout_s
        self.state = JobState.STARTING
        self.pending: list[Command] = []
        self.vacating = False
        self.kill_deadline: float | None = None
        self.suspended_since: float | None = None
        self.suspended_total = 0.0
        self.reaped = False               # the job's first process waited for
        self.processes: JobProcesses | None = None
        self._job: JobSpec | None = None
        self._pid = 0
        self._server: ControlServer | None = None
        self._userlog: UserLog | None = None
        self._sample: Callable[[], object] = lambda: None

    def started(self, job: JobSpec, pid: int, processes: JobProcesses,
                server: ControlServer, userlog: UserLog | None,
                sample: Callable[[], object]) -> None:
        """The job runs: commands act on it from now on. ``sample``: a usage
        measurement, taken before the job is frozen."""
        self._job, self._pid, self.processes = job, pid, processes
        self._server, self._userlog, self._sample = server, userlog, sample
        self.state = JobState.RUNNING

    def on_signal(self, signum: int, _frame: object) -> None:
        """The handler for SIGTERM and SIGINT (a soft kill) and SIGQUIT (a hard kill)."""
        self.pending.append(Command.HARD_KILL if signum == signal.SIGQUIT
                            else Command.SOFT_KILL)

    def serve(self, conn: Connection, sel: selectors.BaseSelector,
              hello: Callable[[], dict[str, Any]]) -> None:
        """Answer what a client of the control socket sent; commands are queued."""
        for msg in conn.receive():
            if "error" in msg:
                conn.send({"event": "error", "message": msg["error"]})
                continue
            try:
                cmd = Command(msg.get("cmd"))
            except ValueError:
                conn.send({"event": "error", "message": f"unknown command {msg.get('cmd')!r}"})
                continue
            if cmd is Command.STATUS:
                conn.send(hello())
            else:
                self.pending.append(cmd)
                conn.send({"event": "ok", "cmd": cmd.value})
        if conn.closed:
            sel.unregister(conn.sock)
            conn.close()

    def run_pending(self) -> None:
        while self.pending:
            self.apply(self.pending.pop(0))

    def check_deadline(self, now: float) -> None:
        """A soft kill the job has not obeyed in its time becomes a hard kill."""
        if self.kill_deadline is not None and now >= self.kill_deadline:
            assert self._job is not None
            self.say(f"job {self._job.job_id} did not exit within its kill timeout; "
                     "killing it")
            self.apply(Command.HARD_KILL)

    def apply(self, cmd: Command) -> None:
        job, server = self._job, self._server
        assert job is not None and server is not None
        if cmd is Command.SUSPEND and self.state is JobState.RUNNING:
            self._sample()
            assert self.processes is not None
            count = self.processes.stop()
            self.state = JobState.SUSPENDED
            self.suspended_since = self.clock()
            if self._userlog is not None:
                self._userlog.suspended(count)
            server.broadcast({"event": "state", "state": self.state.value})
        elif cmd is Command.CONTINUE and self.state is JobState.SUSPENDED:
            self._resume()
        elif cmd is Command.SOFT_KILL:
            self.vacating = True
            if self.state is JobState.SUSPENDED:
                self._resume()       # a frozen job cannot act on its soft-kill signal
            try:
                os.kill(self._pid, job.kill_sig)
            except ProcessLookupError:
                pass
            except OSError as exc:   # KillSig is checked up front; never leave the job
                self.say(f"job {job.job_id}: cannot send signal {job.kill_sig}: "
                         f"{exc.strerror}; killing it")
                self.apply(Command.HARD_KILL)
                return
            if self.kill_deadline is None:
                timeout = job.kill_sig_timeout_s
                if timeout is None:
                    timeout = self.kill_timeout_s
                self.kill_deadline = self.clock() + timeout
        elif cmd is Command.HARD_KILL:
            self.vacating = True
            self.kill_deadline = None
            self.kill_all()

    def _resume(self) -> None:
        assert self.processes is not None and self._server is not None
        self.processes.resume()
        self.state = JobState.RUNNING
        if self.suspended_since is not None:
            self.suspended_total += self.clock() - self.suspended_since
            self.suspended_since = None
        if self._userlog is not None:
            self._userlog.unsuspended()
        self._server.broadcast({"event": "state", "state": self.state.value})

    def kill_all(self) -> None:
        assert self.processes is not None
        self.processes.kill(root_alive=not self.reaped, timeout_s=KILL_SWEEP_S)

    def suspension_s(self) -> float:
        """The seconds the job spent suspended, the suspension it ended in included."""
        if self.suspended_since is not None:
            self.suspended_total += self.clock() - self.suspended_since
        return self.suspended_total
