"""The slots of one machine: layout at start-up, carving and releasing d-slots, ads.

:class:`SlotManager` is the one object the policy engine and the daemon hold. It owns
what changes (each p-slot's free resources and its d-slots); slots themselves are
frozen records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator, Mapping

from condorpy.classad import ClassAd, Error, Undefined
from condorpy.clock import Clock, SystemClock
from condorpy.config import KnobReader
from condorpy.errors import SlotError
from condorpy.slots.ads import (AdSettings, Measurements, SlotStatus, build_slot_ad,
                                machine_ad)
from condorpy.slots.carving import CarvePolicy, device_matches, size_request
from condorpy.slots.configure import ad_settings, carve_policy, slot_types
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.layout import PlannedSlot, plan_layout
from condorpy.slots.load import MachineLoad, SlotLoadInput, distribute_load
from condorpy.slots.model import Refusal, Slot, SlotKind
from condorpy.slots.resources import Resources


@dataclass(frozen=True)
class LayoutChange:
    """What a reconfigured layout changes: the top-level slots that leave (gone from
    the new layout, or defined differently) and the new layout's slots that come."""

    going: tuple[str, ...]
    coming: tuple[PlannedSlot, ...]

    @property
    def empty(self) -> bool:
        return not self.going and not self.coming


