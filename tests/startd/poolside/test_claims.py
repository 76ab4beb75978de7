"""The claim table (condorpy/startd/poolside/claims.py): a claim goes only through
drop, which takes everything of it along (session, published id, stored row, the
engine's claim) and keeps a job whose shadow is still being told of its end."""

from __future__ import annotations

from condorpy.classad import ClassAd
from condorpy.pool import claims
from condorpy.startd.poolside.claims import Claim, PoolJob, engine_id
from tests.startd.poolside.test_reconnect import CID, EID, _Rig, _record, _Store


def test_drop_takes_the_session_the_published_id_the_row_and_the_engines_claim() -> None:
    store = _Store()
    rig = _Rig(None, store, _record())
    store.rows[EID] = "the row"
    told: list[Claim] = []
    rig.table.tell_schedd = told.append
    assert rig.table.key(EID) is not None and EID in rig.table
    got = rig.table.drop(EID, "the policy ended it", tell_schedd=True)
    assert got is not None and got.claim_id == CID and told == [got]
    assert EID not in rig.table and rig.table.key(EID) is None
    assert rig.table.published_id("slot1_1") is None and store.rows == {}
    assert rig.engine.released == [EID]
    assert rig.table.take_changed()              # the collector hears of new ids soon
    assert rig.table.drop(EID, "again") is None  # once


def test_a_dropped_claims_running_job_stays_until_its_shadow_is_told() -> None:
    job = PoolJob(EID, ClassAd(), slot="slot1_1")
    rig = _Rig(job)
    rig.table.drop(EID, "released by its schedd")
    assert EID not in rig.table
    assert rig.table.job(EID) is job and rig.table.jobs() == [job]
    rig.table.job_done(job)
    assert rig.table.job(EID) is None and rig.table.jobs() == []


def test_an_ended_job_without_its_shadow_goes_with_its_claim() -> None:
    job = PoolJob(EID, ClassAd(), slot="slot1_1", ended=True)
    rig = _Rig(job)
    rig.table.drop(EID, "its shadow did not come back within the job lease")
    assert rig.table.jobs() == []


def test_a_published_id_that_is_spent_opens_no_session() -> None:
    rig = _Rig(None)
    cid = rig.table.published("slot2")
    assert rig.table.published("slot2") == cid
    assert rig.table.key(engine_id(cid)) is not None
    rig.table.unpublish("slot2")                 # the ad went; the session stays
    assert rig.table.key(engine_id(cid)) is not None
    rig.table.spend(cid)
    assert rig.table.key(engine_id(cid)) is None
    assert rig.table.published("slot2") != cid


def test_a_new_schedd_address_is_where_alives_go() -> None:
    rig = _Rig(None)
    rig.table.retarget(EID, "<127.0.0.3:1>")
    claim = rig.table.get(EID)
    assert claim is not None and claim.request.scheduler_addr == "<127.0.0.3:1>"
    assert isinstance(claim.request, claims.RequestClaim)


def test_a_claimed_slot_publishes_a_preempting_id_that_goes_with_its_claim() -> None:
    # HTCondor's startd publishes a claimed slot's preempting claim id, not the
    # current claim's: a schedd matched to the busy slot by RANK claims it with that.
    rig = _Rig(None)
    pre = rig.table.publish_claimed("slot1_1", EID)
    assert pre != CID and rig.table.published_id("slot1_1") == pre
    assert rig.table.slot_published_as(pre) == "slot1_1"
    assert rig.table.key(engine_id(pre)) is not None   # a schedd can open its session
    rig.table.drop(EID, "the policy ended it")
    assert rig.table.published_id("slot1_1") is None
    assert rig.table.key(engine_id(pre)) is None


def test_a_preempting_id_a_better_claim_took_stays_that_claims() -> None:
    rig = _Rig(None)
    pre = rig.table.publish_claimed("slot1_1", EID)
    better = rig.table.grant(pre, claims.RequestClaim(pre, ClassAd(), "<127.0.0.1:9618>",
                                                       300))
    nxt = rig.table.publish_claimed("slot1_1", better.eid)   # the next one's way in
    rig.engine.claims.add(better.eid)
    rig.table.drop(EID, "preempted for the better claim")
    assert better.eid in rig.table and rig.table.key(better.eid) is not None
    assert rig.table.published_id("slot1_1") == nxt
    rig.table.drop(better.eid, "released")
    assert rig.table.published_id("slot1_1") is None
    assert rig.table.key(engine_id(nxt)) is None
