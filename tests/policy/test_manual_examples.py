"""The policy examples of the manual, run as timelines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.policy.sim import actions, changes, find, run_file, simulate

JOB = {"JobUniverse": 5, "Owner": "alice", "ImageSize": 1000}
QUIET = "RUNBENCHMARKS = False\n"

# What `use POLICY : Desktop` expands to in HTCondor 25.14.1 (htcondor2.param): the
# scenarios below pin the policy text itself, apart from the template machinery.
DESKTOP_EXPANDED = """
STARTD_LATCH_EXPRS = CpuBusy
CpuBusy = ((LoadAvg - CondorLoadAvg) >= 0.5)
START = ((KeyboardIdle > 15 * 60) && ( ((LoadAvg - CondorLoadAvg) <= 0.3) || (State != "Unclaimed" && State != "Owner")) )
IS_OWNER = (START =?= False)
SUSPEND = ((KeyboardIdle < 60) || ( (IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0) > 120) && ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0) > 90))
CONTINUE = (((LoadAvg - CondorLoadAvg) <= 0.3) && ((time() - EnteredCurrentActivity) > 10) && (KeyboardIdle > 5 * 60))
PREEMPT = (((Activity == "Suspended") && ((time() - EnteredCurrentActivity) > 10 * 60)) || (SUSPEND && (WANT_SUSPEND == False)))
KILL = False
WANT_SUSPEND = ((TARGET.ImageSize <  (15 * 1024)) || ((KeyboardIdle < 60) == False) || (TARGET.JobUniverse == 5) ) && ( ((KeyboardIdle < 60) || ( (IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0) > 120) && ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0) > 90)))
WANT_VACATE = ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0) > 600 || (TARGET.JobUniverse == 5)
MAXJOBRETIREMENTTIME = 0
MachineMaxVacateTime = 600
"""


def test_default_policy_ignores_the_owner(tmp_path: Path) -> None:
    recs = simulate(tmp_path, QUIET, [
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 100, "set": {"KeyboardIdle": 0, "LoadAvg": 4.0}},
        {"t": 500, "event": "job_exit", "id": "c1"}])
    assert changes(recs) == ["start", "1", "5", "11", "12"]


def _desktop_scenario(tmp_path: Path, config: str) -> None:
    recs = simulate(tmp_path, config + QUIET, [
        {"t": 0, "set": {"KeyboardIdle": 0, "LoadAvg": 0.0, "CondorLoadAvg": 0.0}},
        {"t": 1000, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 1000, "event": "activate", "id": "c1"},
        {"t": 1200, "set": {"KeyboardIdle": 0}},
        {"t": 3000, "event": "snapshot", "attrs": ["State"]}])
    # Owner until the keyboard has been idle more than 15 minutes: an Owner slot is
    # re-evaluated every POLLING_INTERVAL (5 s), so first seen at 905, not at the
    # claim request at 1000 as with HTCondor's UPDATE_INTERVAL cadence (issue 23).
    assert find(recs, transition="1")[0]["t"] == 905
    # A key press suspends the small job at once (14); once the keyboard has idled 5
    # minutes CONTINUE resumes it (15).
    assert find(recs, transition="14")[0]["t"] == 1200
    assert find(recs, transition="15")[0]["t"] == 1505


def test_desktop_policy_expanded(tmp_path: Path) -> None:
    _desktop_scenario(tmp_path, DESKTOP_EXPANDED)


def test_desktop_policy_template(tmp_path: Path) -> None:
    _desktop_scenario(tmp_path, "use POLICY : Desktop\n")


def test_desktop_suspended_too_long_is_preempted(tmp_path: Path) -> None:
    recs = simulate(tmp_path, DESKTOP_EXPANDED + QUIET, [
        {"t": 0, "set": {"KeyboardIdle": 5000}},
        {"t": 0, "event": "request_claim", "id": "c1", "job": {**JOB, "SimVacateSeconds": 30}},
        {"t": 0, "event": "activate", "id": "c1"},
        *({"t": t, "set": {"KeyboardIdle": 0}} for t in range(100, 1000, 50)),
        {"t": 1000, "event": "snapshot", "attrs": ["State"]}])
    # Suspended at 100; after 10 minutes suspended, PREEMPT with no retirement: the job
    # is resumed to retire (16), as HTCondor's startd does, and retirement ends at once
    # (18); the vanilla job is vacated (WANT_VACATE) and exits 30 s after the soft kill.
    assert changes(recs)[:8] == ["start", "1", "5", "11", "14", "16", "18", "22"]
    assert find(recs, transition="16")[0]["t"] == 705
    assert find(recs, transition="18")[0]["t"] == 705
    assert find(recs, transition="22")[0]["t"] == 735


def test_desktop_cpu_busy_latch_suspends(tmp_path: Path) -> None:
    recs = simulate(tmp_path, DESKTOP_EXPANDED + QUIET, [
        {"t": 0, "set": {"KeyboardIdle": 5000}},
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 200, "set": {"LoadAvg": 2.0}},
        {"t": 600, "event": "snapshot", "attrs": ["CpuBusyValue", "CpuBusyTime"]}])
    # CpuBusy latched true at 200; SUSPEND once it has been busy for more than 120 s.
    assert find(recs, transition="14")[0]["t"] == 325


def test_test_job_policy(tmp_path: Path) -> None:
    cfg = DESKTOP_EXPANDED + QUIET + """
