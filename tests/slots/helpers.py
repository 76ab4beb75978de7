"""Building slot managers from slot-type text and a pinned inventory, without a config file."""

from __future__ import annotations

from condorpy.slots.ads import AdSettings
from condorpy.slots.carving import CarvePolicy, device_matches
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.layout import SlotTypeConfig, plan_layout
from condorpy.slots.manager import SlotManager
from condorpy.slots.shares import parse_slot_type


def manager(inventory: MachineInventory, *types: tuple[str, int, bool],
            policy: CarvePolicy | None = None) -> SlotManager:
    configs = [SlotTypeConfig(i + 1, parse_slot_type(text, tuple(inventory.custom),
                                                     f"SLOT_TYPE_{i + 1}"), n, part)
               for i, (text, n, part) in enumerate(types)]
    planned = plan_layout(configs, inventory, device_matches)
    settings = AdSettings(inventory.hostname, inventory.hostname, inventory.hostname)
    return SlotManager(planned, inventory, settings,
                       {c.type_id: policy or CarvePolicy() for c in configs})


def gpu_machine() -> MachineInventory:
    """Four simulated GPUs of two kinds: two with Capability 8.0, two older ones."""
    ids = ("GPU-6a96bd13", "GPU-11111111", "GPU-22222222", "GPU-33333333")
    caps = {"GPU-6a96bd13": 7.5, "GPU-11111111": 8.0, "GPU-22222222": 6.1,
            "GPU-33333333": 8.0}
    props = {i: {"Capability": caps[i], "DeviceName": "Fake A100" if caps[i] >= 8 else
                 "Fake T4", "GlobalMemoryMb": 40536 if caps[i] >= 8 else 15109}
             for i in ids}
    return MachineInventory(cpus=24, memory_mb=96000, disk_kb=10_000_000, hostname="gpu1",
                            facts={"Arch": "X86_64", "OpSys": "LINUX"},
                            custom={"GPUs": CustomResource("GPUs", ids, 4, props,
                                                           {"CUDADriverVersion": 12.2})})