class SlotManager:
    """Holds the slots. Build it with :meth:`from_config`; tests may pass a plan."""

    def __init__(self, planned: list[PlannedSlot], inventory: MachineInventory,
                 settings: AdSettings, policies: Mapping[int, CarvePolicy],
                 clock: Clock | None = None) -> None:
        self.inventory = inventory
        self.clock: Clock = clock or SystemClock()
        self.settings = settings
        self._policies = dict(policies)                    # by slot type id
        self._slots: dict[str, Slot] = {}                  # static and partitionable
        self._free: dict[str, Resources] = {}              # p-slots: what is left
        self._children: dict[str, dict[int, Slot]] = {}    # p-slot name -> sub id -> d-slot
        # sub ids of broken d-slots, deleted but still named by the broken ledger: no
        # new d-slot takes such a name until the broken one is mended
        self._held_subs: dict[str, set[int]] = {}
        self._base: tuple[Any, ClassAd] | None = None       # new_slot_ad's machine part
        self.planned = tuple(planned)
        for p in planned:
            self._add(p)

    def _add(self, p: PlannedSlot) -> Slot:
        kind = SlotKind.PARTITIONABLE if p.partitionable else SlotKind.STATIC
        slot = Slot(p.slot_id, p.type_id, kind, p.resources)
        self._slots[slot.name] = slot
        if p.partitionable:
            self._free[slot.name] = p.resources
            self._children[slot.name] = {}
        return slot

    @classmethod
    def from_config(cls, cfg: KnobReader, inventory: MachineInventory,
                    started_at: float, clock: Clock | None = None) -> "SlotManager":
        """Lay out the machine as the configuration says; raises LayoutError, and
        ConfigError naming the file and line of a bad knob."""
        types = slot_types(cfg, inventory)
        planned = plan_layout(types, inventory, device_matches)
        custom = tuple(inventory.custom)
        policies = {t.type_id: carve_policy(cfg, t.type_id, custom) for t in types}
        settings = ad_settings(cfg, inventory, [(p.slot_id, p.type_id) for p in planned],
                               started_at)
        return cls(planned, inventory, settings, policies, clock)

    # --- a new layout at reconfig -------------------------------------------------

    def change_to(self, new: "SlotManager") -> LayoutChange:
        """How ``new``'s layout differs from the slots held now. A slot stays when the
        new layout has one with the same id, type, kind, cpus, memory and custom
        resources. Disk and swap are shares of what is measured, which moves with every
        reading and with the number of slots: a slot keeps its share until a restart
        rather than leave the layout over it."""
        wanted = {p.slot_id: p for p in new.planned}
        kept: set[int] = set()
        going = []
        for slot in sorted(self._slots.values(), key=lambda s: s.slot_id):
            p = wanted.get(slot.slot_id)
            if p is not None and p.type_id == slot.type_id \
                    and p.partitionable == slot.is_partitionable \
                    and _same_size(p.resources, slot.resources):
                kept.add(slot.slot_id)
            else:
                going.append(slot.name)
        coming = tuple(p for p in new.planned if p.slot_id not in kept)
        return LayoutChange(tuple(going), coming)

    def take_settings(self, new: "SlotManager") -> None:
        """Ad settings and carving policies of a reconfigured layout, for the slots
        made from now on."""
        self.settings = new.settings
        self._policies = dict(new._policies)
        self.planned = new.planned
        self._base = None

    def remove_top(self, slot: Slot) -> None:
        """Take a free static or partitionable slot out of the layout."""
        if slot.is_dynamic or self._slots.get(slot.name) != slot \
                or self._children.get(slot.name):
            raise SlotError(f"{slot.name} is not a free top-level slot", slot=slot.name)
        del self._slots[slot.name]
        self._free.pop(slot.name, None)
        self._children.pop(slot.name, None)
        self._base = None

    def add_top(self, planned: PlannedSlot) -> Slot:
        """Add a slot of a reconfigured layout, once the slots it replaces are gone."""
        name = f"slot{planned.slot_id}"
        if name in self._slots:
            raise SlotError(f"{name} is still in the layout", slot=name)
        self._base = None
        return self._add(planned)

    # --- lookup ---------------------------------------------------------------------

    def __iter__(self) -> Iterator[Slot]:
        """Every slot in advertising order: each top-level slot, then its d-slots."""
        for slot in sorted(self._slots.values(), key=lambda s: s.slot_id):
            yield slot
            for sub in sorted(self._children.get(slot.name, {})):
                yield self._children[slot.name][sub]

    @property
    def slots(self) -> list[Slot]:
        return list(self)

    def get(self, name: str) -> Slot:
        """A slot by name: ``slot1``, ``slot1_2`` or ``slot1_2@host``."""
        short = name.split("@", 1)[0].lower()
        if short in self._slots:
            return self._slots[short]
        parent, _, sub = short.partition("_")
        if sub.isdigit() and int(sub) in self._children.get(parent, {}):
            return self._children[parent][int(sub)]
        raise SlotError(f"no slot named {name!r} on this machine", slot=name)

    def dynamic_slots(self, pslot: Slot) -> list[Slot]:
        return [self._children[pslot.name][k] for k in sorted(self._children.get(pslot.name, {}))]

    def available(self, slot: Slot) -> Resources:
        """What a slot has to offer: a p-slot's leftovers, otherwise its allocation.
        Swap is not divided among d-slots: each sees its parent's share."""
        parent = self._slots.get(slot.parent_name or "")
        if slot.is_dynamic and parent is not None:
            return replace(slot.resources, swap_kb=parent.resources.swap_kb)
        return self._free.get(slot.name, slot.resources)

    # --- carving --------------------------------------------------------------------

    def carve(self, pslot: Slot, job_ad: ClassAd, now: float = 0.0,
              slot_ad: ClassAd | None = None) -> Slot | Refusal:
        """Create a d-slot for ``job_ad`` out of ``pslot``, or say why not. ``slot_ad``,
        when given, is the p-slot's current ad (TARGET of the request expressions); the
        policy engine keeps its own, which saves building one per claim."""
        if not pslot.is_partitionable or pslot.name not in self._free:
            return Refusal(f"{pslot.name} is not a partitionable slot")
        # The p-slot's own ad is TARGET for the request expressions; the other
        # slots' ads are not needed for that, so they are not built.
        if slot_ad is None:
            slot_ad = self._ads_of([pslot], now, {},
                                   Measurements.from_inventory(self.inventory), None)[0]
        wanted = self.sized(pslot, job_ad, slot_ad)
        if isinstance(wanted, Refusal):
            return wanted
        children = self._children[pslot.name]
        held = self._held_subs.get(pslot.name, set())
        sub = next(i for i in range(1, len(children) + len(held) + 2)
                   if i not in children and i not in held)
        dslot = Slot(pslot.slot_id, -pslot.type_id, SlotKind.DYNAMIC, wanted, sub)
        self._free[pslot.name] = self._free[pslot.name] - wanted
        children[sub] = dslot
        return dslot

    def sized(self, pslot: Slot, job_ad: ClassAd, slot_ad: ClassAd) -> Resources | Refusal:
        """What a d-slot for ``job_ad`` would take from ``pslot`` now, or why it cannot
        be carved; nothing is carved (``policy explain`` asks this)."""
        if not pslot.is_partitionable or pslot.name not in self._free:
            return Refusal(f"{pslot.name} is not a partitionable slot")
        props = {name: res.properties for name, res in self.inventory.custom.items()}
        return size_request(job_ad, slot_ad, self._free[pslot.name], props,
                            self._policies.get(pslot.type_id, CarvePolicy()), pslot.name)

    def carve_texts(self) -> list[str]:
        """Every expression the carving policies evaluate against a job (their
        MODIFY_REQUEST_EXPR_*, JOB_DEFAULT_REQUEST* and consumption policies): what a
        job's sizing reads of it, for the local schedd's autoclusters."""
        out: list[str] = []
        for policy in (*self._policies.values(), CarvePolicy()):
            out += [*policy.modify.values(), *policy.job_defaults.values(),
                    *policy.consumption_exprs.values()]
        return out

    def release(self, dslot: Slot) -> None:
        """Delete a d-slot and give its resources back to its parent."""
        parent = self._detach(dslot)
        self._free[parent] = _restore_order(self._free[parent] + dslot.resources,
                                            self._slots[parent].resources)

    def drop_broken(self, dslot: Slot) -> None:
        """Delete a broken d-slot without giving its resources back: they stay lost
        to its parent (see :mod:`condorpy.slots.broken`) until :meth:`give_back`."""
        parent = self._detach(dslot)
        self._held_subs.setdefault(parent, set()).add(dslot.sub_id)

    def _detach(self, dslot: Slot) -> str:
        """Take a d-slot of this machine out of its parent's children; its parent."""
        parent = dslot.parent_name
        if not dslot.is_dynamic or parent is None \
                or self._children.get(parent, {}).get(dslot.sub_id) != dslot:
            raise SlotError(f"{dslot.name} is not a dynamic slot of this machine",
                            slot=dslot.name)
        del self._children[parent][dslot.sub_id]
        return parent

    def give_back(self, parent: str, resources: Resources, sub_id: int | None = None) -> None:
        """A mended broken d-slot's resources return to partitionable slot ``parent``
        (and its name, ``sub_id``, may be given to a new d-slot)."""
        if parent not in self._free:
            raise SlotError(f"{parent} is not a partitionable slot of this machine",
                            slot=parent)
        self._held_subs.get(parent, set()).discard(sub_id or 0)
        self._free[parent] = _restore_order(self._free[parent] + resources,
                                            self._slots[parent].resources)

    def take_lost(self, parent: str, resources: Resources, sub_id: int) -> bool:
        """A broken d-slot of an earlier daemon: its resources (and name) are lost to
        ``parent`` again. False when the p-slot has not that much left (nothing taken)."""
        free = self._free.get(parent)
        if free is None or free.shortfall(resources) is not None \
                or sub_id in self._children.get(parent, {}):
            return False
        self._free[parent] = free - resources
        self._held_subs.setdefault(parent, set()).add(sub_id)
        return True

    # --- ads ------------------------------------------------------------------------

    def ads(self, now: float, statuses: Mapping[str, SlotStatus] | None = None,
            measurements: Measurements | None = None,
            extra: Mapping[str, Mapping[str, Any]] | None = None) -> list[ClassAd]:
        """The ads of every slot, with per-slot load and the cross-slot
        `STARTD_SLOT_ATTRS`. ``statuses`` and ``extra`` are keyed by slot name
        (``slot1_2``); missing statuses mean a fresh Unclaimed/Idle slot."""
        measured = measurements or Measurements.from_inventory(self.inventory)
        slots = self.slots
        built = self._ads_of(slots, now, statuses or {}, measured, extra)
        if self.settings.slot_attrs:
            cross: dict[str, Any] = {}
            for slot, ad in zip(slots, built):
                for attr in self.settings.slot_attrs:
                    value = ad.evaluate(attr)
                    if value is not Undefined and value is not Error:
                        cross[f"{slot.name}_{attr}"] = value
            for ad in built:
                for key, value in cross.items():
                    ad[key] = value
        return built

    def _ads_of(self, wanted: list[Slot], now: float, statuses: Mapping[str, SlotStatus],
                measured: Measurements,
                extra: Mapping[str, Mapping[str, Any]] | None) -> list[ClassAd]:
        """Ads of ``wanted`` only; the load is still distributed over every slot."""
        every = self.slots
        status_of = {s.name: statuses.get(s.name, SlotStatus()) for s in every}
        load = self._load(every, status_of, measured)
        by_name = {x.name: x for x in load.slots}
        base = machine_ad(self.inventory, self.settings, now=now, measurements=measured,
                          total_condor_load_avg=load.total_condor_load_avg,
                          num_slots=len(self._slots), utc_offset=self.clock.utc_offset(now))
        built = []
        for slot in wanted:
            mine = by_name[slot.name]
            built.append(build_slot_ad(
                slot, self.available(slot), self.inventory, self.settings,
                status_of[slot.name], now=now, measurements=measured,
                load_avg=mine.load_avg, condor_load_avg=mine.condor_load_avg,
                total_condor_load_avg=load.total_condor_load_avg, num_slots=len(self._slots),
                num_dynamic=len(self._children.get(slot.name, {})),
                extra=(extra or {}).get(slot.name), base=base))
        return built

    def new_slot_ad(self, slot: Slot, now: float, status: SlotStatus,
                    measured: Measurements) -> ClassAd:
        """The ad of a slot just carved, before it has any load of its own. The
        machine-wide part is built once per clock value and measurements, so carving
        many d-slots in a burst does not rebuild it (or re-split the load) each time."""
        key = (now, measured, len(self._slots))
        if self._base is None or self._base[0] != key:
            base = machine_ad(self.inventory, self.settings, now=now, measurements=measured,
                              total_condor_load_avg=0.0, num_slots=len(self._slots),
                              utc_offset=self.clock.utc_offset(now))
            self._base = (key, base)
        return build_slot_ad(slot, self.available(slot), self.inventory, self.settings,
                             status, now=now, measurements=measured, load_avg=0.0,
                             condor_load_avg=0.0, total_condor_load_avg=0.0,
                             num_slots=len(self._slots), base=self._base[1])

    def ad_for(self, slot: Slot, now: float, state: str = "Unclaimed", activity: str = "Idle",
               extra: Mapping[str, Any] | None = None, *,
               statuses: Mapping[str, SlotStatus] | None = None,
               measurements: Measurements | None = None) -> ClassAd:
        """One slot's ad in ``state``/``activity``; the other slots' ``statuses`` feed the
        load distribution and the cross-slot attributes."""
        merged = dict(statuses or {})
        own = merged.get(slot.name, SlotStatus())
        merged[slot.name] = SlotStatus(state, activity, own.entered_state, own.entered_activity,
                                       own.condor_load, own.current_rank)
        names = [s.name for s in self.slots]
        if slot.name not in names:
            raise SlotError(f"{slot.name} is not a slot of this machine", slot=slot.name)
        extras = {slot.name: extra} if extra else None
        if not self.settings.slot_attrs:
            measured = measurements or Measurements.from_inventory(self.inventory)
            return self._ads_of([slot], now, merged, measured, extras)[0]
        return self.ads(now, merged, measurements, extras)[names.index(slot.name)]

    def _load(self, slots: list[Slot], status_of: Mapping[str, SlotStatus],
              measured: Measurements) -> MachineLoad:
        # A p-slot never runs a job itself; its load is carried by its d-slots.
        return distribute_load(measured.total_load_avg, [
            SlotLoadInput(s.name, status_of[s.name].condor_load,
                          status_of[s.name].state == "Owner") for s in slots])


def _same_size(a: Resources, b: Resources) -> bool:
    return (a.cpus, a.memory_mb, dict(a.custom), dict(a.devices)) == \
        (b.cpus, b.memory_mb, dict(b.custom), dict(b.devices))


def _restore_order(free: Resources, given: Resources) -> Resources:
    """Keep device ids in the p-slot's original order after they come back."""
    devices = {n: tuple(d for d in given.devices.get(n, ()) if d in ids)
               for n, ids in free.devices.items()}
    return Resources(free.cpus, free.memory_mb, free.disk_kb, free.swap_kb,
                     dict(free.custom), devices)

