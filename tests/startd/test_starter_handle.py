"""The starter handle's state machine: every move of its table, every other move
refused (naming the job), and what each ``on_*`` asks the daemon to do."""

from __future__ import annotations

import itertools

import pytest

from condorpy.errors import CondorpyError
from condorpy.queue.jobstore import JobId, JobStatus
from condorpy.startd.forkserver_wire import Launched
from condorpy.startd.starter_handle import (CONNECT_TIMEOUT_S, MOVES, Finish, JobStarted,
                                            KillProcess, LocalJob, NeverListened, Phase,
                                            PoolClaim, StarterHandle, StarterMoveError,
                                            StarterSays, StopOrder, Tell, Unsent,
                                            UsageReport, check_move)

P = Phase


def _launched(pid: int = 41) -> Launched:
    return Launched("1.0", pid, 7, "boot", "/x/starter.sock", "/x/final.ad", "")


def _handle(phase: Phase = P.LAUNCHING) -> StarterHandle:
    h = StarterHandle(LocalJob(JobId(1, 0)), "claim#1", "slot1_1")
    h.phase = phase
    return h


def _running() -> StarterHandle:
    h = _handle()
    h.on_launched(_launched(), 100.0)
    assert h.on_connected() == []
    return h


# ------------------------------------------------------------------ the table
ALL_MOVES = list(itertools.product(Phase, Phase))


@pytest.mark.parametrize("src,dest", [m for m in ALL_MOVES if m[1] in MOVES[m[0]]],
                         ids=lambda p: p.value)
def test_every_move_of_the_table_is_allowed(src: Phase, dest: Phase) -> None:
    check_move("1.0", src, dest)


@pytest.mark.parametrize("src,dest", [m for m in ALL_MOVES if m[1] not in MOVES[m[0]]],
                         ids=lambda p: p.value)
def test_every_other_move_is_refused_naming_the_job(src: Phase, dest: Phase) -> None:
    with pytest.raises(StarterMoveError) as err:
        check_move("7.3", src, dest)
    assert isinstance(err.value, CondorpyError)
    assert err.value.job == "7.3" and "job 7.3" in str(err.value)
    assert src.value in str(err.value) and dest.value in str(err.value)


def test_done_is_final_and_every_phase_can_end() -> None:
    assert MOVES[P.DONE] == frozenset()
    assert all(P.DONE in MOVES[p] for p in Phase if p is not P.DONE)


# ------------------------------------------------------------------ the life of a job
def test_launch_connect_run_and_done() -> None:
    h = _handle()
    h.on_launched(_launched(), 100.0)
    assert h.phase is P.CONNECTING and h.connect_by == 100.0 + CONNECT_TIMEOUT_S
    assert h.wants_socket
    assert h.on_connected() == [] and h.phase is P.RUNNING and h.linked
    assert not h.wants_socket
    assert h.on_starter_message({"event": "hello", "job_pid": 99}, 101.0) == [JobStarted(99)]
    assert h.job_pid == 99
    out = h.on_starter_message({"event": "done", "ad": {"ExitCode": 3}}, 102.0)
    assert out == [Finish({"ExitCode": 3})] and h.phase is P.DONE


def test_a_second_launch_or_a_second_end_is_refused() -> None:
    h = _running()
    with pytest.raises(StarterMoveError):
        h.on_launched(_launched(), 1.0)
    h.finish(None)
    with pytest.raises(StarterMoveError, match="job 1.0"):
        h.finish(None)


def test_a_vacated_job_is_never_launched() -> None:
    h = _handle()
    assert h.on_vacate() == [Unsent("soft_kill")]
    assert h.phase is P.VACATING and h.evicted
    with pytest.raises(StarterMoveError):
        h.on_launched(_launched(), 1.0)


def test_commands_before_the_socket_is_reached_wait_for_it() -> None:
    h = _handle()
    h.on_launched(_launched(), 0.0)
    assert h.on_suspend() == [] and h.phase is P.SUSPENDED
    assert h.on_continue() == [] and h.phase is P.CONNECTING
    assert h.on_vacate() == [] and h.phase is P.VACATING
    assert h.on_connected() == [Tell("suspend"), Tell("continue"), Tell("soft_kill")]
    assert h.phase is P.VACATING and h.queued == []


