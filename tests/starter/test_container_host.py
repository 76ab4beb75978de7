"""Container jobs on the host, without a Docker daemon: the knobs read, and a job
whose runtime cannot be reached requeued with the runtime marked down (never held)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from condorpy.config import Config
from condorpy.machine.docker import DockerCli, DockerSettings, Ran
from condorpy.starter.container import ContainerJob
from condorpy.starter.container_run import ContainerRun, RuntimeFailed
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.knobs import settings_from_knobs
from condorpy.starter.settings import StarterSettings

from .helpers import run


def test_docker_knobs_become_settings() -> None:
    cfg = Config.from_mapping({
        "DOCKER": "/opt/docker", "DOCKER_MOUNT_VOLUMES": "CVMFS, DATA, GONE",
        "DOCKER_VOLUME_DIR_CVMFS": "/cvmfs", "DOCKER_VOLUME_DIR_DATA": "/d:/data:ro",
        "DOCKER_DROP_ALL_CAPABILITIES": "false", "DOCKER_NETWORKS": "lab, lab2",
        "DOCKER_EXTRA_ARGUMENTS": "--read-only --tmpfs '/run:size=1m'"},
        source="<test>", subsystem="STARTER")
    docker = settings_from_knobs(cfg, execute="/x").docker
    assert docker.path == "/opt/docker"
    assert docker.volumes == ("/cvmfs:/cvmfs", "/d:/data:ro")   # GONE has no directory
    assert docker.drop_capabilities is False and docker.run_under_init is True
    assert docker.networks == ("lab", "lab2")
    assert docker.extra_args == ("--read-only", "--tmpfs", "/run:size=1m")
    default = settings_from_knobs(Config.from_mapping({}, source="<t>"), execute="/x").docker
    assert default == DockerSettings()           # HTCondor's defaults
    assert default.path == "/usr/bin/docker"


def test_unreachable_runtime_requeues_and_marks_it_down(tmp_path: Path) -> None:
    execute = tmp_path / "execute"
    execute.mkdir()
    settings = StarterSettings(execute=str(execute), use_cgroups=False,
                               docker=DockerSettings(path=str(tmp_path / "no-docker")))
    ad = {"WantDocker": True, "DockerImage": "busybox", "Cmd": "/bin/true",
          "ClusterId": 4, "ProcId": 0}
    if os.geteuid() == 0:
        ad["Owner"] = "nobody"
    out = run(ad, {"Name": "slot1@test", "Cpus": 1, "Memory": 64}, settings)
    assert out.hold is None and out.vacated, (out.attributes, out.notices)
    assert out.attributes["VacateReasonCode"] == 1021           # ContainerError: requeue
    assert str(out.attributes["VacateReason"]).startswith("Container runtime failure")
    assert "DockerOfflineReason" in out.attributes              # the startd's news
    assert os.listdir(execute) == []                            # nothing left behind


class _Cli(DockerCli):
    """A client that answers from a table: (first argument) -> Ran."""

    def __init__(self, answers: dict[str, Ran]) -> None:
        super().__init__("/fake/docker")
        self.answers = answers
        self.calls: list[list[str]] = []

    def run(self, args: Sequence[str], *, timeout: float = 0) -> Ran:
        self.calls.append(list(args))
        return self.answers.get(args[0], Ran(0, "", ""))


def _state(**kw: object) -> str:
    state = {"Status": "exited", "ExitCode": 0, "OOMKilled": False, "Error": ""}
    state.update(kw)
    return json.dumps([{"State": state}])


def _run(cli: _Cli) -> ContainerRun:
    job = ContainerJob("docker", "img:latest", "none", False, False, ())
    run_ = ContainerRun(job, DockerSettings(), execute="/x", hostname="ep", say=print,
                        cli=cli)
    run_.name = "HTCJob1_0_slot1_PID1"
    return run_


def test_container_end_read_as_htcondor_reads_it() -> None:
    cli = _Cli({"inspect": Ran(0, _state(ExitCode=3), "")})
    assert _run(cli).ended("1.0", 0, 64) == 0 and cli.calls == []   # clean: no inspect
    assert os.WEXITSTATUS(_run(cli).ended("1.0", 3 << 8, 64)) == 3
    killed = _Cli({"inspect": Ran(0, _state(ExitCode=137), "")})
    assert os.WTERMSIG(_run(killed).ended("1.0", 137 << 8, 64)) == 9
    # killed for memory where no cgroup of the job's saw it (docker's systemd driver)
    oom = _Cli({"inspect": Ran(0, _state(ExitCode=137, OOMKilled=True), "")})
    with pytest.raises(JobHold) as held:
        _run(oom).ended("1.0", 137 << 8, 64)
    assert (held.value.code, held.value.hold_subcode) == (HoldCode.JOB_OUT_OF_RESOURCES, 102)
    assert held.value.reason == "Docker job has gone over memory limit of 64 Mb"


def test_container_that_never_ran_held_or_requeued() -> None:
    missing = _Cli({"inspect": Ran(0, _state(ExitCode=127, Error='OCI runtime create '
                                             'failed: exec: "x": executable file not '
                                             'found in $PATH'), "")})
    with pytest.raises(JobHold) as held:
        _run(missing).ended("1.0", 127 << 8, 64)
    assert held.value.code is HoldCode.FAILED_TO_CREATE_PROCESS
    mount = _Cli({"inspect": Ran(0, _state(ExitCode=128, Error="error mounting /a"), "")})
    with pytest.raises(RuntimeFailed) as failed:
        _run(mount).ended("1.0", 1 << 8, 64)
    attrs = failed.value.attributes()
    assert attrs["VacateReasonCode"] == 1021 and "DockerOfflineReason" not in attrs


def test_removal_and_a_container_already_gone() -> None:
    gone = _Cli({"rm": Ran(1, "", "Error: No such container: HTCJob1_0_slot1_PID1")})
    assert _run(gone).remove() == []
    stuck = _Cli({"rm": Ran(1, "", "Error response from daemon: device busy")})
    assert "device busy" in _run(stuck).remove()[0]
    assert stuck.calls == [["rm", "-f", "-v", "HTCJob1_0_slot1_PID1"]]
