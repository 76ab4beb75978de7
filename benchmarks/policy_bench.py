"""Policy cycles of a partitionable slot with N claimed, busy d-slots, and how their cost
grows with the number of slots whose inputs changed.

Policy: `use POLICY : Desktop` (through condorpy.config), a ManualClock five seconds
further each cycle. For each N (default 64, 256, 1024, 4096), the CPU milliseconds of
one cycle (median over the cycles), in three cases:

- ``quiet``: no input any slot reads has changed (the keyboard and console idle times
  are measured again with the same values; the clock moves on);
- ``k changed``: as quiet, but k = N/16 jobs' ads changed (a starter's update of
  ImageSize, which WANT_SUSPEND reads): the k updates, each evaluated at once as the
  daemon does, are counted with the cycle;
- ``machine-wide``: the keyboard's idle time grows with the clock, as on a real
  machine, so an input every slot reads changes every cycle (the worst case).

``--compare REV`` measures a git revision too (``git archive``, run with PYTHONPATH),
each measurement in a process of its own, the two alternated round after round; the
best median of the rounds is printed with the ratio (this tree / REV) and the ratio to
the 5 ms goal at 1024 slots, and the machine's load (uptime) before and after.

    .venv/bin/python benchmarks/policy_bench.py [--slots 64 256 1024 4096]
        [--cycles 20] [--rounds 2] [--compare REV] [--off]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 5.0
CASES = ("quiet", "k changed", "machine-wide")
KB = 100000


def build(n: int, incremental: bool = True) -> Any:
    """The one path every front end takes: configuration -> (virtual) machine -> slot
    layer -> engine; the Desktop policy on one partitionable slot, n busy d-slots."""
    from condorpy.clock import ManualClock
    from condorpy.config import Config
    from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
    from condorpy.startd.core import Core

    text = "use POLICY : Desktop\n" + (f"NUM_CPUS = {n}\nMEMORY = {n * 1024}\n"
                                       f"DISK = {n * 1000000}\nRUNBENCHMARKS = False\n")
    cfg = Config.from_text(text, source="<bench>", env={}, detected=VIRTUAL_DETECTED)
    eng = Core(cfg, virtual_inventory(cfg)).engine(ManualClock(0.0))
    if not incremental:
        eng.quiet.enabled = False
    eng.set(0, {"KeyboardIdle": KB, "ConsoleIdle": KB, "LoadAvg": 0.0,
                "CondorLoadAvg": 0.0})
    eng.cycle(0)
    for i in range(n):
        job = {"JobUniverse": 5, "Owner": f"u{i % 7}", "ImageSize": 1000,
               "RequestCpus": 1, "RequestMemory": 1024, "RequestDisk": 1000}
        eng.request_claim(1, f"c{i}", job)
    for i in range(n):
        eng.activate(2, f"c{i}")
    busy = sum(1 for s in eng.slots.values() if s.kind == "dynamic"
               and s.activity.value == "Busy")
    assert busy == n, f"only {busy} of {n} d-slots are busy"
    return eng


def measure(n: int, cycles: int, incremental: bool) -> dict[str, Any]:
    """In this process, with whichever condorpy is first on sys.path."""
    eng = build(n, incremental)
    k = max(1, n // 16)
    now = 10.0
    out: dict[str, Any] = {"slots": n, "k": k}
    for case in CASES:
        times: list[float] = []
        for c in range(cycles + 2):        # two to settle in, not counted
            now += 5
            t = time.process_time()
            if case == "machine-wide":
                eng.set(now, {"KeyboardIdle": KB + int(now), "ConsoleIdle": KB})
            else:
                eng.set(now, {"KeyboardIdle": KB, "ConsoleIdle": KB})
            if case == "k changed":
                for i in range(k):
                    j = (c * k + i) % n
                    assert not eng.job_update(now, f"c{j}", {"ImageSize": 1000 + c % 2})
            got = eng.cycle(now)
            if c >= 2:
                times.append((time.process_time() - t) * 1000)
            assert not got, got[:3]   # nothing should change: a quiet, busy machine
        out[case] = round(statistics.median(times), 3)
    return out


def run(code: Path, n: int, cycles: int, incremental: bool = True) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(code))
    args = [sys.executable, __file__, "--one", str(n), "--cycles", str(cycles)]
    if not incremental:
        args.append("--off")
    got = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(got.stdout.strip().splitlines()[-1]))


def load() -> str:
    return os.getloadavg().__repr__()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slots", type=int, nargs="+", default=[64, 256, 1024, 4096])
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--compare", metavar="REV", help="a git revision to measure too")
    ap.add_argument("--off", action="store_true",
                    help="also this tree with the incremental cycle turned off")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.cycles, not args.off)))
        return
    print(f"policy: use POLICY : Desktop; one partitionable slot, N busy d-slots; "
          f"CPU ms per cycle, best median of {args.rounds} rounds of {args.cycles} cycles")
    print(f"load before: {load()}")
    with tempfile.TemporaryDirectory() as old:
        codes: list[tuple[str, Path, bool]] = []
        if args.compare:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.compare,
                                      "condorpy"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
            codes.append((args.compare[:10], Path(old), True))
        codes.append(("this tree", ROOT, True))
        if args.off:
            codes.append(("incr. off", ROOT, False))
        head = f"{'slots':>6} {'case':<14}" + "".join(f"{c[0]:>12}" for c in codes)
        if args.compare:
            head += f"{'ratio':>8}"
        print(head + f"{'us/slot':>9}{'to goal':>9}", flush=True)
        for n in args.slots:
            best: dict[str, dict[str, float]] = {c[0]: {} for c in codes}
            for _ in range(args.rounds):
                for label, code, incr in codes:     # alternated: A B A B
                    row = run(code, n, args.cycles, incr)
                    for case in CASES:
                        prev = best[label].get(case)
                        best[label][case] = row[case] if prev is None else min(prev, row[case])
            for case in CASES:
                name = case if case != "k changed" else f"{max(1, n // 16)} changed"
                line = f"{n:>6} {name:<14}" + "".join(
                    f"{best[c[0]][case]:>12.2f}" for c in codes)
                mine = best["this tree"][case]
                if args.compare:
                    line += f"{mine / best[codes[0][0]][case]:>8.2f}"
                line += f"{mine * 1000 / n:>9.2f}"
                line += f"{mine / GOAL_MS:>9.2f}" if n == 1024 else f"{'':>9}"
                print(line, flush=True)
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
