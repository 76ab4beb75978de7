"""``python -m condorpy.machine.gpu_utilization``: condorpy's GPU usage monitor, which
the startd runs where ``use FEATURE : GPUs`` (through ``GPUsMonitor``) names HTCondor's
``condor_gpu_utilization`` and that binary is not installed.

It reads NVML (``libnvidia-ml.so.1``, through ctypes: no HTCondor binary and no Python
package needed) and, like HTCondor's monitor, prints every ten seconds one ad per
device for the STARTD_CRON ``GPUs`` monitor::

    SlotMergeConstraint = StringListMember("CUDA0", AssignedGPUs) || ...
    UptimeGPUsSeconds = 3.500000          (seconds the device was busy in the period)
    UptimeGPUsMemoryPeakUsage = 512       (peak device memory in use, MB)
    - GPUsSlot0

The startd sums the seconds (``SUM:GPUs``) into GPUsUsage and keeps the memory peak
(``PEAK:GPUsMemory``) for the slot that holds the device. HTCondor integrates NVML's
utilization samples; this monitor polls the utilization rate every second, which gives
the same busy time to within a sample. Where NVML cannot be loaded or sees no device
it prints nothing and exits at once (status 0): no GPU, nothing to measure, no failing
cron job.
"""

from __future__ import annotations

import ctypes
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

from condorpy.machine.gpus import gpu_id
from condorpy.machine.roots import NVML_LIBRARY

REPORT_INTERVAL_S = 10.0
SAMPLE_INTERVAL_S = 1.0
_MIB = 1024 * 1024


@dataclass(frozen=True)
class GpuSample:
    utilization_pct: int          # of the last sample period, 0..100
    memory_used_bytes: int


class GpuReader(Protocol):
    """The devices to watch and their readings (NVML, or a test's fake)."""

    def uuids(self) -> list[str]: ...

    def sample(self, index: int) -> GpuSample | None: ...


@dataclass
class _Usage:
    busy_s: float = 0.0
    peak_bytes: int = 0


class UsageReport:
    """Busy seconds and memory peak per device over one reporting period."""

    def __init__(self, uuids: Sequence[str]) -> None:
        self.uuids = list(uuids)
        self.usage = [_Usage() for _ in self.uuids]

    def add(self, index: int, sample: GpuSample, seconds: float) -> None:
        u = self.usage[index]
        u.busy_s += seconds * min(max(sample.utilization_pct, 0), 100) / 100.0
        u.peak_bytes = max(u.peak_bytes, sample.memory_used_bytes)

    def take(self) -> str:
        """The period's ads, as condor_gpu_utilization prints them; starts a new period."""
        out = []
        for index, (uuid, u) in enumerate(zip(self.uuids, self.usage)):
            names = [f"CUDA{index}"]
            if uuid:
                names += [gpu_id(uuid, True), gpu_id(uuid, False)]
            out.append("SlotMergeConstraint = " + " || ".join(
                f'StringListMember("{n}", AssignedGPUs)' for n in names))
            out.append(f"UptimeGPUsSeconds = {u.busy_s:.6f}")
            out.append(f"UptimeGPUsMemoryPeakUsage = {math.ceil(u.peak_bytes / _MIB)}")
            out.append(f"- GPUsSlot{index}")
        self.usage = [_Usage() for _ in self.uuids]
        return "".join(line + "\n" for line in out)


def monitor(reader: GpuReader, out: TextIO, *, monotonic: Callable[[], float],
            sleep: Callable[[float], None], reports: int | None = None) -> int:
    """Sample every second, report every ten; ``reports`` stops after that many."""
    uuids = reader.uuids()
    if not uuids:
        return 0
    period = UsageReport(uuids)
    last = start = monotonic()
    done = 0
    while reports is None or done < reports:
        sleep(SAMPLE_INTERVAL_S)
        now = monotonic()
        for index in range(len(uuids)):
            got = reader.sample(index)
            if got is not None:
                period.add(index, got, now - last)
        last = now
        if now - start >= REPORT_INTERVAL_S:
            out.write(period.take())
            out.flush()
            start = now
            done += 1
    return 0


# --- NVML through ctypes ---------------------------------------------------------------

class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class NvmlReader:
    """The devices NVML sees. :meth:`open` gives None where there is no NVML, or it
    cannot start (no driver), or it sees no device."""

    def __init__(self, lib: ctypes.CDLL, handles: list[ctypes.c_void_p], uuids: list[str]):
        self.lib = lib
        self.handles = handles
        self._uuids = uuids

    @classmethod
    def open(cls, library: str = NVML_LIBRARY) -> NvmlReader | None:
        try:
            lib = ctypes.CDLL(library)
            if lib.nvmlInit_v2() != 0:
                return None
        except (OSError, AttributeError):
            return None
        count = ctypes.c_uint(0)
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return None
        handles, uuids = [], []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(handle)) != 0:
                continue        # a device this user may not read (HTCondor skips it too)
            buf = ctypes.create_string_buffer(96)
            uuid = buf.value.decode(errors="replace") \
                if lib.nvmlDeviceGetUUID(handle, buf, ctypes.c_uint(96)) == 0 else ""
            handles.append(handle)
            uuids.append(uuid)
        return cls(lib, handles, uuids) if handles else None

    def uuids(self) -> list[str]:
        return list(self._uuids)

    def sample(self, index: int) -> GpuSample | None:
        handle = self.handles[index]
        util, mem = _Utilization(), _Memory()
        if self.lib.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(util)) != 0:
            return None
        used = mem.used if self.lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) == 0 \
            else 0
        return GpuSample(int(util.gpu), int(used))

    def close(self) -> None:
        self.lib.nvmlShutdown()


def main(argv: list[str]) -> int:
    # -library PATH: another NVML (tests); HTCondor's monitor takes no arguments
    library = argv[1] if len(argv) >= 2 and argv[0] == "-library" else NVML_LIBRARY
    reader = NvmlReader.open(library)
    if reader is None:
        return 0
    try:
        return monitor(reader, sys.stdout, monotonic=time.monotonic, sleep=time.sleep)
    finally:
        reader.close()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
