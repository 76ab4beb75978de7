"""condorpy's GPU usage monitor (in the place of HTCondor's condor_gpu_utilization):
what it prints, its NVML binding (against a fake libnvidia-ml built here), that it is
quiet and successful without NVML, and that `use FEATURE : GPUs` runs it."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.config import Config
from condorpy.machine.gpu_utilization import (GpuSample, NvmlReader, UsageReport, main,
                                              monitor)
from condorpy.startd.cron import read_specs

UUIDS = ["GPU-a0223334-4445-5667-899a-abbccddeeff0", "GPU-b1223334-4445-5667-899a-abbccddeeff0"]


class FakeReader:
    def __init__(self, samples: dict[int, GpuSample]) -> None:
        self.samples = samples

    def uuids(self) -> list[str]:
        return list(UUIDS)

    def sample(self, index: int) -> GpuSample | None:
        return self.samples.get(index)


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_one_ad_per_device_as_condor_gpu_utilization_prints_it() -> None:
    report = UsageReport(UUIDS)
    report.add(0, GpuSample(50, 300 * 1024 * 1024 + 1), 7.0)
    report.add(0, GpuSample(100, 10), 1.5)
    assert report.take().splitlines()[:4] == [
        'SlotMergeConstraint = StringListMember("CUDA0", AssignedGPUs) || '
        'StringListMember("GPU-a0223334", AssignedGPUs) || '
        'StringListMember("GPU-a0223334-4445-5667-899a-abbccddeeff0", AssignedGPUs)',
        "UptimeGPUsSeconds = 5.000000",
        "UptimeGPUsMemoryPeakUsage = 301",
        "- GPUsSlot0"]
    # each report covers its own period
    assert "UptimeGPUsSeconds = 0.000000" in report.take().splitlines()


def test_monitor_reports_every_ten_seconds_of_samples() -> None:
    clock, out = FakeTime(), io.StringIO()
    reader = FakeReader({0: GpuSample(25, 2 * 1024 * 1024), 1: GpuSample(100, 0)})
    assert monitor(reader, out, monotonic=clock.monotonic, sleep=clock.sleep, reports=2) == 0
    lines = out.getvalue().splitlines()
    assert lines.count("- GPUsSlot0") == 2 and lines.count("- GPUsSlot1") == 2
    assert lines[1] == "UptimeGPUsSeconds = 2.500000"     # 25 % of 10 s
    assert lines[2] == "UptimeGPUsMemoryPeakUsage = 2"
    assert lines[5] == "UptimeGPUsSeconds = 10.000000"
    assert clock.now == 120.0


def test_without_nvml_it_prints_nothing_and_succeeds(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert NvmlReader.open(str(tmp_path / "no-libnvidia-ml.so")) is None
    assert main(["-library", str(tmp_path / "no-libnvidia-ml.so")]) == 0
    assert capsys.readouterr().out == ""


FAKE_NVML = r"""
#include <string.h>
typedef struct { unsigned gpu, memory; } util_t;
typedef struct { unsigned long long total, free, used; } mem_t;
static int inited = 0;
int nvmlInit_v2(void) { inited = 1; return 0; }
int nvmlShutdown(void) { inited = 0; return 0; }
int nvmlDeviceGetCount_v2(unsigned *n) { *n = 2; return inited ? 0 : 1; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) { *h = (void *)(long)(i + 1); return 0; }
int nvmlDeviceGetUUID(void *h, char *buf, unsigned len) {
    strncpy(buf, (long)h == 1 ? "GPU-a0223334-4445-5667-899a-abbccddeeff0"
                              : "GPU-b1223334-4445-5667-899a-abbccddeeff0", len);
    return 0;
}
int nvmlDeviceGetUtilizationRates(void *h, util_t *u) {
    u->gpu = (long)h == 1 ? 40 : 0; u->memory = 0; return 0;
}
int nvmlDeviceGetMemoryInfo(void *h, mem_t *m) {
    m->total = 1ULL << 34; m->used = (unsigned long long)(long)h << 20; m->free = 0; return 0;
}
"""


def test_nvml_binding_against_a_fake_libnvidia_ml(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the fake libnvidia-ml")
    src, lib = tmp_path / "nvml.c", tmp_path / "libnvidia-ml.so.1"
    src.write_text(FAKE_NVML)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    reader = NvmlReader.open(str(lib))
    assert reader is not None
    assert reader.uuids() == UUIDS
    assert reader.sample(0) == GpuSample(40, 1 << 20)
    assert reader.sample(1) == GpuSample(0, 2 << 20)
    clock, out = FakeTime(), io.StringIO()
    monitor(reader, out, monotonic=clock.monotonic, sleep=clock.sleep, reports=1)
    reader.close()
    assert "UptimeGPUsSeconds = 4.000000\nUptimeGPUsMemoryPeakUsage = 1\n- GPUsSlot0\n" \
        in out.getvalue()


def test_use_feature_gpus_runs_condorpy_s_monitor_where_htcondor_s_is_missing(
        tmp_path: Path) -> None:
    cfg = Config.from_text(f"LIBEXEC = {tmp_path}\nuse FEATURE : GPUs\n", source="<test>",
                           env={})
    [spec] = [s for s in read_specs(cfg, "STARTD_CRON", "STARTD_CRON_JOBLIST")
              if s.name == "GPUs_MONITOR"]
    assert (spec.executable, spec.args) == (sys.executable,
                                           ("-m", "condorpy.machine.gpu_utilization"))
    # HTCondor's own binary, where installed, is run as configured
    (tmp_path / "condor_gpu_utilization").write_text("#!/bin/sh\n")
    cfg = Config.from_text(f"LIBEXEC = {tmp_path}\nuse FEATURE : GPUs\n", source="<test>",
                           env={})
    [spec] = [s for s in read_specs(cfg, "STARTD_CRON", "STARTD_CRON_JOBLIST")
              if s.name == "GPUs_MONITOR"]
    assert spec.executable == str(tmp_path / "condor_gpu_utilization")
    # run as the startd runs it, on this host: no NVML, so no output and no failure
    res = subprocess.run([sys.executable, "-m", "condorpy.machine.gpu_utilization",
                          "-library", str(tmp_path / "none.so")],
                         capture_output=True, text=True, timeout=60)
    assert (res.returncode, res.stdout) == (0, "")
