"""Slot layout and ad settings read from real configuration text."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config, DetectedFacts
from condorpy.errors import ConfigError, LayoutError
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.manager import SlotManager
from condorpy.slots.model import Slot, SlotKind

FOUR = MachineInventory(cpus=4, memory_mb=8192, disk_kb=1_000_000, detected_cpus=4,
                        hostname="node1", facts={"Arch": "X86_64", "OpSys": "LINUX"})
DETECTED = DetectedFacts(full_hostname="node1", cpus=4, cores=4, physical_cpus=4,
                         memory_mb=8192)


def slots_for(text: str, inventory: MachineInventory = FOUR) -> SlotManager:
    cfg = Config.from_text(text, detected=DETECTED)
    return SlotManager.from_config(cfg, inventory, started_at=0.0)


def layout(m: SlotManager) -> list[tuple[str, str, int, int, int]]:
    return [(s.name, s.kind.value, s.type_id, s.resources.cpus, s.resources.memory_mb)
            for s in m]


def test_default_is_one_partitionable_slot_with_everything() -> None:
    assert layout(slots_for("")) == [("slot1", "Partitionable", 1, 4, 8192)]


def test_num_slots_makes_equal_static_slots() -> None:
    assert layout(slots_for("NUM_SLOTS = 2\n")) == [("slot1", "Static", 0, 2, 4096),
                                                    ("slot2", "Static", 0, 2, 4096)]


def test_counts_may_be_expressions() -> None:
    assert [s.name for s in slots_for("NUM_SLOTS = $(DETECTED_CPUS) / 2\n")] == ["slot1", "slot2"]


def test_slot_types_win_over_num_slots() -> None:
    text = ("NUM_SLOTS = 3\nSLOT_TYPE_1 = cpus=1, mem=1024\nNUM_SLOTS_TYPE_1 = 2\n"
            "SLOT_TYPE_2 = auto\nSLOT_TYPE_2_PARTITIONABLE = true\nNUM_SLOTS_TYPE_2 = 1\n")
    assert layout(slots_for(text)) == [("slot1", "Static", 1, 1, 1024),
                                       ("slot2", "Static", 1, 1, 1024),
                                       ("slot3", "Partitionable", 2, 2, 6144)]


def test_static_slots_feature() -> None:
    m = slots_for("use FEATURE : StaticSlots\n")
    assert layout(m) == [(f"slot{i}", "Static", 1, 1, 2048) for i in range(1, 5)]


def test_partitionable_slot_feature() -> None:
    assert layout(slots_for("use FEATURE : PartitionableSlot\n")) == \
        [("slot1", "Partitionable", 1, 4, 8192)]


def test_bad_count_names_the_knob() -> None:
    with pytest.raises(ConfigError, match="NUM_SLOTS_TYPE_1"):
        slots_for("NUM_SLOTS_TYPE_1 = lots\n")


def test_more_static_slots_than_cpus_is_impossible() -> None:
    with pytest.raises(LayoutError, match="Cpus"):
        slots_for("NUM_SLOTS = 6\n")


def test_manual_per_slot_startd_attrs() -> None:
    text = ('favorite_color = "blue"\nfavorite_season = "spring"\n'
            "STARTD_ATTRS = favorite_color, favorite_season\n"
            'SLOT2_favorite_color = "green"\nSLOT3_favorite_season = "summer"\n'
            'SLOT1_STARTD_ATTRS = favorite_movie\nfavorite_movie = "Vertigo"\n'
            "NUM_SLOTS = 3\n")
    ads = slots_for(text).ads(0.0)
    got = [(a.get("favorite_color"), a.get("favorite_season"), a.get("favorite_movie"))
           for a in ads]
    assert got == [("blue", "spring", "Vertigo"), ("green", "spring", None),
                   ("blue", "summer", None)]


def test_manual_suspendable_slot_policy_reads_other_slots_state() -> None:
    # The manual's cross-slot example: STARTD_SLOT_ATTRS = State, and an expression that
    # finds the partner slot's state with eval(strcat(...)).
    text = ("NUM_SLOTS = 4\nSTARTD_SLOT_ATTRS = $(STARTD_SLOT_ATTRS) State\n"
            "IsSuspendableSlot = SlotID > 2\n"
            'NonSuspendableSlotState = eval(strcat("slot",SlotID-2,"_State"))\n'
            "STARTD_ATTRS = $(STARTD_ATTRS) IsSuspendableSlot NonSuspendableSlotState\n")
    from condorpy.slots.ads import SlotStatus
    ads = slots_for(text).ads(0.0, {"slot1": SlotStatus("Claimed", "Busy")})
    assert ads[2].evaluate("NonSuspendableSlotState") == "Claimed"
    assert ads[3].evaluate("NonSuspendableSlotState") == "Unclaimed"


def test_start_and_rank_per_slot() -> None:
    text = "NUM_SLOTS = 2\nSTART = KeyboardIdle > 60\nSLOT2_START = False\nRANK = Owner == \"me\"\n"
    ads = slots_for(text).ads(0.0)
    assert str(ads[0].lookup("Start")) == "KeyboardIdle > 60"
    assert ads[1].evaluate("Start") is False
    assert ads[0].evaluate("Requirements") is True  # KeyboardIdle 1200: no slot connected


def test_keyboard_connected_slots_from_config() -> None:
    inv = MachineInventory(cpus=2, memory_mb=1024, disk_kb=1000, keyboard_idle=5,
                           console_idle=6, hostname="node1")
    m = slots_for("NUM_SLOTS = 2\nSLOTS_CONNECTED_TO_KEYBOARD = 1\n"
                  "DISCONNECTED_KEYBOARD_IDLE_BOOST = 300\n", inv)
    ads = m.ads(100.0)
    assert [(a["KeyboardIdle"], a["ConsoleIdle"]) for a in ads] == [(5, 400), (400, 400)]


def test_modify_request_and_consumption_policy_from_config() -> None:
    m = slots_for("MODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory, {1024})\n")
    d = m.carve(m.get("slot1"), ClassAd({"RequestCpus": 1, "RequestMemory": 100,
                                         "RequestDisk": 1}))
    assert isinstance(d, Slot) and d.resources.memory_mb == 1024
    text = ("SLOT_TYPE_1 = cpus=4\nSLOT_TYPE_1_PARTITIONABLE = True\nNUM_SLOTS_TYPE_1 = 1\n"
            "SLOT_TYPE_1_CONSUMPTION_POLICY = True\n"
            "SLOT_TYPE_1_CONSUMPTION_CPUS = TARGET.RequestCpus\n"
            "CONSUMPTION_MEMORY = quantize(target.RequestMemory, {512})\n")
    m = slots_for(text)
    d = m.carve(m.get("slot1"), ClassAd({"RequestCpus": 2, "RequestMemory": 100,
                                         "RequestDisk": 1}))
    assert isinstance(d, Slot) and (d.resources.cpus, d.resources.memory_mb) == (2, 512)
    assert d.kind is SlotKind.DYNAMIC


def test_cogs_from_machine_resources_in_config() -> None:
    inv = MachineInventory(cpus=8, memory_mb=8000, disk_kb=80_000, hostname="node1",
                           custom={"Cogs": CustomResource("Cogs", count=16),
                                   "actuator": CustomResource("actuator", count=8)})
    text = ("SLOT_TYPE_1 = cogs=50%,actuator=6,50%\nSLOT_TYPE_1_PARTITIONABLE = TRUE\n"
            "NUM_SLOTS_TYPE_1 = 1\n"
            "SLOT_TYPE_2 = cogs=25%,actuator=1,25%\nSLOT_TYPE_2_PARTITIONABLE = FALSE\n"
            "NUM_SLOTS_TYPE_2 = 2\n")
    m = slots_for(text, inv)
    ads = m.ads(0.0)
    assert [(a["Cogs"], a["actuator"], a["TotalCogs"], a["Cpus"]) for a in ads] == \
        [(8, 6, 16, 4), (4, 1, 16, 2), (4, 1, 16, 2)]
    d = m.carve(m.get("slot1"), ClassAd({"RequestCpus": 1, "RequestMemory": 1,
                                         "RequestDisk": 1, "RequestCogs": 2,
                                         "RequestActuator": 1}))
    assert isinstance(d, Slot)
    assert (d.resources.custom["Cogs"], d.resources.custom["actuator"]) == (2, 1)
