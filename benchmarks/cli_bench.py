"""The administrator's everyday commands: how long each takes from start to exit.

    .venv/bin/python benchmarks/cli_bench.py [--runs 5] [--no-htcondor] [--baseline CHECKOUT]

Each of ``condorpy q``, ``status``, ``who``, ``history``, ``submit`` and
``config-val START`` runs as a fresh process, as the ``condorpy`` entry point starts it,
against a running condorpy daemon (tests/startd/daemon_helpers.py) with a few jobs
queued, running and finished; the figure is the median of ``--runs`` runs (wall time,
and the process's CPU time, which a busy machine disturbs less), printed beside the
bare interpreter's start (``python -c pass``, the same interpreter, measured in this
run) and its ratio to it: the goal is 3x or less. The commands run in turn, one run
each per round, so that a moment's load slows them alike. Byte-compiled files are
written by a first, untimed run of each command, as an installed package has them.

HTCondor's own tools (condor_q, condor_status, condor_who, condor_history,
condor_submit, condor_config_val) are timed the same way in the reference pool's chroot
(tests/pool/refpool.py; ``CONDORPY_REFPOOL_ROOT`` names a built chroot) with a personal
pool running there, as an ordinary user, and each condorpy figure is also given as a
ratio to its HTCondor twin; ``chroot ROOT /bin/true`` says what entering the chroot
adds to theirs. Where that pool cannot be brought up (not root, no chroot and no
mirror), the reason is printed instead of those rows. ``--baseline`` times another
checkout's commands (main's, say) in the same rounds, beside these. Nothing is
asserted: these are measurements.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.startd.daemon_helpers import Daemon, counts, wait_for  # noqa: E402

# what the console script (`condorpy`, packaging's entry point) runs
ENTRY = "import sys; from condorpy.cli.main import main; sys.exit(main())"
SUBMIT = "executable = /bin/true\nrequest_memory = 16\nrequest_disk = 10\nqueue\n"
# (label, condorpy's arguments, HTCondor's tool and arguments)
COMMANDS: list[tuple[str, list[str], list[str]]] = [
    ("q", ["q"], ["condor_q"]),
    ("status", ["status"], ["condor_status"]),
    ("who", ["who"], ["condor_who"]),
    ("history", ["history"], ["condor_history"]),
    ("submit", ["submit", "job.sub"], ["condor_submit", "job.sub"]),
    ("config-val START", ["config-val", "START"], ["condor_config_val", "START"]),
]


class Timed:
    """Wall and CPU times (ms) of fresh runs of one command line, and its last failure."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.argv, self.env, self.cwd = argv, env, cwd
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.failed = ""

    def run(self, record: bool = True) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(self.argv, env=self.env, cwd=self.cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120)
        wall = (time.perf_counter() - t0) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not record:
            return
        self.wall.append(wall)
        self.cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                        * 1000)
        if res.returncode != 0:
            lines = res.stderr.decode(errors="replace").strip().splitlines()
            self.failed = lines[-1] if lines else f"exit {res.returncode}"

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)


def time_all(timed: list[Timed], runs: int) -> None:
    """One untimed run of each (it writes the byte-compiled files), then ``runs`` rounds
    of one run each, in turn: a machine busy for a moment slows every command alike."""
    for t in timed:
        t.run(record=False)
    for _ in range(runs):
        for t in timed:
            t.run()


def condorpy_times(base: Path, runs: int, baseline: Path | None
                   ) -> tuple[Timed, dict[str, Timed], dict[str, Timed], str]:
    """The bare interpreter's start and each command's, against a running daemon; and
    each command's from the checkout ``baseline`` (the same daemon), run in turn with
    them."""
    # the test helper's daemon polls every second for its tests' sake; a machine's
    # daemon polls less, and the clients are timed, not the daemon's cycles
    d = Daemon(base / "daemon", cpus=2, extra="POLLING_INTERVAL = 5\n"
               "STARTER_UPDATE_INTERVAL = 60\nCONDORPY_USAGE_INTERVAL = 60\n")
    d.start()
    try:
        work = base / "work"
        work.mkdir()
        (work / "job.sub").write_text(SUBMIT)
        env = d.env()
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cli = [sys.executable, "-c", ENTRY]
        # a few jobs: one finished (history), two running, one idle
        subprocess.run(cli + ["submit", "job.sub"], env=env, cwd=work, check=True,
                       capture_output=True)
        wait_for(lambda: counts(d).get(4) == 1, 60, d.output)
        (work / "sleep.sub").write_text("executable = /bin/sleep\narguments = 600\n"
                                        "request_cpus = 1\nrequest_memory = 16\nqueue 3\n")
        subprocess.run(cli + ["submit", "sleep.sub"], env=env, cwd=work, check=True,
                       capture_output=True)
        wait_for(lambda: counts(d).get(2) == 2, 60, d.output)
        time.sleep(2)   # the starters' start-up is over
        jobs = sum(counts(d).values())
        bare = Timed([sys.executable, "-c", "pass"], env)
        cmds = {label: Timed(cli + args, env, work) for label, args, _ in COMMANDS}
        before = {label: Timed(cli + args, {**env, "PYTHONPATH": str(baseline)}, work)
                  for label, args, _ in COMMANDS} if baseline is not None else {}
        time_all([bare, *cmds.values(), *before.values()], runs)
        return bare, cmds, before, (f"a daemon with {jobs} jobs queued, running or done; "
                                    f"its own answer takes {_answers(d, runs)}")
    finally:
        d.stop()
        d.kill_leftovers()


