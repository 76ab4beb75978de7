"""Backfill (7, 26-32, E K L M), draining (33-37, N O P), shutdown and hibernation."""

from __future__ import annotations

from pathlib import Path

from tests.policy.sim import actions, changes, find, simulate, snapshots

BACKFILL = ("ENABLE_BACKFILL = True\nSTART_BACKFILL = KeyboardIdle > 600\n"
            "EVICT_BACKFILL = KeyboardIdle < 60\nRUNBENCHMARKS = False\n")
JOB = {"JobUniverse": 5, "Owner": "alice"}


def test_7_26_backfill_starts(tmp_path: Path) -> None:
    recs = simulate(tmp_path, BACKFILL, [{"t": 0, "set": {"KeyboardIdle": 1000}},
                                         {"t": 10, "event": "snapshot"}])
    assert changes(recs) == ["start", "1", "7", "26"]
    assert find(recs, transition="7")[0]["letter"] == "E"
    assert (0, "start_backfill") in actions(recs)


def test_27_backfill_client_exits_and_restarts(tmp_path: Path) -> None:
    recs = simulate(tmp_path, BACKFILL, [{"t": 0, "set": {"KeyboardIdle": 1000}},
                                         {"t": 10, "event": "backfill_exit"}])
    assert changes(recs) == ["start", "1", "7", "26", "27", "26"]


def test_28_29_30_K_evicted_by_owner(tmp_path: Path) -> None:
    recs = simulate(tmp_path, BACKFILL + "IS_OWNER = KeyboardIdle < 60\n", [
        {"t": 0, "set": {"KeyboardIdle": 1000}}, {"t": 10, "set": {"KeyboardIdle": 0}},
        {"t": 20, "event": "snapshot"}])
    assert changes(recs) == ["start", "1", "7", "26", "28", "29", "30"]
    assert find(recs, transition="30")[0]["letter"] == "K"
    assert (20, "kill_backfill") in actions(recs)


def test_32_L_matched_while_in_backfill(tmp_path: Path) -> None:
    recs = simulate(tmp_path, BACKFILL, [{"t": 0, "set": {"KeyboardIdle": 1000}},
                                         {"t": 10, "event": "match"}])
    assert changes(recs) == ["start", "1", "7", "26", "28", "29", "32"]
    assert find(recs, transition="32")[0]["letter"] == "L"


def test_31_M_claimed_while_in_backfill(tmp_path: Path) -> None:
    recs = simulate(tmp_path, BACKFILL, [
        {"t": 0, "set": {"KeyboardIdle": 1000}},
        {"t": 10, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 11, "event": "activate", "id": "c1"}])
    assert changes(recs) == ["start", "1", "7", "26", "28", "29", "31", "11"]
    assert find(recs, transition="31")[0]["letter"] == "M"


def test_36_37_33_34_graceful_drain_with_resume(tmp_path: Path) -> None:
    cfg = "NUM_SLOTS = 2\nNUM_CPUS = 2\nMAXJOBRETIREMENTTIME = 100\nRUNBENCHMARKS = False\n" \
          "SLOTS_CONNECTED_TO_KEYBOARD = 2\n" \
          "MachineMaxVacateTime = 0\nIS_OWNER = SlotID == 2 && KeyboardIdle < 60\n"
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": {"KeyboardIdle": 0}},
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB, "slot": "slot1"},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "drain", "how": "graceful", "reason": "defrag",
         "on_completion": "resume"},
        {"t": 20, "event": "snapshot", "attrs": ["Draining", "DrainReason", "Requirements"]},
        {"t": 50, "event": "job_exit", "id": "c1"},
        {"t": 60, "event": "snapshot", "attrs": ["State", "TotalMachineDrainingBadput"]}])
    # slot2 is the owner's until KeyboardIdle passes 60 at t=60.
    assert changes(recs, "slot2") == ["start", "36", "33", "34", "1"]
    assert find(recs, transition="1", slot="slot2")[0]["t"] == 60
    assert changes(recs, "slot1") == ["start", "1", "5", "11", "13", "18", "22", "36", "33",
                                      "34", "1"]
    assert find(recs, transition="36")[0]["letter"] == "N"
    assert find(recs, transition="34")[0]["letter"] == "O"
    assert snapshots(recs)[0] == {"Draining": True, "DrainReason": "defrag",
                                  "Requirements": False}
    # The job finished by itself within its retirement: no badput.
    assert snapshots(recs)[1]["TotalMachineDrainingBadput"] == 0
    done = find(recs, action="drain_complete")[0]
    # slot2 sat drained and unclaimed from 10 to 50 on its one core.
    assert done["t"] == 50 and done["unclaimed"] == 40 and done["badput"] == 0


def test_37_P_and_35_cancel(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "NUM_SLOTS = 2\nNUM_CPUS = 2\nRUNBENCHMARKS = False\n"
                    "MAXJOBRETIREMENTTIME = 1000\nMachineMaxVacateTime = 0\n", [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB, "slot": "slot1"},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "drain", "how": "graceful", "on_completion": "nothing"},
        {"t": 20, "event": "cancel_drain"}, {"t": 30, "event": "snapshot"}])
    assert changes(recs, "slot2") == ["start", "1", "37", "35", "1"]
    assert find(recs, transition="37")[0]["letter"] == "P"
    # The retiring job goes back to work when the drain is cancelled (19).
    assert changes(recs, "slot1") == ["start", "1", "5", "11", "13", "19"]


