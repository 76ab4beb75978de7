"""A scenario for each numbered (1-37) and lettered (A-P) transition of the manual."""

from __future__ import annotations

from pathlib import Path

from tests.policy.sim import actions, changes, find, simulate, states

JOB = {"JobUniverse": 5, "Owner": "alice"}
IDLE_KB = {"KeyboardIdle": 100000}


def claim(t: float, cid: str = "c1", **job: object) -> dict[str, object]:
    return {"t": t, "event": "request_claim", "id": cid, "job": {**JOB, **job}}


def test_1_A_owner_to_unclaimed_when_is_owner_false(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "IS_OWNER = KeyboardIdle < 60\n", [
        {"t": 0, "set": {"KeyboardIdle": 10}},
        {"t": 400, "event": "snapshot", "attrs": ["State"]},
    ])
    # KeyboardIdle ages with the clock: owner until it reaches 60 at 50 s; an Owner slot
    # is re-evaluated every POLLING_INTERVAL (5 s), so it leaves then, not at the
    # UPDATE_INTERVAL poll (300 s).
    assert states(recs) == [(0, "Owner", "Idle"), (50, "Unclaimed", "Idle")]
    assert find(recs, slot="slot1", transition="1")[0]["letter"] == "A"


def test_2_B_unclaimed_to_owner(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "IS_OWNER = KeyboardIdle < 60\n", [
        {"t": 0, "set": IDLE_KB}, {"t": 50, "set": {"KeyboardIdle": 0}},
        {"t": 60, "event": "snapshot"},
    ])
    assert changes(recs) == ["start", "1", "2"]
    assert find(recs, transition="2")[0]["letter"] == "B"


def test_3_4_benchmarks(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "RUNBENCHMARKS = LastBenchmark == 0\n", [
        {"t": 10, "event": "snapshot", "attrs": ["LastBenchmark", "Activity"]}])
    assert changes(recs, benchmarks=True) == ["start", "1", "3", "4"]
    assert (0, "run_benchmarks") in actions(recs)
    # LastBenchmark is set (never to 0), so the benchmarks do not run again.
    assert recs[-1]["ad"] == {"LastBenchmark": 1, "Activity": "Idle"}


def test_3_4_benchmarks_never_with_false(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "RUNBENCHMARKS = False\n", [{"t": 700, "event": "snapshot"}])
    assert changes(recs, benchmarks=True) == ["start", "1"]


def test_5_D_unclaimed_to_claimed(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "", [claim(10)])
    assert changes(recs) == ["start", "1", "5"]
    assert find(recs, transition="5")[0]["letter"] == "D"
    assert (10, "claim_accepted") in actions(recs)


def test_6_C_and_9_G_matched_then_claimed(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "", [
        {"t": 10, "event": "match"},
        {"t": 11, "event": "snapshot", "attrs": ["Requirements", "State"]},
        claim(20)])
    assert changes(recs) == ["start", "1", "6", "9"]
    assert find(recs, transition="6")[0]["letter"] == "C"
    assert find(recs, transition="9")[0]["letter"] == "G"
    # A matched slot advertises Requirements = False so it is not matched twice.
    assert find(recs, t=11, slot="slot1")[0]["ad"] == {"Requirements": False,
                                                       "State": "Matched"}


def test_8_F_match_timeout(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "MATCH_TIMEOUT = 30\nPOLLING_INTERVAL = 5\n", [
        {"t": 10, "event": "match"}, {"t": 100, "event": "snapshot"}])
    st = states(recs)
    assert ("Matched", "Idle") == st[2][1:]
    owner = find(recs, transition="8")[0]
    assert owner["t"] == 40 and owner["letter"] == "F" and "MATCH_TIMEOUT" in owner["reason"]
    # ... and, START not being False, straight back to Unclaimed (A).
    assert changes(recs) == ["start", "1", "6", "8", "1"]


def test_8_F_start_false_while_matched(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "START = KeyboardIdle > 60\nIS_OWNER = START =?= False\n", [
        {"t": 0, "set": IDLE_KB}, {"t": 10, "event": "match"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 30, "event": "snapshot"}])
    assert changes(recs) == ["start", "1", "6", "8"]
    assert "START" in find(recs, transition="8")[0]["reason"]


