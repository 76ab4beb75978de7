"""Claims: leases and keep-alives, CLAIM_WORKLIFE, d-slots, _VANILLA, latches, cadence."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.errors import TimelineError
from condorpy.policy.records import Action
from tests.policy.engines import ONE_DESKTOP_SLOT, engine_from_text
from tests.policy.sim import actions, changes, find, simulate, snapshots

JOB = {"JobUniverse": 5, "Owner": "alice"}
QUIET = "RUNBENCHMARKS = False\n"


def test_claim_lease_from_job_lease_duration_and_alive(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET, [
        {"t": 0, "event": "request_claim", "id": "c1", "job": {**JOB, "JobLeaseDuration": 60}},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 50, "event": "alive", "id": "c1"}, {"t": 200, "event": "snapshot"}])
    ended = find(recs, transition="H")
    # The keep-alive at 50 moves the expiry from 60 to 110 (seen at the next 5 s poll).
    assert ended and ended[0]["t"] == 115 and "lease" in ended[0]["reason"]


def test_claim_lease_default_is_alives_missed_times_interval(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET + "ALIVE_INTERVAL = 10\nMAX_CLAIM_ALIVES_MISSED = 3\n", [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 100, "event": "snapshot"}])
    assert find(recs, transition="10")[0]["t"] == 35


def test_claim_worklife(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET + "CLAIM_WORKLIFE = 100\n", [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 50, "event": "job_exit", "id": "c1"},
        {"t": 60, "event": "activate", "id": "c1"},
        {"t": 150, "event": "job_exit", "id": "c1"}, {"t": 160, "event": "snapshot"}])
    # A second job may start at 60 (worklife not over); once it exits at 150 the claim,
    # now older than 100 s, is given up.
    assert changes(recs) == ["start", "1", "5", "11", "12", "11", "12", "10", "22", "1"]
    assert "CLAIM_WORKLIFE" in find(recs, transition="10")[0]["reason"]


def test_partitionable_slot_carves_and_deletes_dynamic_slots(tmp_path: Path) -> None:
    cfg = QUIET + "SLOT_TYPE_1_PARTITIONABLE = True\nNUM_CPUS = 4\nMEMORY = 4096\n"
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "event": "request_claim", "id": "a", "job": {**JOB, "RequestCpus": 3,
                                                              "RequestMemory": 1000}},
        {"t": 0, "event": "request_claim", "id": "b", "job": {**JOB, "RequestCpus": 2}},
        {"t": 1, "event": "snapshot", "attrs": ["Cpus", "Memory", "State"]},
        {"t": 5, "event": "activate", "id": "a"},
        {"t": 10, "event": "job_exit", "id": "a"},
        {"t": 11, "event": "release", "id": "a"},
        {"t": 12, "event": "snapshot", "attrs": ["Cpus", "Memory"]}])
    assert changes(recs, "slot1_1") == ["5", "11", "12", "10", "22"]
    assert find(recs, action="claim_refused", claim="b")[0]["reason"].startswith(
        "insufficient Cpus")
    # The request is rounded up to HTCondor's 128 MB quantum.
    assert snapshots(recs, "slot1")[0] == {"Cpus": 1, "Memory": 3072, "State": "Unclaimed"}
    assert snapshots(recs, "slot1_1")[0] == {"Cpus": 3, "Memory": 1024, "State": "Claimed"}
    assert (11, "delete_slot") in actions(recs, "slot1_1")
    assert snapshots(recs, "slot1")[1] == {"Cpus": 4, "Memory": 4096}
    assert not snapshots(recs, "slot1_1")[1:]


def test_vanilla_variants_chosen_by_universe(tmp_path: Path) -> None:
    cfg = QUIET + ("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\n"
                   "WANT_SUSPEND_VANILLA = True\nSUSPEND_VANILLA = False\n")
    tl = [{"t": 0, "set": {"KeyboardIdle": 10000}},
          {"t": 0, "event": "request_claim", "id": "c1", "job": {"JobUniverse": 0}},
          {"t": 0, "event": "activate", "id": "c1"},
          {"t": 10, "set": {"KeyboardIdle": 0}}, {"t": 20, "event": "snapshot"}]
    assert "14" in changes(simulate(tmp_path, cfg, tl))
    tl[1] = {"t": 0, "event": "request_claim", "id": "c1", "job": {"JobUniverse": 5}}
    assert "14" not in changes(simulate(tmp_path, cfg, tl))


def test_latched_expression_value_and_time(tmp_path: Path) -> None:
    cfg = QUIET + "STARTD_LATCH_EXPRS = CpuBusy\nCpuBusy = (LoadAvg - CondorLoadAvg) >= 0.5\n"
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": {"LoadAvg": 0.0}},
        {"t": 100, "set": {"LoadAvg": 1.0}},
        {"t": 400, "event": "snapshot", "attrs": ["CpuBusyValue", "CpuBusyTime"]},
        {"t": 500, "event": "snapshot", "attrs": ["CpuBusyValue", "CpuBusyTime"]}])
    # The value changed at the cycle of 300; it stays latched with its time after that.
    assert snapshots(recs) == [{"CpuBusyValue": 1, "CpuBusyTime": 300}] * 2


def test_requirements_false_while_preempting(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET, [
        {"t": 0, "event": "request_claim", "id": "c1", "job": {**JOB, "SimVacateSeconds": 30}},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 5, "event": "snapshot", "attrs": ["Requirements"]},
        {"t": 10, "event": "vacate"},
        {"t": 15, "event": "snapshot", "attrs": ["Requirements", "State"]}])
    assert snapshots(recs) == [{"Requirements": True},
                               {"Requirements": False, "State": "Preempting"}]


def test_polling_cadence() -> None:
    eng = engine_from_text(ONE_DESKTOP_SLOT + "POLLING_INTERVAL = 7\nUPDATE_INTERVAL = 90\n"
                           "RUNBENCHMARKS = False\n")
    eng.cycle(0)
    assert eng.poll_interval() == 90
    eng.request_claim(1, "c1", JOB)
    assert eng.poll_interval() == 7
    eng.release(2, "c1")
    assert eng.poll_interval() == 90


def test_cycles_follow_the_cadence(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET + "POLLING_INTERVAL = 7\nUPDATE_INTERVAL = 90\n"
                    "IS_OWNER = KeyboardIdle < 100\n", [
        {"t": 0, "set": {"KeyboardIdle": 0}}, {"t": 400, "event": "snapshot"}])
    # Owner: re-evaluated every POLLING_INTERVAL (issue 23: HTCondor waits for
    # UPDATE_INTERVAL), so the slot leaves Owner at 105, within 7 s of 100, not at 180.
    assert find(recs, transition="1")[0]["t"] == 105
    # Unclaimed: still polled every 90 s, so the owner is noticed back at 180, not 100.
    recs = simulate(tmp_path, QUIET + "POLLING_INTERVAL = 7\nUPDATE_INTERVAL = 90\n"
                    "IS_OWNER = KeyboardIdle >= 100\n", [
        {"t": 0, "set": {"KeyboardIdle": 0}}, {"t": 400, "event": "snapshot"}])
    assert find(recs, transition="2")[0]["t"] == 180


def test_two_slot_suspension_example_with_slot_attrs(tmp_path: Path) -> None:
    # The manual's example with DETECTED_CORES = 1: slot1 nonsuspendable, slot2 suspendable.
    cfg = QUIET + """NUM_SLOTS = 2
