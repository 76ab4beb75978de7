"""Input file transfer through a real HTCondor pool: condorpy's execution point against
the pool's own.

The reference pool (tests/pool/refpool.py: Debian's HTCondor 23.9.6 with its own
startd) and a condorpy daemon join one collector. A job with one input file of
``--mb`` MB (random bytes; default 200) and ``should_transfer_files = YES`` is
submitted from a directory inside the pool's chroot, once per round to each execution
point (chosen by requirements: condorpy advertises ``BuildID: condorpy``). The same
HTCondor shadow sends the file both times, so its log times the same thing on both
sides: from ``entering FileTransfer::DoUpload`` to ``Transfer exit info`` (the file
sent, both TransferAcks exchanged), with ``D_SUB_SECOND`` timestamps. The job checks
the size it got.

Prints MB/s for both (median of ``--rounds``) and the ratio condorpy / HTCondor (above
1.0: condorpy receives faster), and the slowest answer of condorpy's control socket
(``ping``, every 10 ms) while its transfers ran: the transfer runs on a thread of its
own, so the daemon's event loop keeps answering. Needs root (the pool runs in a
chroot).

    .venv/bin/python benchmarks/transfer_bench.py [--mb 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pool.refpool import RefPool  # noqa: E402
from tests.startd.daemon_helpers import Daemon, wait_for  # noqa: E402

CONDORPY = 'regexp("condorpy", TARGET.CondorVersion)'
HTCONDOR = '!regexp("condorpy", TARGET.CondorVersion)'

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = condorpy-transfer-bench.example
UID_DOMAIN = condorpy.example
FILESYSTEM_DOMAIN = condorpy.example
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
CONDORPY_POOL_ACCEPT_CLAIMS = True
NUM_CPUS = 2
MEMORY = 2048
EXECUTE = {execute}
"""

POOL_EXTRA = "SHADOW_DEBUG = D_FULLDEBUG D_SUB_SECOND\n"
LINE = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) \((\d+)\.0\) \(\d+\): (.*)$")


def shadow_upload_seconds(pool: RefPool, cluster: int) -> float:
    """The shadow's input upload of job ``cluster``.0, from its log."""
    start = end = None
    for line in pool.log("ShadowLog").splitlines():
        m = LINE.match(line)
        if not m or int(m.group(2)) != cluster:
            continue
        when = datetime.strptime(m.group(1), "%m/%d/%y %H:%M:%S.%f").timestamp()
        if start is None and "entering FileTransfer::DoUpload" in m.group(3):
            start = when
        elif start is not None and end is None and "Transfer exit info" in m.group(3):
            end = when
    if start is None or end is None:
        raise RuntimeError(f"no input upload of job {cluster}.0 in the ShadowLog")
    return end - start


def run_job(pool: RefPool, d: Path, inside: str, req: str, size: int) -> float:
    (d / "job.sub").write_text(f"""\
executable = job.sh
arguments = {size}
should_transfer_files = YES
transfer_input_files = big.bin
output = out.txt
requirements = {req}
queue
""")
    pool.condor("chown", "-R", "alice:alice", inside)
    out = pool.condor("condor_submit", "job.sub", user="alice", cwd=inside).stdout
    m = re.search(r"submitted to cluster (\d+)", out)
    assert m, out
    cluster = int(m.group(1))
    wait_for(lambda: not pool.condor("condor_q", str(cluster), "-af", "ProcId",
                                     check=False).stdout.split(), 600)
    got = (d / "out.txt").read_text().strip()
    if got != "ok":
        raise RuntimeError(f"job {cluster}: the input arrived wrong: {got!r}")
    return shadow_upload_seconds(pool, cluster)


def _probe(daemon: Daemon, stop: threading.Event, out: list[float]) -> None:
    while not stop.is_set():
        t0 = time.monotonic()
        daemon.call("ping")
        out.append(time.monotonic() - t0)
        time.sleep(0.01)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    size = args.mb * 1_000_000
    pool = RefPool()
    pool.start(POOL_EXTRA)
    tmp = Path(tempfile.mkdtemp(prefix="condorpy-transfer-bench-"))
    execute = Path(tempfile.mkdtemp(prefix="condorpy-transfer-bench-execute-"))
    execute.chmod(0o755)
    daemon = Daemon(tmp, CONFIG.format(collector=pool.collector, execute=execute), cpus=2)
    inside = "/home/alice/transfer-bench"
    d = pool.root / inside.lstrip("/")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    try:
        with open(d / "big.bin", "wb") as fh:
            for _ in range(args.mb):
                fh.write(os.urandom(1_000_000))
        (d / "job.sh").write_text('#!/bin/sh\n'
                                  '[ "$(stat -c %s big.bin)" = "$1" ] && echo ok || echo bad\n')
        (d / "job.sh").chmod(0o755)
        daemon.start()
        time.sleep(2)
        secs: dict[str, list[float]] = {"condorpy": [], "HTCondor": []}
        pings: list[float] = []
        for _ in range(args.rounds):
            for name, req in (("condorpy", CONDORPY), ("HTCondor", HTCONDOR)):
                stop = threading.Event()
                prober = threading.Thread(target=_probe, args=(daemon, stop, pings))
                if name == "condorpy":
                    prober.start()
                try:
                    secs[name].append(run_job(pool, d, inside, req, size))
                finally:
                    stop.set()
                    if prober.is_alive():
                        prober.join()
        rate = {name: args.mb / statistics.median(s) for name, s in secs.items()}
        print(f"input transfer of one {args.mb} MB file, shadow to execution point "
              f"(median of {args.rounds})")
        print(f"{'':28} {'condorpy':>9} {'HTCondor':>9} {'ratio':>6}")
        print(f"{'seconds':28} {statistics.median(secs['condorpy']):9.2f} "
              f"{statistics.median(secs['HTCondor']):9.2f}")
        print(f"{'MB/s':28} {rate['condorpy']:9.1f} {rate['HTCondor']:9.1f} "
              f"{rate['condorpy'] / rate['HTCondor']:6.2f}")
        print(f"slowest control-socket ping while condorpy transferred: "
              f"{max(pings) * 1000:.1f} ms ({len(pings)} pings)")
        print(f"all rounds (s): condorpy {', '.join(f'{s:.2f}' for s in secs['condorpy'])}; "
              f"HTCondor {', '.join(f'{s:.2f}' for s in secs['HTCondor'])}")
    finally:
        daemon.stop()
        daemon.kill_leftovers()
        pool.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(execute, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
