"""`policy simulate`'s virtual host: a fixed machine, so a timeline gives the same
answer wherever it runs.

It is detected as 1 CPU, 1024 MB of memory, 1048576 KB of free disk, no swap, a Linux
X86_64 host named ``localhost``, with no load and no owner activity. The configuration
then sizes it exactly as it sizes a real host (NUM_CPUS, MEMORY, DISK, RESERVED_*, ...,
through :func:`condorpy.machine.probe.configured_sizes`), and adds the custom resources
that do not depend on the host: ``MACHINE_RESOURCE_<name>`` counts and id lists, and
GPU discovery with ``-simulate``. Everything after that (layout, ads, policy) is the
same code as on a real machine.
"""

from __future__ import annotations

import shlex
from pathlib import PurePath

from condorpy.config import DetectedFacts, KnobReader, KnobTexts
from condorpy.machine.probe import configured_sizes
from condorpy.machine.resources import custom_resources
from condorpy.machine.roots import HostRoots
from condorpy.slots.inventory import CustomResource, MachineInventory

VIRTUAL_CPUS = 1
VIRTUAL_MEMORY_MB = 1024
VIRTUAL_DISK_KB = 1048576
VIRTUAL_HOSTNAME = "localhost"
VIRTUAL_FACTS: dict[str, object] = {"Arch": "X86_64", "OpSys": "LINUX",
                                    "Machine": VIRTUAL_HOSTNAME}

# The computed macros (DETECTED_CPUS, FULL_HOSTNAME, ...) the configuration sees.
VIRTUAL_DETECTED = DetectedFacts(full_hostname=VIRTUAL_HOSTNAME, cpus=VIRTUAL_CPUS,
                                 cores=VIRTUAL_CPUS, physical_cpus=VIRTUAL_CPUS,
                                 memory_mb=VIRTUAL_MEMORY_MB)


def virtual_inventory(cfg: KnobReader) -> MachineInventory:
    cpus, memory, disk, slot_disk = configured_sizes(cfg, VIRTUAL_CPUS, VIRTUAL_MEMORY_MB,
                                                     lambda _path: VIRTUAL_DISK_KB)
    return MachineInventory(
        cpus=cpus, memory_mb=memory, disk_kb=disk, detected_cpus=VIRTUAL_CPUS,
        detected_cores=VIRTUAL_CPUS, detected_physical_cpus=VIRTUAL_CPUS,
        detected_memory_mb=VIRTUAL_MEMORY_MB, custom=reproducible_resources(cfg),
        slot_disk_kb=slot_disk, facts=dict(VIRTUAL_FACTS), hostname=VIRTUAL_HOSTNAME)


def _simulated_command(value: str) -> bool:
    try:
        argv = shlex.split(value)
    except ValueError:
        return False
    return bool(argv) and PurePath(argv[0]).name == "condor_gpu_discovery" \
        and any(a.lower().startswith("-sim") for a in argv[1:])


class _Reproducible:
    """A configuration view without the resource sources that read this host."""

    def __init__(self, cfg: KnobTexts) -> None:
        self._cfg = cfg

    def names(self) -> list[str]:
        return self._cfg.names()

    def get(self, name: str) -> str | None:
        value = self._cfg.get(name)
        up = name.upper()
        if up == "STARTD_DETECT_GPUS":
            if value is None:
                extra = self._cfg.get("GPU_DISCOVERY_EXTRA") or ""
                value = f"-properties {extra}"
            return value if "-sim" in value.lower() else "false"
        if value is not None and up.startswith("MACHINE_RESOURCE_INVENTORY_") \
                and not _simulated_command(value):
            return None
        return value


def reproducible_resources(cfg: KnobTexts) -> dict[str, CustomResource]:
    """Custom resources of a configuration that do not depend on the host."""
    return custom_resources(_Reproducible(cfg), HostRoots(env={}, use_nvml=False))