def _answers(d: Daemon, runs: int) -> str:
    """The daemon's part of each command: one request over the socket, in this process
    (median ms), which the commands' wall times include."""
    out = []
    for command in ("q", "status", "who", "history"):
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            d.call(command)
            times.append((time.perf_counter() - t0) * 1000)
        out.append(f"{command} {statistics.median(times):.1f} ms")
    return ", ".join(out)


def htcondor_times(runs: int) -> tuple[Timed, dict[str, Timed], str] | str:
    """HTCondor's tools in the reference pool's chroot, or why they cannot be timed."""
    try:
        from tests.pool.refpool import PoolUnavailable, RefPool
    except ImportError as exc:   # pragma: no cover - a broken checkout
        return str(exc)
    pool = RefPool(instance="cli-bench")
    try:
        pool.start()
    except (PoolUnavailable, OSError, subprocess.CalledProcessError) as exc:
        return f"the reference pool cannot be brought up here: {exc}"
    try:
        home = pool.root / "home" / "alice"
        (home / "job.sub").write_text(SUBMIT)
        os.chown(home / "job.sub", home.stat().st_uid, home.stat().st_gid)
        root = str(pool.root)
        # as alice (condor_submit refuses root), from her home, without a shell between
        as_alice: Callable[[list[str]], list[str]] = lambda argv: [
            "chroot", "--userspec=alice:alice", root, "env", "-C", "/home/alice",
            "HOME=/home/alice", *argv]
        floor = Timed(["chroot", root, "/bin/true"])
        tools = {label: Timed(as_alice(tool)) for label, _, tool in COMMANDS}
        time_all([floor, *tools.values()], runs)
        return floor, tools, f"HTCondor {pool.version}'s personal pool in {root}"
    finally:
        pool.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-htcondor", action="store_true",
                   help="skip HTCondor's own tools (the reference pool)")
    p.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                   help="also time the commands of another checkout of condorpy (such as "
                        "main's, before a change) against the same daemon")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="condorpy-cli-bench-") as tmp:
        bare, cmds, before, setting = condorpy_times(Path(tmp), args.runs, args.baseline)
    ref = "not timed (--no-htcondor)" if args.no_htcondor else htcondor_times(args.runs)
    print(f"Median of {args.runs} fresh runs (wall ms, then the process's CPU ms; their "
          f"ratios to the bare interpreter's); condorpy against {setting}:")
    print(f"  {'python -c pass':<26} {bare.median:7.1f} ms  cpu {bare.median_cpu:5.1f}   "
          f"1.0x  1.0x   (the bare interpreter, {sys.executable}; goal: 3.0x or less)")
    for (label, _, tool), t in zip(COMMANDS, cmds.values()):
        line = (f"  {'condorpy ' + label:<26} {t.median:7.1f} ms  cpu {t.median_cpu:5.1f}   "
                f"{t.median / bare.median:3.1f}x  {t.median_cpu / bare.median_cpu:3.1f}x")
        if label in before:
            b = before[label]
            line += f"   (before: {b.median:6.1f} ms, cpu {b.median_cpu:5.1f}, " \
                    f"{b.median / bare.median:3.1f}x  {b.median_cpu / bare.median_cpu:3.1f}x)"
        if not isinstance(ref, str):
            h = ref[1][label]
            line += f"   {' '.join(tool):<24} {h.median:6.1f} ms ({t.median / h.median:3.1f}x)"
            line += f"  failed: {h.failed}" if h.failed else ""
        print(line + (f"  failed: {t.failed}" if t.failed else ""))
    if isinstance(ref, str):
        print(f"HTCondor's tools: {ref}")
    else:
        print(f"HTCondor's tools ran as alice in {ref[2]}; entering the chroot "
              f"(chroot ROOT /bin/true) takes {ref[0].median:.1f} ms of theirs.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
