"""The job store: persistence, atomicity across a killed process, one writer, errors
naming the database, and a benchmark-style print of submit/update cost."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.config import load_config
from condorpy.errors import ConfigError, CondorpyError, QueueError
from condorpy.queue.jobstore import (
    DB_NAME, SCHEMA_VERSION, HistoryLimits, JobId, JobStatus, JobStore, StarterRecord,
    StoreUnusable,
)
from condorpy.queue.store_db import RESERVE_NAME
from condorpy.queue.submit import parse_submit


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def ads(n: int, cmd: str = "/bin/true") -> list[ClassAd]:
    return [ClassAd({"Cmd": cmd, "ProcId": i, "JobStatus": 1, "Owner": "alice",
                     "RequestCpus": 1}) for i in range(n)]


def starter(job: JobId, pid: int = 4242) -> StarterRecord:
    return StarterRecord(job_id=job, pid=pid, boot_id="b00t", process_start=123456,
                         socket_path=f"/x/dir_{pid}/starter.sock",
                         execute_dir=f"/x/dir_{pid}", slot="slot1_1", started=1)


def test_submit_assigns_clusters_and_reopen_preserves_everything(tmp_path: Path) -> None:
    clock = Clock()
    with JobStore(tmp_path, clock=clock) as st:
        c1 = st.submit(ads(3))
        reserved = st.new_cluster_id()
        sub = parse_submit("executable = /bin/echo\narguments = $(Process)\nqueue 2\n", "s",
                           cluster_id=reserved, owner="bob", submit_dir="/tmp", qdate=5)
        c2 = st.submit(sub, cluster_id=reserved)
        assert (c1, c2) == (1, 2)
        st.claims.record("claim-1", "slot1_1")
        rec = st.start_job(JobId(2, 1), starter(JobId(2, 1)), claim_id="claim-1",
                           remote_host="slot1_1@host")
        assert rec.status == JobStatus.RUNNING
        clock.t += 10
        st.set_status(JobId(1, 0), JobStatus.HELD, reason="because", code=21)
        st.set_status(JobId(1, 1), JobStatus.COMPLETED)
        st.update(JobId(1, 2), {"Foo": 3, "Bar": parse_expr("Foo + 1")})
    with JobStore(tmp_path, clock=clock) as st:
        jobs = {str(r.job_id): r for r in st.jobs()}
        assert sorted(jobs) == ["1.0", "1.2", "2.0", "2.1"]
        assert jobs["1.0"].status == JobStatus.HELD
        assert jobs["1.0"].ad["HoldReason"] == "because"
        assert jobs["1.0"].ad["HoldReasonCode"] == 21
        assert jobs["1.0"].ad["LastJobStatus"] == 1
        assert jobs["1.0"].entered_status == 1_000_010
        assert jobs["1.2"].ad.evaluate("Bar") == 4
        assert jobs["2.1"].ad["Args"] == "1"
        assert jobs["2.1"].ad["NumJobStarts"] == 1
        assert jobs["2.1"].ad["RemoteHost"] == "slot1_1@host"
        (hist,) = st.history.find()
        assert str(hist.job_id) == "1.1" and hist.status == JobStatus.COMPLETED
        assert hist.ad["CompletionDate"] == 1_000_010
        (s,) = st.starters.all()
        assert s == starter(JobId(2, 1))
        (claim,) = st.claims.all()
        assert claim.state == "busy" and claim.job_id == JobId(2, 1)
        assert st.next_cluster_id() == 3
        assert st.new_cluster_id() == 3


def test_status_transitions_and_history(tmp_path: Path) -> None:
    clock = Clock()
    with JobStore(tmp_path, clock=clock) as st:
        st.submit(ads(2))
        j0, j1 = JobId(1, 0), JobId(1, 1)
        st.claims.record("c", "slot1")
        st.start_job(j0, starter(j0), claim_id="c")
        st.set_status(j0, JobStatus.SUSPENDED)
        assert st.job(j0) is not None and st.job(j0).status == JobStatus.SUSPENDED  # type: ignore[union-attr]
        st.set_status(j1, JobStatus.HELD, reason="x", code=1)
        st.set_status(j1, JobStatus.IDLE, reason="released")
        after = st.job(j1)
        assert after is not None and "HoldReason" not in after.ad
        assert after.ad["ReleaseReason"] == "released" and after.ad["NumHolds"] == 1
        clock.t += 1
        st.set_status(j0, JobStatus.COMPLETED)
        clock.t += 1
        st.set_status(j1, JobStatus.REMOVED, reason="by user")
        assert st.jobs() == []
        assert st.starters.all() == []           # a finished job's starter is forgotten
        assert st.claims.all()[0].state == "idle" and st.claims.all()[0].job_id is None
        hist = st.history.find()
        assert [str(h.job_id) for h in hist] == ["1.1", "1.0"]     # newest first
        assert hist[0].ad["RemoveReason"] == "by user"
        assert [str(h.job_id) for h in st.history.find("JobStatus == 4")] == ["1.0"]
        assert len(st.history.find(limit=1)) == 1
        with pytest.raises(QueueError, match="no job 1.0"):
            st.update(j0, {"A": 1})


def test_constraints_and_errors(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        st.submit(ads(3))
        st.update(JobId(1, 2), {"Big": True})
        assert [str(r.job_id) for r in st.jobs("Big =?= true")] == ["1.2"]
        assert len(st.jobs(parse_expr("ProcId < 2"))) == 2
        assert st.counts() == {JobStatus.IDLE: 3}
        with pytest.raises(QueueError, match="bad constraint"):
            st.jobs("ProcId <")
        with pytest.raises(QueueError):
            st.update(JobId(1, 0), {"JobStatus": 2})
        with pytest.raises(QueueError, match="not reserved"):
            st.submit(ads(1), cluster_id=99)
        with pytest.raises(QueueError, match="already has jobs"):
            st.submit(ads(1), cluster_id=1)
        st.set_status(JobId(1, 0), JobStatus.HELD)
        with pytest.raises(QueueError, match="not idle"):
            st.start_job(JobId(1, 0), starter(JobId(1, 0)))
        with pytest.raises(QueueError, match="given twice"):
            st.submit([ClassAd({"ProcId": 0}), ClassAd({"ProcId": 0})])
        # a failed transaction leaves nothing behind
        assert st.next_cluster_id() == 2
        assert len(st.jobs()) == 3


def test_second_writer_refused_readers_only_while_no_writer(tmp_path: Path) -> None:
    """The writer (the daemon) holds the store alone (locking_mode=EXCLUSIVE, so no
    -shm file is mapped): another writer, and a reader too, are refused while it is
    open, with the file named; a reader is served once it has gone."""
    with JobStore(tmp_path) as st:
        st.submit(ads(2))
        with pytest.raises(QueueError, match="in use by another process") as info:
            JobStore(tmp_path)
        assert str(tmp_path / DB_NAME) in str(info.value)
        with pytest.raises(QueueError, match="in use by the daemon") as info:
            JobStore(tmp_path, readonly=True)
        assert str(tmp_path / DB_NAME) in str(info.value)
        assert not (tmp_path / (DB_NAME + "-shm")).exists()
    with JobStore(tmp_path, readonly=True) as ro:
        assert len(ro.jobs()) == 2
        with pytest.raises(QueueError, match="read-only"):
            ro.submit(ads(1))
    JobStore(tmp_path).close()      # the lock went with the first store


def test_reader_never_sees_a_partial_state_while_one_writer_runs(tmp_path: Path) -> None:
    """A reader while a writer submits is refused (never served a half-written
    cluster); afterwards it sees whole clusters only."""
    JobStore(tmp_path).close()
    stop = threading.Event()
    errors: list[str] = []
    started = threading.Event()

    def writer() -> None:
        with JobStore(tmp_path) as st:
            while not stop.is_set():
                st.submit(ads(20))
                started.set()

    t = threading.Thread(target=writer)
    t.start()
    refused = 0
    try:
        started.wait(30)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                with JobStore(tmp_path, readonly=True) as ro:
                    errors.append(f"a reader was served while the writer ran: "
                                  f"{len(ro.jobs())} jobs")
            except QueueError as exc:
                assert "in use by the daemon" in str(exc)
                refused += 1
    finally:
        stop.set()
        t.join()
    assert not errors
    assert refused > 0
    with JobStore(tmp_path, readonly=True) as ro:
        by_cluster: dict[int, int] = {}
        for r in ro.jobs():
            by_cluster[r.job_id.cluster] = by_cluster.get(r.job_id.cluster, 0) + 1
    assert by_cluster and all(n == 20 for n in by_cluster.values()), by_cluster


def test_newer_schema_and_corrupt_files_are_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer"
    JobStore(newer).close()
    db = sqlite3.connect(newer / DB_NAME)
    db.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(QueueError, match="newer than this condorpy") as info:
        JobStore(newer)
    assert str(newer / DB_NAME) in str(info.value)

    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / DB_NAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(QueueError, match="corrupt") as info2:
        JobStore(corrupt)
    assert str(corrupt / DB_NAME) in str(info2.value)
    assert isinstance(info2.value, CondorpyError)

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    db = sqlite3.connect(foreign / DB_NAME)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(QueueError, match="not a condorpy job store"):
        JobStore(foreign)
    with pytest.raises(QueueError, match="no job store"):
        JobStore(tmp_path / "missing", readonly=True)


_CRASHER = textwrap.dedent("""
    import sys
    from condorpy.classad import ClassAd
    from condorpy.queue.jobstore import JobStore
    st = JobStore(sys.argv[1])
    n = int(sys.argv[2])
    while True:
        cid = st.submit([ClassAd({"Cmd": "/bin/true", "ProcId": i, "Pad": "x" * 200})
                         for i in range(n)])
        print(cid, flush=True)
