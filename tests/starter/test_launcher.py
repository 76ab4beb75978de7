"""The job's first process forked ahead of its plan (a spare starter's Vessel): it runs
the plan it is given, and a plan it cannot use is a failed start, never a start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.launcher import LaunchPlan, Vessel
from condorpy.starter.users import JobUser


def _plan(tmp_path: Path, argv: tuple[str, ...], env: dict[str, str]) -> LaunchPlan:
    me = JobUser(name="me", uid=os.getuid(), gid=os.getgid(), groups=(), switch=False)
    return LaunchPlan(executable=argv[0], argv=argv, env=env, cwd=str(tmp_path),
                      stdin="/dev/null", stdout=str(tmp_path / "out"),
                      stderr=str(tmp_path / "err"), user=me, cgroup_procs=None,
                      pid_namespace=False)


def test_a_vessel_runs_the_plan_it_is_given(tmp_path: Path) -> None:
    vessel = Vessel.fork()
    pending = vessel.load(_plan(tmp_path, ("/bin/sh", "-c", "echo $WHO"), {"WHO": "job"}),
                          job_id="1.0")
    launched = pending.start()
    _, status = os.waitpid(launched.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (tmp_path / "out").read_text() == "job\n"


def test_a_plan_the_vessel_cannot_use_is_a_failed_start(tmp_path: Path) -> None:
    # an environment value that is not text (a lone surrogate) cannot be encoded
    vessel = Vessel.fork()
    pending = vessel.load(_plan(tmp_path, ("/bin/true",), {"BAD": "\udcff"}), job_id="2.0")
    with pytest.raises(JobHold) as hold:
        pending.start()
    assert hold.value.code == HoldCode.FAILED_TO_CREATE_PROCESS
    assert "cannot hand the job's plan to its process" in str(hold.value)
    assert not (tmp_path / "out").exists()


def test_a_missing_executable_is_a_failed_start(tmp_path: Path) -> None:
    vessel = Vessel.fork()
    pending = vessel.load(_plan(tmp_path, (str(tmp_path / "nothing"),), {}), job_id="3.0")
    with pytest.raises(JobHold) as hold:
        pending.start()
    assert "cannot execute the job's executable" in str(hold.value)


NET_CHECK = ("import socket, sys; "
             "names = [n for _, n in socket.if_nameindex()]; "
             "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1); "
             "c = socket.create_connection(s.getsockname(), timeout=5); "
             "sys.stdout.write(' '.join(names))")


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root")
@pytest.mark.parametrize("forked_ahead", [True, False])
def test_no_job_networking_leaves_the_job_its_own_loopback_only(
        tmp_path: Path, forked_ahead: bool) -> None:
    import dataclasses
    import sys

    from condorpy.starter.launcher import prepare_launch

    plan = dataclasses.replace(_plan(tmp_path, (sys.executable, "-c", NET_CHECK), {}),
                               net_namespace=True)
    pending = (Vessel.fork().load(plan, job_id="4.0") if forked_ahead
               else prepare_launch(plan, job_id="4.0"))
    launched = pending.start()
    _, status = os.waitpid(launched.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, (tmp_path / "err").read_text()
    assert (tmp_path / "out").read_text() == "lo"
