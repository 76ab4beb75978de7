"""The job store at the sizes of issue #30: 60,000 finished jobs, 20,000 queued ones.

    .venv/bin/python benchmarks/store_bench.py [--history 60000] [--queued 20000]
                                               [--no-daemon]

Prints, for the history: what the daemon's ``history`` command did before (every row
read, parsed and sent: the CLI asked for all of it and cut to -limit itself) next to
``history -limit 1`` now (newest first, the limit pushed down to the store), at store
level and through a real daemon (with a ``status`` call timed while the whole history
is being read); the old query's own cost with a limit (it sorted the whole table); the
cost of keeping the history bounded (MAX_HISTORY_LOG / MAX_HISTORY_ROTATIONS) per job;
``q`` over 20,000 queued jobs; and what checking the store at start costs (``PRAGMA
quick_check``) on 20,000 jobs. Nothing is asserted: these are measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from condorpy.classad import ClassAd  # noqa: E402
from condorpy.startd.client import call  # noqa: E402
from condorpy.queue.jobstore import DB_NAME, HistoryLimits, JobId, JobStore  # noqa: E402
from condorpy.queue.submit import parse_submit  # noqa: E402

SUBMIT = ("executable = /bin/sh\narguments = \"-c 'echo $(Process)'\"\n"
          "output = out.$(Process)\nerror = err.$(Process)\nlog = job.log\n"
          "request_memory = 64\nrequest_disk = 1000\nqueue 1000\n")
DONE = {"ExitCode": 0, "ExitBySignal": False, "RemoteWallClockTime": 3.0,
        "RemoteUserCpu": 0.01, "RemoteSysCpu": 0.01, "CompletionDate": 1_700_000_000,
        "LastRemoteHost": "slot1_1@host.example.org", "NumJobStarts": 1}


def _clusters(st: JobStore, jobs: int, finished: bool) -> None:
    while jobs > 0:
        n = min(1000, jobs)
        cid = st.new_cluster_id()
        ads = parse_submit(SUBMIT, "bench", cluster_id=cid, owner="alice",
                           submit_dir="/tmp", qdate=0)[:n]
        if finished:
            for ad in ads:
                ad["JobStatus"] = 4
        st.submit(ads, cluster_id=cid)
        if finished:
            st.update_many({JobId(cid, i): DONE for i in range(n)})
        jobs -= n


def _t(fn: object) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()  # type: ignore[operator]
    return time.perf_counter() - t0, out


def history_figures(spool: Path, rows: int) -> None:
    t_fill, _ = _t(lambda: _fill(spool, rows))
    with JobStore(spool, history=HistoryLimits(None, 2)) as st:
        size = os.path.getsize(spool / DB_NAME)
        print(f"history: {rows} finished jobs ({size / 1e6:.0f} MB store; filled in "
              f"{t_fill:.1f} s)")
        t_all, ads = _t(lambda: json.dumps({"ads": [r.ad.to_old() for r in st.history.find()]}))
        print(f"  before: the whole history read, parsed and encoded (what `history "
              f"-limit 1` made the daemon do) {t_all:.2f} s, "
              f"{len(ads) / 1e6:.0f} MB of reply")  # type: ignore[arg-type]
        db = st.db.conn()      # the store's own: it holds the file alone while open
        t_old, _ = _t(lambda: db.execute(
            "SELECT cluster, proc, status, entered, ad FROM history ORDER BY entered "
            "DESC, cluster DESC, proc DESC LIMIT 1").fetchall())
        print(f"  before: the old query with a limit (sorts the table) {t_old * 1e3:.1f} ms")
        t_one, _ = _t(lambda: [r.ad.to_old() for r in st.history.iter(limit=1)])
        t_ten, _ = _t(lambda: [r.ad.to_old() for r in st.history.iter(limit=10)])
        t_con, got = _t(lambda: list(st.history.iter("ProcId == 999", limit=5)))
        print(f"  after: history.iter(limit=1) {t_one * 1e3:.2f} ms; limit=10 "
              f"{t_ten * 1e3:.2f} ms; a constraint matching 1 row in 1000, limit 5 "
              f"{t_con * 1e3:.1f} ms ({len(got)} found)")  # type: ignore[arg-type]


def _fill(spool: Path, rows: int) -> None:
    """``rows`` finished jobs: one cluster through the store, the rest copies of its
    rows with their ids changed, written straight into the same tables (writing each
    through the store costs ~4 ms a job on a loaded machine, and is not measured)."""
    with JobStore(spool, history=HistoryLimits(None, 2)) as st:
        _clusters(st, 1000, finished=True)
    db = sqlite3.connect(spool / DB_NAME)
    template = [t for (t,) in db.execute("SELECT ad FROM history ORDER BY rowid")]
    out = []
    for n in range(1000, rows):
        cid, proc = n // 1000 + 1, n % 1000
        text = re.sub(r"\bClusterId = 1;", f"ClusterId = {cid};", template[proc], count=1)
        out.append((cid, proc, 4, 1_700_000_000 + n, text))
    with db:
        db.executemany("INSERT INTO history (cluster, proc, status, entered, ad) "
                       "VALUES (?, ?, ?, ?, ?)", out)
        db.execute("UPDATE meta SET value=? WHERE key='next_cluster'", (rows // 1000 + 2,))
        db.execute("UPDATE meta SET value=(SELECT sum(length(CAST(ad AS BLOB))) FROM "
                   "history) WHERE key='history_live_bytes'")
    db.close()


def rotation_cost(base: Path) -> None:
    out = []
    for limits in (HistoryLimits(None, 2), HistoryLimits(1_000_000, 2)):
        spool = Path(tempfile.mkdtemp(dir=base))
        with JobStore(spool, history=limits) as st:
            t, _ = _t(lambda: _clusters(st, 10_000, finished=True))  # noqa: B023
            live, rots = st.history.size()
        out.append((t, live, rots))
    (t0, _, _), (t1, live, rots) = out
    print(f"history rotation: 10,000 jobs into the history {t0:.2f} s without rotation, "
          f"{t1:.2f} s with MAX_HISTORY_LOG = 1 MB (kept: live {live / 1e6:.2f} MB + "
          f"{len(rots)} rotations), {(t1 - t0) / 10_000 * 1e6:+.0f} us per job")


def queue_figures(spool: Path, queued: int) -> None:
    with JobStore(spool) as st:
        t_fill, _ = _t(lambda: _clusters(st, queued, finished=False))
    size = os.path.getsize(spool / DB_NAME)
    print(f"queue: {queued} queued jobs ({size / 1e6:.0f} MB store) written in "
          f"{t_fill:.1f} s")
    t_open, st = _t(lambda: JobStore(spool))
    with st:  # type: ignore[attr-defined]
        t_q, _ = _t(lambda: json.dumps([r.ad.to_old() for r in st.jobs()]))  # type: ignore[attr-defined]
    db = sqlite3.connect(spool / DB_NAME)
    t_check, res = _t(lambda: db.execute("PRAGMA quick_check").fetchall())
    t_integrity, _ = _t(lambda: db.execute("PRAGMA integrity_check").fetchall())
    db.close()
    print(f"  start-up check: PRAGMA quick_check {t_check * 1e3:.0f} ms "
          f"({res[0][0]}); integrity_check would take {t_integrity * 1e3:.0f} ms; "  # type: ignore[index]
          f"opening the store with every check {t_open * 1e3:.0f} ms")
    print(f"  q: every queued job read, parsed and encoded {t_q:.2f} s")


def daemon_figures(base: Path, history_spool: Path | None, queued_spool: Path) -> None:
    from tests.startd.daemon_helpers import Daemon
    for label, spool, cmd in (("history", history_spool, "history"),
                              ("queue", queued_spool, "q")):
        if spool is None:
            continue
        d = Daemon(base / f"daemon-{label}", extra="START = False\n"
                   "ENABLE_HISTORY_ROTATION = false\n")
        (d.state / "spool").mkdir(parents=True, exist_ok=True)
        os.replace(spool / DB_NAME, d.state / "spool" / DB_NAME)
        t_start, _ = _t(lambda: _start(d))  # noqa: B023
        print(f"daemon: start on the {label} store {t_start:.1f} s")
        try:
            if cmd == "history":
                t_one, _ = _t(lambda: call(d.socket, "history", {"limit": 1}, timeout=120))
                t_cli, _ = _t(lambda: d.cli("history", "-limit", "1"))
                status: list[float] = []
                stop = threading.Event()

                def poll() -> None:
                    while not stop.is_set():
                        t, _ = _t(lambda: call(d.socket, "status", {}, timeout=120))
                        status.append(t)

                th = threading.Thread(target=poll)
                th.start()
                t_all, res = _t(lambda: _try(lambda: call(d.socket, "history", {},
                                                          timeout=120)))
                stop.set()
                th.join()
                print(f"daemon: history with limit 1 {t_one * 1e3:.1f} ms; `condorpy "
                      f"history -limit 1` {t_cli:.2f} s (a Python start included)")
                print(f"daemon: the whole history (what the old CLI asked for) "
                      f"{t_all:.1f} s: {res}; a status call meanwhile took up to "
                      f"{max(status):.1f} s")
            else:
                t_q, res = _t(lambda: _try(lambda: call(d.socket, "q", {}, timeout=120)))
                print(f"daemon: q over {label} {t_q:.2f} s: {res}")
        finally:
            d.stop()
            d.kill_leftovers()


def _start(d: object) -> None:
    """Daemon.start, with time for a start that reads 20,000 queued jobs."""
    import subprocess
    from tests.startd.daemon_helpers import wait_for
    log = open(d.base / "daemon.out", "ab")  # type: ignore[attr-defined]
    d.proc = subprocess.Popen([sys.executable, "-m", "condorpy", "startd", "-f"],  # type: ignore[attr-defined]
                              env=d.env(), stdout=log, stderr=log,  # type: ignore[attr-defined]
                              stdin=subprocess.DEVNULL)
    log.close()
    wait_for(lambda: d.socket.exists() and d._ping(), 300,  # type: ignore[attr-defined]
             d.output)  # type: ignore[attr-defined]


def _try(fn: object) -> str:
    try:
        got = fn()  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - a benchmark reports what happened
        return f"failed: {exc}"
    return f"{len(got['ads'])} ads"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--history", type=int, default=60_000)
    p.add_argument("--queued", type=int, default=20_000)
    p.add_argument("--no-daemon", action="store_true")
    p.add_argument("--queue-only", action="store_true",
                   help="only the queued jobs (q, the start-up check, a daemon's start)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        hist, queue = base / "history", base / "queue"
        if not args.queue_only:
            history_figures(hist, args.history)
            rotation_cost(base)
        queue_figures(queue, args.queued)
        if not args.no_daemon:
            daemon_figures(base, None if args.queue_only else hist, queue)


if __name__ == "__main__":
    main()
