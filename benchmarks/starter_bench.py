"""How long the starter takes to get a job going, next to this machine's floor.

    .venv/bin/python benchmarks/starter_bench.py [--runs N]

Latency: from "start this job" (just before Starter.run, or just before fork) to the
job's first instruction, taken as the wall-clock time `date +%s%N` prints as soon as it
runs (the same program for both sides, so its own start-up cancels out in the
difference). Throughput: sequential /bin/true jobs through the whole starter (sandbox,
socket, launch, watch, accounting, clean-up) against bare fork+exec+wait.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from condorpy.starter.settings import StarterSettings
from condorpy.starter.starter import Starter


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


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


def starter_latency(settings: StarterSettings, out_path: str) -> float:
    job = {"Cmd": "/bin/date", "Arguments": "+%s%N", "Out": out_path}
    t0 = time.time_ns()
    outcome = Starter(job, {"Name": "slot1@bench"}, settings, notice=lambda _t: None).run()
    if outcome.hold is not None:
        raise SystemExit(f"benchmark job held: {outcome.hold}")
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


def starter_true(settings: StarterSettings, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        Starter({"Cmd": "/bin/true"}, {"Name": "slot1@bench"}, settings,
                notice=lambda _t: None).run()
    return n / (time.perf_counter() - t0)


def cli_once(tmp: str) -> float:
    job = os.path.join(tmp, "job.ad")
    slot = os.path.join(tmp, "slot.ad")
    with open(job, "w") as fh:
        fh.write('Cmd = "/bin/true"\nClusterId = 1\nProcId = 0\n')
    with open(slot, "w") as fh:
        fh.write('Name = "slot1@bench"\nCpus = 1\n')
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "condorpy", "starter", "--job-ad", job,
                    "--slot-ad", slot, "--execute", os.path.join(tmp, "execute"),
                    "--result", os.path.join(tmp, "result.ad")],
                   check=False, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--pid-namespaces", action="store_true")
    parser.add_argument("--cgroup-base", help="delegated cgroup (below /sys/fs/cgroup) to "
                        "put jobs in; default: the starter's own, as in production")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="condorpy-bench-")
    os.chmod(tmp, 0o755)
    execute = os.path.join(tmp, "execute")
    os.mkdir(execute)
    os.chmod(execute, 0o755)
    outdir = os.path.join(tmp, "out")
    os.mkdir(outdir)
    os.chmod(outdir, 0o777)
    out_path = os.path.join(outdir, "stamp")
    job_out_path = os.path.join(outdir, "job-stamp")   # written by the job's own user
    settings = StarterSettings(execute=execute, use_pid_namespaces=args.pid_namespaces,
                               cgroup_base=args.cgroup_base)
    notices: list[str] = []
    Starter({"Cmd": "/bin/true"}, {"Name": "slot1@bench"}, settings,
            notice=notices.append).run()
    tracking = "session/process group (no cgroup v2)" if notices else "cgroup v2"
    try:
        for _ in range(5):      # warm caches on both sides
            bare_latency(out_path)
            starter_latency(settings, job_out_path)
        bare = [bare_latency(out_path) for _ in range(args.runs)]
        through = [starter_latency(settings, job_out_path) for _ in range(args.runs)]
        floor_tp = bare_true(args.runs)
        starter_tp = starter_true(settings, args.runs)
        cli = [cli_once(tmp) for _ in range(5)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    b50, b99 = pct(bare, 0.5), pct(bare, 0.99)
    s50, s99 = pct(through, 0.5), pct(through, 0.99)
    mode = "pid namespaces" if args.pid_namespaces else "no pid namespaces"
    print(f"starter benchmark ({args.runs} runs, euid {os.geteuid()}, {mode}, "
          f"tracking by {tracking})")
    print(f"latency to the job's first instruction (ms)   p50      p99")
    print(f"  floor: fork+exec                         {b50:8.2f} {b99:8.2f}")
    print(f"  through the starter                      {s50:8.2f} {s99:8.2f}")
    print(f"  starter - floor                          {s50 - b50:8.2f} {s99 - b99:8.2f}")
    print(f"  ratio starter/floor                      {s50 / b50:8.2f} {s99 / b99:8.2f}")
    print(f"throughput of /bin/true jobs (jobs/s)")
    print(f"  floor: fork+exec+wait                    {floor_tp:8.1f}")
    print(f"  through the starter                      {starter_tp:8.1f}")
    print(f"  ratio starter/floor                      {starter_tp / floor_tp:8.3f}")
    print(f"whole `condorpy starter` command, /bin/true (ms, incl. Python start-up):"
          f" median {statistics.median(cli):.1f}")
    goal = "met" if s50 - b50 <= 20 else "NOT met"
    print(f"goal p50 within 20 ms of the floor: {goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