START      = ($(START)) || Owner == "coltrane"
SUSPEND    = ($(SUSPEND)) && Owner != "coltrane"
CONTINUE   = $(CONTINUE)
PREEMPT    = ($(PREEMPT)) && Owner != "coltrane"
KILL       = $(KILL)
"""
    tl = [{"t": 0, "set": {"KeyboardIdle": 0}},
          {"t": 10, "event": "request_claim", "id": "c1", "job": {**JOB, "Owner": "coltrane"}},
          {"t": 10, "event": "activate", "id": "c1"},
          {"t": 20, "event": "request_claim", "id": "c2", "job": {**JOB, "Owner": "alice"},
           "slot": "slot1"},
          {"t": 30, "set": {"KeyboardIdle": 0}},
          {"t": 100, "event": "job_exit", "id": "c1"}]
    recs = simulate(tmp_path, cfg, tl)
    # START is undefined locally (Owner is a job attribute), so not Owner (the manual's
    # "FALSE || UNDEFINED" case); coltrane's job starts although the owner is typing and
    # is never suspended, while alice's is refused.
    assert changes(recs) == ["start", "1", "5", "11", "12"]
    assert find(recs, action="claim_refused", claim="c2")


def test_time_of_day_policy(tmp_path: Path) -> None:
    cfg = QUIET + """
WorkHours = ( (ClockMin >= 480 && ClockMin < 1020) && (ClockDay > 0 && ClockDay < 6) )
AfterHours = ( (ClockMin < 480 || ClockMin >= 1020) || (ClockDay == 0 || ClockDay == 6) )
START = $(AfterHours)
"""
    # The virtual clock starts on Thursday 1970-01-01 00:00 UTC.
    recs = simulate(tmp_path, cfg, [
        {"t": 10 * 3600, "event": "request_claim", "id": "day", "job": JOB},
        {"t": 18 * 3600, "event": "request_claim", "id": "night", "job": JOB}])
    assert find(recs, action="claim_refused", claim="day")
    assert find(recs, action="claim_accepted", claim="night")
    # IS_OWNER defaults to False: the slot is Unclaimed all day, only START says no.
    assert changes(recs) == ["start", "1", "5"]


NON_DESKTOP = """
CPUIdle = ((LoadAvg - CondorLoadAvg) <= 0.3)
StartIdleTime = 15 * 60
ContinueIdleTime = 5 * 60
MaxSuspendTime = 10 * 60
MINUTE = 60
KeyboardBusy = (KeyboardIdle < 60)
ActivationTimer = ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)
ActivityTimer = (time() - EnteredCurrentActivity)
SmallJob = (TARGET.ImageSize < (15 * 1024))
JustCpu = (((LoadAvg - CondorLoadAvg) >= 0.5) && ((KeyboardIdle < 60) == False))
IsVanilla = (TARGET.JobUniverse == 5)
STARTD_ATTRS = IsDesktop
START = ( ($(CPUIdle) || (State != "Unclaimed" && State != "Owner")) \\
          && (IsDesktop =!= True || (KeyboardIdle > $(StartIdleTime))) )
