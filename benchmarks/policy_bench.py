"""One full policy cycle of a partitionable slot with 1024 claimed, busy d-slots.

Policy: `use POLICY : Desktop` (through condorpy.config). Prints milliseconds per cycle
(CPU time and wall time) and the ratio to the 20 ms goal.

    .venv/bin/python benchmarks/policy_bench.py [--slots N] [--cycles N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.policy.engine import PolicyEngine
from condorpy.startd.core import Core

GOAL_MS = 20.0


def build(n: int) -> PolicyEngine:
    # The one path every front end takes: configuration -> (virtual) machine -> slot
    # layer -> engine; the Desktop policy on one partitionable slot.
    text = "use POLICY : Desktop\n" + (f"NUM_CPUS = {n}\nMEMORY = {n * 1024}\n"
             f"DISK = {n * 1000000}\nRUNBENCHMARKS = False\n")
    cfg = Config.from_text(text, source="<bench>", env={}, detected=VIRTUAL_DETECTED)
    eng = Core(cfg, virtual_inventory(cfg)).engine(ManualClock(0.0))
    eng.set(0, {"KeyboardIdle": 100000, "LoadAvg": 0.0, "CondorLoadAvg": 0.0})
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", type=int, default=1024)
    ap.add_argument("--cycles", type=int, default=20)
    args = ap.parse_args()
    backend = "condorpy.classad"
    t0 = time.perf_counter()
    eng = build(args.slots)
    setup = time.perf_counter() - t0
    wall: list[float] = []
    cpu: list[float] = []
    now = 10.0
    for _ in range(args.cycles):
        now += 5
        t, c = time.perf_counter(), time.process_time()
        out = eng.cycle(now)
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - t) * 1000)
        assert not out, out[:3]   # nothing should change: a quiet, busy machine
    print(f"policy: use POLICY : Desktop; ClassAd backend: {backend}")
    print(f"setup ({args.slots} claims + activations): {setup:.2f} s")
    # CPU time is what the cycle costs; wall time also shows a busy, shared machine.
    for label, times in (("cpu", cpu), ("wall", wall)):
        med = statistics.median(times)
        print(f"one cycle, {args.slots} busy d-slots ({label}): median {med:.2f} ms, "
              f"min {min(times):.2f} ms, max {max(times):.2f} ms over {args.cycles} cycles; "
              f"{med * 1000 / args.slots:.1f} us per slot; goal {GOAL_MS:.0f} ms; "
              f"ratio to goal {med / GOAL_MS:.2f}")


if __name__ == "__main__":
    main()
