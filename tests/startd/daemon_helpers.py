"""A real `condorpy startd` in a process of its own, with its own state directory,
for end-to-end tests: real starters, real jobs, the real control socket."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Callable

from condorpy.classad import ClassAd
from condorpy.startd.client import call

ROOT = Path(__file__).resolve().parents[2]

BASE_CONFIG = """\
LOCAL_DIR = {state}
EXECUTE = $(LOCAL_DIR)/execute
LOG = $(LOCAL_DIR)/log
SPOOL = $(LOCAL_DIR)/spool
LOCK = $(LOCAL_DIR)/lock
NUM_CPUS = {cpus}
MEMORY = 4096
RUNBENCHMARKS = False
POLLING_INTERVAL = 1
CONDORPY_ALLOW_ROOT_JOBS = true
STARTER_UPDATE_INTERVAL = 1
CONDORPY_USAGE_INTERVAL = 1
# a free port each: daemons of tests running side by side never collide
CONDORPY_METRICS_ADDRESS = 127.0.0.1:0
"""


class Daemon:
    """One daemon process; ``restart()`` starts a new one on the same state."""

    def __init__(self, base: Path, extra: str = "", cpus: int = 2) -> None:
        self.base = base
        base.mkdir(parents=True, exist_ok=True)
        self.state = base / "state"
        self.config = base / "condor_config"
        self.config.write_text(BASE_CONFIG.format(state=self.state, cpus=cpus) + extra)
        self.proc: subprocess.Popen[bytes] | None = None
        self.socket = self.state / "lock" / "condorpy_startd.sock"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["CONDOR_CONFIG"] = str(self.config)
        env["PYTHONPATH"] = str(ROOT)
        return env

    def start(self) -> None:
        log = open(self.base / "daemon.out", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "condorpy", "startd", "-f"],
                                     env=self.env(), stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL)
        log.close()
        # Under the real-kernel lane's emulated CPU a start takes about 30 s, so long
        # as on the host it takes 2
        wait_for(lambda: self.socket.exists() and self._ping(),
                 120 if os.environ.get("CONDORPY_VM") else 30,
                 lambda: f"daemon did not start: {self.output()}")

    def _ping(self) -> bool:
        try:
            self.call("ping")
            return True
        except Exception:
            return False

    def call(self, command: str, **args: Any) -> Any:
        return call(self.socket, command, args, timeout=30)

    def cli_argv(self) -> list[str]:
        """The command line of `condorpy` as this test's daemon's clients run it."""
        return [sys.executable, "-m", "condorpy"]

    def cli(self, *argv: str, cwd: Path | None = None, user: int | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        pre = (lambda: os.setuid(user)) if user is not None else None
        res = subprocess.run([sys.executable, "-m", "condorpy", *argv], env=self.env(),
                             cwd=cwd, capture_output=True, text=True, timeout=120,
                             preexec_fn=pre)
        if check and res.returncode != 0:
            raise AssertionError(f"condorpy {' '.join(argv)} failed ({res.returncode}): "
                                 f"{res.stderr}")
        return res

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self, sig: int = signal.SIGKILL) -> None:
        self.stop(sig)
        self.start()

    def output(self) -> str:
        try:
            return (self.base / "daemon.out").read_text()[-4000:]
        except OSError:
            return ""

    def whole_log(self) -> str:
        """Everything the daemon has logged: its StartLog and its own stdout/stderr
        (``output()`` is only the last lines of the latter)."""
        out = []
        for path in (self.state / "log" / "StartLog", self.base / "daemon.out"):
            try:
                out.append(path.read_text(errors="replace"))
            except OSError:
                pass
        return "".join(out)

    def db(self) -> sqlite3.Connection:
        """The job store as it stands, to read. A running daemon holds it alone
        (locking_mode=EXCLUSIVE), so this reads a copy of its files taken between two
        of its writes."""
        return snapshot(self.state / "spool" / "condorpy_queue.sqlite3",
                        self.base / "store-snapshot")

    def statuses(self) -> dict[str, int]:
        with self.db() as db:
            rows = db.execute("SELECT cluster, proc, status FROM jobs UNION ALL "
                              "SELECT cluster, proc, status FROM history").fetchall()
        return {f"{c}.{p}": s for c, p, s in rows}

    def history_ads(self) -> list[str]:
        with self.db() as db:
            return [r[0] for r in db.execute("SELECT ad FROM history")]

    def kill_leftovers(self) -> None:
        """Stop every starter this daemon's jobs left (a test must leave nothing)."""
        try:
            with self.db() as db:
                pids = [r[0] for r in db.execute("SELECT pid FROM starters")]
        except sqlite3.Error:
            pids = []
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        subprocess.run(["pkill", "-KILL", "-f", str(self.state)], check=False)
        # the jobs themselves: a starter's job runs in a session of its own, and a job
        # whose command line names nothing of the daemon's is found by its environment
        # (its _CONDOR_* paths lie in this daemon's state directory)
        mark = str(self.state).encode() + b"/"
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if mark in (entry / "environ").read_bytes():
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass



