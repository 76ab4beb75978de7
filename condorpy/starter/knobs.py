"""StarterSettings from the configuration, read through the config layer's one typed
reader, so that the starter does not depend on where the configuration comes from
(condor_config files, ``_CONDOR_<NAME>`` environment variables, command-line
overrides) and a bad value names the line that set it."""

from __future__ import annotations

import re
import shlex
import socket
from dataclasses import dataclass

from condorpy.config import KnobReader
from condorpy.machine.docker import DEFAULT_DOCKER, DockerSettings, volume_spec
from condorpy.machine.containment import enforces_disk, no_job_networking, wants_cgroups
from condorpy.machine.probe import configured_memory_mb
from condorpy.machine.volumes import KNOBS as VOLUME_KNOBS, lvm_settings
from condorpy.starter.settings import MemoryPolicy, StarterSettings

_SLOT_USER = re.compile(r"^SLOT(\d+)_USER$", re.IGNORECASE)
# container jobs: the docker runtime's knobs, and DOCKER_VOLUME_DIR_<name>
DOCKER_KNOBS = ("DOCKER", "DOCKER_MOUNT_VOLUMES", "DOCKER_DROP_ALL_CAPABILITIES",
                "DOCKER_RUN_UNDER_INIT", "DOCKER_LOG_DRIVER_NONE", "DOCKER_NETWORKS",
                "DOCKER_SHM_SIZE", "DOCKER_EXTRA_ARGUMENTS")
_DOCKER_VOLUME = re.compile(r"^DOCKER_VOLUME_DIR_\w+$", re.IGNORECASE)

# Every knob a starter reads (with SLOT<N>_USER): :func:`settings_from_knobs` and the
# custom memory limits (condorpy.starter.ads.custom_memory_limit). The startd sends
# these with every launch, so the fork server needs no configuration of its own.
KNOBS = ("CGROUP_MEMORY_LIMIT_POLICY", "DISABLE_SWAP_FOR_JOB", "MEMORY",
         "CONDORPY_CGROUP_PIDS_MAX", "CONDORPY_CGROUP_CPU_MAX", "USE_PID_NAMESPACES",
         "STARTER_ALLOW_RUNAS_OWNER", "CONDORPY_ALLOW_ROOT_JOBS", "BASE_CGROUP",
         "CONDORPY_USE_CGROUPS", "KILLING_TIMEOUT", "CONDORPY_USAGE_INTERVAL",
         "CONDORPY_ENFORCE_DISK_USAGE", "FULL_HOSTNAME",
         "CGROUP_HARD_MEMORY_LIMIT_EXPR", "CGROUP_SOFT_MEMORY_LIMIT_EXPR",
         "CGROUP_LOW_MEMORY_LIMIT", "CGROUP_IGNORE_CACHE_MEMORY",
         "STARTER_ALWAYS_HOLD_ON_OOM", "CONDORPY_CGROUP_MEMORY_HIGH_PERCENT",
         "NO_JOB_NETWORKING", "STARTER_HIDE_GPU_DEVICES",
         *VOLUME_KNOBS, *DOCKER_KNOBS)


def knob_names(cfg: KnobReader) -> list[str]:
    """The names of :data:`KNOBS` and the SLOT<N>_USER knobs ``cfg`` defines."""
    return [*KNOBS, *(n for n in cfg.names() if _SLOT_USER.match(n)
                      or _DOCKER_VOLUME.match(n))]


def starter_knobs(cfg: KnobReader) -> dict[str, str]:
    """What a starter needs of the configuration (read as the STARTER), as text."""
    out = {}
    for name in knob_names(cfg):
        value = cfg.get(name)
        if value is not None:
            out[name] = value
    return out


