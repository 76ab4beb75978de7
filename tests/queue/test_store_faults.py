"""Storage faults met by the job store (issue #25): a full file system, an unwritable
write-ahead log, a foreign -shm file, a row that does not read. Each is a real fault
(a small tmpfs, SQLite's own page limit, file attributes, bytes written into the
file), never a mock of sqlite3; each leaves the store as the project's error naming
the file, with nothing lost, and the store working again once the fault is gone."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import QueueError
from condorpy.queue.jobstore import DB_NAME, JobId, JobStatus, JobStore
from condorpy.queue.store_errors import StoreDamaged, StoreFull, StoreIOError


def ads(n: int, pad: int = 2000) -> list[ClassAd]:
    return [ClassAd({"Cmd": "/bin/true", "ProcId": i, "Owner": "alice",
                     "Pad": "x" * pad}) for i in range(n)]


def _whole_clusters(st: JobStore) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for r in st.jobs():
        sizes[r.job_id.cluster] = sizes.get(r.job_id.cluster, 0) + 1
    return sizes


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``where`` (root only; skipped where it cannot be had)."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                          str(where)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(path: Path) -> None:
    """Write zeros into ``path`` until its file system is full."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_a_full_file_system_refuses_the_submission_at_once_and_recovers(
        tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "spool", "1m") as spool:
        with JobStore(spool) as st:
            assert st.submit(ads(10)) == 1
            filler = spool / "filler"
            _fill(filler)
            refused = 0
            for _ in range(5):
                with pytest.raises(StoreFull) as info:
                    st.submit(ads(50))
                refused += 1
            message = str(info.value)
            assert str(spool / DB_NAME) in message and "full" in message
            assert "\n" not in message
            # nothing of a refused submission is there, nothing before it lost
            assert _whole_clusters(st) == {1: 10}
            # a job already queued still changes state (its row fits where it was)
            # or is refused the same clear way, never half-done
            try:
                st.set_status(JobId(1, 0), JobStatus.HELD, reason="disk full test")
            except StoreFull:
                pass
            # room again: the next submission is taken, without reopening anything
            filler.unlink()
            cid = st.submit(ads(50))
            assert _whole_clusters(st)[cid] == 50
        with JobStore(spool) as again:      # and all of it is on the disk
            assert set(_whole_clusters(again)) == {1, cid}


def test_sqlites_page_limit_is_met_as_a_full_store(tmp_path: Path) -> None:
    """Where no tmpfs can be mounted: SQLite's own limit on the file's pages is the
    same fault (SQLITE_FULL) behind the store's public API."""
    with JobStore(tmp_path) as st:
        st.submit(ads(5))
        (pages,) = st.db.conn().execute("PRAGMA page_count").fetchone()
        st.db.conn().execute(f"PRAGMA max_page_count={pages + 2}")
        with pytest.raises(StoreFull, match="cannot grow") as info:
            for _ in range(20):
                st.submit(ads(40))
        assert str(tmp_path / DB_NAME) in str(info.value)
        before = _whole_clusters(st)
        assert all(n in (5, 40) for n in before.values())
        st.db.conn().execute("PRAGMA max_page_count=1073741823")
        cid = st.submit(ads(40))
        assert _whole_clusters(st) == {**before, cid: 40}


def chattr(flag: str, path: Path) -> None:
    """Set or clear a file attribute (``+i``, ``-a``...); skip where this cannot."""
    if shutil.which("chattr") is None or os.geteuid() != 0:
        pytest.skip("file attributes need chattr and root")
    res = subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"chattr {flag} refused here: {res.stderr.strip()}")


def test_an_unwritable_write_ahead_log_refuses_writes_clearly_then_recovers(
        tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        st.submit(ads(3))
        wal = tmp_path / (DB_NAME + "-wal")
        assert wal.exists()
        chattr("+i", wal)
        try:
            for _ in range(3):
                with pytest.raises(StoreIOError) as info:
                    st.submit(ads(20))
            message = str(info.value)
            assert str(tmp_path / DB_NAME) in message
            assert "not writable: " + DB_NAME + "-wal" in message
            assert _whole_clusters(st) == {1: 3}        # reads go on
        finally:
            chattr("-i", wal)
        cid = st.submit(ads(20))
        assert _whole_clusters(st) == {1: 3, cid: 20}


def test_no_shared_memory_file_is_used_so_a_broken_one_cannot_hurt(tmp_path: Path) -> None:
    """The daemon once died of SIGBUS when its -shm file was made unwritable: the
    store no longer maps one (the WAL index lives in the process's memory)."""
    with JobStore(tmp_path) as st:
        st.submit(ads(3))
        shm = tmp_path / (DB_NAME + "-shm")
        assert not shm.exists()
        shm.write_bytes(b"")             # someone's empty, immutable -shm file
        chattr("+i", shm)
        try:
            for _ in range(5):
                st.submit(ads(20, pad=20000))
            assert len(st.jobs()) == 103
        finally:
            chattr("-i", shm)
    with JobStore(tmp_path) as again:
        assert len(again.jobs()) == 103


def test_a_row_that_does_not_read_is_the_stores_damage_not_an_internal_error(
        tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        st.submit(ads(3))
    raw = sqlite3.connect(tmp_path / DB_NAME)
    raw.execute("UPDATE jobs SET ad=CAST(x'5b20ff00fe' AS TEXT) WHERE proc=1")
    raw.commit()
    raw.close()
    with JobStore(tmp_path) as st:
        with pytest.raises(StoreDamaged) as info:
            st.jobs()
        message = str(info.value)
        assert str(tmp_path / DB_NAME) in message and "salvage" in message
        assert isinstance(info.value, QueueError)
        assert st.job(JobId(1, 0)) is not None      # the rest still reads
