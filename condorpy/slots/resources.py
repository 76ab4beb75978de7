"""A bundle of resources held by a slot, with the arithmetic carving needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class Resources:
    """Amounts in HTCondor's units: cpus, memory MiB, disk and swap KiB, custom counts.

    ``devices`` lists, per device resource (e.g. ``GPUs``), the ids held; its length
    equals the count in ``custom`` for resources whose devices have ids.
    """

    cpus: int = 0
    memory_mb: int = 0
    disk_kb: int = 0
    swap_kb: int = 0
    custom: Mapping[str, float] = field(default_factory=dict)
    devices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def amount(self, resource: str) -> float:
        standard = {"Cpus": self.cpus, "Memory": self.memory_mb, "Disk": self.disk_kb,
                    "Swap": self.swap_kb}
        if resource in standard:
            return standard[resource]
        return self.custom.get(resource, 0)

    def __add__(self, other: "Resources") -> "Resources":
        names = list(self.custom) + [n for n in other.custom if n not in self.custom]
        devices = {n: self.devices.get(n, ()) + other.devices.get(n, ())
                   for n in list(self.devices) + [n for n in other.devices if n not in self.devices]}
        return Resources(self.cpus + other.cpus, self.memory_mb + other.memory_mb,
                         self.disk_kb + other.disk_kb, self.swap_kb + other.swap_kb,
                         {n: self.custom.get(n, 0) + other.custom.get(n, 0) for n in names},
                         devices)

    def __sub__(self, other: "Resources") -> "Resources":
        taken = {n: set(ids) for n, ids in other.devices.items()}
        devices = {n: tuple(i for i in ids if i not in taken.get(n, set()))
                   for n, ids in self.devices.items()}
        return Resources(self.cpus - other.cpus, self.memory_mb - other.memory_mb,
                         self.disk_kb - other.disk_kb, self.swap_kb - other.swap_kb,
                         {n: v - other.custom.get(n, 0) for n, v in self.custom.items()},
                         devices)

    def shortfall(self, wanted: "Resources") -> tuple[str, float, float] | None:
        """The first resource of ``wanted`` that does not fit in ``self``, as
        (resource, wanted, available), or None when everything fits."""
        pairs: list[tuple[str, float, float]] = [
            ("Cpus", wanted.cpus, self.cpus), ("Memory", wanted.memory_mb, self.memory_mb),
            ("Disk", wanted.disk_kb, self.disk_kb), ("Swap", wanted.swap_kb, self.swap_kb)]
        pairs += [(n, w, self.custom.get(n, 0)) for n, w in wanted.custom.items()]
        for name, want, have in pairs:
            if want > have:
                return name, want, have
        return None
