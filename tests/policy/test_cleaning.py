"""Claimed/Cleaning (HTCondor 25.11): between the job's end and its starter's reaping."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.errors import PolicyError
from condorpy.policy.states import TRANSITIONS, Activity, State, check_move
from tests.policy.sim import changes, find, simulate

JOB = {"JobUniverse": 5, "Owner": "alice"}
QUIET = "RUNBENCHMARKS = False\n"
S, A = State, Activity


def test_table_enters_cleaning_only_from_running_activities() -> None:
    into = {t.source[1] for t in TRANSITIONS.values() if t.dest == (S.CLAIMED, A.CLEANING)}
    assert into == {A.BUSY, A.RETIRING, A.SUSPENDED}
    check_move("C4", S.CLAIMED, A.CLEANING, S.CLAIMED, A.IDLE, "slot1")
    with pytest.raises(PolicyError):
        check_move("C1", S.CLAIMED, A.IDLE, S.CLAIMED, A.CLEANING, "slot1")


def test_job_end_waits_in_cleaning_until_the_starter_is_reaped(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET, [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 50, "event": "job_exit", "id": "c1", "cleaning": True},
        {"t": 60, "event": "snapshot", "attrs": ["Activity"]},
        {"t": 80, "event": "starter_reaped", "id": "c1"},
        {"t": 90, "event": "snapshot", "attrs": ["Activity", "TotalTimeClaimedCleaning"]}])
    assert changes(recs) == ["start", "1", "5", "11", "C1", "C4"]
    snaps = [r["ad"] for r in recs if "ad" in r]
    assert snaps[0]["Activity"] == "Cleaning"
    assert snaps[1] == {"Activity": "Idle", "TotalTimeClaimedCleaning": 30}


def test_cleaning_slot_absorbs_a_vacate_until_reaped(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET, [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 50, "event": "job_exit", "id": "c1", "cleaning": True},
        {"t": 55, "event": "vacate"},
        {"t": 60, "event": "snapshot", "attrs": ["Activity"]},
        {"t": 70, "event": "starter_reaped", "id": "c1"},
        {"t": 80, "event": "snapshot"}])
    assert [r["ad"]["Activity"] for r in recs if "ad" in r][0] == "Cleaning"
    assert changes(recs)[4:7] == ["C1", "C4", "10"]
    assert find(recs, transition="10")[0]["t"] == 70


def test_job_exit_without_cleaning_is_unchanged(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET, [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 50, "event": "job_exit", "id": "c1"},
        {"t": 60, "event": "starter_reaped", "id": "c1"}, {"t": 61, "event": "snapshot"}])
    assert changes(recs) == ["start", "1", "5", "11", "12"]
