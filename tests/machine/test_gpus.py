import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from condorpy.machine import gpus
from condorpy.machine.classad_text import parse_ad_lines
from tests.machine.fakehost import roots, write


def _ad(argv: list[str], tmp: Path, **kw: Any) -> dict[str, Any]:
    return parse_ad_lines(gpus.discover(argv, roots(tmp, **kw)), "test")


def test_simulate_default_is_one_gt330(tmp_path: Path) -> None:
    ad = _ad(["-simulate"], tmp_path)
    assert ad == {"DetectedGPUs": "GPU-a0223334"}


def test_simulate_0_4_ids_match_htcondor(tmp_path: Path) -> None:
    ad = _ad(["-simulate:0,4", "-properties"], tmp_path)
    assert ad["DetectedGPUs"] == "GPU-a0223334, GPU-b1223334, GPU-c2223334, GPU-d3223334"
    # identical devices: the shared properties go to Common, only per-device ones remain
    # (HTCondor's simulation reports no driver version)
    assert ad["Common"] == {"Capability": 1.2, "DeviceName": "GeForce GT 330",
                            "ECCEnabled": False, "GlobalMemoryMb": 1024}
    assert ad["GPU_b1223334"] == {"id": "GPU-b1223334", "DevicePciBusId": "0000:41:00.0",
                                  "DeviceUuid": "b1223334-4445-5667-899a-abbccddeeff0"}


def test_two_types_extra_properties(tmp_path: Path) -> None:
    ad = _ad(["-sim:2,1,4,2", "-extra"], tmp_path)
    v100, a100 = ad["GPU_a0223334"], ad["GPU_b1223334"]
    assert (v100["DeviceName"], v100["Capability"], v100["GlobalMemoryMb"]) == ("Tesla V100-PCIE-16GB", 7.0, 24220)
    # HTCondor's simulated A100 has 40536 * 1024 * 1204 bytes: 47661 MB
    assert (a100["DeviceName"], a100["Capability"], a100["GlobalMemoryMb"]) == ("A100-SXM4-40GB", 8.0, 47661)
    assert (v100["ClockMhz"], v100["ComputeUnits"]) == (1380.0, 80)
    # both architectures have 64 cores per SM, so that value is common
    assert ad["Common"]["CoresPerCU"] == 64
    assert ad["Common"]["ECCEnabled"] is True
    assert "ClockMhz" not in ad["Common"]


def test_not_nested_uses_prefixed_attributes(tmp_path: Path) -> None:
    ad = _ad(["-simulate:3,2", "-properties", "-not-nested"], tmp_path)
    assert ad["CUDADeviceName"] == "TITAN RTX"
    assert ad["GPU_a0223334DeviceUuid"] == "a0223334-4445-5667-899a-abbccddeeff0"
    assert not any(isinstance(v, dict) for v in ad.values())


def test_id_styles(tmp_path: Path) -> None:
    assert _ad(["-simulate:0,2", "-by-index"], tmp_path)["DetectedGPUs"] == "CUDA0, CUDA1"
    assert _ad(["-simulate:0,1", "-uuid"], tmp_path)["DetectedGPUs"] == \
        "GPU-a0223334-4445-5667-899a-abbccddeeff0"
    assert _ad(["-simulate:0,2", "-by-index", "-prefix", "G"], tmp_path)["DetectedGPUs"] == "G0, G1"


def test_mig_devices_replace_their_parent(tmp_path: Path) -> None:
    ad = _ad(["-simulate:7,1", "-properties"], tmp_path)
    ids = ad["DetectedGPUs"].split(", ")
    assert ids == ["MIG-a0223300-4445-5667-899a-abbccddeeff0", "MIG-a0223301-4445-5667-899a-abbccddeeff0"]
    first = ad["MIG_a0223300_4445_5667_899a_abbccddeeff0"]
    assert first["GlobalMemoryMb"] == 20086
    assert ad["Common"]["Capability"] == 8.0
    old_driver = _ad(["-simulate:5"], tmp_path)["DetectedGPUs"]
    assert old_driver.startswith("MIG-GPU-a0223334-4445-5667-899a-abbccddeeff0/0/0")


def test_repeat_divide_and_tag(tmp_path: Path) -> None:
    ad = _ad(["-simulate:1,2", "-properties", "-divide", "2", "-packed"], tmp_path)
    assert ad["DetectedGPUs"] == "GPU-a0223334, GPU-a0223334, GPU-b1223334, GPU-b1223334"
    assert ad["GPU_a0223334"]["GlobalMemoryMb"] == 768
    assert ad["GPU_a0223334"]["DeviceMemoryMb"] == 1536
    assert "GlobalMemoryMb" not in ad["Common"]
    assert "DetectedTestGPUs" in _ad(["-simulate", "-tag", "TestGPUs"], tmp_path)


