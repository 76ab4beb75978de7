"""Jobs through a real HTCondor pool: condorpy's execution point against the pool's own.

The reference pool (tests/pool/refpool.py: Debian's HTCondor 23.9.6, its own startd with
a partitionable slot of 2 CPUs and 2048 MB, NEGOTIATOR_INTERVAL 5) and a condorpy
daemon with the same slot join one collector. The same jobs go to one or the other by
their requirements (condorpy advertises ``BuildID: condorpy`` in CondorVersion).

- latency: from just before ``condor_submit`` to the job's first instruction (the job
  writes the time first thing), median of ``--rounds`` single jobs;
- throughput: 40 short jobs (``/bin/true``) submitted at once, until the last leaves
  the queue.

Prints seconds for both and the ratio condorpy / HTCondor (below 1.0: condorpy is
faster). Needs root (the pool runs in a chroot).

    .venv/bin/python benchmarks/pool_bench.py [--rounds N] [--jobs N]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pool.refpool import RefPool  # noqa: E402
from tests.startd.daemon_helpers import Daemon, wait_for  # noqa: E402

CONDORPY = 'regexp("condorpy", TARGET.CondorVersion)'
HTCONDOR = '!regexp("condorpy", TARGET.CondorVersion)'

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = condorpy-bench.example
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
CONDORPY_POOL_ACCEPT_CLAIMS = True
NUM_CPUS = 2
MEMORY = 2048
"""


def submit(pool: RefPool, d: Path, text: str) -> int:
    (d / "job.sub").write_text(text)
    out = pool.condor("condor_submit", "job.sub", user="alice", cwd=str(d)).stdout
    m = re.search(r"submitted to cluster (\d+)", out)
    assert m, out
    return int(m.group(1))


def gone(pool: RefPool, cluster: int) -> bool:
    return not pool.condor("condor_q", str(cluster), "-af", "ProcId", check=False).stdout.split()


def latency(pool: RefPool, d: Path, req: str) -> float:
    stamp = d / "first"
    stamp.unlink(missing_ok=True)
    t0 = time.time()
    cluster = submit(pool, d, f"""\
executable = /bin/sh
arguments = "-c 'date +%s.%N > {stamp}'"
should_transfer_files = NO
requirements = {req}
queue
""")
    wait_for(lambda: stamp.exists() and stamp.read_text().strip() != "", 120)
    first = float(stamp.read_text())
    wait_for(lambda: gone(pool, cluster), 120)
    return first - t0


def throughput(pool: RefPool, d: Path, req: str, n: int) -> float:
    t0 = time.monotonic()
    cluster = submit(pool, d, f"""\
executable = /bin/true
should_transfer_files = NO
request_memory = 64
requirements = {req}
queue {n}
""")
    wait_for(lambda: gone(pool, cluster), 900)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=40)
    args = ap.parse_args()
    pool = RefPool()
    pool.start()
    tmp = Path(tempfile.mkdtemp(prefix="condorpy-pool-bench-"))
    daemon = Daemon(tmp, CONFIG.format(collector=pool.collector), cpus=2)
    d = pool.shared / "bench"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    d.chmod(0o1777)
    try:
        daemon.start()
        time.sleep(2)
        rows = []
        lat = {name: statistics.median(latency(pool, d, req) for _ in range(args.rounds))
               for name, req in (("condorpy", CONDORPY), ("HTCondor", HTCONDOR))}
        rows.append(("submit -> first instruction (s, median of "
                     f"{args.rounds})", lat["condorpy"], lat["HTCondor"]))
        thr = {name: throughput(pool, d, req, args.jobs)
               for name, req in (("condorpy", CONDORPY), ("HTCondor", HTCONDOR))}
        rows.append((f"{args.jobs} short jobs submitted at once, until done (s)",
                     thr["condorpy"], thr["HTCondor"]))
        print(f"{'':58} {'condorpy':>9} {'HTCondor':>9} {'ratio':>6}")
        for what, a, b in rows:
            print(f"{what:58} {a:9.2f} {b:9.2f} {a / b:6.2f}")
    finally:
        daemon.stop()
        daemon.kill_leftovers()
        pool.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