def slot_values(d: Daemon) -> list[dict[str, object]]:
    """Each live slot ad of ``d``'s `status`, its attributes evaluated."""
    out = []
    for text in d.call("status")["ads"]:
        ad = ClassAd.parse_old(text)
        out.append({k: ad.evaluate(k) for k in ad.keys()})
    return out


@contextlib.contextmanager
def running(d: Daemon) -> Iterator[Daemon]:
    """``d`` started for the block, then stopped, and whatever it left behind killed:
    what a test's ``daemon`` fixture yields."""
    d.start()
    try:
        yield d
    finally:
        d.stop()
        d.kill_leftovers()


def _stamp(files: list[Path]) -> list[tuple[int, int] | None]:
    out: list[tuple[int, int] | None] = []
    for f in files:
        try:
            st = f.stat()
            out.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return out


def snapshot(db: Path, into: Path) -> sqlite3.Connection:
    """A consistent copy of the store ``db`` and its write-ahead log in ``into``
    (retried while a write fell between the copies or SQLite finds the copy damaged;
    a store damaged on disk is handed over as it is)."""
    files = [db, db.with_name(db.name + "-wal")]
    damaged = 0
    for _ in range(200):
        shutil.rmtree(into, ignore_errors=True)
        into.mkdir(parents=True)
        before = _stamp(files)
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                shutil.copyfile(f, into / f.name)
        if _stamp(files) != before:
            time.sleep(0.01)
            continue
        conn = sqlite3.connect(into / db.name)
        try:
            if conn.execute("PRAGMA quick_check").fetchone()[0] == "ok":
                return conn
        except sqlite3.DatabaseError:
            pass
        damaged += 1
        if damaged >= 5:
            return conn
        conn.close()
        time.sleep(0.01)
    raise AssertionError(f"no consistent copy of {db} could be taken")


def wait_for(cond: Callable[[], bool], timeout: float,
             why: Callable[[], str] | None = None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(why() if why else "timed out")


def sandboxes(d: Daemon) -> list[str]:
    """The job scratch directories under the daemon's EXECUTE."""
    exe = d.state / "execute"
    return sorted(p.name for p in exe.iterdir() if p.name.startswith("dir_")) \
        if exe.exists() else []


def no_sandbox_left(d: Daemon, timeout: float = 30.0) -> None:
    """Every scratch directory is removed. A starter reports the job's end before it
    removes the directory (as HTCondor's does), so a completed job's may still be
    going for a moment; one that stays is a leak."""
    wait_for(lambda: sandboxes(d) == [], timeout,
             lambda: f"scratch directories left: {sandboxes(d)}")


def submit(d: Daemon, text: str, cwd: Path) -> str:
    (cwd / "job.sub").write_text(text)
    res = d.cli("submit", "job.sub", cwd=cwd)
    return res.stdout


def counts(d: Daemon) -> dict[int, int]:
    out: dict[int, int] = {}
    for s in d.statuses().values():
        out[s] = out.get(s, 0) + 1
    return out

