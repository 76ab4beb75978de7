"""The job store keeps a pool job's starter, so a restarted daemon can find it."""

from __future__ import annotations

from pathlib import Path

from condorpy.startd.forkserver_wire import Launched
from condorpy.queue.jobstore import JobId, JobStore
from condorpy.startd.pool_restart import is_pool_job, last_pool_number, record_pool_starter


def _launched(pid: int) -> Launched:
    return Launched("x", pid, 1234, "boot", f"/run/s{pid}.sock", "/x/final.ad", "")


def test_a_pool_starter_is_recorded_and_its_number_is_not_reused(tmp_path: Path) -> None:
    with JobStore(tmp_path, clock=lambda: 100.0) as st:
        assert last_pool_number(st.starters) == 0
        record_pool_starter(st.starters, JobId(-3, 0), _launched(77), "/spool/pool/3", "slot1_1", 5.0)
        record_pool_starter(st.starters, JobId(-1, 0), _launched(78), "/spool/pool/1", "slot1_2", 6.0)
    with JobStore(tmp_path, clock=lambda: 100.0) as st:       # as a restarted daemon sees it
        got = {s.job_id: s for s in st.starters.all()}
        assert set(got) == {JobId(-3, 0), JobId(-1, 0)}
        s = got[JobId(-3, 0)]
        assert (s.pid, s.process_start, s.boot_id, s.socket_path, s.execute_dir, s.slot,
                s.started) == (77, 1234, "boot", "/run/s77.sock", "/spool/pool/3", "slot1_1", 5)
        assert last_pool_number(st.starters) == 3
        st.starters.forget(JobId(-3, 0))
        assert last_pool_number(st.starters) == 1


def test_only_negative_clusters_are_pool_jobs() -> None:
    assert is_pool_job(JobId(-1, 0))
    assert not is_pool_job(JobId(1, 0))