def test_10_H_release_of_idle_claim_and_22_J(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "", [claim(10), {"t": 20, "event": "release", "id": "c1"}])
    assert changes(recs) == ["start", "1", "5", "10", "22", "1"]
    assert find(recs, transition="10")[0]["letter"] == "H"
    assert find(recs, transition="22")[0]["letter"] == "J"


def test_10_claimed_idle_start_locally_false(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "START = KeyboardIdle > 60\n", [
        {"t": 0, "set": IDLE_KB}, claim(10), {"t": 20, "set": {"KeyboardIdle": 0}},
        {"t": 30, "event": "snapshot"}])
    assert changes(recs)[:5] == ["start", "1", "5", "10", "22"]


def test_11_12_activate_and_job_exit(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "", [claim(10), {"t": 12, "event": "activate", "id": "c1"},
                                   {"t": 50, "event": "job_exit", "id": "c1", "exit_code": 0}])
    assert changes(recs) == ["start", "1", "5", "11", "12"]
    assert (12, "start_job") in actions(recs)
    assert find(recs, action="job_exited")[0]["exit_code"] == 0


def test_13_18_preempt_retire_then_vacate(tmp_path: Path) -> None:
    cfg = "PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 100\n"
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(10), {"t": 10, "event": "activate", "id": "c1"},
        {"t": 30, "set": {"KeyboardIdle": 0}}, {"t": 200, "event": "snapshot"}])
    assert changes(recs)[:7] == ["start", "1", "5", "11", "13", "18", "22"]
    # The job started at 10 with 100 s of retirement and 600 s of vacate time granted by
    # MachineMaxVacateTime: no retirement left to convert, so preempted at once.
    retire = find(recs, transition="13")[0]
    assert retire["t"] == 30 and "PREEMPT" in retire["reason"]


def test_18_retirement_runs_out_with_short_vacate(tmp_path: Path) -> None:
    cfg = ("PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 100\n"
           "MachineMaxVacateTime = 10\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 200, "event": "snapshot"}])
    # Soft kill 10 s (the vacate time) before retirement ends at 100.
    assert find(recs, transition="18")[0]["t"] == 90
    assert find(recs, action="soft_kill")[0]["t"] == 90


def test_18_job_exits_during_retirement(tmp_path: Path) -> None:
    cfg = "PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 1000\n"
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}},
        {"t": 70, "event": "job_exit", "id": "c1"}, {"t": 80, "event": "snapshot"}])
    assert changes(recs)[:7] == ["start", "1", "5", "11", "13", "18", "22"]
    assert find(recs, transition="18")[0]["t"] == 70
    assert not find(recs, action="soft_kill")


def test_job_may_only_shorten_retirement(tmp_path: Path) -> None:
    cfg = ("PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 100\n"
           "MachineMaxVacateTime = 0\n")
    for own, expect in ((40, 40), (500, 100)):
        recs = simulate(tmp_path, cfg, [
            {"t": 0, "set": IDLE_KB}, claim(0, MaxJobRetirementTime=own),
            {"t": 0, "event": "activate", "id": "c1"},
            {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 300, "event": "snapshot"}])
        assert find(recs, transition="18")[0]["t"] == expect


def test_14_15_suspend_and_continue(tmp_path: Path) -> None:
    cfg = ("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\n"
           "CONTINUE = KeyboardIdle > 120\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 300, "event": "snapshot"}])
    assert changes(recs)[:6] == ["start", "1", "5", "11", "14", "15"]
    assert find(recs, transition="14")[0]["t"] == 20
    # KeyboardIdle grows by itself: 121 s after the keystroke at 20.
    assert find(recs, transition="15")[0]["t"] == 145
    assert [a for _, a in actions(recs)].count("suspend") == 1
    assert [a for _, a in actions(recs)].count("continue") == 1


def test_16_17_preempt_while_suspended(tmp_path: Path) -> None:
    cfg = ("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = False\n"
           "PREEMPT = Activity == \"Suspended\" && (time() - EnteredCurrentActivity) > 100\n"
           "MAXJOBRETIREMENTTIME = {mrt}\nMachineMaxVacateTime = 0\n")
    # No retirement left: as in HTCondor's startd, the job is still resumed to retire
    # (16), and retirement ends at once (18); the job hears of the resume first.
    recs = simulate(tmp_path, cfg.format(mrt=0), [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 300, "event": "snapshot"}])
    assert changes(recs)[:7] == ["start", "1", "5", "11", "14", "16", "18"]
    assert find(recs, transition="16")[0]["t"] == 125
    assert find(recs, transition="18")[0]["t"] == 125
    assert [a for t, a in actions(recs) if t == 125][:2] == ["continue", "soft_kill"]
    # With retirement left the job resumes to retire (16), then retirement ends (18).
    recs = simulate(tmp_path, cfg.format(mrt=1000), [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 2000, "event": "snapshot"}])
    assert changes(recs)[:6] == ["start", "1", "5", "11", "14", "16"]
    # Suspension (20 .. 125) does not count against the retirement time.
    assert find(recs, transition="18")[0]["t"] == 1105


