"""The daemon's decisions in-process: the resource manager, the local schedd and the
policy engine on a manual clock, a fake launcher and a fake starter channel behind their
ports (tests/startd/rm_rig.py). Several of these were end-to-end daemon tests that
started real processes only to check a decision (tests/startd/test_daemon.py names
them); they assert the same behaviour here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from condorpy.errors import QueueError
from condorpy.machine.probe import Activity
from condorpy.queue.jobstore import JobId, StarterRecord
from condorpy.startd.adoption import Adopter
from condorpy.startd.metrics import Metrics
from condorpy.startd.policy_timers import PolicyTimers
from condorpy.startd.starter_handle import CONNECT_TIMEOUT_S, Phase, PoolClaim
from tests.startd.rm_rig import Rig

SLEEP = "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"


def _ids(*jobs: str) -> list[str]:
    return list(jobs)


# ------------------------------------------------------------------ starting
def test_a_matched_local_job_starts_on_its_claimed_slot(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "queue\n")
    rig.step()
    assert [r.job_id for r in rig.launcher.requests] == ["1.0"]
    assert rig.statuses() == {"1.0": 2}
    h = rig.handle("1.0")
    assert h.phase is Phase.RUNNING and h.slot == "slot1_1"
    assert [s.job_id for s in rig.store.starters.all()] == [JobId(1, 0)]
    # held until recorded, then released (docs/startd.md, "Restart")
    assert rig.launcher.requests[0].hold and h.launched is not None
    assert rig.launcher.released == [h.launched.pid]
    assert [c.job_id for c in rig.store.claims.all()] == [JobId(1, 0)]
    assert ("Claimed", "Busy") in rig.slot_states()
    assert "CondorpyActivatedAt" in (rig.spool / "jobs" / "1.0" / "job.ad").read_text()
    assert rig.stats.jobs_started == 1


def test_a_starter_whose_record_fails_is_ended_not_released(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "queue\n")

    def full(*_a: object, **_k: object) -> None:
        raise QueueError("database or disk is full")
    rig.store.start_job = full          # type: ignore[method-assign]
    with pytest.raises(QueueError):
        rig.step()
    assert rig.launcher.released == []
    assert rig.launcher.killed == [1001]


def test_jobs_complete_and_a_freed_slot_takes_the_next(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "queue 3\n")
    rig.step()
    assert rig.running() == ["1.0", "1.1"] and rig.statuses()["1.2"] == 1
    rig.exits_with("1.0", 3)
    assert rig.attr("1.0", "JobStatus") == 4 and rig.attr("1.0", "ExitCode") == 3
    rig.step(1)
    assert rig.running() == ["1.1", "1.2"]
    assert rig.stats.exits["completed"] == 1


# ------------------------------------------------------------------ the policy's outputs
DESKTOP = """use POLICY : Desktop
START = KeyboardIdle > 60
SUSPEND = KeyboardIdle < 60
CONTINUE = KeyboardIdle > 120
PREEMPT = False
"""


def test_suspend_and_continue_on_the_policy(tmp_path: Path) -> None:
    """(The decision of test_daemon's desktop test, which keeps the real idle probe.)"""
    rig = Rig(tmp_path, DESKTOP)
    rig.engine.set(rig.clock.time(), {"KeyboardIdle": 3600, "ConsoleIdle": 3600})
    rig.submit(SLEEP + "queue\n")
    rig.step(1)
    assert rig.statuses() == {"1.0": 2}
    rig.engine.set(rig.clock.time(), {"KeyboardIdle": 0, "ConsoleIdle": 0})
    rig.step(1)
    assert rig.channel.told("1.0") == ["suspend"] and rig.statuses() == {"1.0": 7}
    assert rig.handle("1.0").phase is Phase.SUSPENDED
    rig.clock.advance(600)
    rig.engine.set(rig.clock.time(), {"KeyboardIdle": 600, "ConsoleIdle": 600})
    rig.step(1)
    assert rig.channel.told("1.0") == ["suspend", "continue"] and rig.statuses() == {"1.0": 2}
    assert rig.handle("1.0").phase is Phase.RUNNING


def test_a_suspended_job_preempted_is_resumed_before_it_is_vacated(tmp_path: Path) -> None:
    """Issue 23 item 8a: PREEMPT while suspended, no retirement time: the job is
    continued (its status back to running) before the soft kill, as HTCondor does."""
    rig = Rig(tmp_path, DESKTOP.replace(
        "PREEMPT = False",
        'PREEMPT = Activity == "Suspended" && time() - EnteredCurrentActivity > 30')
              + "MAXJOBRETIREMENTTIME = 0\nCONTINUE = False\n")
    rig.engine.set(rig.clock.time(), {"KeyboardIdle": 3600, "ConsoleIdle": 3600})
    rig.submit(SLEEP + "queue\n")
    rig.step(1)
    rig.engine.set(rig.clock.time(), {"KeyboardIdle": 0, "ConsoleIdle": 0})
    rig.step(1)
    assert rig.channel.told("1.0") == ["suspend"] and rig.statuses() == {"1.0": 7}
    rig.clock.advance(60)
    rig.step(1)
    assert rig.channel.told("1.0") == ["suspend", "continue", "soft_kill"]
    assert rig.statuses() == {"1.0": 2}
    assert ("Preempting", "Vacating") in rig.slot_states()


def test_vacate_requeues_and_drain_stops_new_jobs(tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name)."""
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "queue 2\n")
    rig.step()
    assert rig.counts() == {2: 2}
    rig.cli("drain", how="fast", on_completion="nothing")
    assert sorted(rig.obey()) == ["1.0", "1.1"]
    # Evicted by the drain, the jobs go back to the queue and are not started again.
    for _ in range(3):
        rig.step(1)
    assert rig.counts() == {1: 2} and rig.running() == []
    assert any(s == "Drained" for s, _ in rig.slot_states())
    assert rig.stats.exits["evicted"] == 2
    rig.cli("cancel_drain")
    rig.step(1)
    assert rig.counts() == {2: 2}
    rig.cli("vacate", fast=True)
    rig.obey()
    assert rig.counts() == {1: 2}
    rig.step(1)
    assert rig.counts() == {2: 2}


def test_a_vacated_job_is_killed_hard_after_its_vacate_time_then_its_starter(
        tmp_path: Path) -> None:
    rig = Rig(tmp_path, "MachineMaxVacateTime = 10\nKILLING_TIMEOUT = 5\n")
    rig.submit(SLEEP + "queue\n")
    rig.step()
    rig.cli("vacate")
    assert rig.channel.told("1.0") == ["soft_kill"]
    assert rig.handle("1.0").phase is Phase.VACATING
    rig.step(5)
    assert rig.channel.told("1.0") == ["soft_kill"]
    rig.step(6)
    assert rig.channel.told("1.0") == ["soft_kill", "hard_kill"]
    h = rig.handle("1.0")
    assert h.phase is Phase.KILLING and h.launched is not None
    assert rig.launcher.killed == []
    rig.step(6)                                  # KILLING_TIMEOUT: the starter itself
    assert rig.launcher.killed == [h.launched.pid]
    rig.obey()
    assert rig.statuses() == {"1.0": 1}           # evicted: back to the queue


@pytest.mark.parametrize("how", ["graceful", "quick"])
def test_drain_kinds(how: str, tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name)."""
    rig = Rig(tmp_path, "MAXJOBRETIREMENTTIME = 3600\n")
    rig.submit("executable = /bin/sleep\narguments = 3\nrequest_memory = 16\nqueue 3\n")
    rig.step()
    assert rig.counts() == {2: 2, 1: 1}
    rig.cli("drain", how=how, on_completion="nothing")
    if how == "graceful":
        # the running jobs retire (finish), the idle one is not started
        assert rig.channel.sent == []
        rig.exits_with("1.0", 0)
        rig.exits_with("1.1", 0)
        rig.step(1)
        assert rig.attr("1.0", "JobStatus") == 4 and rig.attr("1.1", "JobStatus") == 4
        assert rig.statuses()["1.2"] == 1 and rig.running() == []
    else:
        # quick: no retirement, the jobs are evicted back to the queue
        rig.obey()
        rig.step(1)
        assert rig.counts() == {1: 3}
    assert any(s == "Drained" for s, _ in rig.slot_states())
    rig.cli("cancel_drain")
    for _ in range(3):
        rig.step(1)
        for job in rig.running():
            rig.exits_with(job, 0)
    assert all(r.status == 4 for r in rig.history().values()) and len(rig.history()) == 3


@pytest.mark.parametrize("how", ["graceful", "peaceful"])
def test_off_kinds_let_jobs_finish(how: str, tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name)."""
    rig = Rig(tmp_path, "MAXJOBRETIREMENTTIME = 3600\n")
    rig.submit("executable = /bin/sleep\narguments = 3\nrequest_memory = 16\nqueue 2\n")
    rig.step()
    rig.cli("off", how=how)
    assert rig.channel.sent == [] and rig.exits == []
    rig.exits_with("1.0", 0)
    rig.exits_with("1.1", 0)
    rig.step(1)
    assert rig.exits != []                    # the daemon leaves once they finished
    assert rig.attr("1.0", "JobStatus") == 4 and rig.attr("1.1", "JobStatus") == 4


def test_off_ends_the_jobs_and_the_daemon(tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name): the decisions; the exit status of a real
    daemon after `off` is still checked end to end by test_off_kinds' twin there."""
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "queue 2\n")
    rig.step()
    rig.cli("off", how="fast")
    rig.obey()
    rig.step(1)
    assert rig.exits != []
    # evicted by the shutdown, back in the queue for the next start
    assert rig.counts() == {1: 2}


