"""The machine snapshot: every probe, the configuration overrides, one record.

``detected_facts(roots)`` gives the computed macros the configuration layer exposes
(DETECTED_CPUS, DETECTED_MEMORY, FULL_HOSTNAME, OPSYSANDVER, ...) as strings;
``probe_machine(cfg, roots)`` measures everything and applies NUM_CPUS, MAX_NUM_CPUS,
MEMORY, RESERVED_MEMORY, DISK, RESERVED_DISK, SLOT<N>_EXECUTE and the custom resources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from condorpy.config import KnobReader
from condorpy.machine.containment import containment_facts
from condorpy.machine.cpus import count_cpus
from condorpy.machine.disk import free_kb
from condorpy.machine.idle import OwnerDevices, measure_idle, owner_devices
from condorpy.machine.load import boot_time, read_loadavg
from condorpy.machine.memory import detected_memory_mb, virtual_memory_kb
from condorpy.machine.network import probe_network
from condorpy.machine.opsys import probe_os
from condorpy.machine.pressure import Pressure, read_machine_pressure
from condorpy.machine.resources import custom_resources
from condorpy.machine.roots import HostRoots
from condorpy.slots.inventory import MachineInventory

DEFAULT_EXECUTE = "/var/lib/condor/execute"
_SLOT_EXECUTE = re.compile(r"SLOT(\d+)_EXECUTE", re.IGNORECASE)


def _cpus_limit(detected: int, roots: HostRoots) -> int:
    env = roots.environ()
    limit = detected
    for var in ("OMP_THREAD_LIMIT", "SLURM_CPUS_ON_NODE"):
        raw = env.get(var, "").strip()
        if raw.isdigit() and int(raw) > 0:
            limit = min(limit, int(raw))
    return limit


def detected_facts(roots: HostRoots = HostRoots(), count_hyperthreads: bool = True) -> dict[str, str]:
    """The macros HTCondor computes at start-up, as configuration strings."""
    cpus = count_cpus(roots)
    detected_cpus = cpus.detected_cpus(count_hyperthreads)
    os_info = probe_os(roots)
    net = probe_network(roots)
    facts = {
        "DETECTED_CPUS": str(detected_cpus),
        "DETECTED_CORES": str(cpus.logical),
        "DETECTED_PHYSICAL_CPUS": str(cpus.physical),
        "DETECTED_CPUS_LIMIT": str(_cpus_limit(detected_cpus, roots)),
        "DETECTED_MEMORY": str(detected_memory_mb(roots)),
        "FULL_HOSTNAME": net.full_hostname,
        "HOSTNAME": net.hostname,
        "IP_ADDRESS": net.ip_address,
        "ARCH": os_info.arch,
        "OPSYS": os_info.opsys,
        "OPSYSVER": str(os_info.version),
        "OPSYSANDVER": os_info.versioned,
        "OPSYSMAJORVER": str(os_info.major_version),
        "OPSYSNAME": os_info.name,
        "OPSYSLONGNAME": os_info.long_name,
        "OPSYSSHORTNAME": os_info.short_name,
        "OPSYSLEGACY": os_info.legacy,
        "UNAME_ARCH": os_info.uname.machine,
        "UNAME_OPSYS": os_info.uname.sysname,
    }
    if net.ipv4:
        facts["IPV4_ADDRESS"] = net.ipv4
    if net.ipv6:
        facts["IPV6_ADDRESS"] = net.ipv6
    return facts


@dataclass(frozen=True)
class Activity:
    """What changes between start-up and the next poll: load and owner activity."""

    total_load_avg: float
    keyboard_idle: int
    console_idle: int | None   # None: no console device configured (ConsoleIdle unpublished)
    # the machine's PSI, read at this same rate (empty on a kernel without PSI)
    pressure: Pressure = Pressure()


def measure_activity(cfg: KnobReader, roots: HostRoots = HostRoots()) -> Activity:
    """The cheap part of the probe, for the daemon's periodic updates (no GPU discovery)."""
    # unset, CONSOLE_DEVICES has its table default; set to nothing it means "no
    # console", which the explicit empty default keeps
    consoles = cfg.get_list("CONSOLE_DEVICES", [])
    idle = measure_idle(roots, console_devices=consoles,
                        bad_utmp=cfg.knob_bool("STARTD_HAS_BAD_UTMP"))
    return Activity(read_loadavg(roots).one, idle.keyboard_idle, idle.console_idle,
                    read_machine_pressure(roots))