WANT_SUSPEND = ( $(SmallJob) || $(JustCpu) || $(IsVanilla) )
WANT_VACATE  = ( $(ActivationTimer) > 10 * $(MINUTE) || $(IsVanilla) )
SUSPEND = ( ((CpuBusyTime > 2 * $(MINUTE)) && ($(ActivationTimer) > 90)) \\
            || ( IsDesktop =?= True && $(KeyboardBusy) ) )
CONTINUE = ( $(CPUIdle) && ($(ActivityTimer) > 300) \\
             && (IsDesktop =!= True || (KeyboardIdle > $(ContinueIdleTime))) )
PREEMPT = ( ((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) \\
           || (SUSPEND && (WANT_SUSPEND == False)) )
MAXJOBRETIREMENTTIME = (IsDesktop =!= True) * 0
MachineMaxVacateTime = 10 * $(MINUTE)
KILL = False
"""


@pytest.mark.parametrize("desktop", [True, False])
def test_desktop_non_desktop_policy(tmp_path: Path, desktop: bool) -> None:
    cfg = NON_DESKTOP + QUIET + ("IsDesktop = True\n" if desktop else "")
    recs = simulate(tmp_path, cfg, [
        {"t": 0, "set": {"KeyboardIdle": 5000}},
        {"t": 0, "event": "request_claim", "id": "c1", "job": JOB},
        {"t": 0, "event": "activate", "id": "c1"},
        {"t": 100, "set": {"KeyboardIdle": 0}},
        {"t": 200, "event": "snapshot", "attrs": ["Activity"]}])
    # Keyboard activity suspends the job only on a desktop.
    assert ("14" in changes(recs)) is desktop


def test_interactive_jobs_rank_and_reserve(tmp_path: Path) -> None:
    rank = QUIET + "NUM_SLOTS = 2\nNUM_CPUS = 2\n" \
        "RANK = ( (MY.SlotID == 1) && (TARGET.InteractiveJob =?= True) )\n"
    recs = simulate(tmp_path, rank, [
        {"t": 0, "event": "request_claim", "id": "batch", "job": JOB, "slot": "slot1"},
        {"t": 0, "event": "activate", "id": "batch"},
        {"t": 10, "event": "request_claim", "id": "ij", "slot": "slot1",
         "job": {**JOB, "InteractiveJob": True}}])
    # The interactive job preempts the batch job on slot1 (RANK 1 > 0); with no
    # retirement time (MAXJOBRETIREMENTTIME 0) it is vacated at once (H), as HTCondor's
    # startd does, not retired first.
    assert changes(recs) == ["start", "1", "5", "11", "H", "23"]
    reserve = QUIET + "NUM_SLOTS = 2\nNUM_CPUS = 2\n" \
        "START = ( (MY.SlotID == 1) && (TARGET.InteractiveJob =?= True) )\n"
    recs = simulate(tmp_path, reserve, [
        {"t": 0, "event": "request_claim", "id": "batch", "job": JOB, "slot": "slot1"},
        {"t": 0, "event": "request_claim", "id": "ij", "slot": "slot1",
         "job": {**JOB, "InteractiveJob": True}}])
    assert find(recs, action="claim_refused", claim="batch")
    assert find(recs, action="claim_accepted", claim="ij")


def test_timeline_file_desktop(tmp_path: Path) -> None:
    recs = run_file(tmp_path, "desktop_owner_returns")
    assert changes(recs)[:6] == ["start", "1", "5", "11", "14", "15"]
    assert ("1200", "suspend") not in actions(recs)
