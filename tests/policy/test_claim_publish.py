"""Who holds a claim and which job runs on it, in the slot's ad as HTCondor's startd
publishes them (claim.cpp, Claim::publish): RemoteUser, RemoteOwner, ClientMachine,
JobId, GlobalJobId."""

from __future__ import annotations

from pathlib import Path

from condorpy.classad import Undefined
from tests.policy.engines import engine_from_text
from tests.policy.sim import simulate, snapshots

ATTRS = ["RemoteUser", "RemoteOwner", "JobId", "GlobalJobId", "ClientMachine"]
JOB = {"JobUniverse": 5, "Owner": "alice", "User": "alice@example.org", "ClusterId": 12,
       "ProcId": 3, "GlobalJobId": "ap.example.org#12.3#1700000000"}


def test_claim_and_job_attributes_follow_the_claim_and_its_job(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "RUNBENCHMARKS = False\n", [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 1, "event": "snapshot", "attrs": ATTRS},
        {"t": 2, "event": "activate", "id": "c1"},
        {"t": 3, "event": "snapshot", "attrs": ATTRS},
        {"t": 4, "event": "job_exit", "id": "c1"},
        {"t": 5, "event": "snapshot", "attrs": ATTRS},
        {"t": 6, "event": "release", "id": "c1"},
        {"t": 7, "event": "snapshot", "attrs": ATTRS}])
    claimed, busy, idle, gone = snapshots(recs)
    # RemoteOwner is the request's User, as HTCondor's startd takes it; a claim made
    # through the simulator has no client host
    who = {"RemoteUser": "alice@example.org", "RemoteOwner": "alice@example.org",
           "ClientMachine": None}
    assert claimed == {**who, "JobId": None, "GlobalJobId": None}
    assert busy == {**who, "JobId": "12.3", "GlobalJobId": JOB["GlobalJobId"]}
    assert idle == claimed      # the job is gone, the claim stays
    assert gone == {a: None for a in ATTRS}


def test_owner_stands_in_for_a_request_without_user_and_client_is_published() -> None:
    eng = engine_from_text("RUNBENCHMARKS = False\n")
    eng.request_claim(0.0, "c1", {"JobUniverse": 5, "Owner": "bob", "ClusterId": 7},
                      client="submit.example.org")
    eng.activate(1.0, "c1")
    ad = next(a for a in eng.ads() if a.evaluate("ClaimId") == "c1")
    assert ad.evaluate("RemoteOwner") == "bob"
    assert ad.evaluate("RemoteUser") is Undefined
    assert ad.evaluate("ClientMachine") == "submit.example.org"
    assert ad.evaluate("JobId") == "7.0"        # no ProcId: proc 0, as HTCondor's
