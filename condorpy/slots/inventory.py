"""What the machine has, as the slot layer sees it: a pure record filled by the probes.

`condorpy.machine` measures the host and builds a :class:`MachineInventory`; the slot
layer divides it and builds slot ads from it. Keeping it a plain frozen record lets
tests (and `condorpy status --offline`) pin a machine without touching the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CustomResource:
    """A countable resource such as GPUs: a count, and the ids of the devices when known.

    ``properties`` maps a device id to its property attributes (for GPUs: Capability,
    DeviceName, GlobalMemoryMb, DriverVersion, ...), as `condor_gpu_discovery` reports them.
    ``extra_attrs`` are machine-level attributes the discovery publishes beside the ids
    (for GPUs e.g. CUDADriverVersion, or the common properties when not nested).
    """

    name: str
    ids: tuple[str, ...] = ()
    count: float = 0
    properties: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra_attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MachineInventory:
    """A snapshot of the machine: resources, platform facts and owner activity."""

    # resources (after NUM_CPUS / MEMORY / RESERVED_* overrides have been applied)
    cpus: int                      # logical CPUs condorpy may use (DetectedCpus unless overridden)
    memory_mb: int                 # physical memory in MiB (capped by the daemon's cgroup memory.max)
    disk_kb: int                   # free disk under EXECUTE, KiB, after RESERVED_DISK
    swap_kb: int = 0               # virtual memory (swap) in KiB
    detected_cpus: int = 0         # DetectedCpus (logical, honouring COUNT_HYPERTHREAD_CPUS)
    detected_cores: int = 0        # DetectedCores
    detected_physical_cpus: int = 0
    detected_memory_mb: int = 0
    custom: dict[str, CustomResource] = field(default_factory=dict)  # by resource name, e.g. "GPUs"
    # per-slot execute directories' free disk, by slot id, when SLOT<N>_EXECUTE differs
    slot_disk_kb: dict[int, int] = field(default_factory=dict)

    # platform facts, already as ClassAd attribute values (Arch, OpSys, OpSysAndVer,
    # OpSysName, OpSysMajorVer, OpSysLongName, KernelVersion, Machine, ...)
    facts: dict[str, Any] = field(default_factory=dict)
    hostname: str = "localhost"    # FULL_HOSTNAME, as the slot names use it

    # load and owner activity, as measured now
    total_load_avg: float = 0.0
    keyboard_idle: int = 0         # seconds since the last keyboard/mouse activity
    console_idle: int = 0          # seconds since the last console activity
    # seconds of idle per terminal/device, for SLOTS_CONNECTED_TO_* decisions when needed
    boot_time: float = 0.0
