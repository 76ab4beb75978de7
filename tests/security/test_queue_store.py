"""Issue #30, case 5 and the store items of case 6, as an administrator meets them.

5: the daemon is stopped with the victim's 50 jobs queued and the queue file is
truncated to zero bytes; starting it must not take that for an empty queue (the jobs
gone, cluster ids from 1 again): it refuses, with one line naming the file, and leaves
the file as it was, until the administrator starts it with -fresh-queue, which moves
the bad file aside (kept) and begins a new queue.
6: `history -limit 1` on a big history answers without reading all of it and the
history is bounded by MAX_HISTORY_LOG / MAX_HISTORY_ROTATIONS (a reconfig applies
them); a reconfig whose START does not parse is refused whole: the old START stays,
no CPU leaves the partitionable slot, jobs still match and run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.startd.client import RequestRefused
from condorpy.queue.jobstore import DB_NAME, HistoryLimits, JobId, JobStore
from tests.attackers import User, attacker, fingerprint, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon, counts, wait_for

REFUSED = 78        # EX_CONFIG: systemd/condorpy.service does not restart on it


def _startd(d: Daemon, *flags: str) -> subprocess.CompletedProcess[str]:
    """`condorpy startd` as the administrator runs it, to its end (a refusal)."""
    return subprocess.run([sys.executable, "-m", "condorpy", "startd", *flags],
                          env=d.env(), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def _start_with(d: Daemon, *flags: str) -> None:
    """Daemon.start with extra command-line flags."""
    log = open(d.base / "daemon.out", "ab")
    d.proc = subprocess.Popen([sys.executable, "-m", "condorpy", "startd", "-f", *flags],
                              env=d.env(), stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    log.close()
    wait_for(lambda: d.socket.exists() and _serving(d), 30,
             lambda: f"daemon did not start: {d.output()}")


def _serving(d: Daemon) -> bool:
    try:
        d.call("ping")
        return True
    except Exception:
        return False


def _queued(d: Daemon, who: User) -> list[str]:
    res = who.cli(["q", "-allusers", "-af", "ClusterId", "ProcId"], env=d.env())
    assert res.rc == 0, res
    return [line for line in res.stdout.splitlines() if line.strip()]


def test_a_truncated_queue_file_is_refused_until_the_admin_starts_afresh(
        open_base: Path, attacker: User, victim: User) -> None:
    d = Daemon(open_base / "d", extra="START = False\n")     # the jobs stay queued
    d.start()
    try:
        victim.write(victim.home / "j.sub", "executable = /bin/true\nqueue 50\n")
        res = victim.cli(["submit", "j.sub"], env=d.env())
        assert res.rc == 0 and "cluster 1." in res.stdout, res
        assert len(_queued(d, victim)) == 50
        # an intact file: a restart keeps every job and the cluster ids go on
        d.restart()
        assert len(_queued(d, victim)) == 50
        assert victim.cli(["submit", "j.sub"], env=d.env()).stdout.strip().endswith(
            "cluster 2.")
        d.stop()

        db = d.state / "spool" / DB_NAME
        for extra in (DB_NAME + "-wal", DB_NAME + "-shm"):
            assert not (db.parent / extra).exists()   # a clean stop left the file whole
        os.truncate(db, 0)                             # the damage of case 5
        before = fingerprint(db)
        for flags in (["-f"], []):                     # in the foreground, and detaching
            res = _startd(d, *flags)
            assert res.returncode == REFUSED, res
            lines = res.stderr.strip().splitlines()
            assert len(lines) == 1 and str(db) in lines[0] and "0 bytes" in lines[0] \
                and "-fresh-queue" in lines[0], res.stderr
            assert fingerprint(db) == before and sorted(p.name for p in db.parent.iterdir()
                                                        if p.name.startswith(DB_NAME)) \
                == [DB_NAME, DB_NAME + ".lock"]
            assert not d.socket.exists() or not _serving(d)
        # the administrator says to start afresh: the bad file is kept aside
        _start_with(d, "-fresh-queue")
        aside = [p for p in db.parent.iterdir() if p.name.startswith(DB_NAME + ".bad-")]
        assert len(aside) == 1 and fingerprint(aside[0]) == before
        log = (d.state / "log" / "StartLog").read_text()
        assert f"moved {db} aside to {aside[0]}" in log
        assert _queued(d, attacker) == []
        attacker.write(attacker.home / "j.sub", "executable = /bin/true\nqueue\n")
        res = attacker.cli(["submit", "j.sub"], env=d.env())
        assert res.rc == 0 and "cluster 1." in res.stdout, res
        # and the next plain start is an ordinary one, the bad file left alone
        d.restart()
        assert len(_queued(d, victim)) == 1 and fingerprint(aside[0]) == before
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_damaged_page_found_by_sqlite_is_refused_too(open_base: Path) -> None:
    d = Daemon(open_base / "d")
    spool = d.state / "spool"
    with JobStore(spool) as st:
        for _ in range(20):
            st.submit([ClassAd({"Cmd": "/bin/true", "ProcId": i, "Pad": "x" * 300})
                       for i in range(50)])
    db = spool / DB_NAME
    data = bytearray(db.read_bytes())
    data[4096 * 4:4096 * 4 + 2000] = os.urandom(2000)      # the header is still SQLite's
    db.write_bytes(bytes(data))
    before = fingerprint(db)
    res = _startd(d, "-f")
    try:
        assert res.returncode == REFUSED, res
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and str(db) in lines[0] and "damaged" in lines[0], res.stderr
        assert fingerprint(db) == before
    finally:
        d.kill_leftovers()


def _prefill(spool: Path, n: int) -> JobId:
    """``n`` finished jobs in the history, as a busy daemon leaves them; the newest."""
    with JobStore(spool, history=HistoryLimits(None, 2)) as st:
        cid = 0
        for start in range(0, n, 1000):
            cid = st.submit([ClassAd({"Cmd": "/bin/true", "ProcId": i, "JobStatus": 4,
                                      "Owner": "nobody"}) for i in range(min(1000, n - start))])
            st.update_many({JobId(cid, i): {"ExitCode": 0}
                            for i in range(min(1000, n - start))})
        return JobId(cid, min(1000, n - (cid - 1) * 1000) - 1)


def _history_rows(d: Daemon) -> list[tuple[int, int]]:
    with d.db() as db:
        return [(c, p) for c, p in db.execute("SELECT cluster, proc FROM history")]


def test_history_limit_answers_at_once_and_reconfig_bounds_the_history(
        open_base: Path, attacker: User, victim: User) -> None:
    d = Daemon(open_base / "d", extra="ENABLE_HISTORY_ROTATION = false\n")
    newest = _prefill(d.state / "spool", 3_000)
    d.start()
    try:
        res = attacker.cli(["history", "-limit", "1", "-af", "ClusterId", "ProcId"],
                           env=d.env(), timeout=60)
        assert res.rc == 0 and res.stdout.split() == [str(newest.cluster),
                                                      str(newest.proc)], res
        res = attacker.cli(["history", "-limit", "2", "-constraint", "ProcId == 7",
                            "-af", "ClusterId"], env=d.env(), timeout=60)
        assert res.rc == 0 and res.stdout.split() == [str(newest.cluster),
                                                      str(newest.cluster - 1)], res
        assert victim.cli(["status"], env=d.env()).rc == 0

        def run_one(tag: str) -> None:
            victim.write(victim.home / f"{tag}.sub", "executable = /bin/true\nqueue\n")
            before = len(_history_rows(d))
            assert victim.cli(["submit", f"{tag}.sub"], env=d.env()).rc == 0
            wait_for(lambda: not _queued(d, victim) and _history_rows(d) != []
                     and (len(_history_rows(d)) != before), 60, d.output)

        run_one("a")                      # no rotation: everything is kept
        assert len(_history_rows(d)) == 3_001
        with open(d.config, "a") as fh:
            fh.write("ENABLE_HISTORY_ROTATION = true\nMAX_HISTORY_LOG = 1\n"
                     "MAX_HISTORY_ROTATIONS = 1\n")
        assert d.cli("reconfig").returncode == 0
        run_one("b")                      # the 3,001 become the one rotation kept
        run_one("c")                      # ...and are deleted when "b" rotates
        rows = _history_rows(d)
        assert len(rows) == 2 and all(c > newest.cluster for c, _p in rows)
        res = attacker.cli(["history", "-af", "ClusterId"], env=d.env())
        assert res.rc == 0 and res.stdout.split() == sorted(
            (str(c) for c, _p in rows), key=int, reverse=True)
    finally:
        d.stop()
        d.kill_leftovers()


def _pslot_cpus(d: Daemon) -> dict[str, object]:
    ads = [ClassAd.parse_old(t, source="status") for t in d.call("status")["ads"]]
    return {str(ad.evaluate("Name")).split("@")[0]: ad.evaluate("Cpus") for ad in ads
            if ad.evaluate("SlotType") == "Partitionable"}


def _start_expr(d: Daemon) -> object:
    return d.call("config_val", names=["START"])["START"]["value"]


def test_a_reconfig_whose_start_does_not_parse_changes_nothing(
        open_base: Path, attacker: User) -> None:
    d = Daemon(open_base / "d", cpus=3, extra="NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
               "SLOT_TYPE_1_PARTITIONABLE = True\n")
    d.start()
    good = d.config.read_text()
    try:
        assert _pslot_cpus(d) == {"slot1": 3}
        for n in range(3):
            d.config.write_text(good + "START = (Owner == \"x\"\n")
            if n == 0:
                res = d.cli("reconfig", check=False)
                assert res.returncode == 1 and "START" in res.stderr \
                    and str(d.config) in res.stderr, res
            else:
                with pytest.raises(RequestRefused, match="START"):
                    d.call("reconfig")
            assert _start_expr(d) == "True"
            # a job still matches and runs on the old START: it takes its one CPU only
            attacker.write(attacker.home / f"{n}.sub", "executable = /bin/sleep\n"
                           "arguments = 600\nqueue\n")
            assert attacker.cli(["submit", f"{n}.sub"], env=d.env()).rc == 0
            wait_for(lambda: _pslot_cpus(d) == {"slot1": 2 - n}, 30, d.output)  # noqa: B023
            assert counts(d).get(2) == n + 1
        d.config.write_text(good + "START = RequestCpus <= 2\n")
        assert "START" in d.call("reconfig")
        assert _start_expr(d) == "RequestCpus <= 2"
        assert attacker.cli(["rm", "-all"], env=d.env()).rc == 0
        wait_for(lambda: _pslot_cpus(d) == {"slot1": 3}, 30, d.output)
        assert attacker.cli(["submit", "0.sub"], env=d.env()).rc == 0
        wait_for(lambda: counts(d).get(2) == 1, 30, d.output)
        assert _pslot_cpus(d) == {"slot1": 2}
        attacker.cli(["rm", "-all"], env=d.env())
    finally:
        d.stop()
        d.kill_leftovers()


def test_the_unit_file_does_not_restart_a_refused_store() -> None:
    unit = (Path(__file__).resolve().parents[2] / "systemd" / "condorpy.service").read_text()
    assert f"RestartPreventExitStatus={REFUSED}" in unit.replace(" ", "")
    # and the exit status the unit names is the one the command uses
    from condorpy.cli.startd_cmd import EXIT_STORE_REFUSED
    assert EXIT_STORE_REFUSED == REFUSED
