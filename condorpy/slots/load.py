"""Per-slot load averages and keyboard/console idle times (startd manual 3.5.10.2-3).

The operating system knows only the machine's total load. The startd knows the load
its own jobs generate in each slot; whatever the total holds beyond that is the
owner's, and it is handed out in portions of at most 1.0, to Owner-state slots first,
then to slots without jobs, and whatever remains when the slots run out lands on the
last slot (which may then exceed 1.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class SlotLoadInput:
    name: str
    condor_load: float     # CPU load of the slot's own job(s), from the starter
    in_owner_state: bool   # slots the owner is using get the owner's load first


@dataclass(frozen=True)
class SlotLoad:
    name: str
    load_avg: float        # LoadAvg: the slot's job load plus its part of the owner load
    condor_load_avg: float  # CondorLoadAvg


@dataclass(frozen=True)
class MachineLoad:
    total_load_avg: float
    total_condor_load_avg: float
    slots: tuple[SlotLoad, ...]


def distribute_load(total_load_avg: float, slots: Sequence[SlotLoadInput]) -> MachineLoad:
    """Split the machine's load among its slots (HTCondor's assignment, 3.5.10.3)."""
    total_condor = sum(s.condor_load for s in slots)
    owner_load = max(0.0, total_load_avg - total_condor)
    # Stable order: Owner-state slots, then slots with no job load, then busy ones.
    order = sorted(range(len(slots)),
                   key=lambda i: (not slots[i].in_owner_state, slots[i].condor_load > 0))
    extra = [0.0] * len(slots)
    for position, i in enumerate(order):
        if position == len(order) - 1 or owner_load <= 1.0:
            extra[i] = owner_load
            break
        extra[i] = 1.0
        owner_load -= 1.0
    return MachineLoad(
        total_load_avg, total_condor,
        tuple(SlotLoad(s.name, s.condor_load + extra[i], s.condor_load)
              for i, s in enumerate(slots)))


@dataclass(frozen=True)
class IdlePolicy:
    """`SLOTS_CONNECTED_TO_KEYBOARD`, `SLOTS_CONNECTED_TO_CONSOLE`,
    `DISCONNECTED_KEYBOARD_IDLE_BOOST` (HTCondor's defaults: 0, 0, 1200)."""

    keyboard_slots: int = 0
    console_slots: int = 0
    disconnected_boost: int = 1200


def slot_idle_times(slot_id: int, keyboard_idle: int, console_idle: int, policy: IdlePolicy,
                    now: float, started_at: float) -> tuple[int, int]:
    """(KeyboardIdle, ConsoleIdle) for a slot. ``slot_id`` is the SlotID (a d-slot's is
    its parent's). Slots not connected to a device see the time since the startd
    started plus the boost, so they never look as if someone is typing."""
    disconnected = int(max(0.0, now - started_at)) + policy.disconnected_boost
    keyboard = keyboard_idle if slot_id <= policy.keyboard_slots else disconnected
    console = console_idle if slot_id <= policy.console_slots else disconnected
    return keyboard, console
