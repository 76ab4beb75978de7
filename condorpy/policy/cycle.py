"""The clock and the policy cycle: advancing ``now``, bringing one slot up to date for
an event, and the full cycle that measures, latches and steps every slot."""

from __future__ import annotations

from condorpy.errors import PolicyError
from condorpy.policy.engine_state import EngineState
from condorpy.policy.moves import Moves
from condorpy.policy.publish import AdPublisher
from condorpy.policy.readings import Readings
from condorpy.policy.records import Slot
from condorpy.policy.roster import SlotRoster
from condorpy.policy.slot_eval import SlotEval
from condorpy.policy.steps import StateSteps


class Cycle:
    """Advances the engine's clock and runs policy cycles."""

    def __init__(self, st: EngineState, readings: Readings, ev: SlotEval,
                 publisher: AdPublisher, roster: SlotRoster, steps: StateSteps,
                 moves: Moves) -> None:
        self._st = st
        self._readings = readings
        self._ev = ev
        self._publisher = publisher
        self._roster = roster
        self._steps = steps
        self._moves = moves
        # One slot stepped until it stays, without the machine-wide after-cycle.
        self.settle = steps.settle

    def advance(self, now: float) -> None:
        st = self._st
        if now < st.now:
            raise PolicyError(f"clock went backwards: {now} < {st.now}")
        st.machine.account(self._moves, now - st.now)
        st.now = now

    def refresh(self, now: float, slot: Slot) -> None:
        """Bring one slot up to date before an event acts on it (not a full cycle:
        events come one at a time, and a cycle over every slot per event would make a
        burst of claims quadratic)."""
        self.advance(now)
        if not slot.deleted:
            self._readings.measure(slot)
            self._steps.settle(slot)

    def run(self, now: float) -> None:
        """One policy evaluation of every slot at ``now``."""
        self.advance(now)
        if self._roster.pending is not None:
            self._roster.continue_relayout()
        slots = self._st.live()
        self._readings.measure_all(slots)
        self._publisher.cross_slot_attrs(slots)
        self._ev.latch_all(slots)
        settle = self._steps.settle
        quiet = self._steps.quiet
        if quiet.enabled:
            # a busy slot whose inputs have not changed is not stepped, and one asleep
            # (nothing it reads written since) not even checked (quiet.py)
            quiet.run(slots, self._st.now, settle)
        else:
            for slot in slots:
                if not slot.deleted:
                    settle(slot)
        self._st.machine.after_cycle(self._moves)

    def settle_one(self, slot: Slot) -> None:
        if not slot.deleted:
            self._steps.settle(slot)
        self._st.machine.after_cycle(self._moves)

    def settle_all(self) -> None:
        for slot in list(self._st.slots.values()):
            if not slot.deleted:
                self._steps.settle(slot)
        self._st.machine.after_cycle(self._moves)
