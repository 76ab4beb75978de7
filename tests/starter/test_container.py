"""A container job's ad read, and its ``docker create`` arguments built (pure)."""

from __future__ import annotations

import pytest

from condorpy.machine.docker import DockerSettings, volume_spec
from condorpy.starter.container import ContainerJob, CreateRequest, container_hostname, \
    container_name, create_args, gpu_devices, normalized_image, wants_container
from condorpy.starter.devices import GpuNode
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.launcher import LaunchPlan
from condorpy.starter.users import JobUser

USER = JobUser("alice", 1000, 1000, (1000, 27), True)


def _plan(executable: str = "/scratch/dir_1/job.sh", *args: str) -> LaunchPlan:
    return LaunchPlan(executable=executable, argv=(executable, *args),
                      env={"_CONDOR_SCRATCH_DIR": "/scratch/dir_1", "A": "b c"},
                      cwd="/scratch/dir_1", stdin="/dev/null", stdout="/scratch/dir_1/o",
                      stderr="/scratch/dir_1/e", user=USER, cgroup_procs=None,
                      pid_namespace=False)


def _req(**kw: object) -> CreateRequest:
    base: dict[str, object] = dict(name="HTCJob3_0_slot1_PID9", job_id="3.0",
                                   execute="/var/lib/condorpy/execute",
                                   scratch="/scratch/dir_1", cpus=2.0, memory_mb=128,
                                   hostname="slot1-ep")
    base.update(kw)
    base["execute_dir"] = base.pop("execute")
    return CreateRequest(**base)  # type: ignore[arg-type]


def test_docker_and_container_universe_ads() -> None:
    docker = ContainerJob.from_ad({"WantDocker": True, "DockerImage": "busybox",
                                   "DockerNetworkType": "none",
                                   "DockerPullPolicy": "Always"}, "1.0")
    assert docker is not None
    assert (docker.universe, docker.image, docker.network, docker.pull_always) == (
        "docker", "busybox:latest", "none", True)
    boxed = ContainerJob.from_ad({"WantContainer": True,
                                  "ContainerImage": "docker://reg:5000/x/y"}, "1.0")
    assert boxed is not None and boxed.image == "reg:5000/x/y:latest"
    # container universe with docker_image, as condor_submit writes it
    named = ContainerJob.from_ad({"WantContainer": True, "WantDockerImage": True,
                                  "DockerImage": "debian:12"}, "1.0")
    assert named is not None and (named.universe, named.image) == ("container", "debian:12")
    assert ContainerJob.from_ad({"Cmd": "/bin/true"}, "1.0") is None
    assert wants_container({"wantdocker": True}) and not wants_container({})


def test_an_apptainer_image_is_held_not_faked() -> None:
    with pytest.raises(JobHold) as info:
        ContainerJob.from_ad({"WantContainer": True, "ContainerImage": "/img/x.sif"}, "1.0")
    assert info.value.code is HoldCode.INVALID_DOCKER_IMAGE
    with pytest.raises(JobHold):
        ContainerJob.from_ad({"WantDocker": True}, "1.0")


def test_service_ports() -> None:
    job = ContainerJob.from_ad({"WantDocker": True, "DockerImage": "i:1",
                                "ContainerServiceNames": "web, db",
                                "web_ContainerPort": 80, "db_ContainerPort": 5432}, "1.0")
    assert job is not None and job.service_ports == (80, 5432)
    with pytest.raises(JobHold):
        ContainerJob.from_ad({"WantDocker": True, "DockerImage": "i",
                              "ContainerServiceNames": "web"}, "1.0")


def test_images_normalized() -> None:
    assert normalized_image("docker://debian") == "debian:latest"
    assert normalized_image("a/b:1") == "a/b:1"
    assert normalized_image("a@sha256:00") == "a@sha256:00"


def _job(**kw: object) -> ContainerJob:
    base: dict[str, object] = dict(universe="docker", image="img:latest", network="",
                                   pull_always=False, override_entrypoint=False,
                                   service_ports=())
    base.update(kw)
    return ContainerJob(**base)  # type: ignore[arg-type]


