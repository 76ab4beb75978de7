"""What containment without cgroups costs the starter, printed as figures.

    .venv/bin/python benchmarks/containment_bench.py [--files N] [--procs N]

Disk: the sandbox meter (condorpy/starter/usage.py TreeMeter) over N files in 100
directories: a whole walk, the longest slice of DISK_STEP_ENTRIES entries (the
longest the starter's loop is kept from its socket by it), and the old
os.walk + lstat that the starter used before it for comparison. Processes: one scan of the
job's family (condorpy/starter/proctrack.py) with N extra sleeping processes on the
host, and a freeze-and-kill of N processes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time

from condorpy.starter import proctrack
from condorpy.starter.usage import DISK_STEP_ENTRIES, TreeMeter


def walk_baseline(path: str) -> int:
    """The starter's measure before TreeMeter: os.walk and an lstat per name."""
    total = 0
    for root, dirs, files in os.walk(path, followlinks=False):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return (total + 1023) // 1024


def disk(files: int) -> None:
    base = tempfile.mkdtemp(prefix="condorpy-bench-")
    try:
        for d in range(100):
            sub = os.path.join(base, f"d{d}")
            os.mkdir(sub)
            for f in range(files // 100):
                with open(os.path.join(sub, f"f{f}"), "wb") as fh:
                    fh.write(b"x" * 100)
        t = time.perf_counter()
        kb = TreeMeter(base).measure()
        whole = time.perf_counter() - t
        meter = TreeMeter(base)
        meter.begin()
        longest = 0.0
        slices = 0
        while True:
            t = time.perf_counter()
            done = meter.step(DISK_STEP_ENTRIES)
            longest = max(longest, time.perf_counter() - t)
            slices += 1
            if done is not None:
                break
        t = time.perf_counter()
        walk_baseline(base)
        old = time.perf_counter() - t
        print(f"disk: {files} files, {kb} KiB: whole walk {whole * 1000:.0f} ms, "
              f"{slices} slices, longest slice {longest * 1000:.1f} ms "
              f"(os.walk+lstat: {old * 1000:.0f} ms)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def procs(count: int) -> None:
    children = [subprocess.Popen(["sleep", "600"], start_new_session=True)
                for _ in range(count)]
    try:
        leader = children[0]
        fam = proctrack.ProcessFamily("/proc", leader.pid, leader.pid,
                                      adopter=None)
        for c in children:
            with open(f"/proc/{c.pid}/stat") as fh:
                fam.known[c.pid] = proctrack.parse_stat(fh.read()).start_ticks
        entries = len(os.listdir("/proc"))
        t = time.perf_counter()
        found = fam.members()
        scan = time.perf_counter() - t
        t = time.perf_counter()
        left = fam.kill_all(timeout_s=10)
        kill = time.perf_counter() - t
        print(f"procs: {entries} /proc entries: family scan "
              f"{scan * 1000:.1f} ms ({len(found)} members); freeze and kill of {count}: "
              f"{kill * 1000:.0f} ms, {left} left")
    finally:
        for c in children:
            try:
                c.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
            c.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--procs", type=int, default=200)
    args = ap.parse_args()
    disk(args.files)
    procs(args.procs)


if __name__ == "__main__":
    main()
