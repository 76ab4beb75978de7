"""Per-slot load averages and idle times (startd manual 3.5.10.2-3.5.10.4)."""

from __future__ import annotations

import pytest

from condorpy.slots.load import IdlePolicy, SlotLoadInput, distribute_load, slot_idle_times


def loads(total: float, *slots: tuple[float, bool]) -> list[tuple[float, float]]:
    result = distribute_load(total, [SlotLoadInput(f"slot{i + 1}", c, o)
                                     for i, (c, o) in enumerate(slots)])
    return [(round(s.load_avg, 3), round(s.condor_load_avg, 3)) for s in result.slots]


def test_manual_idle_two_core_machine() -> None:
    # 3.5.10.4, first log: no jobs, load 0.34, both slots in Owner state.
    assert loads(0.34, (0.0, True), (0.0, True)) == [(0.34, 0.0), (0.0, 0.0)]


def test_manual_one_slot_running_a_job() -> None:
    # 3.5.10.4, second log: slot2 runs a job (0.996), slot1 is the owner's; load 1.25.
    result = distribute_load(1.25, [SlotLoadInput("slot1", 0.0, True),
                                    SlotLoadInput("slot2", 0.996, False)])
    assert result.total_condor_load_avg == pytest.approx(0.996)
    assert result.total_load_avg == 1.25
    assert [round(s.load_avg, 3) for s in result.slots] == [0.254, 0.996]


def test_owner_load_goes_in_portions_of_one_owner_slots_first() -> None:
    # slot3 is the owner's: it gets the first 1.0; then the idle slot1; the busy slot2 last.
    assert loads(3.5, (0.0, False), (0.5, False), (0.0, True)) == \
        [(1.0, 0.0), (1.5, 0.5), (1.0, 0.0)]


def test_leftover_owner_load_lands_on_last_slot_above_one() -> None:
    assert loads(5.0, (0.0, False), (0.0, False)) == [(1.0, 0.0), (4.0, 0.0)]


def test_slots_run_out_of_load() -> None:
    assert loads(1.5, (0.0, False), (0.0, False), (0.0, False)) == \
        [(1.0, 0.0), (0.5, 0.0), (0.0, 0.0)]


def test_condor_load_above_total_leaves_no_owner_load() -> None:
    assert loads(0.5, (1.0, False), (0.0, False)) == [(1.0, 1.0), (0.0, 0.0)]


def test_idle_times_connected_and_disconnected() -> None:
    policy = IdlePolicy(keyboard_slots=1, console_slots=2, disconnected_boost=1200)
    now, started = 10_000.0, 9_000.0
    assert slot_idle_times(1, 5, 7, policy, now, started) == (5, 7)
    assert slot_idle_times(2, 5, 7, policy, now, started) == (2200, 7)
    assert slot_idle_times(3, 5, 7, policy, now, started) == (2200, 2200)
    default = IdlePolicy()
    assert slot_idle_times(1, 5, 7, default, now, now) == (1200, 1200)