def test_create_arguments_as_htcondor_builds_them() -> None:
    args = create_args(_job(), _plan("/scratch/dir_1/job.sh", "x", "y z"), USER,
                       _req(cgroup_parent="/condorpy/job_9.slice"),
                       DockerSettings(volumes=(volume_spec("/cvmfs"),)))
    assert args[:3] == ["--cpu-shares=200", "--memory=128m",
                        "--cgroup-parent=/condorpy/job_9.slice"]
    assert ["--cap-drop=all", "--cap-add=SYS_PTRACE", "--security-opt",
            "no-new-privileges", "--init"] == args[3:8]
    joined = " ".join(args)
    assert "--name HTCJob3_0_slot1_PID9 --label org.htcondorproject=True" in joined
    assert "--label org.condorpy.execute=/var/lib/condorpy/execute" in joined
    assert "--log-driver none" in joined
    assert args[args.index("-e") + 1] == "A=b c"
    vols = [args[i + 1] for i, a in enumerate(args) if a == "--volume"]
    assert vols == ["/scratch/dir_1:/scratch/dir_1", "/cvmfs:/cvmfs"]  # iwd = scratch once
    assert args[args.index("--workdir") + 1] == "/scratch/dir_1"
    assert args[args.index("--user") + 1] == "1000:1000"
    assert args[args.index("--group-add") + 1] == "27"
    assert args[args.index("--hostname") + 1] == "slot1-ep"
    assert args[-4:] == ["img:latest", "/scratch/dir_1/job.sh", "x", "y z"]


def test_entrypoint_and_no_command() -> None:
    over = create_args(_job(override_entrypoint=True), _plan("/bin/sh", "-c", "true"),
                       USER, _req(), DockerSettings())
    assert over[-5:] == ["--entrypoint", "/bin/sh", "img:latest", "-c", "true"]
    bare = create_args(_job(), _plan("", "a1"), USER, _req(), DockerSettings())
    assert bare[-2:] == ["img:latest", "a1"]


def test_network_types() -> None:
    host = create_args(_job(network="host"), _plan(), USER, _req(), DockerSettings())
    assert "--network=host" in host and "--hostname" not in host
    none = create_args(_job(network="none"), _plan(), USER, _req(), DockerSettings())
    assert "--network=none" in none and "--hostname" in none
    with pytest.raises(JobHold):
        create_args(_job(network="lab"), _plan(), USER, _req(), DockerSettings())
    lab = create_args(_job(network="lab"), _plan(), USER, _req(),
                      DockerSettings(networks=("lab",)))
    assert "--network=lab" in lab


def test_knob_switches_and_pull_policy() -> None:
    args = create_args(_job(pull_always=True), _plan(), USER, _req(memory_mb=None),
                       DockerSettings(drop_capabilities=False, run_under_init=False,
                                      log_driver_none=False, shm_size=1 << 20,
                                      extra_args=("--read-only",)))
    assert not any(a.startswith("--memory") for a in args)
    assert "--cap-drop=all" not in args and "--init" not in args
    assert "--log-driver" not in args
    assert args[args.index("--pull") + 1] == "always"
    assert "--read-only" in args and args[args.index("--shm-size") + 1] == str(1 << 20)


def test_gpus_passed_only_when_assigned() -> None:
    nodes = [GpuNode("GPU-aaaa1111", 0, "0000:01:00.0"),
             GpuNode("GPU-bbbb2222", 1, "0000:02:00.0")]
    assert gpu_devices((), nodes) == ()
    assert gpu_devices(("GPU-bbbb",), nodes) == ("/dev/nvidiactl", "/dev/nvidia-uvm",
                                                 "/dev/nvidia1")
    assert gpu_devices(("CUDA0",), nodes)[-1] == "/dev/nvidia0"
    args = create_args(_job(), _plan(), USER, _req(devices=gpu_devices(("CUDA1",), nodes)),
                       DockerSettings())
    assert [args[i + 1] for i, a in enumerate(args) if a == "--device"] == [
        "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"]


def test_names() -> None:
    assert container_name(3, 0, "slot1_2", 77) == "HTCJob3_0_slot1_2_PID77"
    assert container_hostname("slot1_2@ep.example.org", "ep.example.org") == "slot1-2-ep"
