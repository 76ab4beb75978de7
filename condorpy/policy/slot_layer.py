"""The policy engine's bridge to the slot layer: carving and releasing d-slots.

A partitionable slot's resources (cpus, memory, disk and custom resources such as GPUs,
with their device ids) are kept by a :class:`condorpy.slots.manager.SlotManager`; it
sizes each d-slot (request rounding, `Require<name>` device constraints, consumption
policies), hands out devices and takes them back. The engine keeps its own per-cycle
attributes in its ads and copies the resource attributes the slot layer builds.

The custom resources come in as data: the command front end decides which sources
to read (for `policy simulate`, only those that give the same answer on every host),
so this package never touches the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from condorpy.classad import ClassAd
from condorpy.config import Config, DetectedFacts
from condorpy.slots.ads import AdSettings, put_custom_resources
from condorpy.slots.carving import CarvePolicy
from condorpy.slots.configure import carve_knob_names, carve_policy
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.layout import PlannedSlot
from condorpy.slots.manager import SlotManager
from condorpy.slots.model import Refusal
from condorpy.slots.model import Slot as LayerSlot
from condorpy.slots.resources import Resources


_Lookup = Callable[[str], "str | None"]
# the carving knobs come already expanded; no host fact is needed to read them
_NO_HOST = DetectedFacts(full_hostname="localhost", cpus=1, cores=1, physical_cpus=1,
                         memory_mb=1024)


@dataclass(frozen=True)
class SlotLayerSettings:
    """What the slot layer needs beyond the policy's own layout knobs."""

    custom: Mapping[str, CustomResource] = field(default_factory=dict)
    carve: CarvePolicy = field(default_factory=CarvePolicy)


def layer_settings(lookup: _Lookup,
                   custom: Mapping[str, CustomResource] | None = None) -> SlotLayerSettings:
    """The carving policy of slot type 1 (`CONSUMPTION_POLICY`, `MODIFY_REQUEST_EXPR_*`)."""
    res = dict(custom or {})
    known = {n: v for n in carve_knob_names(1, tuple(res)) if (v := lookup(n)) is not None}
    reader = Config.from_mapping(known, source="<policy settings>", env={}, detected=_NO_HOST)
    return SlotLayerSettings(res, carve_policy(reader, 1, tuple(res)))


class Carver:
    """The slot layer's view of the engine's partitionable slot ``slot1``."""

    def __init__(self, layer: SlotLayerSettings, cpus: int, memory: int, disk: int,
                 hostname: str) -> None:
        custom = dict(layer.custom)
        counts = {n: float(len(r.ids) if r.ids else r.count) for n, r in custom.items()}
        devices = {n: r.ids for n, r in custom.items() if r.ids}
        given = Resources(cpus, memory, disk, 0, counts, devices)
        self.inventory = MachineInventory(cpus=cpus, memory_mb=memory, disk_kb=disk,
                                          custom=custom, hostname=hostname)
        self.manager = SlotManager([PlannedSlot(1, 1, True, given)], self.inventory,
                                   AdSettings(hostname, hostname, hostname), {1: layer.carve})
        self._slots: dict[str, LayerSlot] = {}

    @property
    def has_custom(self) -> bool:
        return bool(self.inventory.custom)

    def carve(self, pslot: str, job_ad: ClassAd, now: float,
              slot_ad: ClassAd) -> LayerSlot | Refusal:
        got = self.manager.carve(self.manager.get(pslot), job_ad, now, slot_ad)
        if isinstance(got, LayerSlot):
            self._slots[got.name] = got
        return got

    def release(self, dslot: str) -> None:
        slot = self._slots.pop(dslot, None)
        if slot is not None:
            self.manager.release(slot)

    def available(self, name: str) -> Resources:
        slot = self._slots.get(name) or self.manager.get(name)
        return self.manager.available(slot)

    def resource_attrs(self, name: str) -> ClassAd:
        """The custom-resource attributes the slot layer gives slot ``name`` now."""
        slot = self._slots.get(name) or self.manager.get(name)
        ad = ClassAd()
        put_custom_resources(ad, slot.resources, self.manager.available(slot), self.inventory)
        # The machine-wide attributes every slot ad shares (as machine_ad sets them).
        for res_name, res in self.inventory.custom.items():
            total = len(res.ids) if res.ids else res.count
            ad[f"Total{res_name}"] = int(total) if total == int(total) else total
            ad[f"Detected{res_name}"] = ad[f"Total{res_name}"]
            for key, value in res.extra_attrs.items():
                ad[key] = value
        return ad
