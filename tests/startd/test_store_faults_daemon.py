"""Storage faults under a running daemon (issue #25): a full SPOOL, an unwritable
write-ahead log, a broken -shm file. Each submission is refused at once with one line
naming the store and the cause; the job already running keeps running; the daemon
serves throughout and takes the next submission once the fault is gone."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.queue.jobstore import DB_NAME, JobStore
from tests.faults.common import processes_naming, tracebacks
from tests.queue.test_store_faults import _fill, chattr, small_tmpfs
from tests.startd.daemon_helpers import Daemon, counts, running, wait_for

SLEEP = "executable = /bin/sleep\narguments = 300\nqueue\n"
TRUE = "executable = /bin/true\narguments = " + "y" * 3000 + "\nqueue 5\n"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path / "d")
    with small_tmpfs(d.state / "spool", "2m"), running(d):
        yield d


@pytest.fixture
def plain_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """On the test's own file system (ext4 refuses writes to an immutable file through
    a descriptor opened before; tmpfs does not)."""
    with running(Daemon(tmp_path / "d")) as d:
        yield d


def _submit(d: Daemon, text: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "job.sub").write_text(text)
    return d.cli("submit", "job.sub", cwd=cwd, check=False)


def _running_job(d: Daemon, cwd: Path, text: str = SLEEP) -> None:
    assert _submit(d, text, cwd).returncode == 0
    wait_for(lambda: counts(d).get(2) == 1, 60, d.output)


def _refused(res: subprocess.CompletedProcess[str], db: Path, word: str) -> None:
    assert res.returncode != 0, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0] and word in lines[0], res.stderr
    assert "internal error" not in lines[0] and "failed to answer" not in lines[0]


def _serving(d: Daemon) -> None:
    assert d.proc is not None and d.proc.poll() is None, d.output()
    assert d.call("ping") is not None
    assert d.cli("q", "-allusers", cwd=d.base).returncode == 0


def test_a_full_spool_refuses_submissions_at_once_and_recovers_by_itself(
        daemon: Daemon, tmp_path: Path) -> None:
    d = daemon
    spool = d.state / "spool"
    _running_job(d, tmp_path)
    filler = spool / "filler"
    _fill(filler)
    for _ in range(3):
        _refused(_submit(d, TRUE, tmp_path), spool / DB_NAME, "full")
    _serving(d)
    assert d.statuses()["1.0"] == 2       # the running job runs on
    filler.unlink()
    res = _submit(d, TRUE, tmp_path)
    assert res.returncode == 0, res.stderr
    assert d.statuses()["1.0"] == 2
    assert "internal error" not in d.whole_log()


def test_a_job_that_ends_while_the_spool_is_full_has_its_end_recorded(
        daemon: Daemon, tmp_path: Path) -> None:
    """The store keeps a reserve for what already runs: with the SPOOL full, new work
    is refused, but a running job's end is still recorded and its slot freed."""
    d = daemon
    spool = d.state / "spool"
    flag = tmp_path / "go"
    waiter = (f"executable = /bin/sh\narguments = \"-c 'while [ ! -e {flag} ]; "
              "do sleep 0.2; done'\"\nqueue\n")
    _running_job(d, tmp_path, waiter)
    _fill(spool / "filler")
    _refused(_submit(d, TRUE, tmp_path), spool / DB_NAME, "full")
    flag.touch()
    wait_for(lambda: d.statuses().get("1.0") == 4, 60, d.output)
    _serving(d)
    assert "job 1.0" in d.whole_log() and "internal error" not in d.whole_log()
    (spool / "filler").unlink()
    assert _submit(d, TRUE, tmp_path).returncode == 0


def test_an_unwritable_log_refuses_submissions_and_a_broken_shm_is_harmless(
        plain_daemon: Daemon, tmp_path: Path) -> None:
    d = plain_daemon
    spool = d.state / "spool"
    _running_job(d, tmp_path)
    # no -shm file is mapped into the daemon: one put there cannot hurt it
    shm = spool / (DB_NAME + "-shm")
    assert not shm.exists()
    shm.write_bytes(b"")
    chattr("+i", shm)
    try:
        assert _submit(d, TRUE, tmp_path).returncode == 0
        _serving(d)
    finally:
        chattr("-i", shm)
    shm.unlink()
    wal = spool / (DB_NAME + "-wal")
    assert wal.exists()
    chattr("+i", wal)
    try:
        _refused(_submit(d, TRUE, tmp_path), spool / DB_NAME, "not writable")
        _serving(d)
        assert d.statuses()["1.0"] == 2
    finally:
        chattr("-i", wal)
    assert _submit(d, TRUE, tmp_path).returncode == 0
    assert "internal error" not in d.whole_log()


