"""Slot type parsing and division, reproducing the manual's examples."""

from __future__ import annotations

import pytest

from condorpy.errors import LayoutError
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.layout import PlannedSlot, SlotTypeConfig, plan_layout
from condorpy.slots.shares import ShareKind, parse_slot_type


def _no_devices(constraint: str, device: str, props: object) -> bool:
    raise AssertionError("no device constraints in these layouts")


def plan(inv: MachineInventory, *types: tuple[str, int, bool],
         custom: tuple[str, ...] = ()) -> list[PlannedSlot]:
    configs = [SlotTypeConfig(i + 1, parse_slot_type(text, custom or tuple(inv.custom),
                                                     f"SLOT_TYPE_{i + 1}"), n, part)
               for i, (text, n, part) in enumerate(types)]
    return plan_layout(configs, inv, _no_devices)


FOUR_CORE = MachineInventory(cpus=4, memory_mb=256, disk_kb=400_000, swap_kb=8192)


@pytest.mark.parametrize("group", [
    ["cpus=2, ram=128, swap=25%, disk=1/2", "cpus=1/2, memory=128, virt=25%, disk=50%",
     "c=1/2, m=50%, v=1/4, disk=1/2"],
    ["c=25%, m=64, v=1/4, d=25%", "25%", "1/4"],
])
def test_manual_equivalent_slot_types(group: list[str]) -> None:
    results = {text: plan(FOUR_CORE, (text, 1, False))[0].resources for text in group}
    first = results[group[0]]
    assert all(r == first for r in results.values()), results
    assert first.swap_kb in (2048,)


def test_manual_values_of_equivalent_types() -> None:
    big = plan(FOUR_CORE, ("cpus=2, ram=128, swap=25%, disk=1/2", 1, False))[0].resources
    assert (big.cpus, big.memory_mb, big.swap_kb, big.disk_kb) == (2, 128, 2048, 200_000)
    small = plan(FOUR_CORE, ("1/4", 1, False))[0].resources
    assert (small.cpus, small.memory_mb, small.swap_kb, small.disk_kb) == (1, 64, 2048, 100_000)


def test_memory_syntaxes_agree_on_128_mb_machine() -> None:
    inv = MachineInventory(cpus=2, memory_mb=128, disk_kb=1000)
    got = {t: plan(inv, (t, 1, False), ("", 1, False))[0].resources.memory_mb
           for t in ("mem=64", "mem=1/2", "mem=50%", "mem=auto")}
    assert set(got.values()) == {64}, got


def test_auto_divides_what_explicit_shares_leave() -> None:
    inv = MachineInventory(cpus=4, memory_mb=1000, disk_kb=9000, swap_kb=0)
    slots = plan(inv, ("mem=10%", 1, False), ("", 3, False))
    assert [s.resources.memory_mb for s in slots] == [100, 300, 300, 300]
    assert [s.slot_id for s in slots] == [1, 2, 3, 4]
    assert [s.type_id for s in slots] == [1, 2, 2, 2]
    assert [s.resources.cpus for s in slots] == [1, 1, 1, 1]
    assert [s.resources.disk_kb for s in slots] == [2250] * 4


def test_blanket_default_with_explicit_auto() -> None:
    inv = MachineInventory(cpus=4, memory_mb=1000, disk_kb=9000, swap_kb=400)
    a = plan(inv, ("cpus=1, ram=1/2, swap=50%", 1, False), ("", 1, False))[0].resources
    b = plan(inv, ("cpus=1, disk=auto, 50%", 1, False), ("", 1, False))[0].resources
    assert a == b
    assert (a.cpus, a.memory_mb, a.swap_kb, a.disk_kb) == (1, 500, 200, 4500)


def test_units_on_memory_and_disk() -> None:
    inv = MachineInventory(cpus=4, memory_mb=16384, disk_kb=100 * 1024 * 1024)
    r = plan(inv, ("cpus=1, mem=4G, disk=10G", 1, False))[0].resources
    assert (r.memory_mb, r.disk_kb) == (4096, 10 * 1024 * 1024)


