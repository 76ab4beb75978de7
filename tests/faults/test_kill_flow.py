"""SIGKILL of the daemon at random instants while many short jobs flow through it: the
group commit's line (condorpy/queue/store_db.py, "Group commit").

Each run submits a cluster of short jobs over the control socket (as `condorpy submit`
does, without its start-up) and kills the daemon at a random instant: while the
submission is in flight, or while its jobs (and those of earlier runs) start and end
many to a loop turn; then starts it again on the same state, now and then killing that
start too. Afterwards every job whose submission was acknowledged exists exactly once,
a submission whose answer was lost is there whole or not at all, every job completed,
and each ran exactly once (each appends one line to a marker file with O_APPEND): a
start let out before its commit would run a job twice, an end lost with its commit
would leave it running or run it again.

The seed is printed with every failure; CONDORPY_FAULT_SEED replays it and
CONDORPY_FAULT_RUNS makes a longer soak."""

from __future__ import annotations

import collections
import random
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from condorpy.errors import CondorpyError
from condorpy.queue.submit import parse_submit
from condorpy.queue.submit_parts import parts
from condorpy.startd.client import Connection
from tests.faults.common import (job_rows, kill_daemon, marker_lines, processes_naming,
                                 replay, restart_daemon, runs, seed)
from tests.startd.daemon_helpers import Daemon, wait_for

JOB = """#!/bin/sh
echo "$1 $2" >> marker
"""
DEFAULT_RUNS = 12
TAG = re.compile(r'^FaultTag = "(f\d+)"$', re.M)


@dataclass
class Run:
    tag: str
    jobs: int
    window: str                 # submit | flow
    delay: float
    again: float | None         # the restart killed too, so many seconds into its start
    outcome: str = ""           # queued | unknown (the answer was lost)
    detail: str = ""


def _submit(d: Daemon, work: Path, run: Run) -> None:
    text = (f"executable = job.sh\narguments = {run.tag} $(Process)\n"
            f"request_memory = 16\nrequest_disk = 10\n+FaultTag = \"{run.tag}\"\n"
            f"queue {run.jobs}\n")
    try:
        with Connection(d.socket, timeout=60) as conn:
            cluster = int(conn.call("new_cluster", {}))
            ads = parse_submit(text, f"{run.tag}.sub", cluster_id=cluster, owner="root",
                               submit_dir=str(work), qdate=int(time.time()),
                               uid_domain="localhost", filesystem_domain=None)
            for part in parts(cluster, len(ads), ads):
                conn.call("submit", part)
        run.outcome = "queued"
    except (CondorpyError, OSError) as exc:
        run.outcome, run.detail = "unknown", str(exc)[-200:]






def test_sigkill_while_jobs_flow_loses_nothing_and_runs_nothing_twice(
        tmp_path: Path) -> None:
    s = seed()
    rng = random.Random(s)
    d = Daemon(tmp_path / "d", cpus=2)
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    done: list[Run] = []
    t0 = time.monotonic()

    def story() -> str:
        return (f"{replay(s)}; runs:\n" + "\n".join(
            f"  {x.tag} {x.window} +{x.delay:.3f}s"
            f"{'' if x.again is None else f' restart killed +{x.again:.3f}s'} "
            f"{x.jobs} job(s): {x.outcome} {x.detail!r}" for x in done)
            + f"\nmarker:\n{' | '.join(marker_lines(work))}\ndaemon:\n"
            f"{d.output()[-2500:]}")

    left: list[str] = []
    try:
        d.start()
        for i in range(runs(DEFAULT_RUNS)):
            window = rng.choice(("submit", "flow", "flow"))
            jobs = rng.randint(5, 30)
            # a submission's request takes tens of ms; the jobs flow at tens a second
            delay = rng.uniform(0.0, 0.08) if window == "submit" else \
                rng.uniform(0.0, jobs / 40)
            again = rng.uniform(0.2, 2.0) if rng.random() < 0.25 else None
            run = Run(f"f{i}", jobs, window, delay, again)
            done.append(run)
            client = threading.Thread(target=_submit, args=(d, work, run))
            t1 = time.monotonic()
            client.start()
            if window == "flow":
                client.join(60)
                t1 = time.monotonic()
            time.sleep(max(0.0, t1 + delay - time.monotonic()))
            kill_daemon(d)
            client.join(60)
            restart_daemon(d, again)
        told = {x.tag for x in done}
        queued = sum(x.jobs for x in done if x.outcome == "queued")
        wait_for(lambda: all(st == 4 for t, _, st in job_rows(d, TAG) if t in told)
                 and len(marker_lines(work)) >= queued, 120, story)
        rows = job_rows(d, TAG)
    finally:
        d.stop()
        time.sleep(0.5)
        left = processes_naming(str(d.base))
        d.kill_leftovers()
    print(f"{len(done)} runs, {len(rows)} jobs in {time.monotonic() - t0:.1f} s, "
          f"{replay(s)}")
    assert not left, f"processes left after the final stop: {left}\n{story()}"
    by_tag = collections.Counter(t for t, _, _ in rows)
    for x in done:
        have = by_tag[x.tag]
        if x.outcome == "queued":
            assert have == x.jobs, f"{x.tag}: {have} of {x.jobs} acknowledged job(s)\n" \
                                   f"{story()}"
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