@pytest.mark.parametrize("argv", [["-simulate:9"], ["-simulate:x"], ["-bogus"], ["-device"]])
def test_bad_arguments(argv: list[str], tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        gpus.discover(argv, roots(tmp_path))


def test_nothing_detected_without_nvml_or_nvidia_smi(tmp_path: Path) -> None:
    assert gpus.discover(["-properties"], roots(tmp_path)) == "DetectedGPUs=0\n"


FAKE_SMI = """#!/bin/sh
case "$1" in
  --query-gpu=*compute_cap*)
    if [ -n "$OLD_DRIVER" ]; then echo 'Field "compute_cap" is not a valid field to query.' >&2; exit 2; fi
    echo 'GPU-6a96bd13-70bc-6494-6d62-1b77a9a7f29f, TITAN RTX, 00000000:AF:00.0, 24220, Disabled, 2100, 7.5'
    echo 'GPU-c4a646d7-aa14-1dd1-f1b0-57288cda864d, Tesla V100-PCIE-16GB, 00000000:3B:00.0, 16160, Enabled, 1380, 7.0'
    ;;
  --query-gpu=*)
    echo 'GPU-6a96bd13-70bc-6494-6d62-1b77a9a7f29f, TITAN RTX, 00000000:AF:00.0, 24220, Disabled, 2100'
    ;;
  *) echo '| NVIDIA-SMI 535.54.03    Driver Version: 535.54.03    CUDA Version: 12.2     |' ;;
esac
"""


def _smi(tmp: Path) -> None:
    p = write(tmp / "bin/nvidia-smi", FAKE_SMI)
    p.chmod(0o755)


def test_nvidia_smi_backend(tmp_path: Path) -> None:
    _smi(tmp_path)
    ad = _ad(["-properties", "-extra"], tmp_path)
    assert ad["DetectedGPUs"] == "GPU-6a96bd13, GPU-c4a646d7"
    titan = ad["GPU_6a96bd13"]
    assert titan["DeviceName"] == "TITAN RTX"
    assert titan["DevicePciBusId"] == "0000:AF:00.0"
    assert titan["DeviceUuid"] == "6a96bd13-70bc-6494-6d62-1b77a9a7f29f"
    assert (titan["Capability"], titan["ECCEnabled"], titan["GlobalMemoryMb"]) == (7.5, False, 24220)
    assert titan["ClockMhz"] == 2100.0
    assert ad["Common"] == {"CoresPerCU": 64, "DriverVersion": 12.2, "MaxSupportedVersion": 12020}


def test_nvidia_smi_without_compute_cap_field(tmp_path: Path) -> None:
    _smi(tmp_path)
    ad = _ad(["-properties"], tmp_path, env={"OLD_DRIVER": "1", "PATH": "/usr/bin:/bin"})
    assert ad["DetectedGPUs"] == "GPU-6a96bd13"
    assert "Capability" not in ad.get("Common", {})


class _FakeNvml(types.ModuleType):
    """pynvml's calls as a two-GPU machine with one device in MIG mode answers them."""

    NVML_CLOCK_SM = 1

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.shut = False

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: self.shut = True
    def nvmlDeviceGetCount(self) -> int: return 2
    def nvmlSystemGetCudaDriverVersion(self) -> int: return 12040
    def nvmlDeviceGetHandleByIndex(self, i: int) -> str: return f"gpu{i}"

    def nvmlDeviceGetUUID(self, h: str) -> bytes:
        return {"gpu0": b"GPU-11111111-2222-3333-4444-555555555555",
                "gpu1": b"GPU-99999999-2222-3333-4444-555555555555",
                "mig0": b"MIG-abcdef01-2222-3333-4444-555555555555"}[h]

    def nvmlDeviceGetName(self, h: str) -> str:
        if h.startswith("mig"):
            raise RuntimeError("not supported")
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, h: str) -> Any:
        return types.SimpleNamespace(total=(10 if h.startswith("mig") else 81559) * 1024 * 1024)

    def nvmlDeviceGetCudaComputeCapability(self, h: str) -> tuple[int, int]:
        if h.startswith("mig"):
            raise RuntimeError("not supported")
        return (9, 0)

    def nvmlDeviceGetMaxClockInfo(self, h: str, kind: int) -> int: return 1980
    def nvmlDeviceGetEccMode(self, h: str) -> tuple[int, int]: return (1, 1)
    def nvmlDeviceGetAttributes(self, h: str) -> Any:
        if h.startswith("mig"):
            return types.SimpleNamespace(multiprocessorCount=16)
        raise RuntimeError("not supported")

    def nvmlDeviceGetPciInfo(self, h: str) -> Any:
        return types.SimpleNamespace(domain=0, bus=0x18 if h == "gpu0" else 0x2A, device=0)

    def nvmlDeviceGetMigMode(self, h: str) -> tuple[int, int]: return (1, 1) if h == "gpu1" else (0, 0)
    def nvmlDeviceGetMaxMigDeviceCount(self, h: str) -> int: return 7
    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: str, j: int) -> str:
        if j:
            raise RuntimeError("no such instance")
        return "mig0"


