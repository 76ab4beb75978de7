"""The engine's slots as the slot layer lays them out: the first layout, d-slots added
and deleted, resources copied back after a carve or a release, and a reconfigured
layout taking over as the old slots become free.

The slot layer (:class:`condorpy.slots.manager.SlotManager`) owns the layout and
builds every ad; the roster keeps the engine's slot records in step with it.
"""

from __future__ import annotations

from typing import Any

from condorpy.classad import ClassAd
from condorpy.policy.engine_state import EngineState
from condorpy.policy.publish import AdPublisher
from condorpy.policy.readings import Readings
from condorpy.policy.records import DeleteSlot, Slot, StopBenchmarks
from condorpy.policy.settings import PolicySettings
from condorpy.policy.states import Activity, State
from condorpy.slots.ads import SlotStatus, put_custom_resources
from condorpy.slots.manager import LayoutChange, SlotManager
from condorpy.slots.model import Slot as LayerSlot

S, A = State, Activity


class SlotRoster:
    """Adds, deletes and re-lays out the engine's slots."""

    def __init__(self, st: EngineState, readings: Readings, publisher: AdPublisher) -> None:
        self._st = st
        self._readings = readings
        self._publisher = publisher
        self._change: LayoutChange | None = None

    def build(self) -> None:
        """The layout's static and partitionable slots, with the ads its builder makes;
        every slot starts in Owner/Idle, as in the startd."""
        st = self._st
        start = SlotStatus("Owner", "Idle", st.now)
        layer = list(st.layout)
        statuses = {s.name: start for s in layer}
        ads = st.layout.ads(st.now, statuses, self._readings.current())
        for lslot, ad in zip(layer, ads):
            self.add(lslot, ad)

    def add(self, layer: LayerSlot, ad: Any, parent: str | None = None,
            state: State = S.OWNER, transition: str = "start",
            reason: str = "startd started") -> Slot:
        st = self._st
        kind = layer.kind.value.lower()
        avail = st.layout.available(layer)
        res: dict[str, float] = {"Cpus": avail.cpus, "Memory": avail.memory_mb,
                                 "Disk": avail.disk_kb}
        for name, amount in avail.custom.items():
            res[name] = float(amount)
        req = ad.lookup("Requirements")
        slot = Slot(name=layer.name, slot_id=layer.slot_id, ad=ad, kind=kind, parent=parent,
                    resources=res, state=state, entered_state=st.now,
                    entered_activity=st.now, layer=layer,
                    requirements=str(req) if req is not None else "START")
        st.put(slot, "LastBenchmark", 0)
        self.put_policy(slot, st.settings)
        st.slots[slot.name] = slot
        self._readings.measure(slot)
        self._publisher.publish_state(slot)
        self._publisher.publish_requirements(slot)
        st.emit_state(slot, transition, reason)
        return slot

    def put_policy(self, slot: Slot, settings: PolicySettings) -> None:
        """The policy expressions (and latch sources) of ``settings`` into the slot ad."""
        st = self._st
        for attr, text in settings.extra_attrs.items():
            st.put_expr(slot, attr, text)
        for attr in settings.exprs:
            policy = settings.expr_for(attr, slot.slot_id)
            if policy is not None:
                st.put_expr(slot, attr, policy)

    def discard(self, layer: LayerSlot) -> None:
        """A d-slot whose carve failed half-way: gone without a trace, its resources
        back with the layer."""
        st = self._st
        st.slots.pop(layer.name, None)
        self._readings.forget(layer.name)
        st.layout.release(layer)

    def delete_dslot(self, slot: Slot) -> None:
        st = self._st
        slot.deleted = True
        parent = st.slots.get(slot.parent or "")
        if st.broken.is_broken(slot.name):
            st.layout.drop_broken(slot.layer)   # lost to its parent until mended
        else:
            st.layout.release(slot.layer)
        if parent is not None:
            self.refresh_resources(parent)
            self.publish_lost(parent)
        st.emit(DeleteSlot(st.now, slot.name))
        del st.slots[slot.name]

    def publish_lost(self, pslot: Slot) -> None:
        """A p-slot's BrokenSlot* and shrunk TotalSlot*: what its broken d-slots took."""
        st = self._st
        given = pslot.layer.resources
        lost = st.broken.pslot_attrs(pslot.name, given)
        for name in [a for a in pslot.ad.keys() if a.startswith("BrokenSlot")]:
            if name not in lost:
                del pslot.ad[name]
        totals = {"TotalSlotCpus": given.cpus, "TotalSlotMemory": given.memory_mb,
                  "TotalSlotDisk": given.disk_kb,
                  **{f"TotalSlot{n}": v for n, v in given.custom.items()}}
        for name, value in {**{k: v for k, v in totals.items()
                               if isinstance(pslot.ad.evaluate(k), (int, float))},
                            **lost}.items():
            st.put(pslot, name, int(value) if float(value).is_integer() else value)

    def refresh_resources(self, slot: Slot) -> None:
        """Copy what the slot layer says ``slot`` has now (Cpus, Memory, Disk, custom
        resources, their devices) into its ad; a p-slot drops the devices it gave away."""
        st = self._st
        layout = st.layout
        avail = layout.available(slot.layer)
        for k, v in (("Cpus", avail.cpus), ("Memory", avail.memory_mb),
                     ("Disk", avail.disk_kb)):
            slot.resources[k] = v
            st.put(slot, k, v)
        inventory = layout.inventory
        if not inventory.custom:
            return
        attrs = ClassAd()
        put_custom_resources(attrs, slot.layer.resources, avail, inventory)
        if slot.kind == "partitionable":
            # the property ads (and shared properties) of the devices it gave away go
            for res_name in inventory.custom:
                stale = [a for a in slot.ad.keys()
                         if a.startswith(f"{res_name}_") and a not in attrs]
                for name in stale:
                    del slot.ad[name]
        for name in attrs:
            expr = attrs.lookup(name)
            if expr is not None:
                slot.ad[name] = expr
        for name in inventory.custom:
            slot.resources[name] = float(avail.custom.get(name, 0))

    # --------------------------------------------------------------- relayout
    def relayout(self, new: SlotManager) -> LayoutChange:
        """See PolicyEngine.relayout."""
        st = self._st
        change = st.layout.change_to(new)
        st.layout.take_settings(new)
        self._change = None if change.empty else change
        for name in change.going:
            if name in st.slots:
                st.slots[name].leaving = True
        self.continue_relayout()
        return change

    @property
    def pending(self) -> LayoutChange | None:
        return self._change

    def continue_relayout(self) -> None:
        """Delete the leaving slots that are free; once none is left, add the new
        layout's slots."""
        change = self._change
        if change is None:
            return
        st = self._st
        left = []
        for name in change.going:
            slot = st.slots.get(name)
            if slot is None:
                continue
            if slot.state in (S.OWNER, S.UNCLAIMED, S.DRAINED) \
                    and slot.activity in (A.IDLE, A.BENCHMARKING) \
                    and slot.claim is None and slot.pending is None \
                    and not st.layout.dynamic_slots(slot.layer):
                if slot.activity is A.BENCHMARKING:
                    st.emit(StopBenchmarks(st.now, slot.name))
                slot.deleted = True
                st.layout.remove_top(slot.layer)
                self._readings.forget(name)
                st.emit(DeleteSlot(st.now, name))
                del st.slots[name]
            else:
                left.append(name)
        if left:
            self._change = LayoutChange(tuple(left), change.coming)
            return
        self._change = None
        status = SlotStatus("Owner", "Idle", st.now)
        for planned in change.coming:
            layer = st.layout.add_top(planned)
            ad = st.layout.new_slot_ad(layer, st.now, status, self._readings.current())
            self.add(layer, ad, transition="reconfig", reason="new slot layout")