def test_suspend_and_continue_move_between_running_and_suspended() -> None:
    h = _running()
    assert h.on_suspend() == [Tell("suspend")] and h.phase is P.SUSPENDED
    assert h.on_continue() == [Tell("continue")] and h.phase is P.RUNNING


def test_vacate_then_kill_then_the_socket_closes() -> None:
    h = _running()
    assert h.on_vacate() == [Tell("soft_kill")] and h.phase is P.VACATING and h.evicted
    assert h.on_kill(starter_too=True) == [Tell("hard_kill"), KillProcess(41)]
    assert h.phase is P.KILLING
    h.on_socket_closed()
    assert h.phase is P.CLOSED and not h.linked and h.wants_socket
    assert h.on_kill() == [Unsent("hard_kill")] and h.phase is P.CLOSED


def test_a_stop_order_soft_kills_then_hard_kills_at_its_deadline() -> None:
    h = _running()
    order = StopOrder(JobStatus.HELD, "by hand", 1)
    assert h.on_stop(order, 700.0) == [Tell("soft_kill")]
    assert h.phase is P.VACATING and h.stop == order and not h.evicted and h.leaving
    assert h.next_deadline() == 700.0
    assert h.on_deadline(699.0) == []
    assert h.on_deadline(700.0) == [Tell("hard_kill")] and h.phase is P.KILLING
    assert h.on_deadline(800.0) == [] and h.next_deadline() is None
    # a vacate after the queue's stop does not turn it into an eviction
    h.on_vacate()
    assert not h.evicted


def test_a_starter_that_never_listens_is_killed_and_its_job_lost() -> None:
    h = _handle()
    h.on_launched(_launched(5), 10.0)
    assert h.on_unreachable(10.0 + CONNECT_TIMEOUT_S, alive=True) == []
    out = h.on_unreachable(10.0 + CONNECT_TIMEOUT_S + 0.1, alive=True)
    assert out == [NeverListened(5, "/x/starter.sock"), KillProcess(5), Finish(None)]
    assert h.phase is P.DONE


def test_a_starter_gone_unseen_is_judged_by_its_result_file() -> None:
    h = _handle()
    h.on_launched(_launched(), 0.0)
    assert h.on_unreachable(1.0, alive=False) == [Finish(None, "/x/final.ad")]
    h2 = _running()
    h2.on_socket_closed()
    assert h2.on_unreachable(10_000.0, alive=True) == []       # no connect timeout now
    assert h2.on_unreachable(10_001.0, alive=False) == [Finish(None, "/x/final.ad")]


def test_usage_reports_the_load_between_two_reports() -> None:
    h = _running()
    first = h.on_starter_message({"event": "usage", "usage": {"RemoteUserCpu": 1.0}}, 10.0)
    # without a cadence (UpdateCadence) every report also updates the job ad
    assert first == [UsageReport({"RemoteUserCpu": 1.0}, None, update=True)]
    second = h.on_starter_message({"event": "usage", "usage": {"RemoteUserCpu": 3.0,
                                                                "RemoteSysCpu": 1.0}}, 12.0)
    assert second == [UsageReport({"RemoteUserCpu": 3.0, "RemoteSysCpu": 1.0}, 1.5,
                                  update=True)]
    assert h.on_starter_message({"event": "error", "message": "oops"}, 13.0) == \
        [StarterSays("oops")]


def test_preparing_hooks_come_between_the_claim_and_the_launch() -> None:
    h = _handle()
    h.on_preparing()
    assert h.started and h.launched is None
    h.on_prepared()
    assert h.phase is P.LAUNCHING and not h.started
    h.on_launched(_launched(), 0.0)
    assert h.started


def test_origin_names_local_and_pool_jobs() -> None:
    local = _handle()
    pool = StarterHandle(PoolClaim("<1.2.3.4:5>#9#1", 3), "<1.2.3.4:5>#9#1", "slot1_2")
    assert local.job_id == JobId(1, 0) and local.name == "1.0"
    assert pool.job_id is None and pool.name == "pool#3"
    assert pool.on_signal("hard_kill") == [Unsent("hard_kill")] and pool.phase is P.KILLING
