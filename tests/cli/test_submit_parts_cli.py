"""`condorpy submit` against a real daemon (issue 25): a submission travels in parts
and is queued whole or not at all, and HTCondor's MAX_JOBS_* limits refuse it in
condor_submit's words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.queue.records import ad_of_text
from condorpy.startd.client import Connection, RequestRefused
from tests.startd.daemon_helpers import Daemon, running


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # START = False: jobs stay in the queue, where the test counts them
    with running(Daemon(tmp_path_factory.mktemp("bigsubmit"),
               extra="START = False\nMAX_JOBS_PER_SUBMISSION = 5\nMAX_JOBS_SUBMITTED = 8\n")) as d:
        yield d


def submit(d: Daemon, cwd: Path, n: int) -> tuple[int, str, str]:
    (cwd / "job.sub").write_text("executable = /bin/echo\narguments = job $(Process)\n"
                                 f"queue {n}\n")
    res = d.cli("submit", "job.sub", cwd=cwd, check=False)
    return res.returncode, res.stdout, res.stderr


def queued(d: Daemon) -> int:
    with d.db() as db:
        (n,) = db.execute("SELECT count(*) FROM jobs").fetchone()
    return int(n)


def test_limits_refuse_in_condor_submits_words_and_queue_nothing(
        daemon: Daemon, tmp_path: Path) -> None:
    rc, out, err = submit(daemon, tmp_path, 6)
    assert rc != 0 and "submitted" not in out
    assert "Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION" in err, err
    assert queued(daemon) == 0
    rc, out, err = submit(daemon, tmp_path, 5)
    assert rc == 0 and "5 job(s) submitted" in out, err
    rc, out, err = submit(daemon, tmp_path, 4)          # 9 would be queued
    assert rc != 0 and "would exceed MAX_JOBS_SUBMITTED" in err, err
    assert queued(daemon) == 5
    rc, out, err = submit(daemon, tmp_path, 3)
    assert rc == 0, err
    rc, out, err = submit(daemon, tmp_path, 1)          # no cluster begins at the limit
    assert rc != 0 and "MAX_JOBS_SUBMITTED exceeded. Current=8, Limit=8" in err, err
    assert queued(daemon) == 8
    with daemon.db() as db:
        ads = [ad_of_text(t) for (t,) in db.execute(
            "SELECT ad FROM jobs ORDER BY cluster, proc")]
    assert [a.evaluate("Args") for a in ads[:5]] == [f"job {i}" for i in range(5)]
    assert {a.evaluate("TotalSubmitProcs") for a in ads[:5]} == {5}
    # the streamed queue holds them all
    out = daemon.cli("q", "-allusers", "-af", "ClusterId", "ProcId").stdout.split("\n")
    assert len([ln for ln in out if ln.strip()]) == 8


def test_a_part_refused_half_way_leaves_nothing_staged(daemon: Daemon) -> None:
    daemon.cli("rm", "-all", check=False)       # room under MAX_JOBS_SUBMITTED
    cluster = daemon.call("new_cluster")
    common = 'MyType = "Job"\nCmd = "/bin/true"\nJobUniverse = 5\n'
    # a submission's parts come on one connection, as condorpy submit sends them
    with Connection(daemon.socket) as conn:
        got = conn.call("submit", {"cluster": cluster, "common": common,
                                   "procs": ["A = 1", "A = 2"], "first": 0, "total": 4,
                                   "more": True})
        assert got == {"cluster": cluster, "staged": 2}
        with pytest.raises(RequestRefused, match="only the vanilla universe"):
            conn.call("submit", {"cluster": cluster, "common": common,
                                 "procs": ["A = 3", "JobUniverse = 7"], "first": 2,
                                 "total": 4, "more": False})
    with daemon.db() as db:
        assert db.execute("SELECT count(*) FROM staged_jobs").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM jobs WHERE cluster=?",
                          (cluster,)).fetchone() == (0,)
    # a last part that does not bring the announced total queues nothing either
    with Connection(daemon.socket) as conn:
        conn.call("submit", {"cluster": cluster, "common": common, "procs": ["A = 1"],
                             "first": 0, "total": 3, "more": True})
        with pytest.raises(RequestRefused, match="1 job.s. arrived of the 3 announced"):
            conn.call("submit", {"cluster": cluster, "common": common, "procs": [],
                                 "first": 1, "total": 3, "more": False})
    with Connection(daemon.socket) as conn:
        conn.call("submit", {"cluster": cluster, "common": common, "procs": ["A = 1"],
                             "first": 0, "total": 3, "more": True})
        assert conn.call("submit", {"cluster": cluster, "abort": True})["staged"] == 0
        with daemon.db() as db:
            assert db.execute("SELECT count(*) FROM staged_jobs").fetchone() == (0,)
