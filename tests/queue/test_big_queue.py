"""A queue that scales (issue 25): HTCondor's queue limits, a submission sent in parts
(common ad plus per-job differences) and staged until its last part queues it all or
nothing, and the queue read a chunk at a time."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.classad.formats import parse_old
from condorpy.config import load_config
from condorpy.errors import QueueError
from condorpy.queue.jobstore import JobStatus, JobStore
from condorpy.queue.limits import QueueLimits
from condorpy.queue.submit import count_jobs, parse_submit, submit_ads
from condorpy.queue.submit_parts import parts


def test_limits_default_to_htcondors_table(tmp_path: Path) -> None:
    conf = tmp_path / "condor_config"
    conf.write_text("")
    got = QueueLimits.from_config(load_config(str(conf)))
    assert got == QueueLimits(2147483647, 100000, 20000)
    conf.write_text("MAX_JOBS_PER_SUBMISSION = 7\nMAX_JOBS_PER_OWNER = 9\n"
                    "MAX_JOBS_SUBMITTED = 11\n")
    assert QueueLimits.from_config(load_config(str(conf))) == QueueLimits(11, 9, 7)


def test_a_limit_of_n_holds_n_jobs_and_refuses_in_condor_submits_words() -> None:
    lim = QueueLimits(submitted=10, per_owner=6, per_submission=4)
    assert lim.proc_refusal(queued=0, owners=0, adding=4) is None
    assert lim.proc_refusal(queued=0, owners=0, adding=5) == (
        "Failed to create proc\n"
        "Number of submitted jobs would exceed MAX_JOBS_PER_SUBMISSION")
    assert lim.proc_refusal(queued=2, owners=2, adding=4) is None
    assert "exceed MAX_JOBS_PER_OWNER" in str(lim.proc_refusal(queued=3, owners=3,
                                                                 adding=4))
    # the whole queue is checked first, as the schedd's NewProc does
    assert "exceed MAX_JOBS_SUBMITTED" in str(lim.proc_refusal(queued=7, owners=3,
                                                                 adding=4))
    assert lim.new_cluster_refusal(9) is None
    said = str(lim.new_cluster_refusal(10))
    assert said.startswith("MAX_JOBS_SUBMITTED exceeded. Current=10, Limit=10")
    assert said.endswith("Number of submitted jobs would exceed MAX_JOBS_SUBMITTED")


SUB = "executable = /bin/echo\narguments = job $(Process)\n+Extra = $(Process) * 2\nqueue 7\n"


def _merged(part: dict[str, object]) -> list[ClassAd]:
    common = parse_old(str(part["common"]))
    unset = part.get("unset") or {}
    out = []
    procs = part["procs"]
    assert isinstance(procs, list) and isinstance(unset, dict)
    for k, text in enumerate(procs):
        ad = common.copy()
        ad.update(parse_old(text))
        for name in unset.get(str(k), ()):
            del ad[name]
        out.append(ad)
    return out


def test_parts_carry_each_job_as_its_differences_and_rebuild_the_same_ads() -> None:
    kw = dict(cluster_id=3, owner="alice", submit_dir="/tmp", qdate=5)
    whole = parse_submit(SUB, "s", **kw)     # type: ignore[arg-type]
    assert count_jobs(SUB, "s", cluster_id=3, submit_dir="/tmp") == 7
    got = list(parts(3, 7, submit_ads(SUB, "s", **kw), part_jobs=3))  # type: ignore[arg-type]
    assert [p["first"] for p in got] == [0, 3, 6]
    assert [p["more"] for p in got] == [True, True, False]
    assert all(p["total"] == 7 and p["cluster"] == 3 for p in got)
    # a job's part is its differences only: the executable is in the common ad alone
    assert all("Cmd" not in text for p in got for text in p["procs"])  # type: ignore
    rebuilt = [ad for p in got for ad in _merged(p)]
    assert [a.to_old() for a in rebuilt] == [a.to_old() for a in whole]


def test_a_job_lacking_an_attribute_of_the_common_ad_says_so() -> None:
    ads = [ClassAd({"A": 1, "B": 2}), ClassAd({"A": 1}), ClassAd({"A": 3, "B": 2})]
    (only,) = parts(1, 3, ads)
    assert only["unset"] == {"1": ["b"]}
    assert [a.to_old() for a in _merged(only)] == [a.to_old() for a in ads]


def test_parts_stay_under_their_byte_budget() -> None:
    ads = (ClassAd({"A": 1, "Args": f"{i} " + "x" * 1000}) for i in range(100))
    got = list(parts(1, 100, ads, part_bytes=10_000))
    assert len(got) > 5
    assert all(sum(len(t) for t in p["procs"]) <= 10_000 for p in got)  # type: ignore
    assert sum(len(p["procs"]) for p in got) == 100  # type: ignore


def _rows(st: JobStore, cluster: int, n: int, first: int = 0,
          owner: str = "alice") -> list[tuple[int, int, int, int, str]]:
    return [st.row_of(ClassAd({"Cmd": "/bin/true", "Owner": owner}), cluster, first + i, 5)
            for i in range(n)]


def test_staged_jobs_are_queued_only_by_the_last_part(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        cid = st.new_cluster_id(owner_uid=1000)
        assert st.stage(cid, _rows(st, cid, 3), owner_uid=1000) == 3
        assert st.stage(cid, _rows(st, cid, 2, first=3), owner_uid=1000) == 5
        assert st.jobs() == []                      # nothing queued yet
        with pytest.raises(QueueError, match="reserved for another user"):
            st.stage(cid, _rows(st, cid, 1, first=9), owner_uid=1001)
        with pytest.raises(QueueError, match="given twice"):
            st.stage(cid, _rows(st, cid, 1, first=4), owner_uid=1000)
        assert st.submit_staged(cid, owner_uid=1000) == 5
        assert [str(r.job_id) for r in st.jobs()] == [f"{cid}.{p}" for p in range(5)]
        assert st.staged.count(cid) == 0
        with pytest.raises(QueueError, match="already has jobs"):
            st.submit_staged(cid, owner_uid=1000)
        assert st.queued_by("alice") == 5 and st.queued_by("bob") == 0


def test_staged_jobs_are_dropped_at_a_restart(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        cid = st.new_cluster_id(owner_uid=1000)
        st.stage(cid, _rows(st, cid, 4), owner_uid=1000)
    with JobStore(tmp_path) as st:
        assert st.staged.count(cid) == 4
        st.staged.clear()                      # what the daemon does as it starts
        assert st.staged.count(cid) == 0 and st.jobs() == []


def test_owner_count_reads_the_owner_attribute_not_lookalikes(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        st.submit([ClassAd({"Owner": "alice"}), ClassAd({"MyOwner": "alice", "Owner": "b"}),
                   ClassAd({"Env": 'Owner = "alice"', "Owner": "c"}),
                   ClassAd({"owner": "alice"})])
        assert st.queued_by("alice") == 2


def test_chunks_read_the_queue_in_id_order_a_part_at_a_time(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        for _ in range(3):
            st.submit([ClassAd({"Owner": "a", "N": i}) for i in range(400)])
        chunks = list(st.chunks())
        assert len(chunks) > 2 and max(len(c) for c in chunks) <= 500
        ids = [r.job_id for c in chunks for r in c]
        assert ids == sorted(ids) and len(ids) == 1200
        got = [r.job_id for c in st.chunks("N < 2", limit=5) for r in c]
        assert [str(j) for j in got] == ["1.0", "1.1", "2.0", "2.1", "3.0"]
        assert [r.ad["N"] for r in st.cluster(2)] == list(range(400))
        assert all(r.status is JobStatus.IDLE for r in st.cluster(3))


def test_rows_of_either_format_are_read_and_new_ones_are_old_format(tmp_path: Path) -> None:
    """The store writes the old format (read several times faster); rows an earlier
    condorpy wrote in the new one still read, and count for their owner."""
    with JobStore(tmp_path) as st:
        cid = st.submit([ClassAd({"Owner": "alice", "Args": "a b"}),
                         ClassAd({"Owner": "alice", "Args": "a\nb; c"})])
        texts = [t for (t,) in st.db.conn().execute("SELECT ad FROM jobs ORDER BY proc")]
        assert not texts[0].startswith("[") and 'Owner = "alice"\n' in texts[0]
        # a backslash reads otherwise in the old format: that ad stays in the new one
        assert texts[1].startswith("[")
        legacy = ClassAd({"Owner": "alice", "ClusterId": cid + 1, "ProcId": 0,
                          "JobStatus": 1})
        with st.db.transaction() as tx:
            tx.execute("INSERT INTO jobs VALUES (?, 0, 1, 5, ?)", (cid + 1, legacy.to_new()))
        got = {str(r.job_id): r.ad.get("Args") for r in st.jobs()}
        assert got == {f"{cid}.0": "a b", f"{cid}.1": "a\nb; c", f"{cid + 1}.0": None}
        assert st.queued_by("alice") == 3


class _NoRuns:
    """The running side, for a queue none of whose jobs runs."""

    def apply(self, outputs: object) -> None: ...

    def activate(self, job_id: object, claim_id: str, slot: str) -> bool:
        return False

    def slot_of(self, claim_id: str) -> str:
        return ""

    def is_running(self, job_id: object) -> bool:
        return False

    def leaving(self, job_id: object) -> bool:
        return False

    def stop_running(self, *args: object) -> bool:
        return False


class _Events:
    def __init__(self) -> None:
        self.stopped_jobs: list[object] = []

    def stopped(self, ad: ClassAd, *args: object) -> None:
        self.stopped_jobs.append((ad["ClusterId"], ad["ProcId"]))

    def released(self, ad: ClassAd, reason: str) -> None: ...


def test_the_periodic_policy_walks_a_long_queue_a_chunk_per_turn(tmp_path: Path) -> None:
    from condorpy.clock import ManualClock
    from condorpy.queue.matchmaker import LocalSchedd
    clock = ManualClock(1000.0)
    events = _Events()
    with JobStore(tmp_path, clock=clock.time) as st:
        st.submit([ClassAd({"Owner": "a", "PeriodicHold": parse_expr("ProcId % 2 == 0")})
                   for _ in range(1200)])
        engine = SimpleNamespace(settings=SimpleNamespace(eval_step_limit=250_000))
        schedd = LocalSchedd(engine, st, clock, _NoRuns(), events,  # type: ignore[arg-type]
                             started_at=0.0, knob=lambda name: None,
                             periodic_interval=lambda: 60)
        turns = 0
        while True:
            schedd.periodic()
            turns += 1
            if schedd.next_periodic > clock.monotonic():
                break
            # due again at once: the loop serves others, then comes back for more
            assert schedd.next_periodic == clock.monotonic() and turns < 10
        assert turns >= 3                   # 1,200 jobs, at most 500 a turn
        assert schedd.next_periodic == clock.monotonic() + 60
        assert len(events.stopped_jobs) == 600
        assert st.counts() == {JobStatus.IDLE: 600, JobStatus.HELD: 600}


def test_a_staged_row_is_its_first_jobs_text_and_its_differences(tmp_path: Path) -> None:
    from condorpy.queue.records import Differ, ad_text, record_of
    ads = parse_submit(SUB, "s", cluster_id=3, owner="alice", submit_dir="/tmp", qdate=5)
    first = JobStore.prepared(ads[0], 3, 0, 5)
    like = (Differ(first), ad_text(first))
    for i, ad in enumerate(ads):
        row = JobStore.row_of(ad, 3, i, 5, like)
        assert row[4].startswith(like[1])
        extra = row[4][len(like[1]):]
        assert "Cmd" not in extra and (i == 0 or f"ProcId = {i}" in extra)
        whole = JobStore.row_of(ad, 3, i, 5)
        assert record_of(row, "s").ad == record_of(whole, "s").ad
        assert row[:4] == whole[:4]


def test_chunks_are_bounded_in_bytes_as_well(tmp_path: Path) -> None:
    with JobStore(tmp_path) as st:
        st.submit([ClassAd({"Owner": "a", "Pad": "y" * 100_000}) for _ in range(10)])
        chunks = list(st.chunks())
        assert max(len(c) for c in chunks) <= 3
        assert [r.job_id.proc for c in chunks for r in c] == list(range(10))
