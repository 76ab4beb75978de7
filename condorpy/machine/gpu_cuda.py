"""GPU properties from the CUDA driver (``libcuda.so.1``) and NVML (``libnvidia-ml.so.1``),
read through ctypes in a child process, as ``condor_gpu_discovery`` reads them.

HTCondor takes a device's basic properties from CUDA: the memory CUDA can allocate
(``cuDeviceTotalMem``, less than NVML's total by what the driver reserves), the
multiprocessor count (which NVML gives only for MIG instances), the clock, ECC and the
driver's CUDA version; and the ``-dynamic`` ones (fan, power, temperature, volatile ECC
error counts) from NVML. Reading them the same way keeps ``GlobalMemoryMb`` and
``ComputeUnits`` equal to HTCondor's on the same machine.

CUDA is initialised in a child (``python -m condorpy.machine.gpu_cuda``), never in the
daemon: a CUDA context does not survive fork, the daemon forks its starters, and the
driver's threads and mappings would stay in the daemon for its whole life. The child
prints one JSON object per device; no libcuda, no device, or a driver that refuses to
start prints nothing (no GPU is not an error).
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from condorpy.machine.gpus import GpuDevice
from condorpy.machine.roots import CUDA_LIBRARY, NVML_LIBRARY


# CUdevice_attribute values (cuda.h)
_CLOCK_RATE = 13
_MULTIPROCESSOR_COUNT = 16
_ECC_ENABLED = 32
_CC_MAJOR = 75
_CC_MINOR = 76
# NVML enums (nvml.h)
_NVML_TEMPERATURE_GPU = 0
_NVML_SINGLE_BIT_ECC = 0
_NVML_DOUBLE_BIT_ECC = 1
_NVML_VOLATILE_ECC = 0


def _uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _cuda_one(cu: Any, ordinal: int) -> dict[str, Any] | None:
    dev = ctypes.c_int()
    if cu.cuDeviceGet(ctypes.byref(dev), ordinal) != 0:
        return None
    out: dict[str, Any] = {}
    name = ctypes.create_string_buffer(1024)
    if cu.cuDeviceGetName(name, 1023, dev) == 0:
        out["name"] = name.value.decode(errors="replace")
    raw = ctypes.create_string_buffer(16)
    get_uuid = getattr(cu, "cuDeviceGetUuid_v2", None) or getattr(cu, "cuDeviceGetUuid", None)
    if get_uuid is not None and get_uuid(raw, dev) == 0:
        out["uuid"] = _uuid_text(raw.raw)
    bus = ctypes.create_string_buffer(64)
    if cu.cuDeviceGetPCIBusId(bus, 63, dev) == 0:
        out["pci_id"] = bus.value.decode(errors="replace")
    mem = ctypes.c_size_t()
    if cu.cuDeviceTotalMem_v2(ctypes.byref(mem), dev) == 0:
        out["memory_bytes"] = int(mem.value)

    def attr(which: int) -> int | None:
        value = ctypes.c_int()
        return int(value.value) if cu.cuDeviceGetAttribute(ctypes.byref(value), which,
                                                          dev) == 0 else None

    major, minor = attr(_CC_MAJOR), attr(_CC_MINOR)
    if major is not None and minor is not None:
        out["capability"] = [major, minor]
    for key, which in (("clock_khz", _CLOCK_RATE), ("compute_units", _MULTIPROCESSOR_COUNT),
                       ("ecc", _ECC_ENABLED)):
        value = attr(which)
        if value is not None:
            out[key] = bool(value) if key == "ecc" else value
    return out


def _nvml_dynamic(nvml: Any, uuid: str) -> list[int | None]:
    """FanSpeedPct, PowerUsage_mw, DieTempC, EccErrorsSingleBit, EccErrorsDoubleBit;
    None where the device cannot tell (an H100 has no fan), as HTCondor leaves them out."""
    handle = ctypes.c_void_p()
    if nvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}".encode(), ctypes.byref(handle)) != 0:
        return [None] * 5
    u = ctypes.c_uint()
    got: list[int | None] = []
    for call, args in (("nvmlDeviceGetFanSpeed", ()), ("nvmlDeviceGetPowerUsage", ()),
                       ("nvmlDeviceGetTemperature", (_NVML_TEMPERATURE_GPU,))):
        fn = getattr(nvml, call, None)
        got.append(int(u.value) if fn is not None and fn(handle, *args, ctypes.byref(u)) == 0
                   else None)
    count = ctypes.c_ulonglong()
    for kind in (_NVML_SINGLE_BIT_ECC, _NVML_DOUBLE_BIT_ECC):
        ok = nvml.nvmlDeviceGetTotalEccErrors(handle, kind, _NVML_VOLATILE_ECC,
                                              ctypes.byref(count)) == 0
        got.append(int(count.value) if ok else None)
    return got


def query(cuda_library: str, nvml_library: str, dynamic: bool) -> list[dict[str, Any]]:
    """Every device CUDA enumerates, in CUDA's order (this process's environment decides
    which: run it cleaned of CUDA_VISIBLE_DEVICES)."""
    try:
        cu = ctypes.CDLL(cuda_library)
        if cu.cuInit(0) != 0:
            return []
    except (OSError, AttributeError):
        return []
    count, version = ctypes.c_int(), ctypes.c_int()
    if cu.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return []
    driver = int(version.value) if cu.cuDriverGetVersion(ctypes.byref(version)) == 0 else None
    devices = []
    for ordinal in range(count.value):
        one = _cuda_one(cu, ordinal)
        if one is not None:
            one["driver_version"] = driver
            devices.append(one)
    if dynamic and devices:
        try:
            nvml = ctypes.CDLL(nvml_library)
            started = nvml.nvmlInit_v2() == 0
        except (OSError, AttributeError):
            started = False
        if started:
            for one in devices:
                if "uuid" in one:
                    one["dynamic"] = _nvml_dynamic(nvml, one["uuid"])
            nvml.nvmlShutdown()
    return devices


def _device(obj: Mapping[str, Any]) -> GpuDevice:
    cap = obj.get("capability")
    dyn = obj.get("dynamic")
    return GpuDevice(uuid=str(obj.get("uuid", "")), name=obj.get("name"),
                     pci_id=obj.get("pci_id"), memory_bytes=obj.get("memory_bytes"),
                     capability=(int(cap[0]), int(cap[1])) if cap else None,
                     clock_khz=obj.get("clock_khz"), compute_units=obj.get("compute_units"),
                     ecc=obj.get("ecc"), driver_version=obj.get("driver_version"),
                     dynamic=tuple(dyn) if dyn else None)


def cuda_devices(env: Mapping[str, str], *, dynamic: bool, cuda_library: str = CUDA_LIBRARY,
                 nvml_library: str = NVML_LIBRARY, hidden: Sequence[str] = (),
                 timeout: float = 60.0) -> list[GpuDevice] | None:
    """The devices as CUDA reports them, asked of a child process whose environment
    lacks the ``hidden`` variables; None where CUDA is not there or says nothing."""
    child_env = {k: v for k, v in env.items() if k not in hidden}
    argv = [sys.executable, "-m", "condorpy.machine.gpu_cuda", cuda_library, nvml_library]
    if dynamic:
        argv.append("-dynamic")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False,
                              env=child_env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    devices = []
    for line in proc.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            devices.append(_device(obj))
    return devices or None


def main(argv: list[str]) -> int:
    cuda = argv[0] if argv else CUDA_LIBRARY
    nvml = argv[1] if len(argv) > 1 else NVML_LIBRARY
    for one in query(cuda, nvml, "-dynamic" in argv[2:]):
        print(json.dumps(one))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
