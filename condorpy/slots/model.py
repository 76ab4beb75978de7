"""The slots themselves: frozen records; what changes (a p-slot's free resources, its
d-slots) is kept by :class:`condorpy.slots.manager.SlotManager`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from condorpy.slots.resources import Resources


class SlotKind(Enum):
    STATIC = "Static"
    PARTITIONABLE = "Partitionable"
    DYNAMIC = "Dynamic"


@dataclass(frozen=True)
class Slot:
    """A slot. ``resources`` is what it was given (its TotalSlot* amounts).

    Static and partitionable slots are numbered from 1 (``slot3``); a dynamic slot
    carries its parent's ``slot_id`` and its own ``sub_id`` (``slot1_2``), and a
    ``type_id`` that is minus its parent's, as HTCondor advertises it.
    """

    slot_id: int
    type_id: int
    kind: SlotKind
    resources: Resources
    sub_id: int = 0

    @cached_property
    def name(self) -> str:  # looked up constantly by the manager; computed once
        return f"slot{self.slot_id}_{self.sub_id}" if self.sub_id else f"slot{self.slot_id}"

    @property
    def is_partitionable(self) -> bool:
        return self.kind is SlotKind.PARTITIONABLE

    @property
    def is_dynamic(self) -> bool:
        return self.kind is SlotKind.DYNAMIC

    @property
    def parent_name(self) -> str | None:
        return f"slot{self.slot_id}" if self.sub_id else None


@dataclass(frozen=True)
class Refusal:
    """Why a partitionable slot will not carve a d-slot for a job."""

    reason: str
