"""A queue of N jobs through a real daemon (issue 25: a queue that scales).

    .venv/bin/python benchmarks/queue_bench.py [--jobs 100000] [--submissions 1]
                                               [--code DIR] [--json FILE]

Starts a ``condorpy startd`` (START = False: the jobs stay idle, and the limits raised
to N) from the condorpy in ``--code`` (this tree by default; another checkout gives the
figures of its code beside these), then prints one row: the submission's wall time and
the client's peak RSS (``--submissions`` K: N jobs in K submit files, the worst
client), the daemon's RSS before and after (and its peak), how long it takes to answer
at once again (its matchmaking pass over the new jobs), ``condorpy q`` with the
queue full (time to its first line and to its last), the latency of ``status`` asked
while that ``q`` runs, the daemon's policy cycle (``ping``'s cycle_seconds) and its RSS
again after a restart has read the queue back. ``--htcondor`` adds the same row for
HTCondor's schedd in the reference pool's chroot (tests/pool/refpool.py, as root).
Nothing is asserted: measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from condorpy.startd.client import call  # noqa: E402

CONFIG = """\
LOCAL_DIR = {state}
EXECUTE = $(LOCAL_DIR)/execute
LOG = $(LOCAL_DIR)/log
SPOOL = $(LOCAL_DIR)/spool
LOCK = $(LOCAL_DIR)/lock
NUM_CPUS = 2
MEMORY = 4096
RUNBENCHMARKS = False
START = False
CONDORPY_METRICS_ADDRESS = 127.0.0.1:0
MAX_JOBS_PER_SUBMISSION = {n}
MAX_JOBS_PER_OWNER = {n}
CONDORPY_CONTROL_MAX_CONNECTIONS_PER_USER = 1000
"""

SUBMIT = ("executable = /bin/sh\narguments = \"-c 'echo $(Process)'\"\n"
          "output = out.$(Process)\nerror = err.$(Process)\n"
          "request_memory = 64\nrequest_disk = 1000\nqueue {n}\n")


def rss_kb(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0])
    return out


class Daemon:
    def __init__(self, base: Path, code: Path, n: int) -> None:
        self.base, self.code = base, code
        self.state = base / "state"
        self.config = base / "condor_config"
        self.config.write_text(CONFIG.format(state=self.state, n=max(n, 20000)))
        self.socket = self.state / "lock" / "condorpy_startd.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        return {**os.environ, "CONDOR_CONFIG": str(self.config), "PYTHONPATH": str(self.code)}

    def start(self) -> None:
        with open(self.base / "daemon.out", "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "condorpy", "startd", "-f"],
                                         env=self.env(), stdout=log, stderr=log,
                                         cwd=self.code, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                call(self.socket, "ping", {}, timeout=60)
                return
            except Exception:
                time.sleep(0.2)
        raise SystemExit("the daemon did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid


def run_client(d: Daemon, argv: list[str], cwd: Path) -> tuple[float, int, int, str]:
    """Wall seconds, peak RSS (KiB), exit status and stderr of one client command."""
    t0 = time.monotonic()
    with open(cwd / "client.err", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "condorpy", *argv], env=d.env(),
                                cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (time.monotonic() - t0, usage.ru_maxrss, proc.returncode,
            (cwd / "client.err").read_text()[-300:])


def settle(d: Daemon) -> float:
    """Seconds until the daemon answers at once again after a submission (its
    matchmaking pass over the new idle jobs), so that ``q`` is timed on its own."""
    t0 = time.monotonic()
    quick = 0
    while quick < 3 and time.monotonic() - t0 < 600:
        t1 = time.monotonic()
        call(d.socket, "ping", {}, timeout=600)
        quick = quick + 1 if time.monotonic() - t1 < 0.1 else 0
        time.sleep(0.2)
    return round(time.monotonic() - t0, 2)


def timed_q(d: Daemon) -> dict[str, Any]:
    """``condorpy q`` read line by line, with ``status`` asked meanwhile."""
    latencies: list[float] = []
    done = threading.Event()

    def ask() -> None:
        while not done.is_set():
            t0 = time.monotonic()
            try:
                call(d.socket, "status", {}, timeout=120)
            except Exception:
                pass
            latencies.append(time.monotonic() - t0)
            time.sleep(0.05)

    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "condorpy", "q", "-allusers", "-nobatch"],
                            env=d.env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=d.base)
    assert proc.stdout is not None
    first = None
    lines = 0
    asker = threading.Thread(target=ask)
    asker.start()
    for _ in proc.stdout:
        if first is None:
            first = time.monotonic() - t0
        lines += 1
    proc.wait()
    last = time.monotonic() - t0
    done.set()
    asker.join()
    return {"q_first_s": round(first or last, 3), "q_last_s": round(last, 3),
            "q_lines": lines, "status_during_q_max_s": round(max(latencies, default=0), 3),
            "status_during_q_median_s": round(statistics.median(latencies), 3)
            if latencies else None, "status_asked": len(latencies)}


def htcondor_row(n: int, k: int) -> dict[str, Any]:
    """The same queue in HTCondor's schedd (the reference pool's chroot, in an overlay
    of its own: tests/pool/refpool.py; CONDORPY_REFPOOL_ROOT names a built chroot)."""
    from tests.pool.refpool import PoolUnavailable, RefPool
    row: dict[str, Any] = {"jobs": n, "submissions": k, "code": "HTCondor schedd"}
    try:
        pool = RefPool(instance="queuebench")
        pool.start(extra=f"START = False\nMAX_JOBS_PER_SUBMISSION = {max(n, 20000)}\n"
                         f"MAX_JOBS_PER_OWNER = {max(n, 100000)}\n")
    except (PoolUnavailable, OSError, AssertionError) as exc:
        row["error"] = f"reference pool unavailable: {exc}"
        return row
    try:
        pool.condor("/bin/sh", "-c", "id alice >/dev/null 2>&1 || useradd -m alice")
        (pool.root / "home/alice/job.sub").write_text(SUBMIT.format(n=n // k))
        schedd = _pid_of(pool, "condor_schedd")
        row["daemon_rss_empty_mb"] = round(rss_kb(schedd)["VmRSS"] / 1024, 1)
        t0 = time.monotonic()
        for _ in range(k):
            pool.condor("condor_submit", "job.sub", user="alice", cwd="/home/alice",
                        timeout=1800)
        row["submit_s"] = round(time.monotonic() - t0, 2)
        mem = rss_kb(schedd)
        row["daemon_rss_queued_mb"] = round(mem["VmRSS"] / 1024, 1)
        latencies: list[float] = []
        done = threading.Event()

        def ask() -> None:
            while not done.is_set():
                t1 = time.monotonic()
                pool.condor("condor_status", "-schedd", "-af", "Name", check=False,
                            timeout=300)
                latencies.append(time.monotonic() - t1)

        cmd = ["chroot", str(pool.root), "su", "alice", "-c", "condor_q -allusers -nobatch"]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        asker = threading.Thread(target=ask)
        asker.start()
        first, lines = None, 0
        for _ in proc.stdout:
            first = first if first is not None else time.monotonic() - t0
            lines += 1
        proc.wait()
        last = time.monotonic() - t0
        done.set()
        asker.join()
        row.update({"q_first_s": round(first or last, 3), "q_last_s": round(last, 3),
                    "q_lines": lines,
                    "status_during_q_max_s": round(max(latencies, default=0), 3),
                    "status_asked": len(latencies)})
        mem = rss_kb(schedd)
        row["daemon_rss_after_q_mb"] = round(mem["VmRSS"] / 1024, 1)
        row["daemon_peak_rss_mb"] = round(mem["VmHWM"] / 1024, 1)
    finally:
        pool.stop()
    return row


def _pid_of(pool: Any, name: str) -> int:
    """The pid of the process ``name`` whose root is the pool's chroot."""
    root = os.path.realpath(pool.root)
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.readlink(f"/proc/{entry}/root") == root and \
                    Path(f"/proc/{entry}/comm").read_text().strip() == name:
                return int(entry)
        except OSError:
            pass
    raise SystemExit(f"no {name} in the reference pool")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--submissions", type=int, default=1)
    ap.add_argument("--code", type=Path, default=ROOT, help="the condorpy checkout to run")
    ap.add_argument("--json", type=Path, help="also write the row here")
    ap.add_argument("--htcondor", action="store_true",
                    help="also the same queue in HTCondor's schedd (reference pool, root)")
    args = ap.parse_args()
    n, k = args.jobs, args.submissions
    row: dict[str, Any] = {"jobs": n, "submissions": k, "code": str(args.code)}
    with tempfile.TemporaryDirectory(prefix="queue_bench.") as tmp:
        base = Path(tmp)
        d = Daemon(base, args.code.resolve(), n)
        d.start()
        try:
            row["daemon_rss_empty_mb"] = round(rss_kb(d.pid())["VmRSS"] / 1024, 1)
            job = base / "job.sub"
            job.write_text(SUBMIT.format(n=n // k))
            t0 = time.monotonic()
            worst = 0
            for _ in range(k):
                _, peak, rc, err = run_client(d, ["submit", str(job)], base)
                worst = max(worst, peak)
                if rc != 0:
                    row["submit_error"] = err.strip()
                    break
            row["submit_s"] = round(time.monotonic() - t0, 2)
            row["client_peak_rss_mb"] = round(worst / 1024, 1)
            mem = rss_kb(d.pid())
            row["daemon_rss_queued_mb"] = round(mem["VmRSS"] / 1024, 1)
            row["settle_s"] = settle(d)
            row.update(timed_q(d))
            mem = rss_kb(d.pid())
            row["daemon_rss_after_q_mb"] = round(mem["VmRSS"] / 1024, 1)
            row["daemon_peak_rss_mb"] = round(mem["VmHWM"] / 1024, 1)
            cycles = call(d.socket, "ping", {}, timeout=120).get("cycle_seconds") or []
            row["policy_cycle_ms"] = round(1000 * max(cycles), 2) if cycles else None
            d.stop()
            t0 = time.monotonic()
            d.start()
            row["restart_s"] = round(time.monotonic() - t0, 2)
            time.sleep(2)
            row["daemon_rss_restarted_mb"] = round(rss_kb(d.pid())["VmRSS"] / 1024, 1)
        finally:
            d.stop()
    rows = [row] + ([htcondor_row(n, k)] if args.htcondor else [])
    print(json.dumps(rows, indent=1))
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