# ------------------------------------------------------------------ the queue's orders
def test_rm_hold_release(tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name)."""
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "log = job.log\nqueue 3\n")
    rig.step()
    assert rig.running() == ["1.0", "1.1"] and rig.statuses()["1.2"] == 1
    assert rig.cli("hold", ids=["1.0"]) == ["1.0"]
    assert rig.cli("rm", ids=["1.1"]) == ["1.1"]
    assert rig.channel.told("1.0") == ["soft_kill"] and rig.channel.told("1.1") == ["soft_kill"]
    assert rig.statuses()["1.0"] == 2                 # until its starter has ended
    rig.obey()
    assert rig.status("1.0") == 5 and rig.status("1.1") == 3
    assert rig.attr("1.0", "HoldReasonCode") == 1
    assert "via condorpy hold" in rig.attr("1.0", "HoldReason")
    # The idle job takes a freed slot; the held one stays held until released.
    rig.step(1)
    assert rig.statuses()["1.2"] == 2 and rig.statuses()["1.0"] == 5
    rig.cli("release", ids=["1.0"])
    rig.step(1)
    assert rig.statuses()["1.0"] == 2
    rig.cli("rm", constraint="true")
    rig.obey()
    assert {rig.status(j) for j in ("1.0", "1.1", "1.2")} == {3}


def test_a_held_job_is_killed_hard_after_its_vacate_time(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "job_max_vacate_time = 20\nqueue\n")
    rig.step()
    rig.cli("hold", ids=["1.0"])
    rig.step(19)
    assert rig.channel.told("1.0") == ["soft_kill"]
    rig.step(2)
    assert rig.channel.told("1.0") == ["soft_kill", "hard_kill"]
    rig.obey()
    assert rig.statuses() == {"1.0": 5}


def test_periodic_hold_release_and_remove_are_applied(tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name)."""
    rig = Rig(tmp_path, "PERIODIC_EXPR_INTERVAL = 1\n")
    # 1.0 runs and is held by its own periodic_hold, with its reason and code 3
    rig.submit(SLEEP + "periodic_hold = JobStatus == 2 && time() - EnteredCurrentStatus > 1\n"
               "periodic_hold_reason = \"ran too long\"\nperiodic_hold_subcode = 7\nqueue\n")
    # 2.0 is submitted on hold and released by periodic_release, then completes
    rig.submit("executable = /bin/true\nrequest_memory = 16\nhold = true\n"
               "periodic_release = true\nqueue\n")
    # 3.0 runs and is removed by periodic_remove
    rig.submit(SLEEP + "periodic_remove = JobStatus == 2\nqueue\n")
    for _ in range(6):
        rig.step(1)
        rig.obey()
        if "2.0" in rig.running():
            rig.exits_with("2.0", 0)
    final = {**{j: r.status for j, r in rig.history().items()}, **rig.statuses()}
    assert final == {"1.0": 5, "2.0": 4, "3.0": 3}
    assert (rig.attr("1.0", "HoldReason"), rig.attr("1.0", "HoldReasonCode"),
            rig.attr("1.0", "HoldReasonSubCode")) == ("ran too long", 3, 7)
    assert rig.history()["3.0"].ad.evaluate("RemoveReason") == \
        "The job attribute PeriodicRemove expression 'JobStatus == 2' evaluated to TRUE"
    assert rig.store.starters.all() == []


