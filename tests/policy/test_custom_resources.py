"""d-slots with custom resources (GPUs, MACHINE_RESOURCE_*) and consumption policies,
carved and released through the slot layer, run as `policy simulate` runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from condorpy.classad import parse_expr
from tests.policy.sim import find, simulate, snapshots

# Two V100s (table entry 2) of HTCondor's simulated devices, on the fixed simulated
# host widened to 4 cpus so that cpus are never what runs out.
BASE = ("RUNBENCHMARKS = False\nIS_OWNER = False\nSLOT_TYPE_1_PARTITIONABLE = True\n"
        "NUM_CPUS = 4\nMEMORY = 4096\nDISK = 10000000\n")
TWO_GPUS = BASE + "use FEATURE : GPUs\nGPU_DISCOVERY_EXTRA = -simulate:2,2\n"
# A V100 (Capability 7.0) then an A100 (Capability 8.0).
MIXED_GPUS = BASE + "use FEATURE : GPUs\nGPU_DISCOVERY_EXTRA = -simulate:2,1,4,1\n"
GPU_JOB: dict[str, Any] = {"JobUniverse": 5, "Owner": "alice", "RequestCpus": 1,
                           "RequestMemory": 128, "RequestDisk": 1024, "RequestGPUs": 1}
ATTRS = ["GPUs", "TotalSlotGPUs", "AssignedGPUs", "TotalGPUs", "Cpus"]


def _claim(t: float, cid: str, **job: Any) -> dict[str, Any]:
    return {"t": t, "event": "request_claim", "id": cid, "job": {**GPU_JOB, **job}}


def _snap(t: float) -> dict[str, Any]:
    return {"t": t, "event": "snapshot", "attrs": ATTRS}


def _device_ids(recs: list[dict[str, Any]]) -> list[str]:
    first = snapshots(recs, "slot1")[0]
    return str(first["AssignedGPUs"]).split(",")


def test_gpu_job_gets_a_gpu_dslot_with_assigned_gpus(tmp_path: Path) -> None:
    recs = simulate(tmp_path, TWO_GPUS, [_snap(0), _claim(1, "g1"), _snap(2)])
    devices = _device_ids(recs)
    assert len(devices) == 2 and all(d.startswith("GPU-") for d in devices)
    d = snapshots(recs, "slot1_1")[0]
    assert d["GPUs"] == 1 and d["TotalSlotGPUs"] == 1 and d["TotalGPUs"] == 2
    assert d["AssignedGPUs"] == devices[0]
    created = find(recs, action="create_slot")[0]
    assert created["GPUs"] == 1 and created["AssignedGPUs"] == devices[0]
    p = snapshots(recs, "slot1")[1]
    assert p["GPUs"] == 1 and p["AssignedGPUs"] == devices[1] and p["TotalSlotGPUs"] == 2


def test_two_gpu_jobs_get_different_devices_and_a_third_is_refused(tmp_path: Path) -> None:
    recs = simulate(tmp_path, TWO_GPUS, [_snap(0), _claim(1, "g1"), _claim(2, "g2"),
                                         _claim(3, "g3"), _snap(4)])
    devices = _device_ids(recs)
    got = [snapshots(recs, s)[0]["AssignedGPUs"] for s in ("slot1_1", "slot1_2")]
    assert sorted(got) == sorted(devices)
    refused = find(recs, action="claim_refused", claim="g3")
    assert refused and refused[0]["reason"] == \
        "insufficient GPUs: the job needs 1, slot1 has 0 free"
    assert snapshots(recs, "slot1")[1]["GPUs"] == 0
    assert not snapshots(recs, "slot1_3")


def test_job_asking_for_more_gpus_than_free_is_refused(tmp_path: Path) -> None:
    recs = simulate(tmp_path, TWO_GPUS, [_claim(1, "g1"), _claim(2, "big", RequestGPUs=2),
                                         _snap(3)])
    assert find(recs, action="claim_refused", claim="big")[0]["reason"] == \
        "insufficient GPUs: the job needs 2, slot1 has 1 free"
    assert snapshots(recs, "slot1")[0]["GPUs"] == 1


def test_release_returns_the_device_to_the_pslot(tmp_path: Path) -> None:
    recs = simulate(tmp_path, TWO_GPUS, [
        _snap(0), _claim(1, "g1"), _claim(1, "g2"), _snap(2),
        {"t": 3, "event": "release", "id": "g1"}, _snap(5),
        {"t": 5, "event": "snapshot", "slot": "slot1"},
        _claim(6, "g3"), _snap(7)])
    devices = _device_ids(recs)
    first = snapshots(recs, "slot1_1")[0]["AssignedGPUs"]
    assert find(recs, slot="slot1_1", action="delete_slot")
    after = snapshots(recs, "slot1")[2]
    assert after["GPUs"] == 1 and after["AssignedGPUs"] == first
    # Only the devices the p-slot holds have property ads in its ad (named as
    # HTCondor's startd names them: GPUs_GPU_a0223334).
    full = snapshots(recs, "slot1")[3]
    assert "GPUs_" + first.replace("-", "_") in full
    assert not any("GPUs_" + d.replace("-", "_") in full for d in devices if d != first)
    # The device comes back and is handed out again (to the reused d-slot number).
    assert snapshots(recs, "slot1_1")[1]["AssignedGPUs"] == first
    assert snapshots(recs, "slot1")[4]["GPUs"] == 0
    assert first in devices


def test_require_gpus_picks_the_matching_device(tmp_path: Path) -> None:
    recs = simulate(tmp_path, MIXED_GPUS, [
        {"t": 0, "event": "snapshot"},
        _claim(1, "new", RequireGPUs="/Expr(Capability >= 8.0)/"),
        _claim(2, "newer", RequireGPUs="/Expr(Capability >= 8.0)/"),
        {"t": 3, "event": "snapshot", "attrs": ["AssignedGPUs", "GPUs"]}])
    # The p-slot's first ad carries one property ad per device.
    full = snapshots(recs, "slot1")[0]
    capability = {}
    for device in str(full["AssignedGPUs"]).split(","):
        props = parse_expr(full["GPUs_" + device.replace("-", "_")]).evaluate()
        capability[device] = props["Capability"]
    assert sorted(capability.values()) == [7.0, 8.0]
    a100 = next(d for d, cap in capability.items() if cap == 8.0)
    assert snapshots(recs, "slot1_1")[0]["AssignedGPUs"] == a100
    assert find(recs, action="claim_refused", claim="newer")[0]["reason"] == \
        "insufficient GPUs matching RequireGPUs: the job needs 1, slot1 has 0 free"
    left = snapshots(recs, "slot1")[1]
    assert left["GPUs"] == 1 and left["AssignedGPUs"] != a100


def test_machine_resource_list_is_carved_by_id(tmp_path: Path) -> None:
    cfg = BASE + "MACHINE_RESOURCE_GPUs = CUDA0, CUDA1, CUDA2\n"
    recs = simulate(tmp_path, cfg, [_claim(1, "g1", RequestGPUs=2), _snap(2)])
    assert snapshots(recs, "slot1_1")[0]["AssignedGPUs"] == "CUDA0,CUDA1"
    p = snapshots(recs, "slot1")[0]
    assert p["AssignedGPUs"] == "CUDA2" and p["GPUs"] == 1 and p["TotalGPUs"] == 3


def test_consumption_policy_charges_as_configured(tmp_path: Path) -> None:
    cfg = (BASE + "MACHINE_RESOURCE_Cogs = 8\nCONSUMPTION_POLICY = True\n"
           "SLOT_TYPE_1_CONSUMPTION_CPUS = 2\n"
           "SLOT_TYPE_1_CONSUMPTION_MEMORY = 1000\n"
           "SLOT_TYPE_1_CONSUMPTION_COGS = 3 * TARGET.RequestCogs\n")
    job = {"JobUniverse": 5, "Owner": "alice", "RequestCpus": 1, "RequestMemory": 10,
           "RequestDisk": 1024, "RequestCogs": 1}
    recs = simulate(tmp_path, cfg, [
        {"t": 1, "event": "request_claim", "id": "c1", "job": job},
        {"t": 2, "event": "request_claim", "id": "c2", "job": job},
        {"t": 3, "event": "request_claim", "id": "c3", "job": job},
        {"t": 4, "event": "snapshot", "attrs": ["Cpus", "Memory", "Cogs", "TotalSlotCogs"]}])
    d = snapshots(recs, "slot1_1")[0]
    assert (d["Cpus"], d["Memory"], d["Cogs"]) == (2, 1000, 3)
    p = snapshots(recs, "slot1")[0]
    # Two claims took 2 cpus, 1000 MB and 3 cogs each; the third finds no cpu left.
    assert (p["Cpus"], p["Memory"], p["Cogs"], p["TotalSlotCogs"]) == (0, 2096, 2, 8)
    assert find(recs, action="claim_refused", claim="c3")[0]["reason"].startswith(
        "insufficient Cpus")


def test_simulated_host_stays_fixed_without_custom_resources(tmp_path: Path) -> None:
    recs = simulate(tmp_path, "RUNBENCHMARKS = False\nSLOT_TYPE_1_PARTITIONABLE = True\n",
                    [{"t": 0, "event": "snapshot", "attrs": ["Cpus", "Memory", "GPUs"]}])
    assert snapshots(recs, "slot1")[0] == {"Cpus": 1, "Memory": 1024, "GPUs": None}
