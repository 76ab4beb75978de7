"""The daemon's side of the shadow's reconnect (condorpy/startd/poolside/reconnect.py): the
stored claim survives a round trip through the job store, damaged rows are dropped
with a log line, and CA_LOCATE_STARTER / CA_RECONNECT_JOB are answered as HTCondor's
startd and starter answer them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
import selectors
from collections.abc import Generator
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
from condorpy.queue.jobstore import JobStore
from condorpy.startd.poolside import claimstore as pool_stored
from condorpy.startd.poolside.claims import ClaimTable, PoolJob
from condorpy.startd.poolside.exchanges import Exchanges
from condorpy.startd.poolside.reconnect import Leases, ReconnectServer
from condorpy.startd.poolside.claimstore import StoredRows

CID = new_claim_id("<127.0.0.1:4242?noUDP>", 1795468569, 3, "25.14.1")
EID = parse_claim_id(CID).session_id
GJID = "submit.example#12.0#1795468000"
PEER = "127.0.0.1:5555"


def _record(**kw: Any) -> pool_stored.StoredClaim:
    fields: dict[str, Any] = dict(
        claim_id=CID, target="slot1", slot="slot1_1", schedd="<127.0.0.1:9618>",
        alive_interval=300, request_ad="RequestCpus = 1\n", job_ad="ClusterId = 12\n",
        shadow=PEER, number=4, lease=2400, last_contact=1000.0)
    fields.update(kw)
    return pool_stored.StoredClaim(**fields)


def test_a_stored_claim_round_trips_through_the_job_store(tmp_path: Path) -> None:
    rec = _record(final={"ExitCode": 3, "ExitBySignal": False})
    with JobStore(tmp_path) as store:
        store.pool.put(EID, rec.to_json())
        assert pool_stored.stored(store.pool) == {4: rec}
    with JobStore(tmp_path) as store:        # and across a reopening
        assert pool_stored.stored(store.pool)[4].claim_id == CID


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
        store.pool.put("damaged", text)
        store.pool.put(EID, _record().to_json())
        with caplog.at_level(logging.ERROR, "condorpy.startd.pool"):
            got = pool_stored.stored(store.pool)
        assert list(got) == [4]
        assert [c for c, _ in store.pool.all()] == [EID]
    assert "stored claim damaged is damaged" in caplog.text


def test_a_job_lease_needs_a_global_job_id_and_a_positive_duration() -> None:
    ad = ClassAd()
    assert pool_stored.lease_of(ad) == 0
    ad["JobLeaseDuration"] = 2400
    assert pool_stored.lease_of(ad) == 0
    ad["GlobalJobId"] = GJID
    assert pool_stored.lease_of(ad) == 2400
    ad["JobLeaseDuration"] = 0
    assert pool_stored.lease_of(ad) == 0
    ad["JobLeaseDuration"] = True
    assert pool_stored.lease_of(ad) == 0


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


class _Store:
    def __init__(self) -> None:
        self.path = "/nonexistent/db"
        self.rows: dict[str, str] = {}

    def put(self, claim: str, record: str) -> None:
        self.rows[claim] = record

    def forget(self, claim: str) -> None:
        self.rows.pop(claim, None)

    def all(self) -> list[tuple[str, str]]:
        return sorted(self.rows.items())


class _Shadows:
    """What the reconnect server asks of the shadow side."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.loops: list[str] = []

    def starter_info(self, job: PoolJob) -> ClassAd:
        info = ClassAd()
        info["StarterIpAddr"] = self.address
        info["HasReconnect"] = True
        return info

    def loop(self, peer: str, job: PoolJob) -> Generator[Any, Any, None]:
        self.loops.append(peer)
        yield from ()


class _Rig:
    """A claim table holding claim CID with ``job``, its leases and its reconnect
    server, on a fake engine, clock and store."""

    def __init__(self, job: PoolJob | None, store: _Store | None = None,
                 row: pool_stored.StoredClaim | None = None) -> None:
        self.address = "<127.0.0.1:4242?noUDP>"
        self.clock = ManualClock()
        self.engine = _Engine()
        self.store = store
        self.table = ClaimTable(self.address, 1795468569, self.engine,  # type: ignore[arg-type]
                                lambda outputs: None, self.clock,
                                StoredRows(lambda: self.store))
        self.table.grant(CID, claims.RequestClaim(CID, ClassAd(), "<127.0.0.1:9618>", 300))
        self.table.publish("slot1_1", CID)
        if job is not None:
            self.table.set_job(EID, job)
        if row is not None:
            self.table.adopt_row(EID, row)
        self.kills: list[tuple[str, bool]] = []
        self.leases = Leases(self.table, self.clock,
                             lambda eid, hard: self.kills.append((eid, hard)))
        self.shadows = _Shadows(self.address)
        self.inbound = Exchanges(selectors.DefaultSelector(), self.clock)
        self.server = ReconnectServer(self.table, self.leases, self.shadows,  # type: ignore[arg-type]
                                      self.inbound)

    def request(self) -> claims.RequestClaim:
        claim = self.table.get(EID)
        assert claim is not None
        return claim.request


