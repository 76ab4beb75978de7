"""The CUDA driver and NVML bindings (condorpy.machine.gpu_cuda) against fake libraries
built from C here: the same ctypes calls a real libcuda.so.1 and libnvidia-ml.so.1 answer
(checked on an H100 against HTCondor 23.9.6's condor_gpu_discovery)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from condorpy.machine import gpus
from condorpy.machine.classad_text import parse_ad_lines
from condorpy.machine.gpu_cuda import cuda_devices
from tests.machine.fakehost import roots

# Two devices. CUDA's memory is less than NVML's (the driver's reservation), the SM count
# is CUDA's alone; device 1 has no fan (as an H100), device 0 refuses ECC counts.
FAKE_CUDA = r"""
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
int cuInit(unsigned f) { return getenv("FAKE_CUDA_FAIL") ? 100 : 0; }
int cuDeviceGetCount(int *n) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES"); *n = v ? 1 : 2; return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return 0; }
int cuDeviceGetName(char *b, int n, int d) {
    snprintf(b, n, "%s", d ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-40GB"); return 0; }
int cuDeviceGetUuid_v2(unsigned char *u, int d) {
    for (int i = 0; i < 16; i++) u[i] = (unsigned char)(0x11 * (d + 1) + i); return 0; }
int cuDeviceGetPCIBusId(char *b, int n, int d) {
    snprintf(b, n, "0000:%02X:00.0", 0x18 + d); return 0; }
int cuDeviceTotalMem_v2(size_t *m, int d) {
    *m = d ? 85017755648ULL : 42298834944ULL; return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) {
    switch (a) {
    case 13: *v = d ? 1980000 : 1410000; return 0;
    case 16: *v = d ? 132 : 108; return 0;
    case 32: *v = 1; return 0;
    case 75: *v = d ? 9 : 8; return 0;
    case 76: *v = 0; return 0;
    }
    return 1;
}
"""

FAKE_NVML = r"""
#include <string.h>
int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetHandleByUUID(const char *u, void **h) {
    if (strncmp(u, "GPU-", 4)) return 2;
    *h = (void *)(long)(u[4] == '2' ? 2 : 1); return 0; }
int nvmlDeviceGetFanSpeed(void *h, unsigned *v) {
    if ((long)h == 2) return 3; *v = 41; return 0; }
int nvmlDeviceGetPowerUsage(void *h, unsigned *v) { *v = 70000 + (unsigned)(long)h; return 0; }
int nvmlDeviceGetTemperature(void *h, int s, unsigned *v) { *v = 40 + (unsigned)(long)h; return 0; }
int nvmlDeviceGetTotalEccErrors(void *h, int t, int c, unsigned long long *v) {
    if ((long)h == 1) return 3; *v = (unsigned long long)t; return 0; }
"""


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the fake driver libraries")
    tmp = tmp_path_factory.mktemp("driver")
    out = []
    for name, src in (("libcuda.so.1", FAKE_CUDA), ("libnvidia-ml.so.1", FAKE_NVML)):
        (tmp / f"{name}.c").write_text(src)
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp / name), str(tmp / f"{name}.c")],
                       check=True)
        out.append(str(tmp / name))
    return out[0], out[1]


def _ad(argv: list[str], tmp: Path, libs: tuple[str, str], **kw: object) -> dict[str, object]:
    # the driver's control node: what the probe looks for before it asks CUDA
    (tmp / "dev").mkdir(exist_ok=True)
    (tmp / "dev" / "nvidiactl").touch()
    r = roots(tmp, use_nvml=True, cuda_library=libs[0], nvml_library=libs[1], **kw)
    return parse_ad_lines(gpus.discover(argv, r), "test")


def test_cuda_gives_the_basic_properties_as_htcondor_reads_them(
        tmp_path: Path, libs: tuple[str, str]) -> None:
    ad = _ad(["-extra"], tmp_path, libs)
    assert ad["DetectedGPUs"] == "GPU-11121314, GPU-22232425"
    a100, h100 = ad["GPU_11121314"], ad["GPU_22232425"]
    assert isinstance(h100, dict) and isinstance(a100, dict)
    # cuDeviceTotalMem's figure, as HTCondor prints it (81079 on a real H100, where NVML
    # says 81559), and the SM count NVML does not give for a whole GPU
    assert (h100["GlobalMemoryMb"], h100["ComputeUnits"], h100["ClockMhz"]) == (81079, 132, 1980.0)
    assert (a100["GlobalMemoryMb"], a100["ComputeUnits"], a100["Capability"]) == (40339, 108, 8.0)
    assert h100["DeviceUuid"] == "22232425-2627-2829-2a2b-2c2d2e2f3031"
    assert h100["DevicePciBusId"] == "0000:19:00.0"
    common = ad["Common"]
    assert isinstance(common, dict)
    assert (common["DriverVersion"], common["MaxSupportedVersion"], common["ECCEnabled"]) == \
        (13.0, 13000, True)


def test_dynamic_properties_from_nvml_leave_out_what_a_device_cannot_tell(
        tmp_path: Path, libs: tuple[str, str]) -> None:
    ad = _ad(["-dynamic"], tmp_path, libs)
    a100, h100 = ad["GPU_11121314"], ad["GPU_22232425"]
    assert isinstance(h100, dict) and isinstance(a100, dict)
    # no fan on device 2, no ECC counts on device 1: absent, not zero
    assert "FanSpeedPct" not in h100 and h100["PowerUsage_mw"] == 70002
    assert (h100["DieTempC"], h100["EccErrorsSingleBit"], h100["EccErrorsDoubleBit"]) == (42, 0, 1)
    assert (a100["FanSpeedPct"], a100["DieTempC"]) == (41, 41)
    assert "EccErrorsSingleBit" not in a100
    # without -dynamic nothing is asked of NVML
    plain = _ad(["-properties"], tmp_path, libs)["GPU_22232425"]
    assert isinstance(plain, dict) and "PowerUsage_mw" not in plain


def test_the_daemon_s_visibility_variables_do_not_hide_devices_from_discovery(
        libs: tuple[str, str]) -> None:
    env = {"CUDA_VISIBLE_DEVICES": "0"}
    seen = cuda_devices(env, dynamic=False, cuda_library=libs[0], nvml_library=libs[1],
                        hidden=gpus.VISIBILITY_VARS)
    assert seen is not None and len(seen) == 2
    narrowed = cuda_devices(env, dynamic=False, cuda_library=libs[0], nvml_library=libs[1])
    assert narrowed is not None and len(narrowed) == 1


def test_no_driver_or_a_failing_one_is_no_gpu_and_falls_back(
        tmp_path: Path, libs: tuple[str, str]) -> None:
    assert cuda_devices({}, dynamic=False, cuda_library=str(tmp_path / "none.so")) is None
    assert cuda_devices({"FAKE_CUDA_FAIL": "1"}, dynamic=False, cuda_library=libs[0]) is None
    ad = _ad([], tmp_path, libs, env={"FAKE_CUDA_FAIL": "1"})
    assert ad == {"DetectedGPUs": 0}


def test_without_the_driver_s_control_node_cuda_is_not_asked(
        tmp_path: Path, libs: tuple[str, str]) -> None:
    r = roots(tmp_path, use_nvml=True, cuda_library=libs[0], nvml_library=libs[1])
    assert parse_ad_lines(gpus.discover([], r), "test") == {"DetectedGPUs": 0}
