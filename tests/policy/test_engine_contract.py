"""The engine driven directly, on a manual clock: its clock reaches every time() the
ClassAd library evaluates, its outputs are typed records, and every move is checked
against the manual's transition table."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from condorpy.clock import ManualClock
from condorpy.errors import PolicyError
from condorpy.policy.explain import explain_command
from condorpy.policy.records import (ACTION_KINDS, Action, ClaimAccepted, CreateSlot,
                                     HardKill, SoftKill, StartJob, StateChange, Suspend)
from condorpy.policy.states import Activity, State
from tests.policy.engines import ONE_DESKTOP_SLOT, engine_from_text

FAR = 4_000_000_000.0     # 2096: far from any wall clock these tests run under

CLOCKED = ONE_DESKTOP_SLOT + """RUNBENCHMARKS = False
STARTD_ATTRS = $(STARTD_ATTRS) A B C D E F G
A = time()
B = eval("time()")
C = ifThenElse(true, time(), 0)
D = max({time(), 1})
E = int(strcat("", time()))
F = [x = time()].x
G = eval("eval(\\"time() + 0\\")")
"""


def test_every_time_call_reads_the_engine_clock() -> None:
    clock = ManualClock(FAR)
    eng = engine_from_text(CLOCKED, clock)
    eng.cycle(FAR)
    names = list("ABCDEFG")
    assert eng.snapshot(names)["slot1"] == {n: int(FAR) for n in names}
    eng.cycle(FAR + 100)
    assert eng.snapshot(names)["slot1"] == {n: int(FAR) + 100 for n in names}
    assert eng.snapshot(["MyCurrentTime"])["slot1"]["MyCurrentTime"] == int(FAR) + 100


def test_policy_decisions_use_the_engine_clock() -> None:
    # START opens only in the engine's future: a wall clock would never open it.
    eng = engine_from_text(ONE_DESKTOP_SLOT + f"RUNBENCHMARKS = False\n"
                           f"IS_OWNER = time() < {int(FAR) + 50}\n", ManualClock(FAR))
    assert [o.transition for o in eng.take_output()] == ["start"]
    assert eng.cycle(FAR) == []
    moved = [o for o in eng.cycle(FAR + 60) if isinstance(o, StateChange)]
    assert [(o.state, o.transition) for o in moved] == [(State.UNCLAIMED, "1")]


def test_explain_reads_the_engine_clock() -> None:
    eng = engine_from_text(CLOCKED, ManualClock(FAR))
    out = io.StringIO()
    assert explain_command(eng, ["A", "B", "G"], None, [], None, out) == 0
    assert out.getvalue().splitlines() == [f"slot1: {n} = {int(FAR)}" for n in "ABG"]


def test_outputs_are_typed_records() -> None:
    eng = engine_from_text(ONE_DESKTOP_SLOT + "RUNBENCHMARKS = False\nWANT_SUSPEND = True\n"
                           "SUSPEND = KeyboardIdle < 60\nCONTINUE = KeyboardIdle > 120\n",
                           ManualClock(0))
    eng.set(0, {"KeyboardIdle": 1000})
    eng.cycle(0)
    got = eng.request_claim(1, "c1", {"Owner": "alice", "KillSig": "SIGINT"})
    accepted = [o for o in got if isinstance(o, ClaimAccepted)]
    assert accepted == [ClaimAccepted(1, "slot1", claim="c1")]
    assert accepted[0].as_json() == {"t": 1, "slot": "slot1", "action": "claim_accepted",
                                     "claim": "c1"}
    assert [o for o in eng.activate(2, "c1") if isinstance(o, Action)] == \
        [StartJob(2, "slot1", claim="c1")]
    eng.set(10, {"KeyboardIdle": 0})
    assert [o for o in eng.cycle(10) if isinstance(o, Action)] == [Suspend(10, "slot1", claim="c1")]
    out = eng.vacate(20)
    kills = [o for o in out if isinstance(o, SoftKill)]
    assert kills and kills[0].signal == "SIGINT" and kills[0].claim == "c1"
    assert [o for o in eng.vacate(21, fast=True) if isinstance(o, HardKill)]
    # every kind has its own record class, named as in the simulator's JSON
    assert {"start_job", "suspend", "soft_kill", "hard_kill", "create_slot",
            "delete_slot", "drain_started", "exit"} <= set(ACTION_KINDS)
    assert all(issubclass(c, Action) and c.kind == k for k, c in ACTION_KINDS.items())


def test_create_slot_record_carries_the_slot_layers_sizes() -> None:
    eng = engine_from_text("NUM_CPUS = 4\nMEMORY = 4096\nRUNBENCHMARKS = False\n",
                           ManualClock(0))
    eng.cycle(0)
    out = eng.request_claim(0, "c1", {"RequestCpus": 2, "RequestMemory": 1000,
                                      "RequestDisk": 10})
    made = [o for o in out if isinstance(o, CreateSlot)]
    assert len(made) == 1 and made[0].name == "slot1_1"
    assert dict(made[0].resources)["Cpus"] == 2 and dict(made[0].resources)["Memory"] == 1024
    assert eng.slots["slot1_1"].layer is eng.layout.get("slot1_1")


def test_a_move_the_table_does_not_list_raises() -> None:
    eng = engine_from_text(ONE_DESKTOP_SLOT + "RUNBENCHMARKS = False\n", ManualClock(0))
    eng.cycle(0)
    slot = eng.slots["slot1"]
    assert (slot.state, slot.activity) == (State.UNCLAIMED, Activity.IDLE)
    with pytest.raises(PolicyError, match="transition 11 goes Claimed/Idle"):
        eng.go(slot, State.CLAIMED, Activity.BUSY, "11", "not from Unclaimed")
    with pytest.raises(PolicyError, match="not one of the manual's"):
        eng.go(slot, State.OWNER, Activity.IDLE, "99", "no such arrow")
    assert (slot.state, slot.activity) == (State.UNCLAIMED, Activity.IDLE)


def test_clock_cannot_go_back() -> None:
    clock = ManualClock(10)
    with pytest.raises(ValueError):
        clock.set(5)
    eng = engine_from_text(ONE_DESKTOP_SLOT, clock)
    with pytest.raises(PolicyError, match="clock went backwards"):
        eng.cycle(5)


def test_a_policy_knob_set_to_nothing_is_left_out() -> None:
    """`use POLICY : Desktop` sets CLAIM_WORKLIFE to nothing: HTCondor's slot ad then
    has no CLAIM_WORKLIFE, so a claim may run jobs past the 1200 s default."""
    eng = engine_from_text("use POLICY : Desktop\nNUM_SLOTS = 1\nRUNBENCHMARKS = False\n"
                           "START = True\nSUSPEND = False\nPREEMPT = False\n",
                           ManualClock(0))
    assert eng.snapshot(["CLAIM_WORKLIFE"])["slot1"] == {"CLAIM_WORKLIFE": None}
    eng.cycle(0)
    eng.request_claim(0, "c1", {"Owner": "alice", "JobLeaseDuration": 100000})
    eng.activate(0, "c1")
    eng.job_exit(2000, "c1")
    started = [o for o in eng.activate(2001, "c1") if isinstance(o, StartJob)]
    assert started == [StartJob(2001, "slot1", claim="c1")]
    plain = engine_from_text(ONE_DESKTOP_SLOT + "RUNBENCHMARKS = False\n", ManualClock(0))
    assert plain.snapshot(["CLAIM_WORKLIFE"])["slot1"] == {"CLAIM_WORKLIFE": 1200}
