"""The manual's two-GPU-types layout, end to end: simulated GPUs from the real
discovery code (GPU_DISCOVERY_EXTRA = -simulate), the real config reader, and
`condorpy status --offline` as an administrator runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# -simulate:2,1,4,2 is one Tesla V100 (Capability 7.0, GPU-a0223334) and two
# A100s (Capability 8.0, GPU-b1223334 and GPU-c2223334).
CONFIG = """\
use FEATURE : GPUs
GPU_DISCOVERY_EXTRA = -extra -simulate:2,1,4,2
NUM_CPUS = 24
MEMORY = 96000
SLOT_TYPE_1 @=slot
   GPUs = 2 : Capability >= 8.0
   90%
@slot
SLOT_TYPE_1_PARTITIONABLE = TRUE
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_2 @=slot
   GPUs = 1 : "GPU-a0223334"
   CPUs = 1
   Memory = 10
@slot
SLOT_TYPE_2_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_2 = 1
SLOT_TYPE_3 = auto
SLOT_TYPE_3_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_3 = 2
"""


def test_two_gpu_types_layout_with_simulated_gpus(tmp_path: Path) -> None:
    cfg = tmp_path / "condor_config"
    cfg.write_text(CONFIG)
    r = subprocess.run(
        [sys.executable, "-m", "condorpy", "status", "--offline", "-config", str(cfg),
         "-af", "Name", "SlotTypeID", "SlotType", "Cpus", "Memory", "GPUs",
         "AssignedGPUs"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines()]
    by_slot = {row[0].split("@")[0]: row[1:] for row in rows}
    assert list(by_slot) == ["slot1", "slot2", "slot3", "slot4"]
    # the partitionable slot holds exactly the two Capability >= 8.0 devices
    assert by_slot["slot1"][1] == "Partitionable"
    assert by_slot["slot1"][4:] == ["2", "GPU-b1223334,GPU-c2223334"]
    # the small static slot got the V100 by id, 1 cpu and 10 MB
    assert by_slot["slot2"] == ["2", "Static", "1", "10", "1", "GPU-a0223334"]
    # nothing is left for the auto slots, and nothing was handed out twice
    for name in ("slot3", "slot4"):
        assert by_slot[name][4] == "0"
    cpus = sum(int(row[2]) for row in by_slot.values())
    assert cpus == 24


# The GPU attributes of HTCondor 23.9.6's own startd for the same devices, one
# partitionable slot (`condor_status -l` in the reference pool, use FEATURE : GPUs,
# GPU_DISCOVERY_EXTRA = -extra -simulate:2,1,4,2). Its ChildGPUs = {} (the devices of
# the p-slot's d-slots) condorpy does not publish.
HTCONDOR_23_9_PSLOT = """\
AssignedGPUs = "GPU-a0223334,GPU-b1223334,GPU-c2223334"
AvailableGPUs = { GPUs_GPU_a0223334,GPUs_GPU_b1223334,GPUs_GPU_c2223334 }
DetectedGPUs = "GPU-a0223334, GPU-b1223334, GPU-c2223334"
GPUs = 3
GPUs_CoresPerCU = 64
GPUs_ECCEnabled = true
GPUs_GPU_a0223334 = [ Id = "GPU-a0223334"; ClockMhz = 1380.0; Capability = 7.0; CoresPerCU = 64; DeviceName = "Tesla V100-PCIE-16GB"; DeviceUuid = "a0223334-4445-5667-899a-abbccddeeff0"; ECCEnabled = true; ComputeUnits = 80; DevicePciBusId = "0000:40:00.0"; GlobalMemoryMb = 24220 ]
GPUs_GPU_b1223334 = [ Id = "GPU-b1223334"; ClockMhz = 1410.0; Capability = 8.0; CoresPerCU = 64; DeviceName = "A100-SXM4-40GB"; DeviceUuid = "b1223334-4445-5667-899a-abbccddeeff0"; ECCEnabled = true; ComputeUnits = 42; DevicePciBusId = "0000:41:00.0"; GlobalMemoryMb = 47661 ]
GPUs_GPU_c2223334 = [ Id = "GPU-c2223334"; ClockMhz = 1410.0; Capability = 8.0; CoresPerCU = 64; DeviceName = "A100-SXM4-40GB"; DeviceUuid = "c2223334-4445-5667-899a-abbccddeeff0"; ECCEnabled = true; ComputeUnits = 42; DevicePciBusId = "0000:42:00.0"; GlobalMemoryMb = 47661 ]
TotalGPUs = 3
TotalSlotGPUs = 3
"""


def _plain(value: object) -> object:
    from condorpy.classad import ClassAd
    if isinstance(value, ClassAd):
        return {k.lower(): _plain(value.evaluate(k)) for k in value.keys()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_gpu_attributes_are_named_and_valued_as_htcondor_s_startd_s(tmp_path: Path) -> None:
    from condorpy.classad import ClassAd
    cfg = tmp_path / "condor_config"
    cfg.write_text("use FEATURE : GPUs\nGPU_DISCOVERY_EXTRA = -extra -simulate:2,1,4,2\n"
                   "NUM_CPUS = 4\nMEMORY = 4096\nuse FEATURE : PartitionableSlot\n")
    r = subprocess.run([sys.executable, "-m", "condorpy", "status", "--offline", "-config",
                        str(cfg), "-l"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ours = ClassAd.parse_old(r.stdout)
    theirs = ClassAd.parse_old(HTCONDOR_23_9_PSLOT)
    gpu_names = {k for k in ours.keys() if "gpu" in k.lower()}
    assert gpu_names - {"WithinResourceLimits"} == set(theirs.keys())
    for name in theirs.keys():
        assert _plain(ours.evaluate(name)) == _plain(theirs.evaluate(name)), name
