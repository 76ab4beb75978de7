"""The local schedd's match pass with many idle jobs that cannot match (issue #25).

    .venv/bin/python benchmarks/match_bench.py [--jobs 10000 100000] [--compare REF]

For each queue size: jobs submitted in clusters of 1,000 into a temporary store (as
``condorpy submit`` sends them), each asking for more memory than any slot has; then
the first match (which reads the idle jobs from the store, as after a daemon's start:
its turns, their total and the longest), a pass after it, and a pass after one more
(matchable) job is submitted, with the jobs offered to the slots in each and the
process's peak RSS. ``--compare REF``
runs the same against the matchmaker of a git revision (``git archive``), side by side.
Each measurement runs in a process of its own. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SUBMIT = ("executable = /bin/sh\narguments = \"-c 'echo $(Process)'\"\n"
          "output = out.$(Process)\nerror = err.$(Process)\n"
          "request_memory = {memory}\nrequest_disk = 1000\nqueue {n}\n")
CONFIG = "NUM_CPUS = 4\nMEMORY = 8192\nDISK = 100000000\nRUNBENCHMARKS = False\n"


def measure(jobs: int) -> dict[str, Any]:
    """In this process, with whichever condorpy is first on sys.path."""
    from condorpy.clock import ManualClock
    from condorpy.config import Config
    from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
    from condorpy.queue.jobstore import JobStore
    from condorpy.queue.matchmaker import LocalSchedd
    from condorpy.queue.submit import parse_submit
    from condorpy.startd.core import Core

    class Runs:
        started = 0

        def apply(self, outputs: object) -> None: ...

        def activate(self, *args: object) -> bool:
            Runs.started += 1
            return True

        def slot_of(self, claim_id: str) -> str:
            return "slot"

        def is_running(self, job_id: object) -> bool:
            return False

        def leaving(self, job_id: object) -> bool:
            return False

        def stop_running(self, *args: object) -> bool:
            return False

    class Events:
        def stopped(self, *args: object) -> None: ...

        def released(self, *args: object) -> None: ...

    cfg = Config.from_text(CONFIG, source="<bench>", env={}, detected=VIRTUAL_DETECTED)
    clock = ManualClock(1_700_000_000.0)
    engine = Core(cfg, virtual_inventory(cfg)).engine(clock)
    engine.cycle(clock.time())
    out: dict[str, Any] = {"jobs": jobs}
    with tempfile.TemporaryDirectory() as tmp, JobStore(tmp, clock=clock.time) as st:
        t0 = time.perf_counter()
        left = jobs
        while left > 0:
            n = min(1000, left)
            cid = st.new_cluster_id()
            st.submit(parse_submit(SUBMIT.format(memory=10**8, n=n), "bench",
                                   cluster_id=cid, owner="alice", submit_dir="/tmp",
                                   qdate=0), cluster_id=cid)
            left -= n
        out["submit_s"] = round(time.perf_counter() - t0, 2)
        schedd = LocalSchedd(engine, st, clock, Runs(), Events(),  # type: ignore[arg-type]
                             started_at=clock.time(), knob=lambda name: None)
        offers = [0]
        name = "offer" if hasattr(schedd, "offer") else "try_start"
        inner = getattr(schedd, name)

        def counted(rec: Any) -> Any:
            offers[0] += 1
            return inner(rec)
        setattr(schedd, name, counted)

        def one_pass() -> tuple[float, int]:
            offers[0] = 0
            t = time.perf_counter()
            schedd.match()
            return round(time.perf_counter() - t, 4), offers[0]

        # the first pass reads the idle jobs from the store: at once before, a part a
        # turn (the daemon serving others between) now
        turns, total, longest = 0, 0.0, 0.0
        while True:
            took, offered = one_pass()
            turns, total, longest = turns + 1, total + took, max(longest, took)
            if offered or not schedd.need_match:
                break
        out["first_turns"], out["first_s"] = turns, round(total, 3)
        out["longest_turn_s"], out["first_offers"] = round(longest, 3), offered
        out["pass_s"], out["pass_offers"] = one_pass()
        cid = st.new_cluster_id()
        st.submit(parse_submit(SUBMIT.format(memory=64, n=1), "bench", cluster_id=cid,
                               owner="alice", submit_dir="/tmp", qdate=0), cluster_id=cid)
        schedd.submitted(st.cluster(cid))
        out["after_submit_s"], out["after_submit_offers"] = one_pass()
        out["started"] = Runs.started
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def run(code: Path, jobs: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(code))
    got = subprocess.run([sys.executable, __file__, "--one", str(jobs)], env=env,
                         capture_output=True, text=True, check=True)
    return dict(json.loads(got.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--compare", metavar="REF", help="a git revision to measure too")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one)))
        return
    codes: list[tuple[str, Path]] = []
    with tempfile.TemporaryDirectory() as old:
        if args.compare:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.compare,
                                      "condorpy"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
            codes.append((args.compare, Path(old)))
        codes.append(("this tree", ROOT))
        cols = ("jobs", "submit_s", "first_turns", "first_s", "longest_turn_s",
                "first_offers", "pass_s", "pass_offers", "after_submit_s",
                "after_submit_offers", "started", "peak_rss_mb")
        print("code".ljust(12) + "".join(c.rjust(max(8, len(c) + 2)) for c in cols))
        for jobs in args.jobs:
            for label, code in codes:
                row = run(code, jobs)
                print(label[:12].ljust(12) + "".join(
                    str(row.get(c)).rjust(max(8, len(c) + 2)) for c in cols), flush=True)


if __name__ == "__main__":
    main()
