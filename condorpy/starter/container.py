"""Docker- and container-universe jobs: what the job ad asks for, and the ``docker
create`` argument list that gives it, as HTCondor's starter builds it.

Pure: the job's launch plan (its command, arguments, environment and working
directory, made as for a vanilla job), the slot, the user and the knobs come in; an
argument list comes out. condorpy's starter then runs the container through
:mod:`condorpy.machine.docker`.

A container job is ``JobUniverse = 5`` with ``WantDocker`` (the docker universe,
``DockerImage``) or ``WantContainer`` (the container universe, ``ContainerImage``).
Only Docker runs them here: a container image that is not a ``docker://`` reference
(an Apptainer ``.sif`` file or a directory) is refused with a hold, since no Apptainer
is packaged for this platform.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from condorpy.machine.docker import EXECUTE_LABEL, HTCONDOR_LABEL, JOB_LABEL, DockerSettings
from condorpy.starter.devices import GpuNode, node_of
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.jobspec import ad_value
from condorpy.starter.launcher import LaunchPlan
from condorpy.starter.users import JobUser

DOCKER_URL = "docker://"


def _text(ad: Mapping[str, object], name: str) -> str:
    value = ad_value(ad, name)
    return value.strip() if isinstance(value, str) else ""


def _true(ad: Mapping[str, object], name: str) -> bool:
    return ad_value(ad, name) is True


def wants_container(ad: Mapping[str, object]) -> bool:
    """Whether the job runs in a container (docker or container universe)."""
    return _true(ad, "WantDocker") or _true(ad, "WantContainer")


def normalized_image(image: str) -> str:
    """HTCondor's reading of an image reference: ``docker://`` dropped and an implicit
    tag made ``:latest`` (a digest reference is left as it is)."""
    if image.startswith(DOCKER_URL):
        image = image[len(DOCKER_URL):]
    if "@" in image:
        return image
    last = image.rsplit("/", 1)[-1]
    return image if ":" in last else image + ":latest"


@dataclass(frozen=True)
class ContainerJob:
    universe: str                     # "docker" or "container"
    image: str                        # normalized
    network: str                      # DockerNetworkType ("" is the default, nat)
    pull_always: bool                 # DockerPullPolicy = always
    override_entrypoint: bool         # DockerOverrideEntrypoint
    service_ports: tuple[int, ...]    # ContainerServiceNames' <name>_ContainerPort

    @classmethod
    def from_ad(cls, ad: Mapping[str, object], job_id: str) -> ContainerJob | None:
        """The job's container, None for a job that runs without one; a hold for a
        container this execution point cannot run."""
        if _true(ad, "WantDocker"):
            universe = "docker"
            image = _text(ad, "DockerImage") or _text(ad, "ContainerImage")
        elif _true(ad, "WantContainer"):
            universe = "container"
            # condor_submit writes a container job's docker_image as DockerImage (with
            # WantDockerImage), its container_image as ContainerImage
            image = _text(ad, "ContainerImage")
            if not image:
                image = _text(ad, "DockerImage")
            elif not image.startswith(DOCKER_URL):
                raise JobHold(f"container image {image} is not a docker:// image: this "
                              "execution point runs containers through Docker only "
                              "(no Apptainer)", HoldCode.INVALID_DOCKER_IMAGE,
                              attribute="ContainerImage", job=job_id)
        else:
            return None
        if not image:
            raise JobHold(f"a {universe}-universe job without an image",
                          HoldCode.INVALID_DOCKER_IMAGE,
                          attribute="DockerImage" if universe == "docker"
                          else "ContainerImage", job=job_id)
        ports = []
        for service in re.split(r"[\s,]+", _text(ad, "ContainerServiceNames")):
            if not service:
                continue
            port = ad_value(ad, f"{service}_ContainerPort")
            if isinstance(port, bool) or not isinstance(port, int):
                raise JobHold(f"container service {service} names no port "
                              f"({service}_ContainerPort)", HoldCode.INVALID_DOCKER_IMAGE,
                              attribute="ContainerServiceNames", job=job_id)
            ports.append(port)
        return cls(universe=universe, image=normalized_image(image),
                   network=_text(ad, "DockerNetworkType").lower(),
                   pull_always=_text(ad, "DockerPullPolicy").lower() == "always",
                   override_entrypoint=_true(ad, "DockerOverrideEntrypoint"),
                   service_ports=tuple(ports))


def container_name(cluster: int, proc: int, slot: str, pid: int) -> str:
    """HTCondor's container name: ``HTCJob<cluster>_<proc>_<slot>_PID<pid>``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", slot)
    return f"HTCJob{cluster}_{proc}_{safe}_PID{pid}"


