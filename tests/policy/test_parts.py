"""The engine's parts on their own: the shared state, the readings and their
generations, the latch sharing rule, ad publishing, and the per-state steps, each
composed here with only the parts it needs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from condorpy.classad import CallContext, ClassAd
from condorpy.errors import PolicyError
from condorpy.policy.engine_state import EngineState
from condorpy.policy.evaluation import default_backend
from condorpy.policy.moves import Moves
from condorpy.policy.publish import AdPublisher
from condorpy.policy.readings import Readings
from condorpy.policy.records import Claim, ClaimEnded, EvictWhy, StateChange
from condorpy.policy.roster import SlotRoster
from condorpy.policy.slot_eval import SlotEval, leaf_refs
from condorpy.policy.states import Activity, State
from condorpy.policy.steps import StateSteps
from condorpy.slots.ads import Measurements
from condorpy.slots.manager import SlotManager
from tests.policy.engines import ONE_DESKTOP_SLOT, core_from_text


@dataclass
class Parts:
    st: EngineState
    readings: Readings
    publisher: AdPublisher
    roster: SlotRoster
    ev: SlotEval
    moves: Moves
    steps: StateSteps


def parts(text: str, now: float = 0.0) -> Parts:
    core = core_from_text(text)
    layout = SlotManager.from_config(core.config, core.inventory, started_at=now)
    holder: list[EngineState] = []
    ctx = CallContext(now=lambda: holder[0].now)
    st = EngineState(core.settings(layout), layout, default_backend(ctx), ctx, now)
    holder.append(st)
    readings = Readings(st, Measurements(), lambda _t: 0)
    publisher = AdPublisher(st, readings)
    roster = SlotRoster(st, readings, publisher)
    ev = SlotEval(st, readings)
    steps: list[StateSteps] = []
    moves = Moves(st, ev, publisher, roster, settle=lambda s: steps[0].settle(s))
    steps.append(StateSteps(st, ev, moves))
    roster.build()
    return Parts(st, readings, publisher, roster, ev, moves, steps[0])


def test_the_shared_state_hands_out_each_output_once() -> None:
    p = parts(ONE_DESKTOP_SLOT)
    first = p.st.take_output()
    assert [o.transition for o in first if isinstance(o, StateChange)] == ["start"]
    assert len(first) == 1
    assert p.st.take_output() == []


def test_a_forgotten_claim_is_remembered_as_ended_on_its_slot() -> None:
    p = parts(ONE_DESKTOP_SLOT)
    p.st.claims["c1"] = "slot1"
    assert p.st.claim_slot("c1").name == "slot1"
    p.st.forget_claim("c1")
    assert p.st.ended == {"c1": "slot1"} and p.st.claims == {}
    with pytest.raises(PolicyError):
        p.st.claim_slot("c1")
    with pytest.raises(PolicyError):
        p.st.slot("slot9")


def test_idle_readings_age_with_the_clock() -> None:
    p = parts(ONE_DESKTOP_SLOT)
    p.readings.set({"KeyboardIdle": 100, "ConsoleIdle": 50})
    p.st.now = 30.0
    slot = p.st.slot("slot1")
    p.readings.measure(slot)
    assert slot.ad.evaluate("KeyboardIdle") == 130
    assert slot.ad.evaluate("ConsoleIdle") == 80


def test_inputs_are_prepared_once_per_clock_value() -> None:
    p = parts(ONE_DESKTOP_SLOT)
    gen = p.readings.inputs()
    assert p.readings.inputs() == gen                 # same clock value: same batch
    p.readings.set({"Extra": 1})                      # a new reading: a new generation
    assert p.readings.inputs() == gen + 1
    p.st.now = 5.0
    assert p.readings.inputs() == gen + 2


def test_a_slots_own_readings_go_to_that_slot_only() -> None:
    p = parts("NUM_CPUS = 2\nNUM_SLOTS = 2\n")
    one, two = p.st.slot("slot1"), p.st.slot("slot2")
    p.readings.set({"Foo": 3}, slot="slot1")
    p.readings.measure(one)
    p.readings.measure(two)
    assert one.ad.evaluate("Foo") == 3 and two.ad.lookup("Foo") is None


def test_a_latch_is_shared_only_when_it_reads_machine_wide_inputs() -> None:
    ad = ClassAd()
    ad.set_expr("CpuBusy", "(LoadAvg - CondorLoadAvg) >= 0.5")
    ad.set_expr("Mine", "TARGET.Owner == \"x\"")
    ad.set_expr("Chosen", "eval(\"LoadAvg\")")
    assert leaf_refs(ad, "CpuBusy") == {"loadavg", "condorloadavg"}
    assert not leaf_refs(ad, "Mine") <= {"loadavg", "owner"}
    assert not leaf_refs(ad, "Chosen") <= {"loadavg"}


def test_requirements_are_false_while_shutting_down() -> None:
    p = parts(ONE_DESKTOP_SLOT)
    slot = p.st.slot("slot1")
    p.publisher.publish_requirements(slot)
    assert str(slot.ad.lookup("Requirements")) == slot.requirements
    p.st.machine.shutdown = "fast"
    p.publisher.publish_requirements(slot)
    assert slot.ad.evaluate("Requirements") is False


def test_an_owner_step_leaves_owner_when_is_owner_is_not_true() -> None:
    p = parts(ONE_DESKTOP_SLOT + "IS_OWNER = False\nRUNBENCHMARKS = False\n")
    p.st.take_output()
    slot = p.st.slot("slot1")
    p.steps.settle(slot)
    assert (slot.state, slot.activity) == (State.UNCLAIMED, Activity.IDLE)
    moved = p.st.take_output()
    assert [o.transition for o in moved if isinstance(o, StateChange)] == ["1"]
    assert slot.ad.evaluate("State") == "Unclaimed"


def test_an_owner_step_stays_while_is_owner_is_true() -> None:
    p = parts(ONE_DESKTOP_SLOT + "IS_OWNER = True\n")
    p.st.take_output()
    slot = p.st.slot("slot1")
    p.steps.settle(slot)
    assert (slot.state, slot.activity) == (State.OWNER, Activity.IDLE)
    assert p.st.take_output() == []


def test_leaving_preempting_ends_the_claim_and_gives_the_slot_back() -> None:
    p = parts(ONE_DESKTOP_SLOT + "IS_OWNER = False\nRUNBENCHMARKS = False\n")
    slot = p.st.slot("slot1")
    p.steps.settle(slot)
    claim = Claim("c1", ClassAd(), 0.0, 0.0, 0.0, 600.0)
    p.moves.install_claim(slot, claim)
    p.moves.go(slot, State.CLAIMED, Activity.IDLE, "5", "claimed")
    p.st.take_output()
    p.moves.evict(slot, EvictWhy.RELEASE, "released")     # no job: straight to Preempting
    assert (slot.state, slot.activity) == (State.PREEMPTING, Activity.VACATING)
    p.steps.settle(slot)                                  # no job to wait for
    assert (slot.state, slot.activity) == (State.UNCLAIMED, Activity.IDLE)
    out = p.st.take_output()
    ended = [o for o in out if isinstance(o, ClaimEnded)]
    assert [(o.claim, o.why) for o in ended] == [("c1", "release")]
    assert [o.transition for o in out if isinstance(o, StateChange)] == ["10", "22", "1"]
    assert p.st.ended == {"c1": "slot1"}