def activity_devices(cfg: KnobReader, roots: HostRoots = HostRoots()) -> OwnerDevices:
    """The devices :func:`measure_activity` reads, for the daemon's input watch."""
    return owner_devices(roots, console_devices=cfg.get_list("CONSOLE_DEVICES", []),
                         bad_utmp=cfg.knob_bool("STARTD_HAS_BAD_UTMP"))


def configured_sizes(cfg: KnobReader, detected_cpus: int, detected_mem: int,
                     free_disk_kb: Callable[[Path], int]
                     ) -> tuple[int, int, int, dict[int, int]]:
    """(cpus, memory MB, disk KB, per-slot disk KB) after NUM_CPUS, MAX_NUM_CPUS, MEMORY,
    RESERVED_MEMORY, DISK, RESERVED_DISK and SLOT<N>_EXECUTE, for any detected host:
    the real one, or `policy simulate`'s virtual one."""
    # NUM_CPUS's table default is the detected count, which the caller measured itself
    # (after COUNT_HYPERTHREAD_CPUS); only a configured value overrides it
    num_cpus = cfg.get_int("NUM_CPUS", 0) if cfg.where("NUM_CPUS") else 0
    if num_cpus < 0:
        raise cfg.invalid("NUM_CPUS", "a non-negative integer")
    if num_cpus == 0:
        num_cpus = detected_cpus
        ceiling = cfg.get_int("MAX_NUM_CPUS", 0)
        if ceiling > 0:
            num_cpus = min(num_cpus, ceiling)
    memory = configured_memory_mb(cfg) or detected_mem
    memory = max(memory - cfg.knob_int("RESERVED_MEMORY"), 0)
    reserved_disk_kb = cfg.get_int("RESERVED_DISK", 0) * 1024
    execute = _execute_dir(cfg, "EXECUTE", DEFAULT_EXECUTE)
    disk_override = cfg.get_int("DISK", -1)
    if disk_override >= 0:
        disk = disk_override
    else:
        disk = max(free_disk_kb(execute) - reserved_disk_kb, 0)
    slot_disk: dict[int, int] = {}
    for knob in cfg.names():
        m = _SLOT_EXECUTE.fullmatch(knob)
        if not m:
            continue
        path = _execute_dir(cfg, knob, str(execute))
        if path != execute:
            slot_disk[int(m.group(1))] = max(free_disk_kb(path) - reserved_disk_kb, 0)
    return num_cpus, memory, disk, slot_disk


def configured_memory_mb(cfg: KnobReader) -> int | None:
    """MEMORY, the machine's memory in MB as configured (None: detect it). The one
    reading of the knob: the slots are carved from it and a starter's "soft" memory
    policy caps a job at it."""
    memory = cfg.get_int("MEMORY")
    if memory is not None and memory < 0:
        raise cfg.invalid("MEMORY", "a non-negative integer")
    return memory or None


def _execute_dir(cfg: KnobReader, knob: str, default: str) -> Path:
    return Path(cfg.get(knob) or default)


def probe_machine(cfg: KnobReader, roots: HostRoots = HostRoots()) -> MachineInventory:
    """Measure the host and apply the configuration's overrides."""
    count_ht = cfg.knob_bool("COUNT_HYPERTHREAD_CPUS")
    cpus = count_cpus(roots)
    detected_cpus = cpus.detected_cpus(count_ht)
    detected_mem = detected_memory_mb(roots)
    num_cpus, memory, disk, slot_disk = configured_sizes(cfg, detected_cpus, detected_mem,
                                                         free_kb)
    os_info = probe_os(roots)
    net = probe_network(roots)
    facts = os_info.attrs()
    facts["Machine"] = net.full_hostname
    if cpus.model_number is not None:
        facts["CpuModelNumber"] = cpus.model_number
    if cpus.family is not None:
        facts["CpuFamily"] = cpus.family
    if cpus.cache_kb is not None:
        facts["CpuCacheSize"] = cpus.cache_kb
    facts.update(containment_facts(cfg, roots))

    activity = measure_activity(cfg, roots)
    return MachineInventory(
        cpus=num_cpus,
        memory_mb=memory,
        disk_kb=disk,
        swap_kb=virtual_memory_kb(roots),
        detected_cpus=detected_cpus,
        detected_cores=cpus.logical,
        detected_physical_cpus=cpus.physical,
        detected_memory_mb=detected_mem,
        custom=custom_resources(cfg, roots),
        slot_disk_kb=slot_disk,
        facts=facts,
        hostname=net.full_hostname,
        total_load_avg=activity.total_load_avg,
        keyboard_idle=activity.keyboard_idle,
        # the record has no "unknown"; without console devices the keyboard figure stands in
        console_idle=activity.keyboard_idle if activity.console_idle is None else activity.console_idle,
        boot_time=boot_time(roots),
    )