def test_nvml_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    ad = _ad(["-properties", "-extra"], tmp_path, use_nvml=True,
             cuda_library=str(tmp_path / "no-libcuda.so.1"))
    assert ad["DetectedGPUs"] == "GPU-11111111, MIG-abcdef01-2222-3333-4444-555555555555"
    h100 = ad["GPU_11111111"]
    assert (h100["DeviceName"], h100["GlobalMemoryMb"], h100["DevicePciBusId"]) == \
        ("NVIDIA H100 80GB HBM3", 81559, "0000:18:00.0")
    mig = ad["MIG_abcdef01_2222_3333_4444_555555555555"]
    assert (mig["GlobalMemoryMb"], mig["ComputeUnits"], mig["DevicePciBusId"]) == (10, 16, "0000:2A:00.0")
    assert ad["Common"]["Capability"] == 9.0
    assert ad["Common"]["MaxSupportedVersion"] == 12040
    assert fake.shut


def test_device_whitelists(tmp_path: Path) -> None:
    assert _ad(["-simulate:0,3", "-device", "1"], tmp_path)["DetectedGPUs"] == "GPU-b1223334"
    assert _ad(["-simulate:0,3", "-device", "CUDA0,GPU-c2223334-4445"], tmp_path)["DetectedGPUs"] == \
        "GPU-a0223334, GPU-c2223334"
    # the daemon's CUDA_VISIBLE_DEVICES restricts discovery, by machine-level index
    assert _ad(["-simulate:0,3"], tmp_path, env={"CUDA_VISIBLE_DEVICES": "2"})["DetectedGPUs"] == \
        "GPU-c2223334"
    # a MIG parent whitelisted by index brings the instances whose ids carry its uuid
    # (drivers before 470: MIG-GPU-<uuid>/n/0); those with uuids of their own it does
    # not, as in condor_gpu_discovery 23.9 and 25.x
    assert _ad(["-simulate:0,1,5,1", "-device", "1"], tmp_path)["DetectedGPUs"].count("MIG-") == 2
    assert _ad(["-simulate:0,1,7,1", "-device", "1"], tmp_path)["DetectedGPUs"] == ""


def test_command_line_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from condorpy.machine.gpu_discovery import main
    assert main(["-simulate:4", "-properties"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('DetectedGPUs="GPU-a0223334"\n')
    assert 'DeviceName="A100-SXM4-40GB"' in out
    assert main(["-simulate:42"]) == 1
    assert "range of 0-8" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=5), st.booleans(), st.booleans())
def test_nested_and_flat_output_describe_the_same_devices(sim: list[int], extra: bool, mixed: bool) -> None:
    """Whatever the devices, -nested and -not-nested carry the same per-device facts."""
    spec = ",".join(f"{d},1" for d in sim)
    flags = ["-simulate:" + spec, "-properties"] + (["-extra"] if extra else []) + (["-mixed"] if mixed else [])
    root = roots(Path("/nonexistent"))
    nested = parse_ad_lines(gpus.discover(flags, root), "nested")
    flat = parse_ad_lines(gpus.discover(flags + ["-not-nested"], root), "flat")
    assert nested["DetectedGPUs"] == flat["DetectedGPUs"]
    ids = nested["DetectedGPUs"].split(", ")
    parents_in_mig_mode = sum(1 for d in sim if d >= 5)
    migs = sum({5: 2, 6: 7, 7: 2}.get(d, 0) for d in sim)
    assert len(ids) == len(sim) - parents_in_mig_mode + migs
    common = nested.get("Common", {})
    for gid in ids:
        attr = gid.replace("-", "_").replace("/", "_")
        props = {**common, **{k: v for k, v in nested.get(attr, {}).items() if k != "id"}}
        flat_props = {k[len("CUDA"):]: v for k, v in flat.items() if k.startswith("CUDA")}
        flat_props.update({k[len(attr):]: v for k, v in flat.items() if k.startswith(attr)})
        assert props == flat_props
        assert props["GlobalMemoryMb"] > 0