def test_cogs_and_actuators() -> None:
    inv = MachineInventory(cpus=8, memory_mb=8000, disk_kb=80_000, custom={
        "Cogs": CustomResource("Cogs", count=16), "actuator": CustomResource("actuator", count=8)})
    slots = plan(inv, ("cogs=50%,actuator=6,50%", 1, True), ("cogs=25%,actuator=1,25%", 2, False))
    p, s1, s2 = (s.resources for s in slots)
    assert slots[0].partitionable and not slots[1].partitionable
    assert (p.custom["Cogs"], p.custom["actuator"], p.cpus, p.memory_mb) == (8, 6, 4, 4000)
    for s in (s1, s2):
        assert (s.custom["Cogs"], s.custom["actuator"], s.cpus, s.memory_mb) == (4, 1, 2, 2000)


def test_custom_name_wins_over_first_letter() -> None:
    spec = parse_slot_type("cogs=3, c=1", ("Cogs",))
    assert set(spec.shares) == {"Cogs", "Cpus"}


@pytest.mark.parametrize("text, fragment", [
    ("cpus=5", "cpus: the slot types ask for 5 (SLOT_TYPE_1: 1 x 5) but the machine has 4"),
    ("memory=300", "Memory: the slot types ask for 300 MiB"),
])
def test_impossible_layout_names_resource_asked_and_existing(text: str, fragment: str) -> None:
    with pytest.raises(LayoutError) as err:
        plan(FOUR_CORE, (text, 1, False))
    assert fragment.lower() in str(err.value).lower()
    assert "256 MiB" in str(err.value) or "has 4" in str(err.value)


def test_too_many_static_slots_for_cpus() -> None:
    with pytest.raises(LayoutError, match="Cpus"):
        plan(FOUR_CORE, ("", 5, False))


def test_overcommitted_across_types() -> None:
    with pytest.raises(LayoutError) as err:
        plan(FOUR_CORE, ("cpus=2", 1, False), ("cpus=1", 3, False))
    assert "ask for 5" in str(err.value) and "SLOT_TYPE_2: 3 x 1" in str(err.value)


@pytest.mark.parametrize("text", ["cpus=abc", "150%", "1/0", "flux=2", "cpus=1.5", "4G",
                                  "cpus=2G", "cpus=1 : Capability > 1"])
def test_bad_slot_type_text(text: str) -> None:
    with pytest.raises(LayoutError, match="SLOT_TYPE_1"):
        parse_slot_type(text, (), "SLOT_TYPE_1")


def test_constraint_lines_keep_commas() -> None:
    spec = parse_slot_type("\n   GPUs = 2 : member(Capability, {8.0, 9.0})\n   90%\n", ("GPUs",))
    share = spec.shares["GPUs"]
    assert share.kind is ShareKind.ABSOLUTE and share.value == 2
    assert share.constraint == "member(Capability, {8.0, 9.0})"
    assert spec.default.kind is ShareKind.FRACTION and spec.default.value == pytest.approx(0.9)


def test_slots_with_their_own_execute_partition() -> None:
    # slot2's SLOT2_EXECUTE is on a partition of its own: it may take all of it, while
    # slots 1 and 3 share the EXECUTE partition.
    inv = MachineInventory(cpus=3, memory_mb=300, disk_kb=1000, slot_disk_kb={2: 5000})
    slots = plan(inv, ("disk=100%", 1, False), ("disk=100%", 1, False), ("", 1, False))
    assert [s.resources.disk_kb for s in slots] == [1000, 5000, 0]
    with pytest.raises(LayoutError, match="Disk"):
        plan(inv, ("disk=60%", 1, False), ("disk=10%", 1, False), ("disk=60%", 1, False))