def test_20_then_16_suspend_during_retirement(tmp_path: Path) -> None:
    cfg = ("WANT_SUSPEND = True\nSUSPEND = ConsoleIdle < 60\nCONTINUE = ConsoleIdle > 100\n"
           "MAXJOBRETIREMENTTIME = 1000\nMachineMaxVacateTime = 0\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": {"ConsoleIdle": 100000}}, claim(0),
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "off", "how": "graceful"},
        {"t": 20, "set": {"ConsoleIdle": 0}}, {"t": 200, "event": "snapshot"}])
    assert changes(recs)[:7] == ["start", "1", "5", "11", "13", "20", "16"]


def test_19_rank_preemption_cancelled(tmp_path: Path) -> None:
    cfg = "RANK = TARGET.Owner == \"bob\"\nMAXJOBRETIREMENTTIME = 1000\n"
    recs = simulate(tmp_path, cfg, [
        claim(0), {"t": 0, "event": "activate", "id": "c1"},
        claim(10, "c2", Owner="bob"), {"t": 20, "event": "release", "id": "c2"},
        {"t": 30, "event": "snapshot"}])
    assert changes(recs) == ["start", "1", "5", "11", "13", "19"]


def test_23_rank_preemption_hands_over_to_better_claim(tmp_path: Path) -> None:
    cfg = "RANK = TARGET.Owner == \"bob\"\nMAXJOBRETIREMENTTIME = 0\n"
    recs = simulate(tmp_path, cfg, [
        claim(0), {"t": 0, "event": "activate", "id": "c1", "job": {**JOB, "SimVacateSeconds": 5}},
        claim(10, "c2", Owner="bob"), {"t": 30, "event": "activate", "id": "c2"}])
    # No retirement time: the job is vacated at once (H), not retired first (13, 18),
    # as HTCondor's startd does once a preempting claim is there.
    assert changes(recs) == ["start", "1", "5", "11", "H", "23", "11"]
    assert find(recs, transition="23")[0]["t"] == 15
    assert find(recs, transition="23")[0]["letter"] == "I"
    # A worse or equal claim is refused.
    recs = simulate(tmp_path, cfg, [claim(0), {"t": 0, "event": "activate", "id": "c1"},
                                    claim(10, "c2", Owner="carol")])
    assert find(recs, action="claim_refused")


def test_24_killed_then_better_claim(tmp_path: Path) -> None:
    cfg = "RANK = TARGET.Owner == \"bob\"\nWANT_VACATE = False\n"
    recs = simulate(tmp_path, cfg, [
        claim(0), {"t": 0, "event": "activate", "id": "c1"}, claim(10, "c2", Owner="bob")])
    assert changes(recs) == ["start", "1", "5", "11", "Hk", "24"]
    assert (10, "hard_kill") in actions(recs)


def test_21_25_kill_expression_and_vacate_timeout(tmp_path: Path) -> None:
    cfg = "KILL = (time() - EnteredCurrentActivity) > 30\n"
    recs = simulate(tmp_path, cfg, [
        claim(0), {"t": 0, "event": "activate", "id": "c1",
                   "job": {**JOB, "SimVacateSeconds": -1}},
        {"t": 10, "event": "vacate"}, {"t": 100, "event": "snapshot"}])
    # condor_vacate retires the job first; with no retirement time it is vacated at once
    assert changes(recs)[:8] == ["start", "1", "5", "11", "13", "18", "21", "25"]
    assert find(recs, transition="21")[0]["t"] == 45
    # Without KILL, MachineMaxVacateTime (or a shorter JobMaxVacateTime) ends the vacate
    # with a hard kill, the slot staying in Vacating as in HTCondor's startd (whose
    # starter escalates): Vacating -> Owner (22) once the job is gone.
    recs = simulate(tmp_path, "MachineMaxVacateTime = 50\n", [
        claim(0, JobMaxVacateTime=20, SimVacateSeconds=-1),
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "vacate"}, {"t": 100, "event": "snapshot"}])
    assert not find(recs, transition="21")
    assert find(recs, action="hard_kill")[0]["t"] == 30
    assert find(recs, transition="22")[0]["t"] == 30
    assert find(recs, transition="22")[0]["letter"] == "J"


