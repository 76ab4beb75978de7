"""File transfer across a shadow's reconnect (condorpy/startd/poolside/reconnect.py with
transfer.py): the stored claim carries what the output transfer needs, a
restarted daemon rebuilds the job's scratch and session from it, a reconnected
shadow's transfer server and session replace the old ones, and the scratch goes
when the claim ends for good."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from condorpy.pool import reconnect
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import Receive, Send
from condorpy.pool.shadow import GET_SEC_SESSION_INFO, SessionInfo
from condorpy.queue.jobstore import JobStore
from condorpy.startd.poolside import claimstore
from condorpy.startd.poolside.transfer import Scratch
from tests.startd.poolside.test_reconnect import CID, EID, GJID, PEER, _job, _Rig, _record, _Store

SESSION = SessionInfo("filetrans#1", "[Encryption=\"YES\";]", "s3cr3t-session-key")
KEY = "transfer-key-secret"


def _xfer_job(scratch: Path) -> Any:
    job = _job()
    job.files = Scratch(scratch, "run.sh", {"in.txt": (1_000, 3)})
    job.transfer_session = SESSION
    job.ad["TransferSocket"] = "<127.0.0.1:7000>"
    job.ad["TransferKey"] = KEY
    return job


def test_the_stored_claim_carries_the_output_transfer_and_rebuilds_it(
        tmp_path: Path) -> None:
    scratch = tmp_path / "dir_pool_3"
    scratch.mkdir()
    fields = claimstore.transfer_fields(_xfer_job(scratch))
    rec = _record(**fields)
    with JobStore(tmp_path) as store:
        store.pool.put(EID, rec.to_json())
    with JobStore(tmp_path) as store:            # a restarted daemon
        back = claimstore.stored(store.pool)[4]
    assert back == rec
    assert back.files() == Scratch(scratch, "run.sh", {"in.txt": (1_000, 3)})
    assert back.session() == SESSION
    assert (back.transfer_socket, back.transfer_key) == ("<127.0.0.1:7000>", KEY)
    # secrets stay out of what a log line of the record would show
    assert KEY not in repr(back) and SESSION.key not in repr(back)


def test_a_record_whose_scratch_is_gone_rebuilds_no_files(tmp_path: Path) -> None:
    rec = _record(scratch=str(tmp_path / "gone"))
    assert rec.files() is None
    assert _record().files() is None and _record().session() is None


@pytest.mark.parametrize("damage", [
    {"scratch": 5}, {"scratch": "relative/dir"}, {"transfer_key": None},
    {"catalog": {"a": [1]}}, {"catalog": ["a"]},
    {"transfer_session": {"sid": "x", "info": ""}},
    {"transfer_session": {"sid": "x", "info": "", "key": 1}}],
    ids=["scratch-type", "scratch-relative", "key-type", "catalog-short",
         "catalog-list", "session-missing", "session-type"])
def test_a_damaged_transfer_field_drops_the_row_with_a_log_line(
        tmp_path: Path, damage: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    raw = json.loads(_record().to_json())
    raw.update(damage)
    with JobStore(tmp_path) as store:
        store.pool.put(EID, json.dumps(raw))
        with caplog.at_level(logging.ERROR, "condorpy.startd.pool"):
            assert claimstore.stored(store.pool) == {}
        assert store.pool.all() == []
    assert "is damaged" in caplog.text


def _shadow_answer(*strings: str) -> bytes:
    w = Writer(crypto=True).put_int(0)
    for s in strings:
        w.put_string(s)
    return w.payload()


def test_a_reconnected_shadow_gets_the_output_on_its_own_transfer_server(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    scratch = tmp_path / "dir_pool_3"
    scratch.mkdir()
    job = _xfer_job(scratch)
    rig = _Rig(job, _Store(), _record(last_contact=0.0, lease=60,
                                      **claimstore.transfer_fields(job)))
    payload = reconnect.request(reconnect.RECONNECT_JOB, CID, GJID,
                                TransferSocket="<127.0.0.9:7001>",
                                TransferKey="new-key").payload()
    req = reconnect.parse_request(Reader(payload, PEER, crypto=True))
    with caplog.at_level(logging.DEBUG, "condorpy.startd.pool"):
        gen = rig.server.serve(req, EID, "127.0.0.9:5", object())  # type: ignore[arg-type]
        assert isinstance(next(gen), Send)               # CA_RECONNECT_JOB's success
        ask = next(gen)                                  # the session, asked again
        assert isinstance(ask, Send)
        assert Reader(ask.payload, PEER, crypto=True).get_int("n") == GET_SEC_SESSION_INFO
        assert isinstance(next(gen), Receive)
        with pytest.raises(StopIteration):
            gen.send(_shadow_answer("claim#1", "[]", "k1", "filetrans#2", "[]", "k2"))
    assert rig.shadows.loops == ["127.0.0.9:5"]
    assert job.ad["TransferSocket"] == "<127.0.0.9:7001>"
    assert job.ad["TransferKey"] == "new-key"
    assert job.transfer_session == SessionInfo("filetrans#2", "[]", "k2")
    rec = rig.table.row(EID)                             # what a restart would use
    assert rec is not None
    assert (rec.transfer_socket, rec.transfer_key) == ("<127.0.0.9:7001>", "new-key")
    assert rec.session() == SessionInfo("filetrans#2", "[]", "k2")
    for secret in ("new-key", "k2", KEY, SESSION.key):
        assert secret not in caplog.text


def test_a_shadow_that_answers_no_session_keeps_the_earlier_one(tmp_path: Path) -> None:
    job = _xfer_job(tmp_path)
    rig = _Rig(job, row=_record(last_contact=0.0, lease=60))
    payload = reconnect.request(reconnect.RECONNECT_JOB, CID, GJID).payload()
    req = reconnect.parse_request(Reader(payload, PEER, crypto=True))
    gen = rig.server.serve(req, EID, PEER, object())  # type: ignore[arg-type]
    next(gen), next(gen), next(gen)
    with pytest.raises(StopIteration):
        gen.send(Writer(crypto=True).put_int(-1).put_int(22).payload())
    assert job.transfer_session == SESSION
    assert job.ad["TransferSocket"] == "<127.0.0.1:7000>"


def test_an_ended_jobs_scratch_stays_until_its_lease_runs_out(tmp_path: Path) -> None:
    scratch = tmp_path / "dir_pool_3"
    (scratch / "out.txt").parent.mkdir()
    (scratch / "out.txt").write_text("result\n")
    job = _xfer_job(scratch)
    job.lease, job.last_contact = 60, 0.0
    job.ended, job.final = True, {"ExitCode": 0}
    rig = _Rig(job, row=_record(last_contact=0.0, lease=60,
                                **claimstore.transfer_fields(job)))
    assert rig.table.awaits_shadow(job)
    rig.leases.shadow_lost(job)
    rig.clock.advance(59)
    rig.leases.tick()
    assert (scratch / "out.txt").read_text() == "result\n"
    rig.clock.advance(1)
    rig.leases.tick()
    assert not scratch.exists() and rig.engine.released == [EID]


def test_a_released_claims_scratch_is_removed(tmp_path: Path) -> None:
    scratch = tmp_path / "dir_pool_3"
    scratch.mkdir()
    job = _xfer_job(scratch)
    job.ended = True
    store = _Store()
    rig = _Rig(job, store, _record(**claimstore.transfer_fields(job)))
    store.rows[EID] = "the row"
    rig.table.drop(EID, "released by its schedd")
    assert not scratch.exists() and store.rows == {} and rig.table.jobs() == []


def test_an_evicted_jobs_scratch_stays_for_its_connected_shadow(tmp_path: Path) -> None:
    # a vacate ends the claim while the shadow still waits for ON_EXIT_OR_EVICT output
    scratch = tmp_path / "dir_pool_3"
    scratch.mkdir()
    job = _xfer_job(scratch)
    job.ended = True
    job.exchange = object()                             # type: ignore[assignment]
    store = _Store()
    rig = _Rig(job, store, _record(**claimstore.transfer_fields(job)))
    store.rows[EID] = "the row"
    rig.table.drop(EID, "the policy ended it")
    assert scratch.exists() and store.rows == {}
    assert rig.table.job(EID) is job                     # its shadow still hears its end