def gpu_devices(assigned: Sequence[str], nodes: Sequence[GpuNode],
                dev_dir: str = "/dev") -> tuple[str, ...]:
    """The device nodes a container is given for its slot's GPUs: the control nodes
    and the assigned GPUs' own, nothing of the others (an id matching no GPU gives
    nothing: a guess must not hand a job another job's GPU)."""
    if not assigned:
        return ()
    minors = sorted({node.minor for gpu in assigned
                     if (node := node_of(gpu, nodes)) is not None})
    return (os.path.join(dev_dir, "nvidiactl"), os.path.join(dev_dir, "nvidia-uvm"),
            *(os.path.join(dev_dir, f"nvidia{m}") for m in minors))


@dataclass(frozen=True)
class CreateRequest:
    """What one container is made from, beyond the job's plan."""
    name: str
    job_id: str
    execute_dir: str                  # the startd's, for the label a later startd finds
    scratch: str
    cpus: float
    memory_mb: int | None
    hostname: str
    cgroup_parent: str | None = None  # the job's cgroup, where docker's driver allows
    devices: tuple[str, ...] = ()


def create_args(job: ContainerJob, plan: LaunchPlan, user: JobUser, req: CreateRequest,
                settings: DockerSettings) -> list[str]:
    """``docker create``'s arguments (after ``create``) for the job whose vanilla
    launch plan is ``plan``: HTCondor's resource limits, capabilities, init, name and
    label, environment, volumes (scratch and the job's working directory at their own
    paths, then the administrator's), devices, working directory, user, network,
    hostname, ports, pull policy, then image, command and arguments."""
    args: list[str] = []
    args.append(f"--cpu-shares={max(2, int(100 * max(1.0, req.cpus)))}")
    if req.memory_mb is not None:
        args.append(f"--memory={req.memory_mb}m")
    if req.cgroup_parent is not None:
        args.append(f"--cgroup-parent={req.cgroup_parent}")
    if settings.drop_capabilities:
        args += ["--cap-drop=all", "--cap-add=SYS_PTRACE",
                 "--security-opt", "no-new-privileges"]
    if settings.run_under_init:
        args.append("--init")
    args += ["--name", req.name, "--label", HTCONDOR_LABEL,
             "--label", f"{EXECUTE_LABEL}={req.execute_dir}",
             "--label", f"{JOB_LABEL}={req.job_id}"]
    if settings.log_driver_none:
        args += ["--log-driver", "none"]
    for key in sorted(plan.env):
        args += ["-e", f"{key}={plan.env[key]}"]
    seen: set[str] = set()
    for volume in (f"{req.scratch}:{req.scratch}", f"{plan.cwd}:{plan.cwd}",
                   *settings.volumes):
        target = volume.split(":")[1] if ":" in volume else volume
        if target in seen:
            continue          # docker refuses two mounts on one target
        seen.add(target)
        args += ["--volume", volume]
    for device in req.devices:
        args += ["--device", device]
    args += ["--workdir", plan.cwd, "--user", f"{user.uid}:{user.gid}"]
    for gid in user.groups:
        if gid != user.gid:
            args += ["--group-add", str(gid)]
    network = job.network
    if network == "host":
        args.append("--network=host")
    else:
        if network == "none":
            args.append("--network=none")
        elif network not in ("", "nat"):
            if network not in settings.networks:
                raise JobHold(f"docker network {network} is not allowed here "
                              "(DOCKER_NETWORKS)", HoldCode.INVALID_DOCKER_IMAGE,
                              attribute="DockerNetworkType", job=req.job_id)
            args.append(f"--network={network}")
        args += ["--hostname", req.hostname]
    for port in job.service_ports:
        args += ["-p", str(port)]
    if job.pull_always:
        args += ["--pull", "always"]
    args += list(settings.extra_args)
    if settings.shm_size is not None:
        args += ["--shm-size", str(settings.shm_size)]
    command = plan.argv[1:]      # the job's arguments, after its command if it has one
    if plan.executable and job.override_entrypoint:
        args += ["--entrypoint", plan.executable, job.image]
    elif plan.executable:
        args += [job.image, plan.executable]
    else:
        args.append(job.image)
    args += list(command)
    return args


def container_hostname(slot_name: str, hostname: str) -> str:
    """The container's host name: the slot's short name and the machine's, as one
    label-safe name (HTCondor names the container's host after its slot and
    machine)."""
    short = slot_name.split("@", 1)[0]
    host = hostname.split(".", 1)[0]
    return re.sub(r"[^A-Za-z0-9-]", "-", f"{short}-{host}")[:63]
