"""Jobs through fetch-work hooks against the same jobs through the local queue, on the
same partitionable slot, and the cost of a busy startd cron on the daemon.

    .venv/bin/python benchmarks/hooks_bench.py [--jobs 200]

The fetch hook is a small Python script handing out job ads from a directory (one
Python start-up per fetch, as a real hook would cost); REPLY_FETCH and JOB_EXIT hooks
are a shell `true` each. Nothing is asserted: these are measurements.
"""

from __future__ import annotations

import argparse
import os
import pwd
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.startd.daemon_helpers import Daemon, counts, wait_for  # noqa: E402

FETCH = """\
#!{py}
import os, sys
sys.stdin.read()
for name in sorted(os.listdir({queue!r}) if os.path.isdir({queue!r}) else []):
    try:
        os.rename(os.path.join({queue!r}, name), os.path.join({taken!r}, name))
    except OSError:
        continue
    sys.stdout.write(open(os.path.join({taken!r}, name)).read())
    break
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def fetched(base: Path, n: int, cpus: int) -> float:
    queue, taken, staging = base / "queue", base / "taken", base / "staging"
    staging.mkdir(parents=True)
    taken.mkdir()
    user = pwd.getpwuid(os.getuid()).pw_name
    for i in range(n):
        (staging / f"{i:06d}").write_text(
            f'Cmd = "/bin/true"\nOwner = "{user}"\nRequestCpus = 1\nRequestMemory = 16\n'
            f'RequestDisk = 10\nIwd = "/tmp"\n')
    fetch = _script(base / "fetch.py", FETCH.format(py=sys.executable, queue=str(queue),
                                                    taken=str(taken)))
    true = _script(base / "true.sh", "#!/bin/sh\ncat >/dev/null\n")
    d = Daemon(base / "d", cpus=cpus, extra=(
        f"use FEATURE : PartitionableSlot\nSTARTD_JOB_HOOK_KEYWORD = B\n"
        f"B_HOOK_FETCH_WORK = {fetch}\nB_HOOK_REPLY_FETCH = {true}\n"
        f"B_HOOK_JOB_EXIT = {true}\nFetchWorkDelay = 0\n"))
    d.start()
    try:
        # The work appears at once for an idle, already fetching daemon (which asks
        # again 1 s after an empty answer, FetchWorkDelay = 0).
        t0 = time.time()
        staging.rename(queue)
        wait_for(lambda: counts(d).get(4) == n, 3600, d.output)
        return n / (time.time() - t0)
    finally:
        d.stop()
        d.kill_leftovers()


def local(base: Path, n: int, cpus: int) -> float:
    d = Daemon(base / "local", cpus=cpus, extra="use FEATURE : PartitionableSlot\n")
    d.start()
    try:
        work = base / "local" / "work"
        work.mkdir()
        (work / "b.sub").write_text(f"executable = /bin/true\nrequest_memory = 16\n"
                                    f"request_disk = 10\nqueue {n}\n")
        t0 = time.time()
        d.cli("submit", "b.sub", cwd=work)
        wait_for(lambda: counts(d).get(4) == n, 3600, d.output)
        return n / (time.time() - t0)
    finally:
        d.stop()
        d.kill_leftovers()


def cron_cost(base: Path, seconds: int) -> tuple[float, float]:
    """CPU seconds per wall second the idle daemon spends, without and with a startd
    cron job publishing every second."""
    exe = _script(base / "cron.sh", "#!/bin/sh\necho Ticks = 1\n")
    out = []
    for extra in ("", f"use FEATURE : StartdCronPeriodic(tick, 1, {exe})\n"):
        d = Daemon(base / f"cron{len(out)}", cpus=2, extra=extra)
        d.start()
        try:
            assert d.proc is not None
            before = _cpu(d.proc.pid)
            time.sleep(seconds)
            out.append((_cpu(d.proc.pid) - before) / seconds)
        finally:
            d.stop()
            d.kill_leftovers()
    return out[0], out[1]


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--idle", type=int, default=10)
    args = ap.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        via_hooks = fetched(base / "hooks", args.jobs, args.cpus)
        via_queue = local(base, args.jobs, args.cpus)
        print(f"{args.jobs} /bin/true jobs on a {args.cpus}-cpu partitionable slot: "
              f"fetch-work hooks {via_hooks:.1f} jobs/s, local queue {via_queue:.1f} jobs/s "
              f"(ratio {via_hooks / via_queue:.2f})")
        quiet, busy = cron_cost(base, args.idle)
        print(f"idle daemon CPU: {quiet * 100:.2f}% without cron, {busy * 100:.2f}% with a "
              f"startd cron job every second (difference {(busy - quiet) * 100:.2f}% of a core)")


if __name__ == "__main__":
    main()