def test_graceful_drain_coordinates_to_the_longest_retirement(tmp_path: Path) -> None:
    cfg = ("NUM_SLOTS = 2\nNUM_CPUS = 2\nRUNBENCHMARKS = False\nMachineMaxVacateTime = 0\n"
           "MAXJOBRETIREMENTTIME = 1000\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "event": "request_claim", "id": "a", "job": {**JOB, "MaxJobRetirementTime": 100},
         "slot": "slot1"},
        {"t": 0, "event": "request_claim", "id": "b", "job": {**JOB, "MaxJobRetirementTime": 300},
         "slot": "slot2"},
        {"t": 0, "event": "activate", "id": "a"}, {"t": 0, "event": "activate", "id": "b"},
        {"t": 50, "event": "drain", "how": "graceful", "on_completion": "nothing"},
        {"t": 400, "event": "snapshot", "attrs": ["State", "Activity",
                                                  "TotalMachineDrainingBadput"]}])
    # Both jobs retire until the longest retirement (b's, at 300) ends.
    assert find(recs, slot="slot1", transition="18")[0]["t"] == 300
    assert find(recs, slot="slot2", transition="18")[0]["t"] == 300
    ad = snapshots(recs)[0]
    assert ad["State"] == "Drained" and ad["Activity"] == "Idle"
    assert ad["TotalMachineDrainingBadput"] == 600   # two jobs of 300 s on one core each


def test_quick_and_fast_drain(tmp_path: Path) -> None:
    # quick: as HTCondor's startd, the claim retires with no retirement time (13, 18),
    # vacate time granted; fast: killed at once
    for how, act, keys in (("quick", "soft_kill", ["13", "18", "22", "36"]),
                           ("fast", "hard_kill", ["Hk", "25", "36"])):
        recs = simulate(tmp_path, "MAXJOBRETIREMENTTIME = 1000\nRUNBENCHMARKS = False\n", [
            {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
            {"t": 0, "event": "activate", "id": "c1"},
            {"t": 10, "event": "drain", "how": how, "on_completion": "exit"}])
        assert changes(recs)[4:4 + len(keys)] == keys
        assert (10, act) in actions(recs)
        assert find(recs, action="exit")[0]["t"] == 10


def test_drain_check_expression_refuses(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "RUNBENCHMARKS = False\n", [
        {"t": 10, "event": "drain", "check": "State == \"Claimed\""}])
    assert find(recs, action="drain_refused")
    assert changes(recs) == ["start", "1"]


def test_drain_start_expression_admits_jobs(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "RUNBENCHMARKS = False\nSLOT_TYPE_1_PARTITIONABLE = True\n"
                    "NUM_CPUS = 4\n", [
        {"t": 10, "event": "drain", "on_completion": "nothing",
         "start": "TARGET.Owner == \"ops\""},
        {"t": 20, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 20, "event": "request_claim", "id": "c2", "job": {**JOB, "Owner": "ops"}}])
    assert find(recs, action="claim_refused", claim="c1")
    assert find(recs, action="claim_accepted", claim="c2")


def test_shutdown_graceful_peaceful_fast(tmp_path: Path) -> None:
    cfg = "MAXJOBRETIREMENTTIME = 100\nMachineMaxVacateTime = 0\nRUNBENCHMARKS = False\n"
    base = [{"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
            {"t": 0, "event": "activate", "id": "c1"}]
    graceful = simulate(tmp_path, cfg, base + [{"t": 10, "event": "off", "how": "graceful"}],
                        until=1000)
    assert find(graceful, action="exit")[0]["t"] == 100
    peaceful = simulate(tmp_path, cfg, base + [{"t": 10, "event": "off", "how": "peaceful"},
                                               {"t": 500, "event": "job_exit", "id": "c1"}])
    assert find(peaceful, action="exit")[0]["t"] == 500
    assert not find(peaceful, action="soft_kill")
    fast = simulate(tmp_path, cfg, base + [{"t": 10, "event": "off", "how": "fast"}])
    assert find(fast, action="hard_kill")[0]["t"] == 10
    assert find(fast, action="exit")[0]["t"] == 10


def test_hibernate_all_slots_must_agree_largest_wins(tmp_path: Path) -> None:
    cfg = ("NUM_SLOTS = 2\nNUM_CPUS = 2\nRUNBENCHMARKS = False\nHIBERNATE_CHECK_INTERVAL = 60\n"
           "SLOTS_CONNECTED_TO_KEYBOARD = 2\n"
           "SLOT1_HIBERNATE = ifThenElse(KeyboardIdle > 1000, \"RAM\", \"NONE\")\n"
           "SLOT2_HIBERNATE = ifThenElse(KeyboardIdle > 2000, \"DISK\", \"NONE\")\n")
    recs = simulate(tmp_path, cfg, [{"t": 0, "set": {"KeyboardIdle": 0}},
                                    {"t": 3000, "event": "snapshot", "attrs": ["State"]}])
    hib = find(recs, action="hibernate")
    # slot1 wants RAM from 1000 s but slot2 only agrees (with DISK) after 2000 s.
    assert hib and hib[0]["level"] == "DISK" and 2000 <= hib[0]["t"] <= 2400
