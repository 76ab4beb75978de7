"""Short-lived children of the daemon (job hooks, cron jobs, benchmarks), run inside its
event loop without ever blocking it.

Each child runs without a shell in a process group of its own, its standard input,
output and error on non-blocking pipes registered in the daemon's selector. A child
that outlives its timeout, or writes more than ``max_output`` bytes, is killed with
its whole group; so is whatever a child left running in its group when it exits, so
that no hook leaves a process behind. The daemon's SIGCHLD handling goes through
:meth:`ChildRunner.reap_all`, which takes the exit status of these children for them
and reaps every other child as before.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Callable

from condorpy.clock import Clock

log = logging.getLogger("condorpy.startd")

DEFAULT_MAX_OUTPUT = 1 << 20          # bytes of stdout (and of stderr) kept per child
_PIPES_GRACE_S = 1.0                   # how long pipes may stay open after the exit


@dataclass(frozen=True)
class ChildResult:
    name: str
    pid: int
    exit_code: int | None       # negative: killed by that signal; None: never ran
    stdout: str
    stderr: str
    timed_out: bool = False
    overflow: bool = False      # wrote more than the limit and was killed
    error: str | None = None    # could not be started
    seconds: float = 0.0

    def problem(self) -> str | None:
        """Why this run failed, in words; None when it exited 0."""
        if self.error is not None:
            return self.error
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s and was killed"
        if self.overflow:
            return "wrote more output than allowed and was killed"
        if self.exit_code is None:
            return "ended without an exit status"
        if self.exit_code < 0:
            try:
                sig = signal.Signals(-self.exit_code).name
            except ValueError:
                sig = str(-self.exit_code)
            return f"was killed by signal {sig}"
        if self.exit_code != 0:
            return f"exited with status {self.exit_code}"
        return None


@dataclass
class Child:
    name: str
    proc: subprocess.Popen[bytes]
    started: float
    deadline: float | None
    on_done: Callable[[ChildResult], None]
    on_output: Callable[[str], None] | None
    max_output: int
    stdin: bytes = b""
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    open_fds: set[int] = field(default_factory=set)
    stdin_fd: int = -1
    stdout_fd: int = -1
    stderr_fd: int = -1
    exit_code: int | None = None
    exited_at: float | None = None
    timed_out: bool = False
    overflow: bool = False
    done: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid


class ChildRunner:
    def __init__(self, sel: selectors.BaseSelector, clock: Clock,
                 max_output: int = DEFAULT_MAX_OUTPUT) -> None:
        self.sel = sel
        self.clock = clock
        self.max_output = max_output
        self.children: dict[int, Child] = {}

    # ------------------------------------------------------------------ starting
    def spawn(self, name: str, argv: list[str], on_done: Callable[[ChildResult], None], *,
              stdin: str = "", timeout: float | None = None, env: dict[str, str] | None = None,
              cwd: str | None = None, user: tuple[int, int] | None = None,
              on_output: Callable[[str], None] | None = None,
              executable: str | None = None) -> Child | None:
        """Start ``argv`` (no shell); ``on_done`` gets its result once it has exited and
        its output is read. A child that cannot start is reported to ``on_done`` at once
        (and None returned)."""
        now = self.clock.monotonic()
        kwargs: dict[str, object] = {}
        if user is not None and os.geteuid() == 0 and user[0] != 0:
            kwargs.update(user=user[0], group=user[1], extra_groups=[])
        try:
            proc = subprocess.Popen(argv, executable=executable, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, cwd=cwd,
                                    start_new_session=True, close_fds=True,
                                    **kwargs)  # type: ignore[call-overload]
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            on_done(ChildResult(name, 0, None, "", "",
                                error=f"cannot run {executable or argv[0]}: {why}"))
            return None
        child = Child(name, proc, now, now + timeout if timeout else None, on_done,
                      on_output, self.max_output, stdin=stdin.encode())
        self.children[proc.pid] = child
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        child.stdin_fd, child.stdout_fd = proc.stdin.fileno(), proc.stdout.fileno()
        child.stderr_fd = proc.stderr.fileno()
        for f, ev in ((proc.stdout, selectors.EVENT_READ), (proc.stderr, selectors.EVENT_READ)):
            os.set_blocking(f.fileno(), False)
            child.open_fds.add(f.fileno())
            self.sel.register(f.fileno(), ev, ("child", (child, f.fileno())))
        os.set_blocking(proc.stdin.fileno(), False)
        if child.stdin:
            child.open_fds.add(proc.stdin.fileno())
            self.sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE,
                              ("child", (child, proc.stdin.fileno())))
        else:
            proc.stdin.close()
        return child

    # ------------------------------------------------------------------ I/O
    def on_event(self, what: tuple[Child, int], mask: int) -> None:
        child, fd = what
        if fd not in child.open_fds:
            return       # closed earlier in this batch of events (its number may be reused)
        proc = child.proc
        assert proc.stdin is not None
        if fd == child.stdin_fd:
            try:
                n = os.write(fd, child.stdin)
                child.stdin = child.stdin[n:]
            except BlockingIOError:
                return
            except OSError:          # the hook never read its input: that is its business
                child.stdin = b""
            if not child.stdin:
                self._close_fd(child, fd)
                proc.stdin.close()
            return
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close_fd(child, fd)
            self._maybe_done(child)
            return
        buf = child.out if fd == child.stdout_fd else child.err
        room = child.max_output - len(buf)
        buf += data[:max(room, 0)]
        if len(data) > room:
            child.overflow = True
            self._kill(child)
            self._drop_fds(child)
            self._maybe_done(child)
            return
        if child.on_output is not None and buf is child.out:
            self._stream(child)

    def _stream(self, child: Child) -> None:
        assert child.on_output is not None
        # Hand over only whole lines; a multi-byte character never splits.
        end = child.out.rfind(b"\n")
        if end < 0:
            return
        chunk = bytes(child.out[:end + 1])
        # A continuous job may print for ever: only an unfinished line counts against
        # the limit.
        del child.out[:end + 1]
        try:
            child.on_output(chunk.decode("utf-8", errors="replace"))
        except Exception:
            log.exception("%s: handling its output failed", child.name)

    def _close_fd(self, child: Child, fd: int) -> None:
        if fd in child.open_fds:
            child.open_fds.discard(fd)
            try:
                self.sel.unregister(fd)
            except (KeyError, ValueError):
                pass

    def _drop_fds(self, child: Child) -> None:
        for fd in list(child.open_fds):
            self._close_fd(child, fd)
        for f in (child.proc.stdin, child.proc.stdout, child.proc.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass

    # ------------------------------------------------------------------ ends
    def _kill(self, child: Child, force: bool = False) -> None:
        # Once reaped, the group's id may be reused: only the kill right at the reap
        # (``force``) may still signal it.
        if child.exit_code is not None and not force:
            return
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass

    def kill(self, child: Child, why: str) -> None:
        """Stop a child and everything in its group now (reconfig, shutdown, a cron job's
        KILL); its result still comes, through ``on_done``."""
        if child.done:
            return
        log.info("%s (pid %d): killed: %s", child.name, child.pid, why)
        self._kill(child)

    def _exited(self, child: Child, status: int) -> None:
        child.exit_code = os.waitstatus_to_exitcode(status)
        child.proc.returncode = child.exit_code
        child.exited_at = self.clock.monotonic()
        # Whatever it left behind in its group goes with it; the pipes then close.
        self._kill(child, force=True)
        self._maybe_done(child)

    def reap(self) -> None:
        """Collect the exit status of this runner's children that have ended."""
        for pid, child in list(self.children.items()):
            if child.exit_code is not None:
                continue
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                got, status = pid, 0
            if got == pid:
                self._exited(child, status)

    def reap_all(self) -> None:
        """Reap every ended child of the daemon: this runner's with their status kept,
        the others (starters' fork server, ...) as the daemon always did."""
        self.reap()
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid == 0:
                return
            pid = info.si_pid
            try:
                got, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if got == 0:
                return
            child = self.children.get(pid)
            if child is not None and child.exit_code is None:
                self._exited(child, status)

    def _maybe_done(self, child: Child) -> None:
        if child.done or child.exit_code is None:
            return
        if child.stdout_fd in child.open_fds or child.stderr_fd in child.open_fds:
            return
        self._complete(child)

    def _complete(self, child: Child) -> None:
        child.done = True
        self._drop_fds(child)
        self.children.pop(child.pid, None)
        if child.on_output is not None and not child.overflow:
            self._stream(child)
            rest = bytes(child.out)
            if rest:
                child.on_output(rest.decode("utf-8", errors="replace"))
        now = self.clock.monotonic()
        result = ChildResult(child.name, child.pid, child.exit_code,
                             child.out.decode("utf-8", errors="replace"),
                             child.err.decode("utf-8", errors="replace"),
                             child.timed_out, child.overflow, None, now - child.started)
        try:
            child.on_done(result)
        except Exception:
            log.exception("%s: handling its end failed", child.name)

    def step(self) -> None:
        """Timeouts, and children whose pipes stay open after they exited (a grandchild
        that left the group still holds them)."""
        if not self.children:
            return
        self.reap()
        now = self.clock.monotonic()
        for child in list(self.children.values()):
            if child.done:
                continue
            if child.exit_code is None and child.deadline is not None and now >= child.deadline:
                child.timed_out = True
                child.deadline = None
                self._kill(child)
            elif child.exit_code is not None and child.exited_at is not None and \
                    now - child.exited_at > _PIPES_GRACE_S:
                self._drop_fds(child)
                self._complete(child)

    def next_due(self) -> float | None:
        due: float | None = None
        for child in self.children.values():
            at = child.deadline if child.exit_code is None else \
                (child.exited_at or 0.0) + _PIPES_GRACE_S
            if at is not None:
                due = at if due is None else min(due, at)
        if any(c.deadline is not None for c in self.children.values()):
            # Exits are noticed on SIGCHLD; a slow tick covers a lost one while a short
            # child runs (a continuous cron job does not keep the daemon awake).
            tick = self.clock.monotonic() + 0.5
            due = tick if due is None else min(due, tick)
        return due

    def close(self) -> None:
        """The daemon stops: no hook outlives it."""
        for child in list(self.children.values()):
            self._kill(child)
            try:
                child.proc.wait(5)
            except (subprocess.TimeoutExpired, ChildProcessError):
                pass
            self._drop_fds(child)
        self.children.clear()
