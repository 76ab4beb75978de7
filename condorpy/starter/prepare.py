"""Getting a job's place ready before it is launched: the cgroup tree and the job's
limits in it, the job's event log, and the launch plan (what to run, where, as whom,
with which environment).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from condorpy.starter.cgroup import CgroupLimits, CgroupTree, CgroupUnavailable, \
    compute_limits, open_tree
from condorpy.starter.environment import job_environment
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.jobspec import JobIdentity, JobSpec, SlotSpec
from condorpy.starter.launcher import LaunchPlan
from condorpy.starter.sandbox import Sandbox
from condorpy.starter.settings import StarterSettings
from condorpy.starter.userlog import UserLog
from condorpy.starter.users import JobUser, choose_user


def cgroup_tree(settings: StarterSettings, say: Callable[[str], None]) -> CgroupTree | None:
    """Where the job's cgroup goes; None (said why) when jobs run without one."""
    if not settings.use_cgroups:
        say("cgroups are turned off by configuration: memory, CPU and process "
            "limits are NOT enforced; the job's processes are tracked through "
            "/proc")
        return None
    try:
        return open_tree(settings.cgroup_mount, settings.cgroup_base,
                         proc_root=settings.proc_root)
    except CgroupUnavailable as exc:
        say(f"memory, CPU and process limits are NOT enforced: {exc}; "
            "the job's processes are tracked through /proc")
        return None


def cgroup_limits(settings: StarterSettings, slot: SlotSpec) -> CgroupLimits:
    return compute_limits(
        policy=settings.memory_policy.value, slot_memory_mb=slot.memory_mb,
        slot_vm_kb=slot.virtual_memory_kb,
        machine_memory_mb=settings.machine_memory_mb,
        custom_hard_mb=settings.custom_hard_mb,
        custom_soft_mb=settings.custom_soft_mb,
        disable_swap=settings.disable_swap, cpus=slot.cpus,
        pids_max=settings.pids_max,
        enforce_cpu_max=settings.enforce_cpu_max,
        low_mb=settings.low_memory_mb, high_percent=settings.memory_high_percent)


def open_job_log(job: JobSpec, who: JobUser, iwd: str,
                 wall: Callable[[], float]) -> UserLog | None:
    """The job's event log, opened as ``who``; a log that cannot be opened holds the
    job."""
    if job.user_log is None:
        return None
    path = job.user_log if os.path.isabs(job.user_log) else os.path.join(iwd, job.user_log)
    try:
        return UserLog.open(path, job.cluster, job.proc,
                            uid=who.uid if who.switch else None,
                            gid=who.gid if who.switch else None,
                            groups=who.groups, wall=wall)
    except OSError as exc:
        raise JobHold(f"cannot open the job event log {path}: {exc.strerror}",
                      HoldCode.UNABLE_TO_INIT_USER_LOG, exc.errno or 0,
                      attribute="StarterUserLog", job=job.job_id) from None


def open_log_for_hold(hold: JobHold, ident: JobIdentity, user: JobUser | None,
                      slot_ad: Mapping[str, object], settings: StarterSettings,
                      wall: Callable[[], float],
                      say: Callable[[str], None]) -> UserLog | None:
    """A job held before its log was opened still gets its held event, as in
    HTCondor; written with the job user's credentials (``user``: the account, when
    one was chosen) or not at all."""
    if ident.user_log is None or hold.code is HoldCode.UNABLE_TO_INIT_USER_LOG:
        return None
    path = ident.user_log
    if not os.path.isabs(path):
        if ident.iwd is None:
            return None       # relative to a sandbox that never existed
        path = os.path.join(ident.iwd, path)
    if user is None:
        try:
            user = choose_user(ident, SlotSpec.from_ad(slot_ad), settings)
        except JobHold:
            say(f"job {ident.job_id}: held event not written to {path}: "
                "no account to write it as")
            return None
    try:
        return UserLog.open(path, ident.cluster, ident.proc,
                            uid=user.uid if user.switch else None,
                            gid=user.gid if user.switch else None,
                            groups=user.groups, wall=wall)
    except OSError as exc:
        say(f"job {ident.job_id}: held event not written to {path}: {exc.strerror}")
        return None


def launch_plan(job: JobSpec, slot: SlotSpec, user: JobUser, box: Sandbox, *,
                pid_ns: bool, settings: StarterSettings,
                cgroup_procs: str | None) -> LaunchPlan:
    iwd = job.iwd or box.path

    def rel(path: str | None) -> str:
        if path is None:
            return os.devnull
        return path if os.path.isabs(path) else os.path.join(iwd, path)

    executable = job.cmd if os.path.isabs(job.cmd) else os.path.join(iwd, job.cmd)
    env = job_environment(job, slot, scratch=box.path, job_ad_path=box.job_ad,
                          machine_ad_path=box.machine_ad, iwd=iwd,
                          thread_vars=settings.num_threads_env)
    return LaunchPlan(executable=executable, argv=(executable, *job.args), env=env,
                      cwd=iwd, stdin=rel(job.stdin), stdout=rel(job.stdout),
                      stderr=rel(job.stderr), user=user, cgroup_procs=cgroup_procs,
                      pid_namespace=pid_ns, net_namespace=settings.no_job_networking)
