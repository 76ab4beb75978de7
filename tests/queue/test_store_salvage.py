"""`condorpy store salvage`: every job that still reads is copied out of a damaged store
into a new one, the jobs lost are counted and named where an index knows them, the
damaged files are kept, and the daemon's store opens on the result."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.cli.main import main
from condorpy.errors import QueueError
from condorpy.queue.jobstore import (DB_NAME, JobId, JobStatus, JobStore, StarterRecord,
                                     StoreUnusable)
from condorpy.queue.store_salvage import salvage

CLUSTERS, PER = 30, 40


def _fill(spool: Path) -> set[str]:
    """A store with queued jobs, finished ones and a starter record; its job ids."""
    ids: set[str] = set()
    with JobStore(spool) as st:
        for _ in range(CLUSTERS):
            cid = st.submit([ClassAd({"Cmd": "/bin/true", "ProcId": i, "Owner": "alice",
                                      "Pad": "x" * 400}) for i in range(PER)])
            ids |= {f"{cid}.{i}" for i in range(PER)}
        for i in range(PER):
            st.set_status(JobId(1, i), JobStatus.COMPLETED)
        st.start_job(JobId(2, 0), StarterRecord(JobId(2, 0), 4242, "boot", 1, "/x/s.sock",
                                                "/x", "slot1_1", 1))
    return ids


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _damage(db: Path, pages: list[int]) -> None:
    data = bytearray(db.read_bytes())
    rnd = random.Random(7)
    for page in pages:
        data[page * 4096:(page + 1) * 4096] = bytes(rnd.randrange(256) for _ in range(4096))
    db.write_bytes(bytes(data))


def _all_ids(st: JobStore) -> set[str]:
    out = {str(r.job_id) for r in st.jobs()}
    out |= {f"{r.job_id.cluster}.{r.job_id.proc}" for r in st.history.iter()}
    return out


def test_a_sound_store_is_copied_whole(tmp_path: Path) -> None:
    ids = _fill(tmp_path)
    out = tmp_path / "copy.sqlite3"
    before = _digest(tmp_path / DB_NAME)
    report = salvage(str(tmp_path / DB_NAME), output=str(out))
    assert not report.damaged and report.lost_ids == ()
    assert report.jobs_kept == len(ids) and report.kept["starters"] == 1
    assert _digest(tmp_path / DB_NAME) == before        # -o leaves it as it was
    spool = tmp_path / "new"
    spool.mkdir()
    out.rename(spool / DB_NAME)
    with JobStore(spool) as st:
        assert _all_ids(st) == ids
        assert st.starters.all()[0].pid == 4242
        assert st.new_cluster_id() == CLUSTERS + 1


def test_damaged_pages_lose_only_their_rows_and_the_lost_are_named(tmp_path: Path) -> None:
    ids = _fill(tmp_path)
    db = tmp_path / DB_NAME
    npages = db.stat().st_size // 4096
    _damage(db, [npages // 3, npages // 3 + 1, npages // 2])
    with pytest.raises(StoreUnusable) as info:        # the daemon refuses it, saying how
        JobStore(tmp_path)
    assert "condorpy store salvage" in str(info.value)
    damaged = _digest(db)
    report = salvage(str(db))
    assert report.damaged
    assert 0 < report.jobs_kept < len(ids)
    # the damaged file is kept aside byte for byte, the new store is in its place
    [(src, dst)] = [m for m in report.set_aside if m[0] == str(db)]
    assert _digest(Path(dst)) == damaged
    with JobStore(tmp_path) as st:
        kept = _all_ids(st)
        assert kept <= ids and len(kept) == report.jobs_kept
        # what was lost is named where the index still knew it; nothing is named twice
        assert not set(report.lost_ids) & kept
        assert set(report.lost_ids) <= ids
        for rec in st.jobs():
            assert rec.ad.evaluate("Pad") == "x" * 400       # rows kept are whole
        # no id of a lost job is handed out again
        assert st.new_cluster_id() > CLUSTERS


def test_the_command_says_what_it_kept_and_lost(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    ids = _fill(tmp_path)
    db = tmp_path / DB_NAME
    npages = db.stat().st_size // 4096
    _damage(db, [npages // 2])
    rc = main(["store", "salvage", str(db)])
    out = capsys.readouterr().out
    assert rc == 3, out
    assert f"moved the damaged {db} aside" in out
    assert "kept" in out and "queued job(s)" in out
    with JobStore(tmp_path) as st:
        assert len(_all_ids(st)) < len(ids)


def test_salvage_refuses_while_the_store_is_in_use(tmp_path: Path) -> None:
    _fill(tmp_path)
    with JobStore(tmp_path):
        with pytest.raises(QueueError, match="in use by another process"):
            salvage(str(tmp_path / DB_NAME))
    assert sorted(p.name for p in tmp_path.iterdir() if ".bad-" in p.name) == []


def test_a_file_that_is_no_store_cannot_be_salvaged(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    db = tmp_path / DB_NAME
    for content in (os.urandom(8192), b""):
        db.write_bytes(content)
        rc = main(["store", "salvage", str(db)])
        err = capsys.readouterr().err
        assert rc == 1 and str(db) in err and "salvage" in err, err
        assert db.read_bytes() == content
        assert not [p for p in tmp_path.iterdir() if ".bad-" in p.name]
