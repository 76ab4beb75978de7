"""The job store's schema version: a store of version 1 (rows in the new ClassAd format,
as condorpy wrote them before rows could be the old format with a cluster's shared
lines) is upgraded in place when the writer opens it, every row still read; a store a
newer condorpy wrote is refused naming the file and both versions, left as it is, and
the daemon exits 78 on it as on other refused stores."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.queue.jobstore import (DB_NAME, SCHEMA_VERSION, JobId, JobStore,
                                     StoreTooNew)
from tests.startd.daemon_helpers import Daemon


def _version(db_path: Path) -> int:
    db = sqlite3.connect(db_path)
    try:
        (v,) = db.execute("SELECT version FROM schema_version").fetchone()
        return int(v)
    finally:
        db.close()


def _as_version_1(spool: Path) -> dict[JobId, str]:
    """A store as a condorpy of schema version 1 leaves it: rows in the new format, no
    tables added later; the Cmd of each job."""
    with JobStore(spool) as st:
        cid = st.submit([ClassAd({"Cmd": f"/bin/echo{i}", "ProcId": i, "Owner": "alice",
                                  "Note": 'a "quoted" \\ text'}) for i in range(3)])
        jobs = {r.job_id: r.ad.to_new() for r in st.jobs()}
    db = sqlite3.connect(spool / DB_NAME)
    for job, text in jobs.items():
        db.execute("UPDATE jobs SET ad=? WHERE cluster=? AND proc=?",
                   (text, job.cluster, job.proc))
    for table in ("pool_claims", "history_rotations", "staged_jobs"):
        db.execute(f"DROP TABLE IF EXISTS {table}")
    db.execute("UPDATE schema_version SET version=1")
    db.commit()
    db.close()
    return {JobId(cid, i): f"/bin/echo{i}" for i in range(3)}


def _fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_schema_version_is_above_the_one_before_old_format_rows() -> None:
    assert SCHEMA_VERSION == 2


def test_a_version_1_store_is_upgraded_in_place_and_its_rows_still_read(
        tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    cmds = _as_version_1(spool)
    db_path = spool / DB_NAME
    assert _version(db_path) == 1
    # a reader (a tool while no daemon runs) reads it and changes nothing
    with JobStore(spool, readonly=True) as ro:
        assert {r.job_id: r.ad["Cmd"] for r in ro.jobs()} == cmds
        assert ro.upgraded_from is None
    assert _version(db_path) == 1
    # the writer upgrades it, and says from what
    with JobStore(spool) as st:
        assert st.upgraded_from == 1
        assert {r.job_id: r.ad["Cmd"] for r in st.jobs()} == cmds
        assert all(r.ad["Note"] == 'a "quoted" \\ text' for r in st.jobs())
        # and writes on in the new way beside the old rows
        cid = st.submit([ClassAd({"Cmd": "/bin/true", "ProcId": i}) for i in range(2)])
        st.update_many({JobId(cid, 1): {"Cmd": "/bin/false"}})
    assert _version(db_path) == SCHEMA_VERSION
    with JobStore(spool) as st:
        assert st.upgraded_from is None           # once only
        got = {r.job_id: r.ad["Cmd"] for r in st.jobs()}
    assert got == {**cmds, JobId(cid, 0): "/bin/true", JobId(cid, 1): "/bin/false"}


@pytest.mark.parametrize("readonly", [False, True])
def test_a_newer_store_is_refused_naming_the_file_and_both_versions(
        tmp_path: Path, readonly: bool) -> None:
    spool = tmp_path / "spool"
    JobStore(spool).close()
    db_path = spool / DB_NAME
    db = sqlite3.connect(db_path)
    db.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION + 5,))
    db.commit()
    db.close()
    before = _fingerprint(db_path)
    with pytest.raises(StoreTooNew) as info:
        JobStore(spool, readonly=readonly)
    said = str(info.value)
    assert str(db_path) in said and f"schema version {SCHEMA_VERSION + 5}" in said \
        and f"({SCHEMA_VERSION})" in said and "newer condorpy" in said, said
    # not damage: a fresh start keeps it where it is
    with pytest.raises(StoreTooNew):
        JobStore(spool, fresh=True)
    assert _fingerprint(db_path) == before
    assert sorted(p.name for p in spool.iterdir() if ".bad-" in p.name) == []


def test_the_daemon_refuses_a_newer_store_with_status_78(tmp_path: Path) -> None:
    d = Daemon(tmp_path / "d")
    spool = d.state / "spool"
    JobStore(spool).close()
    db_path = spool / DB_NAME
    db = sqlite3.connect(db_path)
    db.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    before = _fingerprint(db_path)
    try:
        for flags in (["-f"], ["-f", "-fresh-queue"]):
            res = subprocess.run([sys.executable, "-m", "condorpy", "startd", *flags],
                                 env=d.env(), capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL)
            assert res.returncode == 78, res
            lines = res.stderr.strip().splitlines()
            assert len(lines) == 1 and str(db_path) in lines[0] \
                and f"schema version {SCHEMA_VERSION + 1}" in lines[0], res.stderr
            assert _fingerprint(db_path) == before
    finally:
        d.kill_leftovers()


def test_the_daemon_upgrades_a_version_1_store_and_says_so(tmp_path: Path) -> None:
    d = Daemon(tmp_path / "d", extra="START = False\n")
    spool = d.state / "spool"
    cmds = _as_version_1(spool)
    d.start()
    try:
        assert f"schema version 1 upgraded to {SCHEMA_VERSION}" in d.whole_log()
    finally:
        d.stop()
        d.kill_leftovers()
    assert _version(spool / DB_NAME) == SCHEMA_VERSION
    with JobStore(spool, readonly=True) as ro:
        assert {r.job_id: r.ad["Cmd"] for r in ro.jobs()} == cmds
