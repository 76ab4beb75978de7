"""Breaking and mending slots in the engine (the ledger is
:class:`condorpy.slots.broken.BrokenLedger`).

A broken slot matches nothing (its Requirements is the reason), refuses claims and
activations, and an idle claim on it is given up; a broken dynamic slot, once its
claim is gone, is deleted without its resources going back to its partitionable slot.
Mending undoes each of these.
"""

from __future__ import annotations

from typing import Any, Mapping

from condorpy.policy.cycle import Cycle
from condorpy.policy.engine_state import EngineState
from condorpy.policy.moves import Moves
from condorpy.policy.publish import AdPublisher
from condorpy.policy.records import EvictWhy, Output
from condorpy.policy.roster import SlotRoster
from condorpy.policy.states import Activity, State
from condorpy.slots.broken import BrokenCause, BrokenCode, BrokenItem


class BrokenSlots:
    """The engine's part that breaks and mends slots."""

    def __init__(self, st: EngineState, cycle: Cycle, moves: Moves, roster: SlotRoster,
                 publisher: AdPublisher) -> None:
        self._st, self._cycle, self._moves = st, cycle, moves
        self._roster, self._publisher = roster, publisher

    def report(self, now: float, slot_name: str, cause: BrokenCause,
               context: Mapping[str, Any] | None = None, since: int | None = None
               ) -> list[Output]:
        st = self._st
        self._cycle.advance(now)
        slot = st.slots.get(slot_name)
        if slot is None or st.broken.is_broken(slot_name):
            return st.take_output()
        claim = slot.claim
        ctx: dict[str, Any] = dict(context or {})
        if claim is not None and "RemoteUser" not in ctx:
            user = st.backend.evaluate(slot.ad, "RemoteUser", None)
            if isinstance(user, str):
                ctx["RemoteUser"] = user
        st.broken.report_broken(BrokenItem(slot_name, slot.parent, cause, slot.layer.resources,
                                           int(now) if since is None else since, ctx))
        for name, value in st.broken.slot_attrs(slot_name).items():
            if name != "Requirements":
                st.put(slot, name, value)
        self._publisher.publish_requirements(slot)
        if slot.state is State.CLAIMED and slot.activity is Activity.CLEANING:
            slot.evict_why = EvictWhy.RELEASE     # the claim goes once the starter is reaped
        elif slot.state is State.CLAIMED and slot.activity is Activity.IDLE:
            self._moves.evict(slot, EvictWhy.RELEASE, f"slot broken: {cause.reason}")
        self._cycle.settle_one(slot)
        return st.take_output()

    def restore(self, now: float, item: BrokenItem) -> list[Output]:
        """A slot an earlier daemon left broken, whose cause still holds: a slot that
        is there breaks again; a dynamic one, gone with that daemon, is lost to its
        partitionable slot again (if that still has as much to lose)."""
        st = self._st
        self._cycle.advance(now)
        if st.broken.is_broken(item.slot):
            return st.take_output()
        if item.slot in st.slots:       # a static slot (a d-slot of that name is another)
            if item.parent is None:
                return self.report(now, item.slot, item.cause, item.context, item.since)
            return st.take_output()
        parent = st.slots.get(item.parent or "")
        sub = _sub_id(item.slot)
        if parent is None or sub is None \
                or not st.layout.take_lost(parent.name, item.resources, sub):
            return st.take_output()
        st.broken.report_broken(item)
        self._roster.refresh_resources(parent)
        self._roster.publish_lost(parent)
        self._cycle.settle_one(parent)
        return st.take_output()

    def mend(self, now: float, slot_name: str, code: BrokenCode | None = None
             ) -> list[Output]:
        st = self._st
        self._cycle.advance(now)
        item = st.broken.mend(slot_name, code)
        if item is None:
            return st.take_output()
        slot = st.slots.get(slot_name)
        if slot is not None:            # still there (static, or still claimed)
            for name in ("SlotBrokenCode", "SlotBrokenReason"):
                if name in slot.ad.keys():
                    del slot.ad[name]
            self._roster.refresh_resources(slot)
            self._publisher.publish_requirements(slot)
            self._cycle.settle_one(slot)
        elif item.parent is not None and item.parent in st.slots:
            parent = st.slots[item.parent]
            st.layout.give_back(item.parent, item.resources, _sub_id(item.slot))
            self._roster.refresh_resources(parent)
            self._roster.publish_lost(parent)
            self._cycle.settle_one(parent)
        return st.take_output()


def _sub_id(name: str) -> int | None:
    """The sub id of d-slot ``slot1_3`` (3); None for another name."""
    sub = name.partition("_")[2]
    return int(sub) if sub.isdigit() else None