def test_the_spool_is_not_left_mounted(tmp_path: Path) -> None:
    """The fixture's tmpfs goes with its test (a guard for the ones above)."""
    where = tmp_path / "m"
    with small_tmpfs(where, "64k"):
        assert os.path.ismount(where)
    assert not os.path.ismount(where)
    shutil.rmtree(where)


def test_a_row_that_does_not_read_is_named_until_salvaged(tmp_path: Path) -> None:
    """Damage that PRAGMA quick_check cannot see (a row's bytes, not the b-tree's) is
    met where the row is first read (the daemon reads idle jobs' ads only when it needs
    them, so a long queue starts in seconds): the command that meets it, the job policy
    and the matchmaker name the file and the way out, and the daemon serves on; the
    salvage keeps the other jobs and names the lost one; the daemon then starts on the
    result."""
    d = Daemon(tmp_path / "d", extra="START = False\n")
    spool = d.state / "spool"
    with JobStore(spool) as st:
        st.submit([ClassAd({"Cmd": "/bin/true", "ProcId": i, "Owner": "root"})
                   for i in range(3)])
    raw = sqlite3.connect(spool / DB_NAME)
    raw.execute("UPDATE jobs SET ad='[ Cmd = ' WHERE proc=1")
    raw.commit()
    raw.close()
    try:
        d.start()
        res = d.cli("q", "-allusers", check=False)
        assert res.returncode == 1, res
        assert "job 1.1 has an unreadable ad" in res.stderr and \
            str(spool / DB_NAME) in res.stderr and "condorpy store salvage" in res.stderr, res
        assert "internal error" not in res.stderr
        assert d.call("ping")                              # still serving
        d.stop()
        out = d.cli("store", "salvage", check=False)
        assert out.returncode == 3, out
        assert "kept 2 queued job(s)" in out.stdout and "lost 1 job(s): 1.1" in out.stdout
        d.start()
        got = d.cli("q", "-allusers", "-af", "ClusterId", "ProcId").stdout.split("\n")
        assert [ln for ln in got if ln.strip()] == ["1 0", "1 2"]
        (tmp_path / "job.sub").write_text("executable = /bin/true\nqueue\n")
        assert "cluster 2." in d.cli("submit", "job.sub", cwd=tmp_path).stdout
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_turn_whose_commit_fails_leaves_memory_as_the_store_has_it(
        tmp_path: Path) -> None:
    """A turn in which one job ends and the next starts on its slot, committed into an
    unwritable write-ahead log: the start is undone (its starter killed) and the ended
    job is taken back from the store, so the daemon holds what the store holds; once
    the log is writable again the end is recorded and the next job runs, without a
    restart, a traceback or a process left behind."""
    d = Daemon(tmp_path / "d", cpus=1)
    flag = tmp_path / "go"
    waiter = (f"executable = /bin/sh\narguments = \"-c 'while [ ! -e {flag} ]; "
              "do sleep 0.2; done'\"\nqueue 2\n")
    wal = d.state / "spool" / (DB_NAME + "-wal")
    with running(d):
        assert _submit(d, waiter, tmp_path).returncode == 0
        wait_for(lambda: d.statuses() == {"1.0": 2, "1.1": 1}, 60, d.output)
        chattr("+i", wal)
        try:
            flag.touch()
            wait_for(lambda: "were not committed" in d.whole_log(), 60, d.output)
            _serving(d)
            assert d.statuses() == {"1.0": 2, "1.1": 1}     # nothing was committed
            assert str(d.state / "spool") in d.whole_log()
        finally:
            chattr("-i", wal)
        wait_for(lambda: d.statuses() == {"1.0": 4, "1.1": 4}, 120,
                 lambda: f"{d.statuses()}\n{d.output()}")
        _serving(d)
        assert not tracebacks(d.whole_log()), d.whole_log()
    assert processes_naming(str(d.state)) == []
