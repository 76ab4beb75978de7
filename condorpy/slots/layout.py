"""Dividing the machine among slot types: the arithmetic of `SLOT_TYPE_<N>` shares.

Pure: takes the slot types (already read from the configuration) and a
:class:`MachineInventory`, returns one :class:`PlannedSlot` per slot with the exact
resources it holds, or raises :class:`LayoutError` naming the resource, what was asked
and what exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from condorpy.errors import LayoutError
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.resources import Resources
from condorpy.slots.shares import CPUS, DISK, MEMORY, SWAP, Share, ShareKind, SlotTypeSpec

# More slots than any machine could run; a count above it is refused before a single
# slot is built (NUM_SLOTS = 100000000 would otherwise take minutes to lay out).
MAX_SLOTS = 100_000

# (constraint text, device id, device property attributes) -> does the device qualify?
DeviceMatcher = Callable[[str, str, Mapping[str, Any]], bool]


@dataclass(frozen=True)
class SlotTypeConfig:
    """One slot type: ``type_id`` 0 stands for slots made by `NUM_SLOTS` alone."""

    type_id: int
    spec: SlotTypeSpec
    count: int
    partitionable: bool


@dataclass(frozen=True)
class PlannedSlot:
    slot_id: int
    type_id: int
    partitionable: bool
    resources: Resources


def _type_label(t: SlotTypeConfig) -> str:
    return t.spec.source or (f"SLOT_TYPE_{t.type_id}" if t.type_id else "NUM_SLOTS")


def _explicit(share: Share, total: float, resource: str) -> int | None:
    """The amount an explicit share stands for, or None for auto. Amounts are whole
    units: a fraction of a cpu or of a MiB is not something a slot can hold."""
    if share.kind is ShareKind.AUTO:
        return None
    if share.kind is ShareKind.FRACTION:
        return int(math.floor(total * share.value + 1e-9))
    return int(math.floor(share.value + 1e-9))


def _divide_one(resource: str, total: int, slots: Sequence[tuple[SlotTypeConfig, int]],
                unit: str, spread: bool = False) -> list[int]:
    """Amounts of one resource for each (type, slot id), honouring `auto`. With
    ``spread``, whole units (cpus, devices) that do not divide evenly go one each to
    the first auto slots rather than to nobody."""
    amounts: list[int | None] = [_explicit(t.spec.share_for(resource), total, resource)
                                 for t, _ in slots]
    asked = sum(a for a in amounts if a is not None)
    if asked > total:
        parts: dict[str, tuple[int, int]] = {}
        for (t, _), a in zip(slots, amounts):
            if a is not None:
                n, each = parts.get(_type_label(t), (0, a))
                parts[_type_label(t)] = (n + 1, each)
        detail = ", ".join(f"{label}: {n} x {each}" for label, (n, each) in parts.items())
        raise LayoutError(f"impossible slot layout: {resource}: the slot types ask for "
                          f"{asked}{unit} ({detail}) but the machine has {total}{unit}",
                          resource=resource)
    autos = [i for i, a in enumerate(amounts) if a is None]
    if autos:
        each, left = divmod(total - asked, len(autos))
        for n, i in enumerate(autos):
            amounts[i] = each + (1 if spread and n < left else 0)
        if resource == CPUS:
            static = [i for i in autos if not slots[i][0].partitionable]
            if any((amounts[i] or 0) < 1 for i in static):
                raise LayoutError(
                    f"impossible slot layout: Cpus: {len(static)} static slot(s) share cpus "
                    f"automatically but only {total - asked} of the machine's {total} cpus "
                    "are left for them (every static slot needs at least 1)", resource=CPUS)
    return [a if a is not None else 0 for a in amounts]


def _device_ids(inventory: MachineInventory, name: str) -> tuple[str, ...]:
    return inventory.custom[name].ids


def _assign_devices(name: str, counts: list[int], slots: Sequence[tuple[SlotTypeConfig, int]],
                    inventory: MachineInventory, matcher: DeviceMatcher) -> list[tuple[str, ...]]:
    """Choose device ids: slots with a constraint pick first, then the others take the
    remaining devices in the order they were detected."""
    resource = inventory.custom[name]
    free = list(resource.ids)
    chosen: list[tuple[str, ...]] = [() for _ in slots]
    order = sorted(range(len(slots)),
                   key=lambda i: slots[i][0].spec.share_for(name).constraint is None)
    for i in order:
        constraint = slots[i][0].spec.share_for(name).constraint
        want = counts[i]
        if constraint is None:
            picked = free[:want]
        else:
            qualifying = [d for d in free
                          if matcher(constraint, d, resource.properties.get(d, {}))]
            picked = qualifying[:want]
            if len(picked) < want:
                matching_all = sum(1 for d in resource.ids
                                   if matcher(constraint, d, resource.properties.get(d, {})))
                raise LayoutError(
                    f"impossible slot layout: {name}: {_type_label(slots[i][0])} asks for "
                    f"{want} matching {constraint} but only {matching_all} of the machine's "
                    f"{len(resource.ids)} qualify and {len(qualifying)} are still free",
                    resource=name)
        chosen[i] = tuple(picked)
        free = [d for d in free if d not in picked]
    return chosen


def plan_layout(types: Sequence[SlotTypeConfig], inventory: MachineInventory,
                matcher: DeviceMatcher) -> list[PlannedSlot]:
    """Number the slots (type 1's first) and give each its resources."""
    _check_counts(types, inventory)
    slots: list[tuple[SlotTypeConfig, int]] = []
    for t in types:
        for _ in range(t.count):
            slots.append((t, len(slots) + 1))
    if not slots:
        raise LayoutError("impossible slot layout: the configuration defines no slots "
                          "(every NUM_SLOTS_TYPE_<N> is 0)")
    custom_names = tuple(inventory.custom)
    for t in types:
        for resource in t.spec.shares:
            if resource not in (CPUS, MEMORY, DISK, SWAP) and resource not in custom_names:
                raise LayoutError(f"impossible slot layout: {_type_label(t)} asks for "
                                  f"{resource} but the machine has none", resource=resource)

    cpus = _divide_one(CPUS, inventory.cpus, slots, "", spread=True)
    memory = _divide_one(MEMORY, inventory.memory_mb, slots, " MiB")
    swap = _divide_one(SWAP, inventory.swap_kb, slots, " KiB")
    disk = _divide_disk(slots, inventory)
    custom: dict[str, list[int]] = {}
    devices: dict[str, list[tuple[str, ...]]] = {}
    for name, res in inventory.custom.items():
        total = len(res.ids) if res.ids else int(res.count)
        custom[name] = _divide_one(name, total, slots, "", spread=True)
        if res.ids:
            devices[name] = _assign_devices(name, custom[name], slots, inventory, matcher)

    planned = []
    for i, (t, slot_id) in enumerate(slots):
        planned.append(PlannedSlot(
            slot_id, t.type_id, t.partitionable,
            Resources(cpus[i], memory[i], disk[i], swap[i],
                      {n: counts[i] for n, counts in custom.items()},
                      {n: ids[i] for n, ids in devices.items()})))
    return planned


def _check_counts(types: Sequence[SlotTypeConfig], inventory: MachineInventory) -> None:
    """Refuse, from the slot counts alone, a layout whose cpus or memory cannot fit, with
    the message the slot-by-slot division would give, before building one entry per
    slot."""
    for resource, total, unit in ((CPUS, inventory.cpus, ""),
                                  (MEMORY, inventory.memory_mb, " MiB")):
        asked = 0
        parts: list[str] = []
        static_autos = 0
        for t in types:
            if not t.count:
                continue
            each = _explicit(t.spec.share_for(resource), total, resource)
            if each is None:
                static_autos += 0 if t.partitionable else t.count
            else:
                asked += each * t.count
                parts.append(f"{_type_label(t)}: {t.count} x {each}")
        if asked > total:
            raise LayoutError(f"impossible slot layout: {resource}: the slot types ask for "
                              f"{asked}{unit} ({', '.join(parts)}) but the machine has "
                              f"{total}{unit}", resource=resource)
        if resource == CPUS and static_autos > total - asked:
            raise LayoutError(
                f"impossible slot layout: Cpus: {static_autos} static slot(s) share cpus "
                f"automatically but only {total - asked} of the machine's {total} cpus "
                "are left for them (every static slot needs at least 1)", resource=CPUS)
    total_slots = sum(t.count for t in types)
    if total_slots > MAX_SLOTS:
        counts = ", ".join(f"{_type_label(t)}: {t.count}" for t in types if t.count)
        raise LayoutError(f"impossible slot layout: {total_slots} slots ({counts}) are more "
                          f"than the {MAX_SLOTS} condorpy can lay out")


def _divide_disk(slots: Sequence[tuple[SlotTypeConfig, int]],
                 inventory: MachineInventory) -> list[int]:
    """Slots whose SLOT<N>_EXECUTE lies on its own partition may each ask up to 100%
    of it; the others share the EXECUTE partition."""
    shared = [(i, s) for i, s in enumerate(slots) if s[1] not in inventory.slot_disk_kb]
    result = [0] * len(slots)
    if shared:
        for (i, _), amount in zip(shared, _divide_one(DISK, inventory.disk_kb,
                                                      [s for _, s in shared], " KiB")):
            result[i] = amount
    for i, s in enumerate(slots):
        if s[1] in inventory.slot_disk_kb:
            result[i] = _divide_one(DISK, inventory.slot_disk_kb[s[1]], [s], " KiB")[0]
    return result
