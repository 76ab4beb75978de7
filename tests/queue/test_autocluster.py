"""Autoclusters (issue #25): the local schedd's match pass offers the first job of each
group of alike idle jobs, so its cost follows the number of groups, not of jobs. Pure:
a real policy engine on a manual clock, a job store in a temporary directory, and an
Execute port that starts nothing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.clock import ManualClock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.queue.autocluster import (IdleIndex, Keyer, significant_from_config,
                                        slot_significant)
from condorpy.queue.jobstore import JobId, JobRecord, JobStatus, JobStore
from condorpy.queue import matchmaker
from condorpy.queue.matchmaker import LocalSchedd, Offer
from condorpy.queue.records import Differ, ad_text, record_of

from tests.policy.engines import core_from_text

TWO_SLOTS = "NUM_CPUS = 2\nMEMORY = 4096\nDISK = 100000000\nRUNBENCHMARKS = False\n"
NEVER = "TARGET.Memory > 100000000"        # no slot has that much memory
ALWAYS = "TARGET.Memory > 0"


class _Runs:
    """Starts nothing; says every activation worked unless the job is in ``fail``."""

    def __init__(self, engine: PolicyEngine) -> None:
        self.engine = engine
        self.started: list[JobId] = []
        self.fail: set[JobId] = set()

    def apply(self, outputs: list[Output]) -> None: ...

    def activate(self, job_id: JobId, claim_id: str, slot: str) -> bool:
        if job_id in self.fail:
            # as the resource manager does: the claim goes back
            self.engine.release(self.engine.now, claim_id)
            return False
        self.started.append(job_id)
        return True

    def slot_of(self, claim_id: str) -> str:
        return "slot"

    def is_running(self, job_id: JobId) -> bool:
        return job_id in self.started

    def leaving(self, job_id: JobId) -> bool:
        return False

    def stop_running(self, *args: object) -> bool:
        return False


class _Events:
    def stopped(self, *args: object) -> None: ...

    def released(self, *args: object) -> None: ...


class Bench:
    def __init__(self, tmp: Path, config: str = TWO_SLOTS) -> None:
        self.clock = ManualClock(1_700_000_000.0)
        self.engine = core_from_text(config).engine(self.clock)
        self.engine.cycle(self.clock.time())        # the slots become Unclaimed
        self.store = JobStore(tmp, clock=self.clock.time)
        self.runs = _Runs(self.engine)
        self.schedd = LocalSchedd(self.engine, self.store, self.clock, self.runs, _Events(),
                                  started_at=self.clock.time(), knob=lambda name: None)
        self.offered: list[JobId] = []
        offer = self.schedd.offer

        def counting(rec: JobRecord) -> Offer:
            self.offered.append(rec.job_id)
            return offer(rec)
        self.schedd.offer = counting  # type: ignore[method-assign]

    def submit(self, ads: list[ClassAd], *, tell: bool = True) -> list[JobId]:
        cluster = self.store.submit(ads)
        if not tell:
            return [JobId(cluster, proc) for proc in range(len(ads))]
        recs = list(self.store.cluster(cluster))
        self.schedd.submitted(recs)
        return [r.job_id for r in recs]

    def passes(self, n: int = 1) -> list[list[JobId]]:
        """The jobs offered in each of ``n`` passes."""
        out = []
        for _ in range(n):
            self.offered.clear()
            self.schedd.match()
            out.append(list(self.offered))
        return out


def job(requirements: str = ALWAYS, **attrs: Any) -> ClassAd:
    ad = ClassAd({"Owner": "alice", "JobUniverse": 5, "RequestCpus": 1,
                  "RequestMemory": 64, "RequestDisk": 1,
                  "Requirements": parse_expr(requirements)})
    for name, value in attrs.items():
        ad[name] = value
    return ad


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    b = Bench(tmp_path)
    yield b
    b.store.close()


def test_a_hundred_thousand_jobs_that_cannot_match_cost_one_offer_a_pass(bench: Bench
                                                                         ) -> None:
    # args differ from job to job: matching reads none of it
    ids = bench.submit([job(NEVER, Args=f"run {i}") for i in range(100_000)],
                       tell=False)
    reads = []
    job_of = bench.store.job

    def counted(job_id: JobId) -> JobRecord | None:
        reads.append(job_id)
        return job_of(job_id)
    bench.store.job = counted  # type: ignore[method-assign]
    # the index is read from the store (as at a daemon's start) a part a turn, the
    # daemon free to serve others between; nothing is offered until it is whole
    turns = 0
    while True:
        assert bench.schedd.need_match
        offered = bench.passes()[0]
        if offered:
            break
        turns += 1
    assert turns >= 2 and offered == [ids[0]] and not reads[1:]
    # then kept: each pass offers the one autocluster's first job, once
    assert bench.passes(3) == [[ids[0]]] * 3
    assert len(reads) == 4
    index = bench.schedd.index()
    assert len(index) == 100_000 and index.clusters == 1
    # a job that can match, submitted last, is offered second and starts
    late = bench.submit([job(ALWAYS)])
    assert bench.passes() == [[ids[0], late[0]]]
    assert bench.runs.started == late
    assert len(bench.schedd.index()) == 100_000


def test_priorities_interleave_two_autoclusters_one_matching(bench: Bench) -> None:
    never_hi = bench.submit([job(NEVER, JobPrio=10)])
    always_mid = bench.submit([job(ALWAYS, JobPrio=5)])
    never_lo = bench.submit([job(NEVER, JobPrio=0) for _ in range(3)])
    always_lo = bench.submit([job(ALWAYS, JobPrio=-1) for _ in range(3)])
    index = bench.schedd.index()
    assert index.clusters == 2
    assert index.cluster_of(never_hi[0]) == index.cluster_of(never_lo[0])
    assert index.cluster_of(always_mid[0]) == index.cluster_of(always_lo[0])
    # the first never-job is refused: its likes at a lower priority are not offered;
    # the always-jobs start in priority then submission order, until no slot is free
    assert bench.passes() == [[never_hi[0], always_mid[0], always_lo[0]]]
    assert bench.runs.started == [always_mid[0], always_lo[0]]
    assert bench.passes() == [[]]           # no free slot: nothing is offered
    assert never_lo[0] in index and always_lo[1] in index


def test_a_reconfigured_start_that_reads_a_job_attribute_rekeys_the_jobs(bench: Bench
                                                                         ) -> None:
    xs = bench.submit([job(ALWAYS, Project="x") for _ in range(3)])
    ys = bench.submit([job(ALWAYS, Project="y") for _ in range(3)])
    assert bench.schedd.index().clusters == 1        # nothing reads Project yet
    settings = bench.engine.settings
    bench.engine.reconfigure(replace(settings, exprs={**settings.exprs,
                                                      "START": 'TARGET.Project == "y"'}))
    bench.engine.cycle(bench.clock.time())
    # x's first job is refused, the other x's are passed over, y's start
    assert bench.passes() == [[xs[0], ys[0], ys[1]]]
    index = bench.schedd.index()
    assert index.clusters == 2 and len(index) == 4
    ac = bench.schedd.autocluster(xs[1])
    assert ac is not None and "project" in ac[1].split(",")


def test_the_jobs_own_requirements_reading_my_x_split_on_x(bench: Bench) -> None:
    ads = [job("MY.Wanted == 1 && TARGET.Memory > 0", Wanted=0, Args=str(i))
           for i in range(50)]
    ads.append(job("MY.Wanted == 1 && TARGET.Memory > 0", Wanted=1, Args="last"))
    ids = bench.submit(ads)
    index = bench.schedd.index()
    assert index.clusters == 2
    assert bench.passes() == [[ids[0], ids[-1]]]
    assert bench.runs.started == [ids[-1]]
    # an attribute reached through one the job's Requirements reads counts too
    more = bench.submit([job("MY.Depth > 1", Depth=parse_expr("Level + 1"), Level=lvl)
                         for lvl in (0, 0, 5)])
    assert index.cluster_of(more[0]) == index.cluster_of(more[1]) != \
        index.cluster_of(more[2])


def test_a_refusal_is_not_kept_past_its_pass(bench: Bench) -> None:
    # a job that waits for the clock is asked again on each pass, once
    soon = int(bench.clock.time()) + 60
    ids = bench.submit([job(f"time() > {soon} && TARGET.Memory > 0") for _ in range(20)])
    assert bench.passes(2) == [[ids[0]], [ids[0]]]
    bench.clock.advance(120)
    assert bench.passes() == [[ids[0], ids[1]]]
    assert bench.runs.started == ids[:2]


def test_a_job_that_did_not_start_does_not_hold_back_its_likes(bench: Bench) -> None:
    ids = bench.submit([job(ALWAYS) for _ in range(3)])
    bench.runs.fail.add(ids[0])
    assert bench.passes() == [[ids[0], ids[1], ids[2]]]
    assert bench.runs.started == ids[1:]
    assert ids[0] in bench.schedd.index()           # still idle, offered again later


def test_jobs_read_from_the_store_key_as_jobs_submitted(tmp_path: Path) -> None:
    one = Bench(tmp_path / "a")
    ids = one.submit([job(NEVER, RequestMemory=m) for m in (64, 64, 128)]
                     + [job(ALWAYS, JobPrio=parse_expr("1 + 1"))])
    told = one.schedd.index()
    fresh = LocalSchedd(one.engine, one.store, one.clock, one.runs, _Events(),
                        started_at=0.0, knob=lambda name: None)
    fresh.match()
    read = fresh.index()
    assert [read.cluster_of(i) is not None for i in ids[:3]] == [True] * 3
    assert {told.attrs_of(told.cluster_of(i) or 0) for i in ids[:3]} == \
        {read.attrs_of(read.cluster_of(i) or 0) for i in ids[:3]}
    assert read.cluster_of(ids[0]) == read.cluster_of(ids[1]) != read.cluster_of(ids[2])
    assert one.runs.started == [ids[3]]             # JobPrio 2 read off its expression
    one.store.close()


def test_a_submission_parts_rows_key_off_their_text_as_their_ads() -> None:
    sig = slot_significant([ClassAd({"START": parse_expr("TARGET.Project =!= undefined"),
                                     "Memory": 4096})])
    assert sig == frozenset({"project"})
    keyer = Keyer(sig)
    ads = [JobStore.prepared(job(NEVER, Project=p, Args=str(i)), 3, i, 5)
           for i, p in enumerate("aab")]
    like = (Differ(ads[0]), ad_text(ads[0]))
    for i, ad in enumerate(ads):
        row = JobStore.row_of(ad, 3, i, 5, like)
        got = keyer.of_text(row[4])
        assert got is not None
        assert got[0] == keyer.of_ad(record_of(row, "s").ad) == keyer.of_ad(ad)
        assert got[1] == 0.0
    a, b = keyer.of_text(ad_text(ads[0])), keyer.of_text(ad_text(ads[2]))
    assert a is not None and b is not None and a[0] != b[0]     # Project differs


def test_an_expression_that_builds_names_at_run_time_is_a_cluster_of_its_own() -> None:
    keyer = Keyer(frozenset())
    ad = job('eval("TARGET.Mem" + "ory") > 0')
    assert keyer.of_ad(ad) is None
    index = IdleIndex()
    assert index.add(JobId(1, 0), None, 0.0) != index.add(JobId(1, 1), None, 0.0)
    # and a slot ad that does turns the grouping off
    assert slot_significant([ClassAd({"START": parse_expr('eval("true")')})]) is None


def test_the_index_keeps_order_through_changes() -> None:
    index = IdleIndex()
    sig_a, sig_b = (("requirements", "a"),), (("requirements", "b"),)
    for proc in range(5):
        index.add(JobId(1, proc), sig_a, 0.0)
    index.add(JobId(2, 0), sig_b, 1.0)
    index.remove(JobId(1, 0))
    index.add(JobId(1, 3), sig_a, 2.0)          # its JobPrio was raised
    index.add(JobId(1, 0), sig_a, 0.0)          # back again
    seen = []
    for ac, job_id in index.heads(set()):
        seen.append(job_id)
        index.remove(job_id)
    assert seen == [JobId(1, 3), JobId(2, 0), JobId(1, 0), JobId(1, 1), JobId(1, 2),
                    JobId(1, 4)]
    assert len(index) == 0 and index.clusters == 0


def test_significant_attributes_from_the_configuration(bench: Bench) -> None:
    ids = bench.submit([job(NEVER, Project=p) for p in "xxyy"])
    assert bench.passes() == [[ids[0]]]
    # an administrator's ADD_SIGNIFICANT_ATTRIBUTES splits on an attribute no slot reads
    bench.schedd.knob = {"ADD_SIGNIFICANT_ATTRIBUTES": "Project"}.get
    assert bench.passes() == [[ids[0], ids[2]]]
    # SIGNIFICANT_ATTRIBUTES replaces what the slots read, exactly
    bench.schedd.knob = {"SIGNIFICANT_ATTRIBUTES": "Owner"}.get
    assert bench.passes() == [[ids[0]]]
    computed = frozenset({"memory"})
    assert significant_from_config(lambda name: None, lambda: computed) == (computed, False)
    assert significant_from_config({"SIGNIFICANT_ATTRIBUTES": "Owner, Project"}.get,
                                   lambda: None) == (frozenset({"owner", "project"}), True)
    assert significant_from_config({"ADD_SIGNIFICANT_ATTRIBUTES": "A B"}.get,
                                   lambda: computed) == (frozenset({"memory", "a", "b"}), False)
    assert significant_from_config({"ADD_SIGNIFICANT_ATTRIBUTES": "A"}.get,
                                   lambda: None) == (None, False)


def test_a_row_in_the_new_format_is_read_as_an_ad() -> None:
    ad = JobStore.prepared(job(ALWAYS, JobPrio=3, Args="a\\b"), 1, 0, 5)
    text = ad_text(ad)
    assert text.startswith("[")             # a backslash keeps the new format
    for keyer in (Keyer(frozenset()), Keyer(None)):
        assert keyer.of_text(text) is None


def test_jobs_changed_while_the_index_is_read_are_kept_right(
        bench: Bench, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matchmaker, "FILL_ROWS", 10)
    ids = bench.submit([job(NEVER) for _ in range(30)], tell=False)
    assert bench.passes() == [[]] and bench.schedd.need_match      # 10 read
    bench.schedd.set_status(ids[5], JobStatus.HELD)                 # read already
    bench.schedd.set_status(ids[25], JobStatus.HELD)                # not read yet
    late = bench.submit([job(ALWAYS)])                              # told, then read
    assert bench.passes(2) == [[], []]
    assert bench.passes() == [[ids[0], late[0]]]
    index = bench.schedd.index()
    assert len(index) == 28 and ids[5] not in index and ids[25] not in index
    assert bench.runs.started == late
