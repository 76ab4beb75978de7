"""How long a container job takes from activation to its first instruction, beside a
vanilla job's and ``docker run`` alone.

    .venv/bin/python benchmarks/container_start_bench.py [--runs N] [--start-dockerd]
        [--compare REV]

Needs root and a Docker daemon: ``--start-dockerd`` starts one for the run (vfs
storage, no bridge, cgroupfs driver: what the VM lane uses), e.g. in the VM lane:

    tests/vm/run -- .venv/bin/python benchmarks/container_start_bench.py --start-dockerd

The image is a busybox root imported offline. Latency: from just before Starter.run
(or ``docker run``) to the uptime the job prints first thing (``cat /proc/uptime``,
10 ms resolution, the same clock inside a container and out). A
container job's figure includes ``docker create`` and ``docker start``, as
HTCondor's does. ``--compare REV`` also times the vanilla job with the starter of a
git revision (``git archive``), alternated with this tree's.
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
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = "condorpy-bench/busybox:1"
DOCKER = "/usr/bin/docker"


def start_dockerd(root: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        ["/usr/sbin/dockerd", "--data-root", str(root / "data"), "--storage-driver",
         "vfs", "--iptables=false", "--ip-masq=false", "--bridge=none",
         "--exec-opt", "native.cgroupdriver=cgroupfs", "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while subprocess.run([DOCKER, "info"], capture_output=True).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("dockerd did not come up")
        time.sleep(0.2)
    return proc


def boot_ns() -> int:
    """CLOCK_BOOTTIME, the clock /proc/uptime reads (busybox's date lacks %N)."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def first_instruction(path: Path, t0: int) -> float:
    """Milliseconds from ``t0`` to the uptime the job printed first thing (10 ms
    resolution, the same clock inside a container and out)."""
    return (float(path.read_text().split()[0]) * 1e9 - t0) / 1e6


def starter_latency(work: Path, container: bool, n: int) -> float:
    from condorpy.starter.settings import MemoryPolicy, StarterSettings
    from condorpy.starter.starter import Starter
    kw: dict[str, object] = {}
    if container:
        from condorpy.machine.docker import DockerSettings
        kw["docker"] = DockerSettings(path=DOCKER, cgroup_driver="cgroupfs")
    settings = StarterSettings(execute=str(work / "execute"), update_interval_s=5,
                               memory_policy=MemoryPolicy.HARD, **kw)  # type: ignore[arg-type]
    out = work / "out" / f"first_{n}"
    job: dict[str, object] = {"Cmd": "/bin/cat", "Arguments": "/proc/uptime", "Out": str(out),
                              "ClusterId": 1, "ProcId": n}
    if os.geteuid() == 0:
        job["Owner"] = "nobody"
    if container:
        job.update({"WantDocker": True, "DockerImage": IMAGE, "DockerNetworkType": "none",
                    "Out": "first", "Iwd": str(work / "out")})
        out = work / "out" / "first"
    t0 = boot_ns()
    outcome = Starter(job, {"Name": "slot1@bench", "Cpus": 1, "Memory": 256}, settings,
                      notice=lambda _t: None).run()
    if outcome.hold is not None or outcome.vacated:
        raise SystemExit(f"benchmark job failed: {outcome.attributes}")
    return first_instruction(out, t0)


def docker_run_latency(work: Path) -> float:
    out = work / "run_first"
    t0 = boot_ns()
    with open(out, "w") as fh:
        subprocess.run([DOCKER, "run", "--rm", "--network=none", "--log-driver=none",
                        IMAGE, "/bin/cat", "/proc/uptime"], stdout=fh, check=True)
    return first_instruction(out, t0)


def vanilla_in(tree: str | None, work: Path, runs: int) -> list[float]:
    """The vanilla latency with the starter of ``tree`` (None: this one), in a child."""
    env = dict(os.environ)
    env["PYTHONPATH"] = tree if tree is not None else REPO
    code = ("import sys, json; from pathlib import Path; sys.path.insert(0, %r); "
            "import container_start_bench as b; "
            "print(json.dumps([b.starter_latency(Path(%r), False, i) for i in range(%d)]))"
            % (os.path.dirname(os.path.abspath(__file__)), str(work), runs))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    import json
    return list(json.loads(out.splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--start-dockerd", action="store_true")
    ap.add_argument("--compare", metavar="REV")
    args = ap.parse_args()
    sys.path.insert(0, REPO)          # this tree's condorpy, not an installed one
    from tests.busybox_image import busybox_tar
    work = Path(tempfile.mkdtemp(prefix="container-bench-"))
    for sub in ("execute", "out"):
        (work / sub).mkdir()
    os.chmod(work, 0o755)
    os.chmod(work / "execute", 0o755)
    os.chmod(work / "out", 0o777)
    daemon = start_dockerd(work) if args.start_dockerd else None
    try:
        subprocess.run([DOCKER, "import", "-", IMAGE], input=busybox_tar(), check=True,
                       capture_output=True)
        print(f"load: {os.getloadavg()[0]:.2f} (uptime's 1-minute figure)")
        rows: dict[str, list[float]] = {"vanilla job": [], "container job": [],
                                        "docker run alone": []}
        for i in range(args.runs):                     # interleaved: A B C A B C
            rows["vanilla job"].append(starter_latency(work, False, i))
            rows["container job"].append(starter_latency(work, True, i))
            rows["docker run alone"].append(docker_run_latency(work))
        for name, values in rows.items():
            print(f"{name:18s} median {statistics.median(values):8.1f} ms   "
                  f"best {min(values):8.1f} ms   ({len(values)} runs)")
        ratio = statistics.median(rows["container job"]) / statistics.median(
            rows["docker run alone"])
        print(f"container job / docker run alone: {ratio:.2f}")
        if args.compare:
            tree = tempfile.mkdtemp(prefix="container-bench-ref-")
            archive = subprocess.run(["git", "archive", args.compare, "condorpy"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
            ref: list[float] = []
            ours: list[float] = []
            for _ in range(2):                         # A B A B
                ref += vanilla_in(tree, work, args.runs)
                ours += vanilla_in(None, work, args.runs)
            print(f"vanilla job at {args.compare}: median {statistics.median(ref):.1f} ms; "
                  f"this tree: {statistics.median(ours):.1f} ms "
                  f"(ratio {statistics.median(ours) / statistics.median(ref):.2f})")
            shutil.rmtree(tree, ignore_errors=True)
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
