"""Running a container job through the docker client: the container made beside the
job's cgroup, the attached ``docker start`` the starter watches as the job's first
process, the container's end read back, and its removal.

The container's cgroup is put under the job's (``--cgroup-parent``) where docker's
cgroup driver is ``cgroupfs``: the job's memory and CPU limits, usage, OOM accounting,
freezing and killing are then those of a vanilla job. Under the ``systemd`` driver the
container gets the slot's limits as docker options, is suspended with ``docker pause``
and killed with ``docker kill``.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable, Mapping, Sequence

from condorpy.machine.docker import DockerCli, FailureKind, \
    StartFailure, classify_failure, classify_state_error, client_env, wait_status
from condorpy.starter.cgroup import JobCgroup
from condorpy.machine.docker import DockerSettings
from condorpy.starter.container import ContainerJob, CreateRequest, \
    container_hostname, container_name, create_args, gpu_devices
from condorpy.starter.devices import gpu_inventory
from condorpy.starter.holds import OUT_OF_RESOURCES_MEMORY, HoldCode, JobHold
from condorpy.starter.jobspec import JobSpec, SlotSpec
from condorpy.starter.launcher import LaunchPlan
from condorpy.starter.proctrack import JobProcesses, ProcessFamily
from condorpy.starter import safefs
from condorpy.starter.settings import StarterSettings
from condorpy.starter.users import JobUser

CONTAINER_ERROR = 1021          # HTCondor's ContainerError vacate code: requeue



def _outputs_for(user: JobUser, *paths: str) -> None:
    """The job's stdout and stderr made the job user's before the client, which stays
    the starter's user, opens them: the shadow takes back only files of the scratch
    directory's owner."""
    if not user.switch:
        return
    for path in paths:
        if path == os.devnull:
            continue
        try:
            fd = safefs.open_regular(path, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            continue            # the launcher's open fails the same way, with its hold
        try:
            os.fchown(fd, user.uid, user.gid)
        finally:
            os.close(fd)


class RuntimeFailed(Exception):
    """The container runtime failed this job for the machine's sake: the job goes back
    to its queue (``VacateReasonCode`` ContainerError), and when the daemon is down the
    startd marks the runtime unhealthy."""

    def __init__(self, failure: StartFailure) -> None:
        super().__init__(failure.reason)
        self.failure = failure

    def attributes(self) -> dict[str, object]:
        attrs: dict[str, object] = {
            "VacateReason": f"Container runtime failure: {self.failure.reason}",
            "VacateReasonCode": CONTAINER_ERROR, "VacateReasonSubCode": 0}
        if self.failure.kind is FailureKind.RUNTIME_DOWN:
            # the startd reads it from the final ad: HasDocker = false until a check
            attrs["DockerOfflineReason"] = self.failure.reason
        return attrs


def docker_oom_hold(job_id: str, memory_mb: int | None) -> JobHold:
    """The hold of a container docker reports killed for memory (HTCondor's text)."""
    return JobHold(f"Docker job has gone over memory limit of {memory_mb} Mb",
                   HoldCode.JOB_OUT_OF_RESOURCES, OUT_OF_RESOURCES_MEMORY, job=job_id)


class ContainerRun:
    def __init__(self, job: ContainerJob, settings: DockerSettings, *, execute: str,
                 hostname: str, say: Callable[[str], None],
                 cli: DockerCli | None = None) -> None:
        self.job = job
        self.settings = settings
        self.execute = execute
        self.hostname = hostname
        self.say = say
        self.cli = cli or DockerCli(settings.path, env=client_env())
        self.name: str | None = None
        self.cgroup_parented = False

    @classmethod
    def for_job(cls, ad: Mapping[str, object], job_id: str, settings: StarterSettings, *,
                say: Callable[[str], None]) -> ContainerRun | None:
        """The container run of a docker- or container-universe job; None for a job
        that runs without a container."""
        job = ContainerJob.from_ad(ad, job_id)
        if job is None:
            return None
        return cls(job, settings.docker, execute=settings.execute,
                   hostname=settings.hostname, say=say)

    def create(self, spec: JobSpec, slot: SlotSpec, user: JobUser, plan: LaunchPlan,
               *, scratch: str, cgroup: JobCgroup | None,
               settings: StarterSettings) -> LaunchPlan:
        """Make the container; the plan of the process that starts it attached. Raises
        RuntimeFailed or JobHold."""
        if user.uid == 0 or user.gid == 0:
            raise JobHold("a container job may not run as root", HoldCode.
                          FAILED_TO_ACCESS_USER_ACCOUNT, job=spec.job_id)
        if not spec.cmd:
            plan = dataclasses.replace(plan, executable="", argv=("", *spec.args))
        parent = None
        driver = self.settings.cgroup_driver
        if cgroup is not None and (driver or self.cli.cgroup_driver()) == "cgroupfs":
            parent = "/" + os.path.relpath(cgroup.slice, settings.cgroup_mount)
            self.cgroup_parented = True
        devices = gpu_devices(slot.assigned_gpus, gpu_inventory(settings.gpu_inventory_dir),
                              settings.dev_dir)
        name = container_name(spec.cluster, spec.proc, slot.short_name, os.getpid())
        req = CreateRequest(name=name, job_id=spec.job_id, execute_dir=self.execute,
                            scratch=scratch, cpus=slot.cpus, memory_mb=slot.memory_mb,
                            hostname=container_hostname(slot.name, self.hostname),
                            cgroup_parent=parent, devices=devices)
        args = create_args(self.job, plan, user, req, self.settings)
        ran = self.cli.create(args)
        if not ran.ok:
            self.cli.remove(name)          # a half-made container must not linger
            failure = classify_failure(ran.code, ran.err,
                                       step=f"create (image {self.job.image})")
            if failure.kind is FailureKind.JOB:
                raise JobHold(f"Error creating the job's container: {failure.reason}",
                              HoldCode.INVALID_DOCKER_IMAGE, job=spec.job_id)
            raise RuntimeFailed(failure)
        self.name = name
        _outputs_for(user, plan.stdout, plan.stderr)
        return dataclasses.replace(
            plan, executable=self.cli.path, argv=tuple(self.cli.start_argv(name)),
            env=client_env(), cwd=scratch, stdin=os.devnull,
            user=dataclasses.replace(user, switch=False), cgroup_procs=None,
            pid_namespace=False, net_namespace=False)

    def processes(self, pid: int, cgroup: JobCgroup | None, proc_root: str,
                  say: Callable[[str], None]) -> JobProcesses:
        assert self.name is not None
        return ContainerProcesses(pid, self, cgroup=cgroup if self.cgroup_parented
                                  else None, proc_root=proc_root, say=say)

    def ended(self, job_id: str, status: int, memory_mb: int | None) -> int:
        """The job's wait status from the container's end (HTCondor's reading of its
        exit code); a container that never ran its command raises a hold (the job's
        fault) or RuntimeFailed (the machine's), and one docker saw killed for memory
        where no cgroup of the job's did holds the job (HTCondor's reading)."""
        assert self.name is not None
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            # ``docker start -a`` exits with the container's code: a clean exit needs
            # no inspection (a costly client call saved on every successful job)
            return status
        state = self.cli.inspect(self.name)
        if state is None:
            self.say(f"job {job_id}: cannot inspect container {self.name}; its exit is "
                     "taken from docker start's")
            return status
        if state.oom_killed and not self.cgroup_parented:
            raise docker_oom_hold(job_id, memory_mb)
        if state.error and not state.oom_killed:
            if classify_state_error(state.error) is FailureKind.JOB:
                raise JobHold(f"Error running docker job: {state.error}",
                              HoldCode.FAILED_TO_CREATE_PROCESS, job=job_id)
            raise RuntimeFailed(StartFailure(FailureKind.RUNTIME,
                                             f"docker start: {state.error}"))
        return wait_status(state.exit_code)

    def pause(self) -> bool:
        return self.name is not None and self.cli.pause(self.name).ok

    def unpause(self) -> bool:
        return self.name is not None and self.cli.unpause(self.name).ok

    def kill(self, signum: int) -> None:
        if self.name is not None:
            self.cli.kill(self.name, signum)

    def remove(self) -> list[str]:
        """Remove the container; the problem, if it stays."""
        if self.name is None:
            return []
        ran = self.cli.remove(self.name)
        if ran.ok or "no such container" in ran.err.lower():
            self.name = None
            return []
        return [f"container {self.name}: {ran.err.strip() or f'exit {ran.code}'}"]


class ContainerProcesses(JobProcesses):
    """A container job's processes: its cgroup (the job's, when the container's was put
    under it) or the runtime's pause and kill."""

    def __init__(self, root: int, run: ContainerRun, *, cgroup: JobCgroup | None,
                 proc_root: str, say: Callable[[str], None]) -> None:
        if cgroup is not None:
            super().__init__(root, cgroup=cgroup, say=say)
        else:
            super().__init__(root, family=ProcessFamily(proc_root, root, root), say=say)
        self.run = run

    @property
    def kind(self) -> str:
        return "container-cgroup" if self.cgroup is not None else "container"

    def stop(self) -> int:
        if self.cgroup is not None:
            return super().stop()
        if not self.run.pause():
            self.say("docker pause failed: the container keeps running")
        return 1

    def resume(self) -> None:
        if self.cgroup is not None:
            super().resume()
        elif not self.run.unpause():
            self.say("docker unpause failed")

    def kill(self, *, root_alive: bool, timeout_s: float) -> None:
        if self.cgroup is not None:
            super().kill(root_alive=root_alive, timeout_s=timeout_s)
            return
        self.run.kill(int(signal.SIGKILL))
        if root_alive:
            try:
                os.kill(self.root, signal.SIGKILL)
            except ProcessLookupError:
                pass


def remove_left_behind(cli: DockerCli, execute_dir: str, live: Sequence[int],
                       say: Callable[[str], None]) -> list[str]:
    """Remove the containers a previous startd of ``execute_dir`` left behind whose
    starter (the PID in HTCondor's container name) is not among ``live``."""
    removed = []
    for name in cli.left_behind(execute_dir):
        pid_text = name.rsplit("_PID", 1)[-1]
        if pid_text.isdigit() and int(pid_text) in live:
            continue
        if cli.remove(name).ok:
            removed.append(name)
        else:
            say(f"cannot remove container {name} left behind by a previous startd")
    return removed