""")


@pytest.mark.parametrize("delay", [0.15, 0.3, 0.45])
def test_killed_writer_leaves_whole_submissions_or_nothing(tmp_path: Path,
                                                           delay: float) -> None:
    """SIGKILL a process that submits 300-job clusters back to back: every cluster
    it acknowledged is there in full, and no cluster is there in part."""
    per = 300
    proc = subprocess.Popen([sys.executable, "-c", _CRASHER, str(tmp_path), str(per)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()       # wait until it is really writing
    assert first.strip() == "1"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    acked = {1} | {int(x) for x in proc.stdout.read().split()}
    proc.wait()
    with JobStore(tmp_path) as st:
        sizes: dict[int, int] = {}
        for r in st.jobs():
            sizes[r.job_id.cluster] = sizes.get(r.job_id.cluster, 0) + 1
        assert all(n == per for n in sizes.values()), sizes
        assert acked <= set(sizes)
        # an id handed out is never handed out again
        assert st.new_cluster_id() > max(sizes)


def test_benchmark_submit_and_updates(tmp_path: Path) -> None:
    jobs = parse_submit("executable = /bin/echo\narguments = $(Process)\n"
                        "request_memory = 1GB\nqueue 500\n", "bench", cluster_id=1,
                        owner="alice", submit_dir="/tmp", qdate=0)
    with JobStore(tmp_path) as st:
        t0 = time.perf_counter()
        st.submit(jobs)
        t_submit = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(500):
            st.set_status(JobId(1, i), JobStatus.HELD, reason="bench", code=1)
        t_status = time.perf_counter() - t0
        t0 = time.perf_counter()
        st.update_many({JobId(1, i): {"Touched": i} for i in range(500)})
        t_batch = time.perf_counter() - t0
        t0 = time.perf_counter()
        n = len(st.jobs())
        t_read = time.perf_counter() - t0
    assert n == 500
    print(f"\njobstore: submit 500 jobs in one transaction {t_submit * 1e3:.1f} ms; "
          f"500 set_status, one transaction each {t_status * 1e3:.1f} ms "
          f"({t_status / 500 * 1e3:.2f} ms each); 500 updates in one transaction "
          f"{t_batch * 1e3:.1f} ms; read 500 jobs {t_read * 1e3:.1f} ms")


# --- a store that never existed, and one that is there but unusable -------------------

def _files(spool: Path) -> dict[str, bytes]:
    # the space reserve (RESERVE_NAME) holds nothing of the store: not part of it
    return {p.name: p.read_bytes() for p in sorted(spool.iterdir()) if p.is_file()
            and p.name != RESERVE_NAME
            and not p.name.endswith(".lock")}


def _damaged(spool: Path, how: str) -> None:
    """Make the store in ``spool`` damaged in one of the ways an administrator meets."""
    spool.mkdir()
    db = spool / DB_NAME
    if how == "zero bytes":
        db.write_bytes(b"")
    elif how == "garbage":
        db.write_bytes(b"not sqlite at all " * 300)
    elif how == "foreign database":
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE accounts (x)")
        con.commit()
        con.close()
    elif how == "a directory":
        db.mkdir()
    elif how == "missing, its log there":
        (spool / (DB_NAME + "-wal")).write_bytes(b"\x37\x7f\x06\x82" + b"\0" * 60)
    elif how in ("damaged page", "damaged log header"):
        with JobStore(spool) as st:
            for _ in range(40):
                st.submit(ads(50))
        if how == "damaged page":
            data = bytearray(db.read_bytes())
            data[4096 * 5:4096 * 5 + 3000] = os.urandom(3000)
            db.write_bytes(bytes(data))
        else:
            # a log with commits in it (as a killed daemon leaves), its header overwritten
            keep = sqlite3.connect(db, isolation_level=None)
            keep.execute("PRAGMA wal_autocheckpoint=0")
            keep.execute("INSERT INTO meta VALUES ('x', 1)")
            wal = spool / (DB_NAME + "-wal")
            saved = {p.name: p.read_bytes() for p in (db, wal)}
            keep.close()
            for name, data in saved.items():
                (spool / name).write_bytes(data)
            head = bytearray(wal.read_bytes())
            head[8:16] = b"garbage!"
            wal.write_bytes(bytes(head))
    else:
        raise AssertionError(how)


HOW = ["zero bytes", "garbage", "foreign database", "a directory", "missing, its log there",
       "damaged page", "damaged log header"]


def test_a_store_that_never_existed_is_created(tmp_path: Path) -> None:
    with JobStore(tmp_path / "new") as st:
        assert st.set_aside == [] and st.damage is None
        assert st.submit(ads(1)) == 1


@pytest.mark.parametrize("how", HOW)
def test_an_unusable_store_is_refused_and_left_as_it_is(tmp_path: Path, how: str) -> None:
    spool = tmp_path / "spool"
    _damaged(spool, how)
    before = _files(spool)
    with pytest.raises(StoreUnusable) as info:
        JobStore(spool)
    message = str(info.value)
    assert str(spool / DB_NAME) in message and "-fresh-queue" in message
    assert "\n" not in message
    assert _files(spool) == before          # nothing written, nothing created
    assert not (spool / (DB_NAME + "-shm")).exists() or how == "damaged log header"


@pytest.mark.parametrize("how", HOW)
def test_fresh_moves_an_unusable_store_aside_and_starts_empty(tmp_path: Path,
                                                              how: str) -> None:
    spool = tmp_path / "spool"
    _damaged(spool, how)
    before = _files(spool)
    clock = Clock()
    with JobStore(spool, fresh=True, clock=clock) as st:
        assert st.damage is not None and st.set_aside
        assert st.submit(ads(1)) == 1
        assert len(st.jobs()) == 1
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(clock.t))
    for src, dst in st.set_aside:
        assert dst == src.replace(DB_NAME, f"{DB_NAME}.bad-{stamp}")
    kept = {Path(dst).name.replace(f".bad-{stamp}", ""): Path(dst)
            for _src, dst in st.set_aside}
    for name, data in before.items():       # every file kept, byte for byte
        assert kept[name].read_bytes() == data
    # and a second damage the same second gets a name of its own
    (spool / DB_NAME).unlink()
    (spool / (DB_NAME + "-wal")).unlink(missing_ok=True)
    (spool / (DB_NAME + "-shm")).unlink(missing_ok=True)
    (spool / DB_NAME).write_bytes(b"")
    with JobStore(spool, fresh=True, clock=clock) as st2:
        assert [Path(d).name for _s, d in st2.set_aside] == [f"{DB_NAME}.bad-{stamp}.1"]


def test_fresh_keeps_a_sound_store(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        st.submit(ads(3))
    with JobStore(tmp_path, fresh=True) as st:
        assert st.set_aside == [] and len(st.jobs()) == 3


def test_cluster_ids_never_go_back_below_those_handed_out(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        for _ in range(5):
            st.submit(ads(1))
        st.set_status(JobId(5, 0), JobStatus.COMPLETED)     # the highest is in history
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("UPDATE meta SET value=2 WHERE key='next_cluster'")
    con.commit()
    con.close()
    with JobStore(tmp_path) as st:
        assert st.cluster_floor_raised == (2, 6)
        assert st.new_cluster_id() == 6
    con = sqlite3.connect(tmp_path / DB_NAME)
    con.execute("DELETE FROM meta WHERE key='next_cluster'")
    con.commit()
    con.close()
    with pytest.raises(StoreUnusable, match="lost its next cluster id"):
        JobStore(tmp_path)


# --- history: MAX_HISTORY_LOG and MAX_HISTORY_ROTATIONS --------------------------------

def _finish(st: JobStore, n: int, pad: str = "") -> list[JobId]:
    """``n`` jobs that enter the history, in one cluster and two transactions."""
    cid = st.submit([ClassAd({"Cmd": "/bin/true", "ProcId": i, "JobStatus": 4, "Pad": pad})
                     for i in range(n)])
    ids = [JobId(cid, i) for i in range(n)]
    st.update_many({j: {"Done": 1} for j in ids})
    return ids


def test_sixty_thousand_finished_jobs_stay_within_the_limits_newest_kept(
        tmp_path: Path) -> None:
    limit = 100_000
    every: list[JobId] = []
    with JobStore(tmp_path, history=HistoryLimits(limit, 2)) as st:
        for _ in range(60):
            every += _finish(st, 1000)
        live, rotations = st.history.size()
        kept = [r.job_id for r in st.history.iter()]
        one = len(st.history.find(limit=1)[0].ad.to_new().encode())
    assert len(rotations) == 2
    assert live <= limit and all(limit - one < r <= limit for r in rotations)
    # newest first, and exactly the newest ones: no gap, nothing old left behind
    assert kept == every[::-1][:len(kept)]
    total = sum(len(t.encode()) for (t,) in sqlite3.connect(tmp_path / DB_NAME).execute(
        "SELECT ad FROM history"))
    assert total == live + sum(rotations) <= 3 * limit
    assert len(kept) < 60_000 // 10


def test_a_rotation_happens_before_the_job_that_would_pass_the_limit(
        tmp_path: Path) -> None:
    with JobStore(tmp_path, history=HistoryLimits(1000, 2)) as st:
        first = _finish(st, 1, pad="x" * 600)
        assert st.history.size()[1] == []
        second = _finish(st, 1, pad="y" * 600)       # 1200 > 1000: the first rotates
        live, rotations = st.history.size()
        assert len(rotations) == 1 and live < 1000
        _finish(st, 2, pad="z" * 600)
        _finish(st, 1, pad="w" * 600)
        assert len(st.history.size()[1]) == 2
        ids = [r.job_id for r in st.history.iter()]
        assert first[0] not in ids and second[0] not in ids   # rotated out, oldest first
        # a reconfig to fewer rotations deletes the extra ones at once
        st.history.set_limits(HistoryLimits(1000, 1))
        assert len(st.history.size()[1]) == 1
        assert len(st.history.find()) == 2
        size = st.history.size()
    # the sizes are in the store: a reopened one goes on from them
    with JobStore(tmp_path, history=HistoryLimits(1000, 1)) as st:
        assert st.history.size() == size and size[0] > 0


def test_history_limits_come_from_the_configuration(tmp_path: Path) -> None:
    cfg = tmp_path / "condor_config"
    cfg.write_text("")
    assert HistoryLimits.from_config(load_config(str(cfg))) == HistoryLimits(20971520, 2)
    cfg.write_text("MAX_HISTORY_LOG = 64 * 1024\nMAX_HISTORY_ROTATIONS = 5\n")
    assert HistoryLimits.from_config(load_config(str(cfg))) == HistoryLimits(65536, 5)
    cfg.write_text("ENABLE_HISTORY_ROTATION = false\n")
    assert HistoryLimits.from_config(load_config(str(cfg))).max_bytes is None
    cfg.write_text("\nMAX_HISTORY_ROTATIONS = 0\n")
    with pytest.raises(ConfigError, match="MAX_HISTORY_ROTATIONS") as info:
        HistoryLimits.from_config(load_config(str(cfg)))
    assert info.value.line == 2
    cfg.write_text("MAX_HISTORY_LOG = lots\n")
    with pytest.raises(ConfigError, match="MAX_HISTORY_LOG"):
        HistoryLimits.from_config(load_config(str(cfg)))


def test_no_rotation_when_rotation_is_disabled(tmp_path: Path) -> None:
    with JobStore(tmp_path, history=HistoryLimits(None, 1)) as st:
        for _ in range(3):
            _finish(st, 10, pad="x" * 200)
        assert st.history.size()[1] == [] and len(st.history.find()) == 30


def test_history_iter_newest_first_with_limit_and_constraint(tmp_path: Path) -> None:
    clock = Clock()
    with JobStore(tmp_path, clock=clock) as st:
        ids = _finish(st, 600)
        # entered-status times do not decide the order: leaving the queue does
        clock.t -= 1000
        late = _finish(st, 1)
        assert [r.job_id for r in st.history.iter(limit=3)] == [late[0], ids[-1], ids[-2]]
        assert [r.job_id for r in st.history.iter(limit=2, newest_first=False)] == ids[:2]
        odd = [r.job_id.proc for r in st.history.iter("ProcId % 2 == 1", limit=300)]
        assert odd == list(range(599, 0, -2))
        assert [r.job_id for r in st.history.iter("ProcId == 3")] == [ids[3]]
        assert list(st.history.iter(limit=0)) == []
        assert len(list(st.history.iter())) == 601
        with pytest.raises(QueueError, match="bad constraint"):
            list(st.history.iter("ProcId =="))
        # a constraint matching little still comes back a chunk of rows at a time,
        # empty chunks included, so that the daemon's loop can serve others between
        chunks = list(st.history.chunks("ProcId == 3"))
        assert [r.job_id for c in chunks for r in c] == [ids[3]]
        assert sum(1 for c in chunks if not c) >= 2
        assert [len(c) for c in st.history.chunks(limit=300)] == [256, 44]
        # writing between the rows read does not break the iteration
        seen = 0
        for _rec in st.history.iter():
            if seen % 100 == 0:
                _finish(st, 1)
            seen += 1
        assert seen >= 601
