"""Container jobs on the host, without a Docker daemon: the knobs read, and a job
whose runtime cannot be reached requeued with the runtime marked down (never held)."""

from __future__ import annotations

import os
from pathlib import Path

from condorpy.config import Config
from condorpy.machine.docker import DockerSettings
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