NUM_CPUS = 2
IsSuspendableSlot = SlotID > 1
NonSuspendableSlotState = eval(strcat("slot",SlotID-1,"_State"))
STARTD_SLOT_ATTRS = State
STARTD_ATTRS = IsSuspendableSlot NonSuspendableSlotState
MyNonSuspendableSlotIsIdle = \\
  (NonSuspendableSlotState =!= "Claimed" && NonSuspendableSlotState =!= "Preempting")
START = \\
  IsSuspendableSlot!=True && IsSuspendableJob=!=True || \\
  IsSuspendableSlot && IsSuspendableJob==True && $(MyNonSuspendableSlotIsIdle)
SUSPEND = \\
  IsSuspendableSlot && $(MyNonSuspendableSlotIsIdle)!=True
WANT_SUSPEND = $(SUSPEND)
CONTINUE = ($(SUSPEND)) != True
"""
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "event": "request_claim", "id": "s", "slot": "slot2",
         "job": {**JOB, "IsSuspendableJob": True}},
        {"t": 0, "event": "activate", "id": "s"},
        {"t": 10, "event": "request_claim", "id": "n", "slot": "slot1", "job": JOB},
        {"t": 10, "event": "activate", "id": "n"},
        {"t": 40, "event": "job_exit", "id": "n"},
        {"t": 41, "event": "release", "id": "n"},
        {"t": 60, "event": "snapshot", "attrs": ["slot1_State", "State", "Activity"]}])
    # The suspendable job is suspended while slot1 is claimed and resumed afterwards.
    assert changes(recs, "slot2") == ["start", "1", "5", "11", "14", "15"]
    assert find(recs, slot="slot2", transition="14")[0]["t"] == 10
    assert find(recs, slot="slot2", transition="15")[0]["t"] == 45
    assert snapshots(recs, "slot2")[0] == {"slot1_State": "Unclaimed", "State": "Claimed",
                                           "Activity": "Busy"}
    # A nonsuspendable job is not wanted on slot2.
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "event": "request_claim", "id": "x", "slot": "slot2", "job": JOB}])
    assert find(recs, action="claim_refused", claim="x")


def test_timeline_errors_name_file_and_line(tmp_path: Path) -> None:
    for bad, msg in (('{"t": 0, "set": {"A": 1}}\n{"t": 1}\n', "exactly one"),
                     ('{"t": 0, "event": "dance"}\n', "unknown event"),
                     ('not json\n', "not JSON"),
                     ('{"t": 0, "event": "activate"}\n', "needs 'id'"),
                     ('{"t": 0, "event": "release", "id": "nope"}\n', "no claim"),
                     ('{"t": 0, "event": "activate", "id": "nope"}\n', "no claim")):
        with pytest.raises(TimelineError) as err:
            simulate(tmp_path, "", bad)
        assert msg in str(err.value)
        assert "timeline.jsonl, line" in str(err.value)
        assert err.value.line == bad.count("\n")


def test_killing_timeout_kills_the_starter_once() -> None:
    eng = engine_from_text(ONE_DESKTOP_SLOT + "WANT_VACATE = False\nKILLING_TIMEOUT = 15\n"
                           "RUNBENCHMARKS = False\n")
    eng.cycle(0)
    eng.request_claim(0, "c1", JOB)
    eng.activate(0, "c1")
    out = eng.vacate(10)
    assert [o.kind for o in out if isinstance(o, Action)] == ["hard_kill"]
    # The starter does not report the job gone: after KILLING_TIMEOUT it is killed too.
    assert not [o for o in eng.cycle(20) if isinstance(o, Action)]
    late = [o for o in eng.cycle(25) if isinstance(o, Action)]
    assert [o.kind for o in late] == ["kill_starter"]
    assert not [o for o in eng.cycle(30) if isinstance(o, Action)]
    done = eng.job_exit(31, "c1")
    assert [getattr(o, "transition", None) for o in done][-2:] == ["25", "1"]


def test_every_transition_of_the_manual_is_known() -> None:
    from condorpy.policy.states import TRANSITIONS
    numbers = {k for k in TRANSITIONS if k.isdigit()}
    assert numbers == {str(n) for n in range(1, 38)}
    letters = {t.letter for t in TRANSITIONS.values() if t.letter}
    assert letters == set("ABCDEFGHIJKLMNOP")


def test_job_and_claim_counters_leave_out_suspension(tmp_path: Path) -> None:
    cfg = QUIET + ("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\n"
                   "CONTINUE = KeyboardIdle > 100\n")
    attrs = ["TotalJobRunTime", "TotalJobSuspendTime", "TotalClaimRunTime",
             "TotalClaimSuspendTime", "RemoteOwner"]
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": {"KeyboardIdle": 10000}},
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 50, "set": {"KeyboardIdle": 0}},
        {"t": 200, "event": "snapshot", "attrs": attrs},
        {"t": 210, "event": "job_exit", "id": "c1"},
        {"t": 220, "event": "activate", "id": "c1"},
        {"t": 250, "event": "snapshot", "attrs": attrs}])
    # Suspended 50..155 (CONTINUE once KeyboardIdle > 100: at the 155 poll).
    assert snapshots(recs)[0] == {"TotalJobRunTime": 95, "TotalJobSuspendTime": 105,
                                  "TotalClaimRunTime": 95, "TotalClaimSuspendTime": 105,
                                  "RemoteOwner": "alice"}
    # The first job ran 105 s of its 210; the second has run 30 s.
    assert snapshots(recs)[1] == {"TotalJobRunTime": 30, "TotalJobSuspendTime": 0,
                                  "TotalClaimRunTime": 135, "TotalClaimSuspendTime": 105,
                                  "RemoteOwner": "alice"}


def test_latch_with_slot_own_measurement_is_not_shared(tmp_path: Path) -> None:
    cfg = QUIET + ("NUM_SLOTS = 2\nNUM_CPUS = 2\nSTARTD_LATCH_EXPRS = CpuBusy\n"
                   "CpuBusy = (LoadAvg - CondorLoadAvg) >= 0.5\n")
    # The machine's load of 2.0 is slot2's job (1.0) and the owner's (1.0), which the
    # slot layer gives to the slot without a job first.
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": {"LoadAvg": 2.0, "CondorLoadAvg": 0.0}},
        {"t": 0, "set": {"CondorLoadAvg": 1.0}, "slot": "slot2"},
        {"t": 10, "event": "snapshot", "attrs": ["CpuBusyValue"]}])
    assert snapshots(recs, "slot1") == [{"CpuBusyValue": 1}]
    assert snapshots(recs, "slot2") == [{"CpuBusyValue": 0}]


def test_release_without_id_releases_every_claim(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET + "NUM_SLOTS = 2\nNUM_CPUS = 2\n", [
        {"t": 0, "event": "request_claim", "id": "a", "job": JOB, "slot": "slot1"},
        {"t": 0, "event": "request_claim", "id": "b", "job": JOB, "slot": "slot2"},
        {"t": 10, "event": "alive"}, {"t": 20, "event": "release"}])
    assert changes(recs, "slot1") == changes(recs, "slot2") == ["start", "1", "5", "10", "22",
                                                                "1"]
