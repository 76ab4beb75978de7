"""The daemon's side of the shadow's reconnect (condorpy/startd/pool_reconnect.py): the
stored claim survives a round trip through the job store, damaged rows are dropped
with a log line, and CA_LOCATE_STARTER / CA_RECONNECT_JOB are answered as HTCondor's
startd and starter answer them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from condorpy.classad import ClassAd
from condorpy.clock import ManualClock
from condorpy.pool import claims, reconnect
from condorpy.pool.cedar import Reader
from condorpy.pool.collector import new_claim_id
from condorpy.pool.security import Send
from condorpy.pool.server import parse_claim_id
from condorpy.pool.wire_ad import get_classad
from condorpy.startd import pool_reconnect
from condorpy.queue.jobstore import JobStore
from condorpy.startd.pool_link import PoolJob

CID = new_claim_id("<127.0.0.1:4242?noUDP>", 1795468569, 3, "25.14.1")
EID = parse_claim_id(CID).session_id
GJID = "submit.example#12.0#1795468000"
PEER = "127.0.0.1:5555"


def _record(**kw: Any) -> pool_reconnect.StoredClaim:
    fields: dict[str, Any] = dict(
        claim_id=CID, target="slot1", slot="slot1_1", schedd="<127.0.0.1:9618>",
        alive_interval=300, request_ad="RequestCpus = 1\n", job_ad="ClusterId = 12\n",
        shadow=PEER, number=4, lease=2400, last_contact=1000.0)
    fields.update(kw)
    return pool_reconnect.StoredClaim(**fields)


def test_a_stored_claim_round_trips_through_the_job_store(tmp_path: Path) -> None:
    rec = _record(final={"ExitCode": 3, "ExitBySignal": False})
    with JobStore(tmp_path) as store:
        store.put_pool_claim(EID, rec.to_json())
        assert pool_reconnect.stored(store) == {4: rec}
    with JobStore(tmp_path) as store:        # and across a reopening
        assert pool_reconnect.stored(store)[4].claim_id == CID


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"claim_id": "x"}',
                                  json.dumps({"claim_id": 5, "number": 1}),
                                  json.dumps({"claim_id": "no-hash", "number": 1,
                                              "target": "", "slot": "", "schedd": "",
                                              "alive_interval": 0, "request_ad": "",
                                              "job_ad": "", "shadow": "", "lease": 1,
                                              "last_contact": 0})],
                         ids=["truncated", "not-an-object", "missing", "wrong-type",
                              "bad-claim-id"])
def test_a_damaged_stored_claim_is_dropped_with_a_log_line(
        tmp_path: Path, text: str, caplog: pytest.LogCaptureFixture) -> None:
    with JobStore(tmp_path) as store:
        store.put_pool_claim("damaged", text)
        store.put_pool_claim(EID, _record().to_json())
        with caplog.at_level(logging.ERROR, "condorpy.startd.pool"):
            got = pool_reconnect.stored(store)
        assert list(got) == [4]
        assert [c for c, _ in store.pool_claims()] == [EID]
    assert "stored claim damaged is damaged" in caplog.text


def test_a_job_lease_needs_a_global_job_id_and_a_positive_duration() -> None:
    ad = ClassAd()
    assert pool_reconnect.lease_of(ad) == 0
    ad["JobLeaseDuration"] = 2400
    assert pool_reconnect.lease_of(ad) == 0
    ad["GlobalJobId"] = GJID
    assert pool_reconnect.lease_of(ad) == 2400
    ad["JobLeaseDuration"] = 0
    assert pool_reconnect.lease_of(ad) == 0
    ad["JobLeaseDuration"] = True
    assert pool_reconnect.lease_of(ad) == 0


class _Link:
    """What serve() reads of a PoolLink."""

    def __init__(self, job: PoolJob | None) -> None:
        self.address = "<127.0.0.1:4242?noUDP>"
        self.pool_claims = {CID: claims.RequestClaim(CID, ClassAd(), "<127.0.0.1:9618>", 300)}
        self.jobs = {EID: job} if job is not None else {}
        self.stored: dict[str, pool_reconnect.StoredClaim] = {}
        self.clock = ManualClock()
        self.host = None
        self.inbound: set[object] = set()

    def _starter_info(self, job: PoolJob) -> ClassAd:
        info = ClassAd()
        info["StarterIpAddr"] = self.address
        info["HasReconnect"] = True
        return info


def _job() -> PoolJob:
    ad = ClassAd()
    ad["GlobalJobId"] = GJID
    ad["ClusterId"], ad["ProcId"] = 12, 0
    job = PoolJob(EID, ad, slot="slot1_1")
    job.lease = 2400
    return job


def _answer(link: _Link, command: str, claim_id: str | None, gjid: str | None,
            **extra: str) -> ClassAd:
    payload = reconnect.request(command, claim_id, gjid, **extra).payload()
    req = reconnect.parse_request(Reader(payload, PEER, crypto=True))
    gen = pool_reconnect.serve(link, req, EID, PEER, object())  # type: ignore[arg-type]
    op = next(gen)
    assert isinstance(op, Send)
    r = Reader(op.payload, PEER, crypto=True)
    ad = get_classad(r)
    r.end()
    return ad


def test_locate_answers_the_daemons_own_address_and_notes_a_new_schedd() -> None:
    link = _Link(_job())
    ad = _answer(link, reconnect.LOCATE_STARTER, CID, GJID, ScheddIpAddr="<127.0.0.2:1>")
    assert ad["Result"] == "Success" and ad["StarterIpAddr"] == link.address
    assert link.pool_claims[CID].scheduler_addr == "<127.0.0.2:1>"


@pytest.mark.parametrize("case", ["no-job", "other-job", "other-claim", "no-gjid",
                                  "no-lease", "unknown"])
def test_a_request_for_a_job_not_here_gets_htcondors_failure(case: str) -> None:
    job = None if case == "no-job" else _job()
    if job is not None and case == "no-lease":
        job.lease = 0
    link = _Link(job)
    command = "CA_BULK_REQUEST" if case == "unknown" else reconnect.LOCATE_STARTER
    claim_id = CID.replace("#3#", "#4#") if case == "other-claim" else CID
    gjid = None if case == "no-gjid" else "other#1.0#1" if case == "other-job" else GJID
    ad = _answer(link, command, claim_id, gjid)
    assert ad["Result"] == "Failure" and isinstance(ad["ErrorString"], str)
    assert parse_claim_id(CID).key not in ad["ErrorString"]


class _Engine:
    def __init__(self) -> None:
        self.claims = {EID}
        self.released: list[str] = []

    def has_claim(self, eid: str) -> bool:
        return eid in self.claims

    def release(self, now: float, eid: str) -> list[object]:
        self.claims.discard(eid)
        self.released.append(eid)
        return []


class _LeaseLink(_Link):
    """What tick() reads and changes of a PoolLink."""

    def __init__(self, job: PoolJob) -> None:
        super().__init__(job)
        self.engine = _Engine()
        self.sessions = {EID: b"k"}
        self.next_alive: dict[str, float] = {}
        self.next_refresh: dict[str, float] = {}
        self.claim_ids = {"slot1_1": CID}
        self.kills: list[tuple[str, bool]] = []
        self.stored[EID] = _record(last_contact=0.0, lease=60)

    def _kill(self, eid: str, hard: bool) -> None:
        self.kills.append((eid, hard))

    def apply(self, outputs: list[object]) -> None:
        pass


def test_a_job_whose_shadow_stays_away_past_its_lease_is_killed_then_its_claim_released(
        ) -> None:
    job = _job()
    job.lease, job.last_contact = 60, 0.0
    link = _LeaseLink(job)
    assert pool_reconnect.shadow_lost(link, job)       # type: ignore[arg-type]
    link.clock.advance(59)
    pool_reconnect.tick(link)                           # type: ignore[arg-type]
    assert link.kills == [] and pool_reconnect.timeout(link, 0) == 1  # type: ignore[arg-type]
    link.clock.advance(1)
    pool_reconnect.tick(link)                           # type: ignore[arg-type]
    pool_reconnect.tick(link)                           # type: ignore[arg-type]
    assert link.kills == [(EID, True)] and job.killed   # once
    assert link.engine.has_claim(EID)                   # until the job has ended
    job.ended, job.final = True, {"ExitBySignal": True, "ExitSignal": 9}
    pool_reconnect.tick(link)                           # type: ignore[arg-type]
    assert link.engine.released == [EID]
    assert link.jobs == {} and link.pool_claims == {} and link.sessions == {}
    assert link.stored == {} and link.claim_ids == {}


def test_a_shadow_that_comes_back_in_time_renews_the_lease() -> None:
    job = _job()
    job.lease, job.last_contact = 60, 0.0
    link = _LeaseLink(job)
    pool_reconnect.shadow_lost(link, job)               # type: ignore[arg-type]
    link.clock.advance(50)
    pool_reconnect.contact(link, job)                   # type: ignore[arg-type]
    job.exchange = object()                             # type: ignore[assignment]
    link.clock.advance(50)
    pool_reconnect.tick(link)                           # type: ignore[arg-type]
    assert link.kills == [] and job.disconnected is None
    job.exchange = None
    pool_reconnect.tick(link)                           # type: ignore[arg-type]
    assert link.kills == []                             # 50 s since the last word
    link.clock.advance(10)
    pool_reconnect.tick(link)                           # type: ignore[arg-type]
    assert link.kills == [(EID, True)]


def test_a_job_without_a_lease_is_not_kept_for_its_shadow() -> None:
    job = _job()
    job.lease = 0
    link = _LeaseLink(job)
    ex = object()
    job.exchange = ex                                   # type: ignore[assignment]
    assert not pool_reconnect.shadow_lost(link, job)    # type: ignore[arg-type]
    assert job.exchange is ex                           # the caller ends it


class _Store:
    def __init__(self) -> None:
        self.path = "/nonexistent/db"
        self.rows: dict[str, str] = {}

    def put_pool_claim(self, claim: str, record: str) -> None:
        self.rows[claim] = record


def test_the_shadows_last_word_is_stored_often_enough_for_a_short_lease() -> None:
    job = _job()
    job.lease = 20
    link = _LeaseLink(job)
    link.stored[EID] = _record(last_contact=0.0, lease=20)
    link.host = type("Host", (), {"store": _Store()})()  # type: ignore[assignment]
    link.clock.advance(4)
    pool_reconnect.contact(link, job)                    # type: ignore[arg-type]
    assert link.host.store.rows == {}                    # type: ignore[attr-defined]
    link.clock.advance(1)
    pool_reconnect.contact(link, job)                    # type: ignore[arg-type]
    stored = json.loads(link.host.store.rows[EID])       # type: ignore[attr-defined]
    assert stored["last_contact"] == 5.0 and link.stored[EID].last_contact == 5.0
