"""The job store's group commit: deferred writes of a group wait for its end (or the
first write that may not wait), what waits for them runs only once they are committed,
a failed part is undone alone, and a process killed before the commit leaves the
store as the last commit had it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from condorpy.errors import QueueError
from condorpy.queue.jobstore import DB_NAME, JobId, JobStatus, JobStore
from tests.queue.test_jobstore import ads, starter
from tests.queue.test_store_faults import chattr


def _statuses(spool: Path) -> dict[str, int]:
    with JobStore(spool) as st:
        return {str(r.job_id): int(r.status) for r in st.jobs()}


def test_deferred_writes_wait_for_the_group_and_what_depends_on_them_after(
        tmp_path: Path) -> None:
    said: list[str] = []
    with JobStore(tmp_path) as st:
        cluster = st.submit(ads(2))
        with st.group():
            for proc in (0, 1):
                job = JobId(cluster, proc)
                with st.deferred():
                    st.start_job(job, starter(job, 4242 + job.proc))
                st.after_commit(lambda p=proc: said.append(f"go {p}"))
            assert said == []                           # nothing committed yet
            assert st.job(JobId(cluster, 0)).status is JobStatus.RUNNING   # seen here
        assert said == ["go 0", "go 1"]
    assert _statuses(tmp_path) == {f"{cluster}.0": 2, f"{cluster}.1": 2}


def test_outside_a_group_deferred_writes_commit_at_once(tmp_path: Path) -> None:
    said: list[str] = []
    with JobStore(tmp_path) as st:
        cluster = st.submit(ads(1))
        with st.deferred():
            st.start_job(JobId(cluster, 0), starter(JobId(cluster, 0), 4242 + 0))
        st.after_commit(lambda: said.append("go"))
        assert said == ["go"]


def test_a_write_that_may_not_wait_commits_the_groups_writes_with_it(tmp_path: Path) -> None:
    said: list[str] = []
    with JobStore(tmp_path) as st:
        cluster = st.submit(ads(1))
        with st.group():
            with st.deferred():
                st.start_job(JobId(cluster, 0), starter(JobId(cluster, 0), 4242 + 0))
            st.after_commit(lambda: said.append("go"))
            second = st.submit(ads(1))                 # acknowledged: committed now
            assert said == ["go"]
        # the turn's deferred writes alone commit under NORMAL; everything else FULL
        assert st.db.conn().execute("PRAGMA synchronous").fetchone()[0] == 2
    assert _statuses(tmp_path) == {f"{cluster}.0": 2, f"{second}.0": 1}


def test_a_failed_part_is_undone_alone(tmp_path: Path) -> None:
    said: list[str] = []
    with JobStore(tmp_path) as st:
        cluster = st.submit(ads(2))
        with st.group():
            with st.deferred():
                st.start_job(JobId(cluster, 0), starter(JobId(cluster, 0), 4242 + 0))
            st.after_commit(lambda: said.append("go"), lambda: said.append("undone"))
            with pytest.raises(QueueError), st.deferred():
                st.start_job(JobId(cluster, 9), starter(JobId(cluster, 9), 4242 + 9))   # no job
            with st.deferred():
                st.start_job(JobId(cluster, 1), starter(JobId(cluster, 1), 4242 + 1))
        assert said == ["go"]
    assert _statuses(tmp_path) == {f"{cluster}.0": 2, f"{cluster}.1": 2}


def test_a_process_killed_before_the_groups_end_leaves_the_last_commit(
        tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        cluster = st.submit(ads(2))
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with JobStore(tmp_path) as st:
                with st.group():
                    with st.deferred():
                        st.start_job(JobId(cluster, 0), starter(JobId(cluster, 0), 4242 + 0))
                    st.flush()                          # committed: must survive
                    with st.deferred():
                        st.start_job(JobId(cluster, 1), starter(JobId(cluster, 1), 4242 + 1))
                    code = 0
                    os._exit(0)                         # killed before the turn's end
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert _statuses(tmp_path) == {f"{cluster}.0": 2, f"{cluster}.1": 1}


def test_a_turns_commit_that_fails_undoes_it_and_tells_what_waited(tmp_path: Path) -> None:
    said: list[str] = []
    with JobStore(tmp_path) as st:
        cluster = st.submit(ads(1))
        wal = tmp_path / (DB_NAME + "-wal")
        try:
            with pytest.raises(QueueError, match="not writable"), st.group():
                with st.deferred():
                    st.start_job(JobId(cluster, 0), starter(JobId(cluster, 0), 4242 + 0))
                st.after_commit(lambda: said.append("go"), lambda: said.append("undone"))
                chattr("+i", wal)          # the log cannot take the commit
        finally:
            subprocess.run(["chattr", "-i", str(wal)], capture_output=True)
        assert said == ["undone"]
        assert st.job(JobId(cluster, 0)).status is JobStatus.IDLE
        with st.group():                    # and the next turn commits
            with st.deferred():
                st.start_job(JobId(cluster, 0), starter(JobId(cluster, 0), 4242 + 0))
    assert _statuses(tmp_path) == {f"{cluster}.0": 2}