def test_retirement_converted_to_vacate_time(tmp_path: Path) -> None:
    cfg = ("PREEMPT = KeyboardIdle < 60\nMAXJOBRETIREMENTTIME = 300\n"
           "MachineMaxVacateTime = 10\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0, JobMaxVacateTime=100, SimVacateSeconds=-1),
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 400, "event": "snapshot"}])
    # 100 s of the job's JobMaxVacateTime come out of its retirement: soft kill at 200,
    # hard kill at the end of retirement (300).
    assert find(recs, action="soft_kill")[0]["t"] == 200
    assert find(recs, action="hard_kill")[0]["t"] == 300


def test_killing_timeout_kills_the_starter(tmp_path: Path) -> None:
    cfg = "WANT_VACATE = False\nKILLING_TIMEOUT = 15\n"
    recs = simulate(tmp_path, cfg, [
        claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "vacate"}], until=100)
    # The simulated job dies on the hard kill, so the starter is never killed.
    assert not find(recs, action="kill_starter")
    assert changes(recs)[:7] == ["start", "1", "5", "11", "13", "18", "25"]
    assert find(recs, transition="18")[0]["activity"] == "Killing"


def test_graceful_vacate_retires_first(tmp_path: Path) -> None:
    cfg = "MAXJOBRETIREMENTTIME = 100\nMachineMaxVacateTime = 10\n"
    recs = simulate(tmp_path, cfg, [
        claim(0, SimVacateSeconds=5), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "vacate"}], until=200)
    # HTCondor's VACATE_CLAIM retires the claim: the job may run until its retirement
    # ends, less the vacate time it is granted (100 - 10).
    assert changes(recs)[:8] == ["start", "1", "5", "11", "13", "18", "22", "1"]
    assert find(recs, transition="13")[0]["t"] == 10
    assert find(recs, transition="18")[0]["t"] == 90
    kill = find(recs, action="soft_kill")[0]
    assert (kill["t"], kill["timeout"]) == (90, 10)


def test_graceful_vacate_of_a_suspended_job_resumes_it_to_retire(tmp_path: Path) -> None:
    cfg = ("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = False\n"
           "PREEMPT = False\nMAXJOBRETIREMENTTIME = 0\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 30, "event": "vacate"}], until=100)
    assert changes(recs)[:8] == ["start", "1", "5", "11", "14", "16", "18", "22"]
    assert [a for t, a in actions(recs) if t == 30][:2] == ["continue", "soft_kill"]


def test_every_way_out_of_suspended_resumes_the_job_first(tmp_path: Path) -> None:
    cfg = ("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = False\n"
           "PREEMPT = False\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}}, {"t": 30, "event": "vacate", "fast": True}],
        until=100)
    assert changes(recs)[:7] == ["start", "1", "5", "11", "14", "Hk", "25"]
    assert [a for t, a in actions(recs) if t == 30][:2] == ["continue", "hard_kill"]


def test_17_retirement_ends_while_suspended(tmp_path: Path) -> None:
    # A graceful drain fixes retirement's end (10 + 90); the job is suspended during
    # it and never continued: at the end it goes from Suspended to Preempting (17),
    # resumed on the way out.
    cfg = ("WANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\nCONTINUE = False\n"
           "PREEMPT = False\nMAXJOBRETIREMENTTIME = 100\nMachineMaxVacateTime = 0\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "drain", "how": "graceful"},
        {"t": 20, "set": {"KeyboardIdle": 0}}], until=200)
    assert changes(recs)[:7] == ["start", "1", "5", "11", "13", "20", "17"]
    assert find(recs, transition="17")[0]["t"] == 100
    assert [a for t, a in actions(recs) if t == 100][:2] == ["continue", "soft_kill"]


