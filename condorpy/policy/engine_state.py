"""What every part of the policy engine shares: the clock value, the slots, the claim
index, the settings and the outputs of the entry point being handled.

The engine is a composition of small parts (readings, evaluation, ad publishing, the
slot roster, moves, per-state steps, claims, the cycle); each holds this one record
instead of the others' attributes, so that no part reaches into another.
"""

from __future__ import annotations

from typing import Any

from condorpy.classad import CallContext
from condorpy.errors import PolicyError
from condorpy.policy.evaluation import Backend
from condorpy.policy.machine_wide import MachineWide
from condorpy.policy.records import Action, Output, Slot, StateChange
from condorpy.policy.settings import PolicySettings
from condorpy.policy.states import TRANSITIONS
from condorpy.slots.broken import BrokenLedger
from condorpy.slots.manager import SlotManager


class EngineState:
    """The engine's clock value, slots, claims and pending outputs."""

    def __init__(self, settings: PolicySettings, layout: SlotManager, backend: Backend,
                 ctx: CallContext, now: float) -> None:
        self.now = now
        self.settings = settings
        self.layout = layout
        self.backend = backend
        self.ctx = ctx
        self.slots: dict[str, Slot] = {}
        self.machine = MachineWide()
        self.out: list[Output] = []
        self.claims: dict[str, str] = {}        # claim id -> slot name
        self.ended: dict[str, str] = {}         # ended claim id -> its last slot
        self.broken = BrokenLedger()            # slots whose job's end could not be undone

    # ------------------------------------------------------------------- output
    def emit(self, action: Action) -> None:
        self.out.append(action)

    def emit_state(self, slot: Slot, key: str, reason: str) -> None:
        t = TRANSITIONS.get(key)
        self.out.append(StateChange(self.now, slot.name, slot.state, slot.activity, key,
                                    t.letter if t else None, reason))

    def take_output(self) -> list[Output]:
        out, self.out = self.out, []
        return out

    # ----------------------------------------------------------- slots, claims
    def slot(self, name: str) -> Slot:
        slot = self.slots.get(name)
        if slot is None or slot.deleted:
            raise PolicyError(f"no slot named {name!r}", slot=name)
        return slot

    def live(self) -> list[Slot]:
        return [s for s in self.slots.values() if not s.deleted]

    def claim_slot(self, claim_id: str) -> Slot:
        name = self.claims.get(claim_id)
        if name is None:
            raise PolicyError(f"no claim with id {claim_id!r}")
        return self.slots[name]

    def forget_claim(self, claim_id: str) -> None:
        name = self.claims.pop(claim_id, None)
        if name is not None:
            self.ended[claim_id] = name

    def put(self, slot: Slot, name: str, value: Any) -> None:
        self.backend.set_value(slot.ad, name, value)

    def put_expr(self, slot: Slot, name: str, text: str) -> None:
        self.backend.set_expr(slot.ad, name, text)