def settings_from_knobs(cfg: KnobReader, *, execute: str,
                        custom_hard_mb: int | None = None,
                        custom_soft_mb: int | None = None,
                        low_memory_mb: int | None = None) -> StarterSettings:
    policy_text = (cfg.get("CGROUP_MEMORY_LIMIT_POLICY") or "none").lower()
    try:
        policy = MemoryPolicy(policy_text)
    except ValueError:
        raise cfg.invalid("CGROUP_MEMORY_LIMIT_POLICY",
                          "one of none, hard, soft, custom") from None
    slot_users: dict[int, str] = {}
    for name in cfg.names():
        m = _SLOT_USER.match(name)
        if m:
            value = cfg.get(name)
            if value:
                slot_users[int(m.group(1))] = value
    pids = cfg.get_int("CONDORPY_CGROUP_PIDS_MAX")
    high = cfg.knob_int("CONDORPY_CGROUP_MEMORY_HIGH_PERCENT")
    if not 0 <= high < 100:
        raise cfg.invalid("CONDORPY_CGROUP_MEMORY_HIGH_PERCENT",
                          "a percentage from 0 (off) to 99")
    lvm = lvm_settings(cfg)
    return StarterSettings(
        execute=execute, memory_policy=policy,
        disable_swap=cfg.knob_bool("DISABLE_SWAP_FOR_JOB"),
        machine_memory_mb=configured_memory_mb(cfg),
        custom_hard_mb=custom_hard_mb, custom_soft_mb=custom_soft_mb,
        low_memory_mb=low_memory_mb,
        ignore_cache_memory=cfg.knob_bool("CGROUP_IGNORE_CACHE_MEMORY"),
        always_hold_on_oom=cfg.knob_bool("STARTER_ALWAYS_HOLD_ON_OOM"),
        memory_high_percent=high,
        pids_max=pids if pids else None,
        enforce_cpu_max=cfg.get_bool("CONDORPY_CGROUP_CPU_MAX", False),
        use_pid_namespaces=cfg.knob_bool("USE_PID_NAMESPACES"),
        allow_runas_owner=cfg.knob_bool("STARTER_ALLOW_RUNAS_OWNER"),
        slot_users=slot_users,
        allow_root_jobs=cfg.get_bool("CONDORPY_ALLOW_ROOT_JOBS", False),
        cgroup_base=cfg.get("BASE_CGROUP") or None,
        use_cgroups=wants_cgroups(cfg),
        kill_timeout_s=cfg.knob_float("KILLING_TIMEOUT"),
        update_interval_s=cfg.knob_float("CONDORPY_USAGE_INTERVAL"),
        enforce_disk=enforces_disk(cfg),
        hostname=cfg.get("FULL_HOSTNAME") or socket.getfqdn(),
        no_job_networking=no_job_networking(cfg),
        hide_gpu_devices=cfg.knob_bool("STARTER_HIDE_GPU_DEVICES"),
        lvm=lvm if lvm.enforce else None,
        docker=docker_settings(cfg))


def docker_settings(cfg: KnobReader) -> DockerSettings:
    """The docker runtime's knobs. DOCKER_MOUNT_VOLUMES names volumes, each
    DOCKER_VOLUME_DIR_<name> a directory (mounted at the same path) or
    ``host:inside[:ro]``; a name without its directory is left out, as HTCondor does."""
    volumes = []
    for name in re.split(r"[\s,]+", cfg.get("DOCKER_MOUNT_VOLUMES") or ""):
        if name:
            path = cfg.get(f"DOCKER_VOLUME_DIR_{name}")
            if path:
                volumes.append(volume_spec(path))
    shm = cfg.get_int("DOCKER_SHM_SIZE")
    extra = cfg.get("DOCKER_EXTRA_ARGUMENTS") or ""
    try:
        extra_args = tuple(shlex.split(extra))
    except ValueError:
        raise cfg.invalid("DOCKER_EXTRA_ARGUMENTS", "arguments as a shell would "
                          "split them (balanced quotes)") from None
    return DockerSettings(
        path=cfg.get("DOCKER") or DEFAULT_DOCKER, volumes=tuple(volumes),
        drop_capabilities=cfg.knob_bool("DOCKER_DROP_ALL_CAPABILITIES"),
        run_under_init=cfg.knob_bool("DOCKER_RUN_UNDER_INIT"),
        log_driver_none=cfg.knob_bool("DOCKER_LOG_DRIVER_NONE"),
        networks=tuple(n for n in re.split(r"[\s,]+", cfg.get("DOCKER_NETWORKS") or "")
                       if n),
        shm_size=shm if shm else None, extra_args=extra_args)


# The cadence of a running job's updates (HTCondor's starter sends them to its shadow
# and to the startd's copy of the job ad; here the job ad the slot's policy reads, the
# local queue's row, a pool's shadow and an UPDATE_JOB_INFO hook hear them): the first
# after STARTER_INITIAL_UPDATE_INTERVAL, then every STARTER_UPDATE_INTERVAL.
def initial_update_interval(cfg: KnobReader) -> float:
    return cfg.knob_float("STARTER_INITIAL_UPDATE_INTERVAL")


def update_interval(cfg: KnobReader) -> float:
    return cfg.knob_float("STARTER_UPDATE_INTERVAL")


@dataclass(frozen=True)
class JobUpdates:
    """How a running job's usage reaches its job ad: the update cadence, and the
    expression MemoryUsage is (MEMORY_USAGE_METRIC, over ResidentSetSize and the
    other attributes of the update)."""
    initial_s: float
    interval_s: float
    memory_metric: str | None


def job_updates(cfg: KnobReader) -> JobUpdates:
    metric = cfg.get("MEMORY_USAGE_METRIC") or None
    if metric is not None:
        cfg.get_expr("MEMORY_USAGE_METRIC")      # a bad expression names its line here
    return JobUpdates(initial_update_interval(cfg), max(1.0, update_interval(cfg)), metric)
