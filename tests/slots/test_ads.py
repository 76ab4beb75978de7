"""Slot ads: the attributes the manual names, load and idle per slot, cross-slot attrs."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from condorpy.classad import ClassAd, match
from condorpy.slots.ads import Measurements, SlotConfigAttrs, SlotStatus
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.load import IdlePolicy
from condorpy.slots.model import Slot

from tests.slots.helpers import manager

INV = MachineInventory(cpus=4, memory_mb=4096, disk_kb=400_000, swap_kb=2048,
                       detected_cpus=8, detected_memory_mb=8192, hostname="node1.example.org",
                       facts={"Arch": "X86_64", "OpSys": "LINUX", "OpSysAndVer": "Debian12"},
                       custom={"Cogs": CustomResource("Cogs", count=16)},
                       total_load_avg=0.0, keyboard_idle=7, console_idle=9)

REQUIRED = ["Name", "SlotID", "SlotTypeID", "SlotType", "Cpus", "Memory", "Disk",
            "VirtualMemory", "TotalCpus", "TotalMemory", "TotalDisk", "TotalSlotCpus",
            "TotalSlotMemory", "TotalSlotDisk", "DetectedCpus", "DetectedMemory", "TotalCogs",
            "DetectedCogs", "TotalSlotCogs", "Cogs", "Arch", "OpSys", "OpSysAndVer", "LoadAvg",
            "CondorLoadAvg", "TotalLoadAvg", "TotalCondorLoadAvg", "KeyboardIdle",
            "ConsoleIdle", "ClockMin", "ClockDay", "State", "Activity", "EnteredCurrentState",
            "EnteredCurrentActivity", "Start", "Requirements", "Rank", "CurrentRank", "MyType",
            "TargetType", "Machine", "UidDomain", "FileSystemDomain"]


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def test_static_slot_ads_carry_every_named_attribute(utc: None) -> None:
    m = manager(INV, ("cpus=1, 25%", 2, False), ("auto", 1, False))
    # 2024-03-06 is a Wednesday; 14:30 UTC
    now = 1709735400.0
    ads = m.ads(now)
    assert [a["Name"] for a in ads] == ["slot1@node1.example.org", "slot2@node1.example.org",
                                        "slot3@node1.example.org"]
    first = ads[0]
    for attr in REQUIRED:
        assert attr in first, attr
    assert (first["SlotType"], first["SlotTypeID"], first["Cpus"], first["Memory"]) == \
        ("Static", 1, 1, 1024)
    assert (first["TotalCpus"], first["DetectedCpus"], first["DetectedMemory"]) == (4, 8, 8192)
    assert (first["Cogs"], first["TotalCogs"], first["TotalSlotCogs"]) == (4, 16, 4)
    assert (ads[2]["Cpus"], ads[2]["Memory"], ads[2]["Cogs"], ads[2]["SlotTypeID"]) == \
        (2, 2048, 8, 2)
    assert (first["ClockMin"], first["ClockDay"]) == (14 * 60 + 30, 3)
    assert (first["MyType"], first["TargetType"], first["Machine"]) == \
        ("Machine", "Job", "node1.example.org")
    assert "PartitionableSlot" not in first and "DynamicSlot" not in first
    assert first["EnteredCurrentState"] == int(now)
    assert first.evaluate("Requirements") is True


def test_pslot_requirements_hold_only_for_jobs_that_fit() -> None:
    m = manager(INV, ("100%", 1, True))
    ad = m.ads(0.0)[0]
    assert ad["PartitionableSlot"] is True and ad["SlotType"] == "Partitionable"
    fits = ClassAd({"RequestCpus": 2, "RequestMemory": 1024, "RequestDisk": 1000,
                    "Requirements": True})
    too_big = ClassAd({"RequestCpus": 5, "RequestMemory": 1, "RequestDisk": 1,
                       "Requirements": True})
    too_many_cogs = ClassAd({"RequestCpus": 1, "RequestMemory": 1, "RequestDisk": 1,
                             "RequestCogs": 17, "Requirements": True})
    assert match(ad, fits) and not match(ad, too_big) and not match(ad, too_many_cogs)


def test_load_is_distributed_in_the_ads() -> None:
    m = manager(INV, ("", 2, False))
    statuses = {"slot1": SlotStatus("Owner", "Idle"),
                "slot2": SlotStatus("Claimed", "Busy", condor_load=0.996)}
    ads = m.ads(0.0, statuses, Measurements(total_load_avg=1.25))
    assert [round(a["LoadAvg"], 3) for a in ads] == [0.254, 0.996]
    assert [a["CondorLoadAvg"] for a in ads] == [0.0, 0.996]
    assert all(a["TotalLoadAvg"] == 1.25 and a["TotalCondorLoadAvg"] == 0.996 for a in ads)
    assert (ads[1]["State"], ads[1]["Activity"]) == ("Claimed", "Busy")


def test_keyboard_connected_slots() -> None:
    m = manager(INV, ("100%", 1, True))
    m.settings = replace(m.settings, idle=IdlePolicy(1, 1, 1200), started_at=100.0)
    p = m.get("slot1")
    d = m.carve(p, ClassAd({"RequestCpus": 1, "RequestMemory": 1, "RequestDisk": 1}))
    assert isinstance(d, Slot)
    ads = m.ads(160.0, measurements=Measurements(0.0, keyboard_idle=3, console_idle=4))
    assert [(a["KeyboardIdle"], a["ConsoleIdle"]) for a in ads] == [(3, 4), (3, 4)]
    # swap is not divided among d-slots: each sees its parent's share
    assert [a["VirtualMemory"] for a in ads] == [2048, 2048]
    m.settings = replace(m.settings, idle=IdlePolicy(0, 0, 1200))
    ads = m.ads(160.0, measurements=Measurements(0.0, keyboard_idle=3, console_idle=4))
    assert [(a["KeyboardIdle"], a["ConsoleIdle"]) for a in ads] == [(1260, 1260)] * 2


def test_config_attrs_and_cross_slot_attrs() -> None:
    m = manager(INV, ("", 2, False))
    m.settings = replace(m.settings, slot_attrs=("State", "Color"), per_slot={
        1: SlotConfigAttrs(start="KeyboardIdle > 30 * 60", rank="TARGET.Owner == \"me\"",
                           custom=(("Color", '"blue"'), ("HasBigDisk", "TotalDisk > 100"))),
        2: SlotConfigAttrs(custom=(("Color", '"green"'),))})
    ads = m.ads(0.0, {"slot2": SlotStatus("Claimed", "Busy")})
    assert ads[0]["Color"] == "blue" and ads[1]["Color"] == "green"
    assert ads[0].evaluate("HasBigDisk") is True and "HasBigDisk" not in ads[1]
    assert str(ads[0].lookup("Start")) == "KeyboardIdle > 30 * 60"
    assert ads[0].evaluate("Start") is False  # KeyboardIdle is 1200: no slot is connected
    for ad in ads:
        assert (ad["slot1_State"], ad["slot2_State"]) == ("Unclaimed", "Claimed")
        assert (ad["slot1_Color"], ad["slot2_Color"]) == ("blue", "green")


def test_ad_for_matches_ads() -> None:
    m = manager(INV, ("", 2, False))
    one = m.ad_for(m.get("slot2"), 50.0, "Claimed", "Busy", {"RemoteUser": "u@x"})
    assert (one["Name"], one["State"], one["RemoteUser"]) == ("slot2@node1.example.org",
                                                               "Claimed", "u@x")
