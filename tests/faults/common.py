"""What the fault-injection tests share: a seed that each run prints and an
environment variable replays, how long or how many runs they make, and the checks
they make of a daemon after each batch (descriptors, tracebacks, processes left)."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

from tests.startd.daemon_helpers import Daemon

SEED_VAR = "CONDORPY_FAULT_SEED"
RUNS_VAR = "CONDORPY_FAULT_RUNS"
SECONDS_VAR = "CONDORPY_FUZZ_SECONDS"


def seed() -> int:
    """The seed of this test: $CONDORPY_FAULT_SEED when set (to replay a failure),
    else a fresh one that every failure message names."""
    text = os.environ.get(SEED_VAR, "")
    return int(text) if text else random.SystemRandom().randrange(1 << 32)


def runs(default: int) -> int:
    return int(os.environ.get(RUNS_VAR, "") or default)


def seconds(default: float) -> float:
    return float(os.environ.get(SECONDS_VAR, "") or default)


def replay(s: int) -> str:
    """The words that let whoever reads a failure run the same case again."""
    return f"seed {s} (replay: {SEED_VAR}={s})"


def fds(pid: int) -> set[str]:
    """What process ``pid``'s descriptors point at."""
    out: set[str] = set()
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            out.add(f"{entry.name}->{os.readlink(entry)}")
        except OSError:
            pass
    return out


def settled_fds(pid: int, baseline: int, timeout: float = 10.0) -> set[str]:
    """``pid``'s descriptors once their count is back to ``baseline`` or ``timeout``
    passed: a connection the peer has just closed is closed by the daemon a moment
    later."""
    end = time.monotonic() + timeout
    now = fds(pid)
    while len(now) > baseline and time.monotonic() < end:
        time.sleep(0.05)
        now = fds(pid)
    return now


def tracebacks(log: str) -> list[str]:
    """The lines around each traceback or internal error in a daemon's log."""
    lines = log.splitlines()
    hits: list[str] = []
    for i, line in enumerate(lines):
        if "Traceback" in line or "internal error" in line:
            hits.append("\n".join(lines[max(0, i - 2):i + 12]))
    return hits


def assert_unharmed(daemon: Daemon, s: int, before: set[str], after: set[str]) -> None:
    """What a fuzzer's run must leave: the daemon up, no descriptor more than at its
    start, no traceback or internal error in its log (each message names the seed)."""
    assert daemon.proc is not None and daemon.proc.poll() is None, \
        f"{replay(s)}: the daemon died\n{daemon.output()}"
    assert len(after) <= len(before), (f"{replay(s)}: descriptors leaked: "
                                       f"{sorted(after - before)}")
    found = tracebacks(daemon.whole_log())
    assert not found, f"{replay(s)}:\n" + "\n---\n".join(found[:3])


def processes_naming(mark: str) -> list[str]:
    """Every process (not this one) whose command line or environment names ``mark``:
    a daemon's starters and jobs carry its configuration's and state's paths."""
    found: list[str] = []
    needle = mark.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            if needle in cmd or needle in (entry / "environ").read_bytes():
                stat = (entry / "stat").read_text()
                if stat.rsplit(")", 1)[1].split()[0] == "Z":
                    continue            # a zombie's parent reaps it; it holds nothing
                words = cmd.replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name}: {words}")
        except OSError:
            pass
    return found


def kill_daemon(d: Daemon) -> None:
    """SIGKILL the daemon and reap it, as a crash would leave it."""
    assert d.proc is not None
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    d.proc = None


def restart_daemon(d: Daemon, again: float | None) -> None:
    """Start the daemon again; with ``again``, first kill a start that many seconds in
    (while it re-adopts its starters and finishes the jobs that ended meanwhile)."""
    if again is not None:
        with open(d.base / "daemon.out", "ab") as log:
            proc = subprocess.Popen([*d.cli_argv(), "startd", "-f"], env=d.env(),
                                    stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        time.sleep(again)
        proc.kill()
        proc.wait()
    d.start()


def job_rows(d: Daemon, tag: re.Pattern[str]) -> list[tuple[str, int, int]]:
    """(tag, proc, status) of every job, queued or in the history; the tag is what
    ``tag``'s first group finds in the job's ad ("?" where nothing)."""
    with d.db() as db:
        rows = db.execute("SELECT proc, status, ad FROM jobs UNION ALL "
                          "SELECT proc, status, ad FROM history").fetchall()
    out = []
    for proc, status, ad in rows:
        m = tag.search(ad)
        out.append((m.group(1) if m else "?", proc, status))
    return out


def marker_lines(work: Path) -> list[str]:
    """The lines the jobs appended to ``work``/marker, one a run."""
    try:
        return (work / "marker").read_text().splitlines()
    except FileNotFoundError:
        return []
