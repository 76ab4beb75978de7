"""SIGKILL of the daemon at random instants while jobs are submitted, start and end.

Each run submits a few jobs and kills the daemon (SIGKILL, nothing flushed, nothing
said) at a random instant of one window: during the submission, while its jobs start,
or while they end; then starts it again on the same state (now and then killing that
start too, mid re-adoption). Afterwards: every job the client was told was queued
exists exactly once, none the client was told failed exists, a submission the client
could not hear the answer to is there whole or not at all, every job completed exactly
once (each appends one line to a marker file with O_APPEND), nothing of the daemon
runs after its final stop, and the store reads.

The seed is printed in every failure; CONDORPY_FAULT_SEED replays it, and
CONDORPY_FAULT_RUNS makes a longer soak (docs/trust.md, "Fault injection and
fuzzing")."""

from __future__ import annotations

import collections
import os
import random
import re
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.faults.common import (job_rows, kill_daemon, marker_lines, processes_naming,
                                 replay, restart_daemon, runs, seed)
from tests.startd.daemon_helpers import Daemon, wait_for

# sleeps $3 seconds, then says it ran: one line, one write, O_APPEND
JOB = """#!/bin/sh
sleep "$3"
echo "$1 $2" >> marker
"""
WINDOWS = ("start", "end", "submit")
DEFAULT_RUNS = 6
TAG = re.compile(r'^FaultTag = "(r\d+)"$', re.M)


@dataclass
class Submission:
    tag: str
    jobs: int
    window: str
    delay: float
    again: float | None = None  # the restart killed too, so many seconds into its start
    outcome: str = ""          # queued | failed | unknown (the answer was lost)
    detail: str = ""


def _submit_file(work: Path, sub: Submission, sleep: float) -> str:
    text = (f"executable = job.sh\narguments = {sub.tag} $(Process) {sleep:.2f}\n"
            f"request_memory = 16\n+FaultTag = \"{sub.tag}\"\nqueue {sub.jobs}\n")
    (work / f"{sub.tag}.sub").write_text(text)
    return f"{sub.tag}.sub"


def _outcome(sub: Submission, res: subprocess.CompletedProcess[str]) -> None:
    sub.detail = (res.stdout + res.stderr).strip()[-300:]
    if res.returncode == 0:
        sub.outcome = "queued"
    elif "closed the connection" in res.stderr or "did not answer" in res.stderr:
        sub.outcome = "unknown"     # sent, and the daemon died before it answered
    else:
        sub.outcome = "failed"





def _one_run(d: Daemon, work: Path, rng: random.Random, sub: Submission,
             took: list[float]) -> None:
    name = _submit_file(work, sub, sleep=rng.uniform(0.0, 1.0) if sub.window == "end"
                        else 0.2)
    argv = [*d.cli_argv(), "submit", name]
    if sub.window == "submit":
        client = subprocess.Popen(argv, env=d.env(), cwd=work, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(sub.delay)
        kill_daemon(d)
        out, err = client.communicate(timeout=120)
        _outcome(sub, subprocess.CompletedProcess(argv, client.returncode, out, err))
        restart_daemon(d, sub.again)
        return
    t0 = time.monotonic()
    _outcome(sub, subprocess.run(argv, env=d.env(), cwd=work, text=True,
                                 capture_output=True, timeout=120))
    took.append(time.monotonic() - t0)
    assert sub.outcome == "queued", sub.detail
    if sub.window == "end":
        # from the first of its jobs running: they end within their sleep
        wait_for(lambda: any(t == sub.tag and s in (2, 4) for t, _, s in job_rows(d, TAG)), 60,
                 d.output)
    time.sleep(sub.delay)
    kill_daemon(d)
    restart_daemon(d, sub.again)


def test_sigkill_at_random_instants_loses_nothing_and_runs_nothing_twice(
        tmp_path: Path) -> None:
    s = seed()
    rng = random.Random(s)
    d = Daemon(tmp_path / "d", cpus=4)
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    subs: list[Submission] = []
    left: list[str] = []
    t0 = time.monotonic()
    took: list[float] = []        # how long whole submissions took on this host

    def story() -> str:
        return (f"{replay(s)}; runs:\n" + "\n".join(
            f"  {x.tag} {x.window} +{x.delay:.3f}s"
            f"{'' if x.again is None else f' restart killed +{x.again:.3f}s'} "
            f"{x.jobs} job(s): {x.outcome} "
            f"{x.detail!r}" for x in subs) + f"\nmarker:\n{_marker(work)}\n"
            f"daemon:\n{d.output()[-2500:]}")

    try:
        d.start()
        for i in range(runs(DEFAULT_RUNS)):
            window = WINDOWS[i % len(WINDOWS)]
            # the windows' lengths: a submission as long as those before it took
            # (most of it the client's start), a job starts within a polling interval
            # (1 s), and ends within its sleep
            delay = {"submit": rng.uniform(0.5, 1.25) * min(took, default=0.5),
                     "start": rng.uniform(0.0, 1.5), "end": rng.uniform(0.0, 1.2)}[window]
            # a start takes 1 to 2 s here
            again = rng.uniform(0.2, 2.5) if rng.random() < 0.3 else None
            sub = Submission(f"r{i}", rng.randint(1, 3), window, delay, again)
            subs.append(sub)
            _one_run(d, work, rng, sub, took)
        told = {x.tag for x in subs if x.outcome != "failed"}
        wait_for(lambda: all(st in (3, 4, 5) for t, _, st in job_rows(d, TAG) if t in told)
                 and len(marker_lines(work)) >= sum(x.jobs for x in subs
                                                     if x.outcome == "queued"),
                 120, story)
        rows = job_rows(d, TAG)
    finally:
        d.stop()
        # the final stop leaves running jobs running: there are none, so nothing of
        # this daemon may be left (a starter it forgot, a job's process)
        time.sleep(0.5)
        left = processes_naming(str(d.base))
        d.kill_leftovers()
    seen = collections.Counter(f"{x.window}:{x.outcome}" for x in subs)
    print(f"{len(subs)} runs in {time.monotonic() - t0:.1f} s ({dict(sorted(seen.items()))}), "
          f"{replay(s)}")
    assert not left, f"processes left after the final stop: {left}\n{story()}"
    by_tag = collections.Counter(t for t, _, _ in rows)
    for x in subs:
        have = by_tag[x.tag]
        if x.outcome == "queued":
            assert have == x.jobs, f"{x.tag}: {have} of {x.jobs} queued job(s)\n{story()}"
        elif x.outcome == "failed":
            assert have == 0, f"{x.tag}: told failed, yet {have} job(s)\n{story()}"
        else:
            assert have in (0, x.jobs), f"{x.tag}: {have} of {x.jobs} job(s)\n{story()}"
    assert "?" not in by_tag, story()
    keys = collections.Counter((t, p) for t, p, _ in rows)
    assert all(n == 1 for n in keys.values()), f"a job twice: {keys}\n{story()}"
    assert all(st == 4 for _, _, st in rows), f"not all completed: {rows}\n{story()}"
    ran = collections.Counter(marker_lines(work))
    assert ran == collections.Counter(f"{t} {p}" for t, p, _ in rows), \
        f"jobs ran {dict(ran)}\n{story()}"
    store = d.state / "spool" / "condorpy_queue.sqlite3"
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", story()



def _marker(work: Path) -> str:
    return "\n".join(marker_lines(work))