def test_graceful_drain_of_a_job_start_refuses_keeps_its_own_retirement(
        tmp_path: Path) -> None:
    # START is false for the suspended job when the drain comes: no coordinated end
    # (HTCondor's startd coordinates only jobs START would take), so its retirement is
    # its own, and suspension does not use it up. The drain resumes it to retire (16),
    # SUSPEND takes it again (20), CONTINUE at the poll after 140 (145, 16); 20 s ran
    # before the suspension, so 80 more end its 100 s at 225 (18).
    cfg = ("START = KeyboardIdle > 60\nWANT_SUSPEND = True\nSUSPEND = KeyboardIdle < 60\n"
           "CONTINUE = KeyboardIdle > 120\nPREEMPT = False\nMAXJOBRETIREMENTTIME = 100\n"
           "MachineMaxVacateTime = 0\nRUNBENCHMARKS = False\n")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": IDLE_KB}, claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 20, "set": {"KeyboardIdle": 0}},
        {"t": 30, "event": "drain", "how": "graceful", "on_completion": "nothing"}],
        until=400)
    keys = [k for k in changes(recs) if k not in ("36", "33", "1", "2")]
    assert keys[:9] == ["start", "5", "11", "14", "16", "20", "16", "18", "22"], keys
    assert find(recs, transition="18")[0]["t"] == 225


def test_fast_vacate_goes_straight_to_killing(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "", [
        claim(0), {"t": 0, "event": "activate", "id": "c1"},
        {"t": 10, "event": "vacate", "fast": True}])
    assert changes(recs)[4:6] == ["Hk", "25"]
    assert (10, "hard_kill") in actions(recs)


def test_vacate_during_rank_retirement_still_hands_over_to_the_better_claim(
        tmp_path: Path) -> None:
    cfg = "RANK = TARGET.Owner == \"bob\"\nMAXJOBRETIREMENTTIME = 1000\n" \
          "MachineMaxVacateTime = 10\n"
    recs = simulate(tmp_path, cfg, [
        claim(0), {"t": 0, "event": "activate", "id": "c1"},
        claim(10, "c2", Owner="bob"), {"t": 20, "event": "vacate"}], until=1100)
    # condor_vacate makes the retirement irreversible and the job retires to its end
    # (MAXJOBRETIREMENTTIME less the vacate time); as in HTCondor's startd the waiting
    # better claim then takes the slot, START being true for its job.
    assert changes(recs) == ["start", "1", "5", "11", "13", "18", "23"]
    assert find(recs, transition="18")[0]["t"] == 990
    assert not find(recs, action="claim_refused", claim="c2")


def test_preempt_hands_over_to_the_better_claim_only_if_start_allows(
        tmp_path: Path) -> None:
    # PREEMPT ends the current claim; the better claim waiting for the slot gets it
    # when START is true for its job, and is refused when START is false.
    cfg = "RANK = TARGET.Owner == \"bob\"\nMAXJOBRETIREMENTTIME = 1000\n" \
          "PREEMPT = Preempt =?= True\nSTART = {start}\n"
    events = [claim(0), {"t": 0, "event": "activate", "id": "c1"},
              claim(10, "c2", Owner="bob"), {"t": 20, "set": {"Preempt": True}}]
    recs = simulate(tmp_path, cfg.format(start="True"), events, until=1100)
    assert "23" in changes(recs)
    assert not find(recs, action="claim_refused", claim="c2")
    recs = simulate(tmp_path, cfg.format(start="Preempt =!= True"), events, until=1100)
    assert "23" not in changes(recs) and "22" in changes(recs)
    assert find(recs, action="claim_refused", claim="c2")


def test_events_for_an_ended_claim_are_noted_not_errors(tmp_path: Path) -> None:
    cfg = "RANK = TARGET.Owner == \"bob\"\nMAXJOBRETIREMENTTIME = 1000\n"
    recs = simulate(tmp_path, cfg, [
        claim(0), {"t": 0, "event": "activate", "id": "c1"},
        claim(10, "c2", Owner="bob"),
        {"t": 20, "event": "job_exit", "id": "c1"}, {"t": 21, "event": "release", "id": "c1"},
        {"t": 30, "event": "activate", "id": "c2"}])
    # c1's job ends in retirement (18) and the slot passes to c2 (23); the schedd's
    # late release of c1 is noted.
    assert changes(recs) == ["start", "1", "5", "11", "13", "18", "23", "11"]
    assert find(recs, action="claim_unknown", claim="c1", event="release")
