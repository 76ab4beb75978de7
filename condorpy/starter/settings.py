"""The knobs the starter obeys, as one plain record built by its caller (CLI or startd)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from condorpy.machine.volumes import LvmSettings
from condorpy.machine.docker import DockerSettings


class MemoryPolicy(Enum):
    """``CGROUP_MEMORY_LIMIT_POLICY``."""
    NONE = "none"
    HARD = "hard"
    SOFT = "soft"
    CUSTOM = "custom"


@dataclass(frozen=True)
class StarterSettings:
    execute: str
    memory_policy: MemoryPolicy = MemoryPolicy.NONE
    disable_swap: bool = False                 # DISABLE_SWAP_FOR_JOB
    machine_memory_mb: int | None = None       # the whole startd's memory, for "soft"
    custom_hard_mb: int | None = None          # CGROUP_HARD_MEMORY_LIMIT_EXPR, evaluated
    custom_soft_mb: int | None = None          # CGROUP_SOFT_MEMORY_LIMIT_EXPR, evaluated
    low_memory_mb: int | None = None           # CGROUP_LOW_MEMORY_LIMIT, evaluated
    ignore_cache_memory: bool = True           # CGROUP_IGNORE_CACHE_MEMORY
    always_hold_on_oom: bool = True            # STARTER_ALWAYS_HOLD_ON_OOM
    memory_high_percent: int = 0               # beyond HTCondor: memory.high below the limit
    pids_max: int | None = None                # beyond HTCondor: a fork bomb stays inside
    enforce_cpu_max: bool = False              # beyond HTCondor: cpu.max = Cpus cores
    use_pid_namespaces: bool = False           # USE_PID_NAMESPACES
    allow_runas_owner: bool = True             # STARTER_ALLOW_RUNAS_OWNER
    slot_users: dict[int, str] = field(default_factory=dict)   # SLOT<N>_USER
    nobody_user: str = "nobody"
    allow_root_jobs: bool = False
    cgroup_mount: str = "/sys/fs/cgroup"
    cgroup_base: str | None = None             # BASE_CGROUP relative to the mount
    use_cgroups: bool = True
    proc_root: str = "/proc"
    kill_timeout_s: float = 30.0               # KILLING_TIMEOUT when the job has no KillSigTimeout
    update_interval_s: float = 5.0             # usage sampling and updates to the startd
    enforce_disk: bool = True                  # CONDORPY_ENFORCE_DISK_USAGE: hold over Disk
    hostname: str = "localhost"
    # network and GPU isolation (condorpy.starter.netns, condorpy.starter.devices)
    no_job_networking: bool = False            # NO_JOB_NETWORKING
    hide_gpu_devices: bool = True              # STARTER_HIDE_GPU_DEVICES
    gpu_inventory_dir: str = "/proc/driver/nvidia/gpus"
    dev_dir: str = "/dev"
    lvm: LvmSettings | None = None             # STARTD_ENFORCE_DISK_LIMITS: a volume per job
    docker: DockerSettings = field(default_factory=DockerSettings)  # container jobs
    num_threads_env: tuple[str, ...] = (
        "CUBACORES", "GOMAXPROCS", "JULIA_NUM_THREADS", "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS", "OMP_NUM_THREADS", "OMP_THREAD_LIMIT",
        "OPENBLAS_NUM_THREADS", "PYTHON_CPU_COUNT", "ROOT_MAX_THREADS",
        "TF_LOOP_PARALLEL_ITERATIONS", "TF_NUM_THREADS")
