"""Carving d-slots out of p-slots, and giving them back."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import LayoutError, SlotError
from condorpy.slots.carving import CarvePolicy
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.model import Refusal, Slot, SlotKind

from tests.slots.helpers import gpu_machine, manager

TEN_CPU = MachineInventory(cpus=10, memory_mb=10240, disk_kb=5_000_000, hostname="node1")


def job(**attrs: object) -> ClassAd:
    return ClassAd(attrs)


def test_manual_ten_cpu_pslot_left_with_seven_and_9216() -> None:
    m = manager(TEN_CPU, ("100%", 1, True))
    pslot = m.get("slot1")
    d = m.carve(pslot, job(RequestCpus=3, RequestMemory=1024, RequestDisk=10240))
    assert isinstance(d, Slot)
    assert d.name == "slot1_1" and d.kind is SlotKind.DYNAMIC and d.type_id == -1
    assert (d.resources.cpus, d.resources.memory_mb, d.resources.disk_kb) == (3, 1024, 10240)
    left = m.available(pslot)
    assert (left.cpus, left.memory_mb, left.disk_kb) == (7, 9216, 5_000_000 - 10240)
    ad = m.ad_for(pslot, now=1000.0)
    assert (ad["Cpus"], ad["Memory"], ad["TotalSlotCpus"], ad["NumDynamicSlots"]) == (7, 9216, 10, 1)
    dad = m.ad_for(m.get("slot1_1@node1"), now=1000.0, state="Claimed", activity="Busy")
    assert dad["Name"] == "slot1_1@node1" and dad["DynamicSlot"] is True
    assert (dad["State"], dad["Activity"], dad["Cpus"], dad["SlotID"]) == ("Claimed", "Busy", 3, 1)


@pytest.mark.parametrize("request_, expected", [
    ({"RequestCpus": 1, "RequestMemory": 1, "RequestDisk": 1}, (1, 128, 1024)),
    ({"RequestCpus": 2, "RequestMemory": 129, "RequestDisk": 1025}, (2, 256, 2048)),
    ({"RequestCpus": 1, "RequestMemory": 1000, "RequestDisk": 0}, (1, 1024, 1024)),
    ({}, (1, 128, 1048576)),  # condor_submit's defaults when a job carries no requests
    ({"TransferInputSizeMB": 2047}, (1, 128, 2560 * 1024)),
])
def test_default_request_quantization(request_: dict[str, int], expected: tuple[int, int, int]) -> None:
    m = manager(TEN_CPU, ("100%", 1, True))
    d = m.carve(m.get("slot1"), ClassAd(request_))
    assert isinstance(d, Slot), d
    assert (d.resources.cpus, d.resources.memory_mb, d.resources.disk_kb) == expected


def test_never_overcommits_and_refuses_with_reason() -> None:
    m = manager(TEN_CPU, ("100%", 1, True))
    p = m.get("slot1")
    made = [m.carve(p, job(RequestCpus=3, RequestMemory=1024, RequestDisk=1)) for _ in range(4)]
    assert [isinstance(x, Slot) for x in made] == [True, True, True, False]
    refusal = made[3]
    assert isinstance(refusal, Refusal)
    assert refusal.reason == "insufficient Cpus: the job needs 3 after rounding, slot1 has 1 left"
    big = m.carve(p, job(RequestCpus=1, RequestMemory=9000, RequestDisk=1))
    assert isinstance(big, Refusal) and "Memory" in big.reason and "7168 MiB left" in big.reason
    assert m.available(p).cpus == 1


def test_release_gives_everything_back_and_ids_are_reused() -> None:
    m = manager(gpu_machine(), ("100%", 1, True))
    p = m.get("slot1")
    before = m.available(p)
    a = m.carve(p, job(RequestCpus=2, RequestMemory=100, RequestDisk=1, RequestGPUs=2))
    b = m.carve(p, job(RequestCpus=1, RequestMemory=100, RequestDisk=1, RequestGPUs=1))
    assert isinstance(a, Slot) and isinstance(b, Slot)
    assert a.resources.devices["GPUs"] == ("GPU-6a96bd13", "GPU-11111111")
    assert b.resources.devices["GPUs"] == ("GPU-22222222",)
    assert m.available(p).devices["GPUs"] == ("GPU-33333333",)
    m.release(a)
    m.release(b)
    assert m.available(p) == before
    c = m.carve(p, job(RequestCpus=1, RequestMemory=1, RequestDisk=1))
    assert isinstance(c, Slot) and c.name == "slot1_1"
    with pytest.raises(SlotError):
        m.release(a)


def test_require_gpus_chooses_devices_by_property() -> None:
    m = manager(gpu_machine(), ("100%", 1, True))
    p = m.get("slot1")
    j = job(RequestCpus=1, RequestMemory=1, RequestDisk=1, RequestGPUs=2)
    j.set_expr("RequireGPUs", "Capability >= 8.0")
    d = m.carve(p, j)
    assert isinstance(d, Slot)
    assert d.resources.devices["GPUs"] == ("GPU-11111111", "GPU-33333333")
    ad = m.ad_for(d, now=0.0)
    assert ad["AssignedGPUs"] == "GPU-11111111,GPU-33333333" and ad["GPUs"] == 2
    assert ad.evaluate("GPUs_GPU_11111111").evaluate("DeviceName") == "Fake A100"
    assert [g.evaluate("Id") for g in ad.evaluate("AvailableGPUs")] == \
        ["GPU-11111111", "GPU-33333333"]
    again = m.carve(p, j)
    assert isinstance(again, Refusal)
    assert again.reason == ("insufficient GPUs matching RequireGPUs: the job needs 2, "
                            "slot1 has 0 free")


def test_custom_counted_resources_are_carved() -> None:
    inv = MachineInventory(cpus=4, memory_mb=4096, disk_kb=100_000,
                           custom={"Cogs": CustomResource("Cogs", count=16)})
    m = manager(inv, ("100%", 1, True))
    p = m.get("slot1")
    d = m.carve(p, job(RequestCpus=1, RequestMemory=1, RequestDisk=1, RequestCogs=5))
    assert isinstance(d, Slot) and d.resources.custom["Cogs"] == 5
    assert m.available(p).custom["Cogs"] == 11
    assert isinstance(m.carve(p, job(RequestCogs=12)), Refusal)


def test_consumption_policy_replaces_modify_exprs() -> None:
    policy = CarvePolicy(consumption=True, consumption_exprs={
        "Cpus": "target.RequestCpus", "Memory": "quantize(target.RequestMemory, {512})",
        "Disk": "quantize(target.RequestDisk, {1024})"})
    m = manager(TEN_CPU, ("cpus=8", 1, True), policy=policy)
    d = m.carve(m.get("slot1"), job(RequestCpus=3, RequestMemory=100, RequestDisk=1))
    assert isinstance(d, Slot) and (d.resources.cpus, d.resources.memory_mb) == (3, 512)


def test_carving_a_static_slot_is_refused() -> None:
    m = manager(TEN_CPU, ("", 2, False))
    assert isinstance(m.carve(m.get("slot2"), job()), Refusal)
    with pytest.raises(SlotError):
        m.get("slot3")


def test_two_gpu_types_layout_from_the_manual() -> None:
    m = manager(gpu_machine(),
                ("\n   GPUs = 2 : Capability >= 8.0\n   90%\n", 1, True),
                ('\n   GPUs = 1 : "GPU-6a96bd13"\n   CPUs = 1\n   Memory = 10\n', 1, False),
                ("auto", 2, False))
    slots = {s.name: s for s in m}
    assert list(slots) == ["slot1", "slot2", "slot3", "slot4"]
    assert slots["slot1"].resources.devices["GPUs"] == ("GPU-11111111", "GPU-33333333")
    assert slots["slot2"].resources.devices["GPUs"] == ("GPU-6a96bd13",)
    # the one GPU left goes to the first auto slot rather than to nobody
    assert slots["slot3"].resources.devices["GPUs"] == ("GPU-22222222",)
    assert slots["slot4"].resources.devices["GPUs"] == ()
    assert [slots[n].resources.cpus for n in slots] == [21, 1, 1, 1]
    assert slots["slot2"].resources.memory_mb == 10
    ad = m.ad_for(slots["slot2"], now=0.0)
    assert (ad["AssignedGPUs"], ad["TotalGPUs"], ad["TotalSlotGPUs"]) == ("GPU-6a96bd13", 4, 1)
    assert ad["CUDADriverVersion"] == 12.2


def test_gpu_constraint_that_cannot_be_met() -> None:
    with pytest.raises(LayoutError) as err:
        manager(gpu_machine(), ("\n GPUs = 3 : Capability >= 8.0\n 50%\n", 1, True))
    assert "GPUs" in str(err.value) and "asks for 3" in str(err.value) and "only 2" in str(err.value)


def test_request_for_a_resource_the_slot_lacks_is_refused() -> None:
    m = manager(TEN_CPU, ("100%", 1, True))
    refusal = m.carve(m.get("slot1"), job(RequestCpus=1, RequestGPUs=1, RequestedCatalogs=2))
    assert refusal == Refusal("the job requests 1 GPUs, which slot1 does not have")
    assert isinstance(m.carve(m.get("slot1"), job(RequestCpus=1, RequestGPUs=0)), Slot)