def _job() -> PoolJob:
    ad = ClassAd()
    ad["GlobalJobId"] = GJID
    ad["ClusterId"], ad["ProcId"] = 12, 0
    job = PoolJob(EID, ad, slot="slot1_1")
    job.lease = 2400
    return job


def _answer(rig: _Rig, command: str, claim_id: str | None, gjid: str | None,
            **extra: str) -> ClassAd:
    payload = reconnect.request(command, claim_id, gjid, **extra).payload()
    req = reconnect.parse_request(Reader(payload, PEER, crypto=True))
    gen = rig.server.serve(req, EID, PEER, object())  # type: ignore[arg-type]
    op = next(gen)
    assert isinstance(op, Send)
    r = Reader(op.payload, PEER, crypto=True)
    ad = get_classad(r)
    r.end()
    return ad


def test_locate_answers_the_daemons_own_address_and_notes_a_new_schedd() -> None:
    rig = _Rig(_job())
    ad = _answer(rig, reconnect.LOCATE_STARTER, CID, GJID, ScheddIpAddr="<127.0.0.2:1>")
    assert ad["Result"] == "Success" and ad["StarterIpAddr"] == rig.address
    assert rig.request().scheduler_addr == "<127.0.0.2:1>"


@pytest.mark.parametrize("case", ["no-job", "other-job", "other-claim", "no-gjid",
                                  "no-lease", "unknown"])
def test_a_request_for_a_job_not_here_gets_htcondors_failure(case: str) -> None:
    job = None if case == "no-job" else _job()
    if job is not None and case == "no-lease":
        job.lease = 0
    rig = _Rig(job)
    command = "CA_BULK_REQUEST" if case == "unknown" else reconnect.LOCATE_STARTER
    claim_id = CID.replace("#3#", "#4#") if case == "other-claim" else CID
    gjid = None if case == "no-gjid" else "other#1.0#1" if case == "other-job" else GJID
    ad = _answer(rig, command, claim_id, gjid)
    assert ad["Result"] == "Failure" and isinstance(ad["ErrorString"], str)
    assert parse_claim_id(CID).key not in ad["ErrorString"]


def _lease_rig(job: PoolJob, **row: Any) -> _Rig:
    return _Rig(job, row=_record(**{"last_contact": 0.0, "lease": 60, **row}))


def test_a_job_whose_shadow_stays_away_past_its_lease_is_killed_then_its_claim_released(
        ) -> None:
    job = _job()
    job.lease, job.last_contact = 60, 0.0
    rig = _lease_rig(job)
    assert rig.leases.shadow_lost(job)
    rig.clock.advance(59)
    rig.leases.tick()
    assert rig.kills == [] and rig.leases.timeout() == 1
    rig.clock.advance(1)
    rig.leases.tick()
    rig.leases.tick()
    assert rig.kills == [(EID, True)] and job.killed   # once
    assert rig.engine.has_claim(EID)                    # until the job has ended
    job.ended, job.final = True, {"ExitBySignal": True, "ExitSignal": 9}
    rig.leases.tick()
    assert rig.engine.released == [EID]
    assert rig.table.jobs() == [] and len(rig.table) == 0 and rig.table.key(EID) is None
    assert rig.table.row(EID) is None and rig.table.published_id("slot1_1") is None


def test_a_shadow_that_comes_back_in_time_renews_the_lease() -> None:
    job = _job()
    job.lease, job.last_contact = 60, 0.0
    rig = _lease_rig(job)
    rig.leases.shadow_lost(job)
    rig.clock.advance(50)
    rig.leases.contact(job)
    job.exchange = object()                             # type: ignore[assignment]
    rig.clock.advance(50)
    rig.leases.tick()
    assert rig.kills == [] and job.disconnected is None
    job.exchange = None
    rig.leases.tick()
    assert rig.kills == []                              # 50 s since the last word
    rig.clock.advance(10)
    rig.leases.tick()
    assert rig.kills == [(EID, True)]


def test_a_job_without_a_lease_is_not_kept_for_its_shadow() -> None:
    job = _job()
    job.lease = 0
    rig = _lease_rig(job)
    ex = object()
    job.exchange = ex                                   # type: ignore[assignment]
    assert not rig.leases.shadow_lost(job)
    assert job.exchange is ex                           # the caller ends it


def test_the_shadows_last_word_is_stored_often_enough_for_a_short_lease() -> None:
    job = _job()
    job.lease = 20
    store = _Store()
    rig = _Rig(job, store, _record(last_contact=0.0, lease=20))
    rig.clock.advance(4)
    rig.leases.contact(job)
    assert store.rows == {}
    rig.clock.advance(1)
    rig.leases.contact(job)
    stored = json.loads(store.rows[EID])
    row = rig.table.row(EID)
    assert stored["last_contact"] == 5.0 and row is not None and row.last_contact == 5.0


def test_shadows_that_reconnect_are_counted_for_the_metrics() -> None:
    job = _job()
    job.lease = 60
    rig = _Rig(job)
    _answer(rig, reconnect.LOCATE_STARTER, CID, GJID)
    assert rig.server.reconnected == 0                  # locating is not reconnecting
    ad = _answer(rig, reconnect.RECONNECT_JOB, CID, GJID)
    assert ad["Result"] == "Success"
    assert rig.server.reconnected == 1
