"""How fast the fork server gets a job going, and what a starter costs in memory.

    .venv/bin/python benchmarks/forkserver_bench.py [--runs N] [--memory-starters N]

Latency: from "launch this job" (just before ForkServer.launch) to the job's first
instruction, taken as the wall-clock time `date +%s%N` prints as soon as it runs; the
floor is a bare fork+exec of the same `date` in this process, so date's own start-up
cancels out in the difference. Each launch waits for the starter to end (its pidfd)
before the next. Throughput: /bin/true jobs through the fork server, one after another
and with 8 in flight, against bare fork+exec+wait. Memory: the unique memory
(Private_Clean + Private_Dirty of /proc/PID/smaps_rollup) of starters watching a
running job, next to the fork server's own, which they share.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from condorpy.startd.forkserver import ForkServer, open_pidfd
from condorpy.startd.forkserver_wire import Launched, LaunchRequest

SLOT_AD = 'Name = "slot1@bench"\nCpus = 1\nMemory = 1024\n'
KNOBS = {"STARTER_UPDATE_INTERVAL": "5"}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def job_ad(n: int, cmd: str, args: str = "", out: str | None = None) -> str:
    lines = [f'Cmd = "{cmd}"', f"ClusterId = {n}", "ProcId = 0", 'Owner = "nobody"']
    if args:
        lines.append(f'Arguments = "{args}"')
    if out:
        lines.append(f'Out = "{out}"')
    return "\n".join(lines) + "\n"


def wait_gone(launched: Launched) -> None:
    fd = open_pidfd(launched)
    if fd is None:
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


class Bench:
    def __init__(self, server: ForkServer, tmp: str) -> None:
        self.server = server
        self.tmp = tmp
        self.execute = os.path.join(tmp, "execute")
        self.results = os.path.join(tmp, "results")
        self.n = 0

    def launch(self, ad: str) -> Launched:
        self.n += 1
        return self.server.launch(LaunchRequest(
            job_id=f"{self.n}.0", job_ad=ad, slot_ad=SLOT_AD, execute=self.execute,
            result_path=os.path.join(self.results, f"{self.n}.ad"), knobs=KNOBS))

    def finish(self, launched: Launched) -> None:
        wait_gone(launched)
        if not os.path.exists(launched.result_path):
            with open(launched.log_path) as fh:
                raise SystemExit(f"starter {launched.pid} left no final ad:\n{fh.read()}")
        os.unlink(launched.result_path)
        os.unlink(launched.log_path)

    def latency(self, out_path: str) -> float:
        ad = job_ad(self.n + 1, "/bin/date", "+%s%N", out_path)
        t0 = time.time_ns()
        launched = self.launch(ad)
        self.finish(launched)
        with open(out_path) as fh:
            return (int(fh.read()) - t0) / 1e6

    def true_sequential(self, n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            self.finish(self.launch(job_ad(self.n + 1, "/bin/true")))
        return n / (time.perf_counter() - t0)

    def true_window(self, n: int, window: int) -> float:
        t0 = time.perf_counter()
        flight: list[Launched] = []
        for _ in range(n):
            if len(flight) >= window:
                self.finish(flight.pop(0))
            flight.append(self.launch(job_ad(self.n + 1, "/bin/true")))
        for launched in flight:
            self.finish(launched)
        return n / (time.perf_counter() - t0)


def bare_latency(out_path: str) -> float:
    t0 = time.time_ns()
    pid = os.fork()
    if pid == 0:
        fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.execv("/bin/date", ["/bin/date", "+%s%N"])
    os.waitpid(pid, 0)
    with open(out_path) as fh:
        return (int(fh.read()) - t0) / 1e6


def bare_true(n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.execv("/bin/true", ["/bin/true"])
        os.waitpid(pid, 0)
    return n / (time.perf_counter() - t0)


def rollup(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1])
    return out


def unique_kb(pid: int) -> int:
    r = rollup(pid)
    return r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)


def memory(bench: Bench, count: int) -> tuple[list[int], list[int], list[int]]:
    """Unique and total memory of `count` starters each watching a sleeping job."""
    running = [bench.launch(job_ad(bench.n + 1, "/bin/sleep", "30")) for _ in range(count)]
    try:
        # Let every starter reach its watch loop and take a few usage samples.
        for launched in running:
            deadline = time.monotonic() + 10
            while not os.path.exists(launched.socket_path):
                if time.monotonic() > deadline:
                    raise SystemExit(f"starter {launched.pid} never listened")
                time.sleep(0.01)
        time.sleep(1.0)
        unique = [unique_kb(x.pid) for x in running]
        rss = [rollup(x.pid)["Rss"] for x in running]
        pss = [rollup(x.pid)["Pss"] for x in running]
    finally:
        for launched in running:
            os.kill(launched.pid, 15)        # a soft kill of the job through its starter
        for launched in running:
            bench.finish(launched)
    return unique, rss, pss


@contextmanager
def workdir() -> Iterator[str]:
    tmp = tempfile.mkdtemp(prefix="condorpy-fsbench-")
    try:
        os.chmod(tmp, 0o755)
        for sub, mode in (("execute", 0o755), ("results", 0o755), ("out", 0o777)):
            os.mkdir(os.path.join(tmp, sub))
            os.chmod(os.path.join(tmp, sub), mode)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--memory-starters", type=int, default=5)
    args = parser.parse_args()
    with workdir() as tmp, ForkServer.start() as server:
        bench = Bench(server, tmp)
        out_path = os.path.join(tmp, "out", "stamp")
        job_out = os.path.join(tmp, "out", "job-stamp")   # written as the job's user
        for _ in range(5):        # warm caches on both sides
            bare_latency(out_path)
            bench.latency(job_out)
        bare = [bare_latency(out_path) for _ in range(args.runs)]
        through = [bench.latency(job_out) for _ in range(args.runs)]
        t_launch = []
        for _ in range(20):
            t0 = time.perf_counter()
            launched = bench.launch(job_ad(bench.n + 1, "/bin/true"))
            t_launch.append((time.perf_counter() - t0) * 1e3)
            bench.finish(launched)
        floor_tp = bare_true(args.runs)
        seq_tp = bench.true_sequential(args.runs)
        win_tp = bench.true_window(args.runs, 8)
        unique, rss, pss = memory(bench, args.memory_starters)
        server_unique = unique_kb(server.pid)
        server_rss = rollup(server.pid)["Rss"]
    b50, b99 = pct(bare, 0.5), pct(bare, 0.99)
    s50, s99 = pct(through, 0.5), pct(through, 0.99)
    print(f"fork server benchmark ({args.runs} runs, euid {os.geteuid()}, "
          f"{os.cpu_count()} CPUs)")
    print("latency, launch request to the job's first instruction (ms)   p50      p99")
    print(f"  floor: bare fork+exec in this process                {b50:8.2f} {b99:8.2f}")
    print(f"  through the fork server and starter                  {s50:8.2f} {s99:8.2f}")
    print(f"  difference                                           {s50 - b50:8.2f} "
          f"{s99 - b99:8.2f}")
    print(f"  ratio                                                {s50 / b50:8.2f} "
          f"{s99 / b99:8.2f}")
    print(f"  ForkServer.launch() call alone (ms)                  "
          f"{statistics.median(t_launch):8.2f} {max(t_launch):8.2f} (max)")
    print("throughput of /bin/true jobs (jobs/s)")
    print(f"  floor: bare fork+exec+wait                           {floor_tp:8.1f}")
    print(f"  fork server, one at a time                           {seq_tp:8.1f}"
          f"   ratio {seq_tp / floor_tp:.3f}")
    print(f"  fork server, 8 in flight                             {win_tp:8.1f}"
          f"   ratio {win_tp / floor_tp:.3f}")
    print(f"memory of a starter watching a running job ({len(unique)} starters, kB)")
    print(f"  unique (Private_Clean+Private_Dirty)  median {statistics.median(unique)}"
          f"  max {max(unique)}")
    print(f"  Rss median {statistics.median(rss)}  Pss median {statistics.median(pss)}")
    print(f"  fork server: Rss {server_rss}, unique {server_unique}")
    print(f"goal p50 under 20 ms: {'met' if s50 < 20 else 'NOT met'}; "
          f"unique memory under 8 MB: {'met' if max(unique) < 8192 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