def test_leave_in_queue_keeps_a_finished_job_until_it_turns_false_or_rm(tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name)."""
    rig = Rig(tmp_path, "PERIODIC_EXPR_INTERVAL = 1\n")
    rig.submit("executable = /bin/true\nrequest_memory = 16\nleave_in_queue = true\nqueue\n")
    rig.submit("executable = /bin/true\nrequest_memory = 16\n"
               "leave_in_queue = time() - CompletionDate < 2\nqueue\n")
    rig.step()
    rig.exits_with("1.0", 0)
    rig.exits_with("2.0", 0)
    rig.step(1)
    assert rig.statuses() == {"1.0": 4, "2.0": 4}
    # 2.0 leaves once its expression turns false; 1.0 stays until rm
    for _ in range(3):
        rig.step(1)
    assert rig.statuses() == {"1.0": 4} and "2.0" in rig.history()
    assert rig.cli("hold", ids=["1.0"]) == []
    assert rig.statuses()["1.0"] == 4           # a finished job is not held
    rig.cli("rm", ids=["1.0"])
    assert rig.statuses() == {}
    assert sorted((j, r.status) for j, r in rig.history().items()) == [("1.0", 4), ("2.0", 4)]


# ------------------------------------------------------------------ starters that fail
def test_a_starter_that_dies_before_reporting_holds_at_the_fifth_with_code_6(
        tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "queue\n")
    for n in range(1, 6):
        rig.step(1)
        assert rig.running() == ["1.0"]
        rig.starter_dies("1.0")
        assert rig.handle("1.0").phase is Phase.CLOSED
        rig.step(1)
        assert rig.attr("1.0", "NumShadowExceptions") == n
        if n < 5:
            assert rig.attr("1.0", "JobStatus") in (1, 2)
    assert rig.statuses() == {"1.0": 5}
    assert rig.attr("1.0", "HoldReasonCode") == 6
    assert "CONDORPY_MAX_STARTER_FAILURES is 5" in rig.attr("1.0", "HoldReason")
    assert len(rig.launcher.requests) == 5


def test_the_starter_failure_limit_is_a_knob(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "CONDORPY_MAX_STARTER_FAILURES = 2\n")
    rig.submit(SLEEP + "queue\n")
    for _ in range(2):
        rig.step(1)
        rig.starter_dies("1.0")
        rig.step(1)
    assert rig.statuses() == {"1.0": 5} and rig.attr("1.0", "HoldReasonCode") == 6


def test_a_starter_that_never_listens_is_killed_and_counted(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.channel.deaf = True
    rig.submit(SLEEP + "queue\n")
    rig.step()
    h = rig.handle("1.0")
    assert h.phase is Phase.CONNECTING and h.launched is not None
    pid = h.launched.pid
    rig.step(CONNECT_TIMEOUT_S / 2)
    assert rig.launcher.killed == []
    rig.clock.advance(CONNECT_TIMEOUT_S)
    rig.rm.tick(rig.clock.monotonic())
    assert rig.launcher.killed == [pid]
    assert rig.attr("1.0", "NumShadowExceptions") == 1 and rig.statuses() == {"1.0": 1}


def test_commands_told_before_the_starter_listens_wait_for_it(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.channel.deaf = True
    rig.submit(SLEEP + "queue\n")
    rig.step()
    rig.cli("vacate", fast=False)
    assert rig.channel.sent == [] and rig.handle("1.0").queued == ["soft_kill"]
    rig.channel.deaf = False
    rig.rm.tick(rig.clock.monotonic())
    assert rig.channel.told("1.0") == ["soft_kill"]


def test_a_launch_that_fails_holds_the_job(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.launcher.fail = "the fork server is gone"
    rig.submit(SLEEP + "queue\n")
    rig.step()
    assert rig.statuses() == {"1.0": 5} and rig.running() == []
    assert rig.attr("1.0", "HoldReasonCode") == 6
    assert rig.attr("1.0", "HoldReason") == "the fork server is gone"
    assert ("Unclaimed", "Idle") in rig.slot_states()


def test_usage_reaches_the_queue_but_never_its_own_attributes(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.submit(SLEEP + "queue\n")
    rig.step()
    rig.says("1.0", {"event": "usage", "usage": {"RemoteUserCpu": 2.0, "JobStatus": 4,
                                                  "ImageSize": 1000}})
    assert rig.attr("1.0", "RemoteUserCpu") == 2.0 and rig.attr("1.0", "ImageSize") == 1000
    assert rig.attr("1.0", "JobStatus") == 2


# ------------------------------------------------------------------ the policy cycle
def test_policy_is_evaluated_every_polling_interval_once_claimed(tmp_path: Path) -> None:
    """Moved from test_daemon.py (same name): the timers on the manual clock."""
    rig = Rig(tmp_path)
    metrics = Metrics.from_config(rig.cfg, rig.engine, rig.clock)
    timers = PolicyTimers(rig.engine, rig.clock, metrics, rig.rm.apply,
                          measure=lambda: Activity(0.0, 3600, None), publish=lambda: None,
                          cycled=rig.schedd.wake)
    timers.cycle()
    rig.submit(SLEEP + "request_disk = 10\nqueue\n")
    rig.step()
    assert rig.statuses() == {"1.0": 2}
    before = len(timers.cycle_times)
    for _ in range(35):                 # 3.5 s; POLLING_INTERVAL = 1
        rig.clock.advance(0.1)
        timers.probe_tick(rig.clock.monotonic())
        timers.cycle_tick(rig.clock.monotonic())
    assert len(timers.cycle_times) >= before + 2


# ------------------------------------------------------------------ re-adoption
def _restart(rig: Rig, tmp_path: Path, alive: set[int], extra: str = "",
             cpus: int = 2) -> Rig:
    """The daemon goes; a new one starts on the same state, its starters as given."""
    rig.store.close()
    again = Rig(tmp_path, extra, cpus=cpus)
    again.launcher.alive_pids = set(alive)
    again.launcher.next_pid = 5000
    return again


def _adopter(rig: Rig, pool: Any = None) -> Adopter:
    return Adopter(rig.rm, rig.engine, rig.store, rig.clock, rig.stats, rig.schedd, pool,
                   rig.clock.time())


def test_readoption_takes_back_the_live_records_the_finished_requeues_the_lost(
        tmp_path: Path) -> None:
    rig = Rig(tmp_path, cpus=3)
    rig.submit(SLEEP + "queue 3\n")
    rig.step()
    pids = {h.name: h.launched.pid for h in rig.rm.handles.values() if h.launched}
    assert sorted(pids) == ["1.0", "1.1", "1.2"]
    # 1.1's starter ended while the daemon was away and left its result
    (rig.spool / "jobs" / "1.1" / "final.ad").write_text("ExitCode = 0\nExitBySignal = false\n")
    again = _restart(rig, tmp_path, {pids["1.0"]}, cpus=3)
    _adopter(again).adopt()
    assert again.running() == ["1.0"] and again.launcher.requests == []
    assert again.handle("1.0").phase is Phase.CONNECTING
    assert again.status("1.1") == 4 and again.attr("1.1", "ExitCode") == 0
    assert again.statuses()["1.2"] == 1                 # lost: back to the queue
    assert again.stats.adoptions == {"adopted": 1, "finished": 1, "lost": 1}
    again.step()
    assert again.handle("1.0").phase is Phase.RUNNING
    assert ("Claimed", "Busy") in again.slot_states()
    assert again.stats.jobs_started == 1               # 1.2 again; 1.0 is no new start


def test_daemon_counts_evictions_and_readoptions(tmp_path: Path) -> None:
    """Moved from test_metrics.py (same name): the counts, on the manual clock."""
    rig = Rig(tmp_path, cpus=1)
    rig.submit(SLEEP + "queue 1\n")
    rig.step()
    rig.says("1.0", {"event": "hello", "job_pid": 77})
    assert rig.stats.latency.view().cumulative[-1] == 1
    rig.cli("vacate")
    rig.obey()
    assert rig.stats.evictions["vacate"] == 1 and rig.stats.exits["evicted"] == 1
    rig.step(1)
    assert rig.running() == ["1.0"]
    h = rig.handle("1.0")
    assert h.launched is not None
    again = _restart(rig, tmp_path, {h.launched.pid}, cpus=1)
    _adopter(again).adopt()
    again.step()
    assert len(again.rm) == 1
    assert again.stats.adoptions["adopted"] == 1 and again.stats.adoptions["lost"] == 0
    assert again.stats.jobs_started == 0
    assert again.slot_states().count(("Claimed", "Busy")) == 1


def _pool_row(rig: Rig, number: int, pid: int) -> None:
    rig.store.starters.record(StarterRecord(JobId(-number, 0), pid, "boot", 1,
                                           str(rig.spool / f"{pid}.sock"),
                                           str(rig.spool / "pool" / str(number)),
                                           "slot1_1", 1))


def test_a_pool_job_whose_shadow_cannot_come_back_is_stopped(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    _pool_row(rig, 3, 900)           # alive, no stored claim: stopped
    _pool_row(rig, 4, 901)           # dead: its row is forgotten
    rig.launcher.alive_pids = {900}
    _adopter(rig).adopt()
    assert rig.running() == ["pool#3"]
    h = rig.rm.handles[next(iter(rig.rm.handles))]
    assert isinstance(h.origin, PoolClaim) and h.evicted
    rig.rm.tick(rig.clock.monotonic())
    assert rig.channel.told("pool#3") == ["hard_kill"]
    rig.rm.on_starter_io(h.origin, [{"event": "done", "ad": {"ExitSignal": 9}}], False)
    assert rig.running() == [] and rig.store.starters.all() == []


class _FakePoolSide:
    def __init__(self, answers: dict[int, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[int, bool]] = []
        self.rest = 0

    def adopt_starter(self, number: int, execute_dir: str, alive: bool) -> Any:
        self.asked.append((number, alive))
        return self.answers.get(number)

    def adopt_rest(self) -> None:
        self.rest += 1


def test_pool_readoption_follows_the_pool_sides_answer(tmp_path: Path) -> None:
    from condorpy.startd.poolside import PoolAdoption
    rig = Rig(tmp_path)
    _pool_row(rig, 1, 700)           # alive, re-created: adopted
    _pool_row(rig, 2, 701)           # ended meanwhile: its end recorded
    _pool_row(rig, 3, 702)           # vanished: forgotten
    rig.launcher.alive_pids = {700}
    pool = _FakePoolSide({1: PoolAdoption("<a>#1", "slot1_1", "5.0", None),
                          2: PoolAdoption("<a>#2", "slot1_1", "6.0", {"ExitCode": 0}),
                          3: PoolAdoption("<a>#3", "slot1_1", "", None, gone=True)})
    _adopter(rig, pool).adopt()
    assert sorted(pool.asked) == [(1, True), (2, False), (3, False)] and pool.rest == 1
    assert rig.running() == ["pool#1"] and rig.rm.of_claim("<a>#1") is not None
    assert rig.stats.adoptions["adopted"] == 1 and rig.stats.adoptions["finished"] == 1
    assert [s.job_id for s in rig.store.starters.all()] == [JobId(-1, 0)]
