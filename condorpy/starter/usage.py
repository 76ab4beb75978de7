"""What a job used: running totals and latched peaks, from cgroup samples, /proc
session scans and wait4's rusage."""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from condorpy.starter.cgroup import CgroupSample
from condorpy.starter.holds import HoldCode, JobHold

MIB = 1024 * 1024


@dataclass
class Usage:
    """Running maxima and totals; peaks are latched here because the kernel's are not
    always there (memory.peak is missing on older kernels)."""
    user_s: float = 0.0
    system_s: float = 0.0
    memory_bytes: int = 0        # peak of anon + shmem (or RSS without cgroups)
    image_bytes: int = 0         # peak including page cache where known
    rss_bytes: int = 0           # latest resident size while running
    pids: int = 0
    disk_kb: int | None = None   # peak sandbox size, as HTCondor's shadow keeps it
    files: int | None = None     # peak count of entries in the sandbox
    pss_bytes: int | None = None  # peak proportional set size, where /proc says it

    def attributes(self) -> dict[str, object]:
        return {
            "RemoteUserCpu": round(self.user_s, 3),
            "RemoteSysCpu": round(self.system_s, 3),
            "MemoryUsage": math.ceil(self.memory_bytes / MIB),
            "ResidentSetSize": math.ceil(self.memory_bytes / 1024),
            "ImageSize": math.ceil(max(self.image_bytes, self.memory_bytes) / 1024),
            "NumPids": self.pids,
        } | self.pss_attributes() | self.disk_attributes()

    def pss_attributes(self) -> dict[str, object]:
        """ProportionalSetSizeKb, as HTCondor's starter publishes it without cgroups
        (a job's cgroup says no PSS, and neither does HTCondor's then)."""
        if self.pss_bytes is None:
            return {}
        return {"ProportionalSetSizeKb": math.ceil(self.pss_bytes / 1024)}

    def disk_attributes(self) -> dict[str, object]:
        if self.disk_kb is None:
            return {}
        return {"DiskUsage": self.disk_kb, "ScratchDirFileCount": self.files or 0}

    def add_disk(self, kb: int, files: int) -> None:
        self.disk_kb = max(kb, self.disk_kb or 0)
        self.files = max(files, self.files or 0)

    def add_cgroup(self, s: CgroupSample) -> None:
        self.user_s = max(self.user_s, s.user_usec / 1e6)
        self.system_s = max(self.system_s, s.system_usec / 1e6)
        self.memory_bytes = max(self.memory_bytes, s.memory_bytes)
        self.rss_bytes = s.memory_bytes
        if s.peak_bytes is not None:
            self.image_bytes = max(self.image_bytes, s.peak_bytes)
        self.pids = max(self.pids, s.pids)

    def add_session(self, user_s: float, system_s: float, rss_bytes: int,
                    count: int, pss_bytes: int | None = None) -> None:
        if pss_bytes is not None:
            self.pss_bytes = max(pss_bytes, self.pss_bytes or 0)
        self.user_s = max(self.user_s, user_s)
        self.system_s = max(self.system_s, system_s)
        self.memory_bytes = max(self.memory_bytes, rss_bytes)
        self.rss_bytes = rss_bytes
        self.pids = max(self.pids, count)

    def add_rusage(self, user_s: float, system_s: float) -> None:
        """wait4 covers the job and every descendant it waited for. Its ru_maxrss is
        not used: it remembers the starter's own image from before the exec."""
        self.user_s = max(self.user_s, user_s)
        self.system_s = max(self.system_s, system_s)
        self.pids = max(self.pids, 1)


# Directories nested deeper than this are not walked (each level holds two descriptors
# while it is read); what lies below counts as nothing, so DiskUsage is a lower bound.
MAX_WALK_DEPTH = 100


class TreeMeter:
    """The space used below a directory (the sandbox), measured a slice at a time.

    The walk never follows a symlink and never resolves a path: each directory is
    opened relative to its parent's descriptor with O_NOFOLLOW, so a job that swaps a
    directory for a link while it is read only hides its own files. A hard-linked file
    counts once. ``step`` reads at most ``budget`` entries and returns, so a sandbox of
    a million files costs the starter many short slices, not one long stall."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stack: list[tuple[int, Iterator[os.DirEntry[str]]]] = []
        self._bytes = 0
        self._files = 0
        self._seen: set[tuple[int, int]] = set()
        self.walking = False

    def begin(self) -> bool:
        """Start a new walk; False when the directory cannot be opened."""
        self.close()
        self._bytes = self._files = 0
        self._seen = set()
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        if not self._push(fd):
            return False
        self.walking = True
        return True

    def _push(self, fd: int) -> bool:
        try:
            it = os.scandir(fd)
        except OSError:
            os.close(fd)
            return False
        self._stack.append((fd, it))
        return True

    @property
    def partial_kb(self) -> int:
        """What this walk has counted so far: a lower bound of the whole."""
        return (self._bytes + 1023) // 1024

    @property
    def files(self) -> int:
        return self._files

    def step(self, budget: int) -> int | None:
        """Read up to ``budget`` entries; the walk's KiB once it is complete, else None."""
        while self._stack and budget > 0:
            fd, it = self._stack[-1]
            try:
                entry = next(it, None)
            except OSError:
                entry = None
            if entry is None:
                self._pop()
                continue
            budget -= 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            self._files += 1
            if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key in self._seen:
                    continue
                self._seen.add(key)
            self._bytes += st.st_blocks * 512
            if stat.S_ISDIR(st.st_mode) and len(self._stack) < MAX_WALK_DEPTH:
                try:
                    sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                  | os.O_CLOEXEC, dir_fd=fd)
                except OSError:
                    continue
                self._push(sub)
        if self._stack:
            return None
        self.walking = False
        return self.partial_kb

    def _pop(self) -> None:
        fd, it = self._stack.pop()
        close = getattr(it, "close", None)
        if close is not None:
            close()
        os.close(fd)

    def close(self) -> None:
        while self._stack:
            self._pop()
        self.walking = False

    def measure(self) -> int:
        """The whole walk at once (the end of the job, tests)."""
        if not self.begin():
            return 0
        while True:
            done = self.step(1 << 30)
            if done is not None:
                return done


# HTCondor's hold subcode of JobOutOfResources for disk (condor_holdcodes.h)
OUT_OF_RESOURCES_DISK = 104
# The share of the starter's time the sandbox walk may take (HTCondor's
# STARTER_UPDATE_INTERVAL_TIMESLICE default), and the entries read per slice.
DISK_TIMESLICE = 0.1
DISK_STEP_ENTRIES = 4096


@dataclass(frozen=True)
class DiskReading:
    kb: int
    files: int
    complete: bool          # False: a walk cut short, a lower bound


class DiskWatch:
    """The sandbox measured every ``interval_s``, one slice per call of ``tick``, the
    slices spaced so that walking takes at most DISK_TIMESLICE of the starter's time."""

    holds_at_end = False    # a final walk over the limit does not hold (docs/starter.md)

    def __init__(self, path: str, limit_kb: int | None, interval_s: float,
                 clock: Callable[[], float]) -> None:
        self.meter = TreeMeter(path)
        self.limit_kb = limit_kb
        self.interval_s = interval_s
        self.clock = clock
        self.due = 0.0
        self.walk_started = 0.0

    def tick(self) -> DiskReading | None:
        """One slice. A reading when a walk completes, or when the part walked so far
        is already over the limit (over is over); else None."""
        now = self.clock()
        if not self.meter.walking:
            self.walk_started = now
            if not self.meter.begin():
                self.due = now + self.interval_s
                return None
        done = self.meter.step(DISK_STEP_ENTRIES)
        pause = max(0.0, self.clock() - now) * (1 - DISK_TIMESLICE) / DISK_TIMESLICE
        if done is not None:
            self.due = max(self.walk_started + self.interval_s, now + pause)
            return DiskReading(done, self.meter.files, True)
        self.due = now + pause
        if self.over(self.meter.partial_kb):
            return DiskReading(self.meter.partial_kb, self.meter.files, False)
        return None

    def over(self, kb: int) -> bool:
        return self.limit_kb is not None and kb > self.limit_kb

    def hold(self, reading: DiskReading, job_id: str) -> JobHold:
        """HTCondor's hold for a job over its disk: JobOutOfResources, subcode Disk."""
        return JobHold(f"Job has exceeded allocated disk ({self.limit_kb} KiB): its "
                       f"scratch directory holds at least {reading.kb} KiB. Consider "
                       "increasing the value of request_disk.",
                       HoldCode.JOB_OUT_OF_RESOURCES, OUT_OF_RESOURCES_DISK, job=job_id)

    def final(self) -> DiskReading:
        """A whole walk now (the end of the job)."""
        self.meter.close()
        kb = self.meter.measure()
        return DiskReading(kb, self.meter.files, True)

    def close(self) -> None:
        self.meter.close()


def disk_limit_kb(slot_ad: Mapping[str, object], job_ad: Mapping[str, object]) -> int | None:
    """What the job may use of the disk, in KiB: the slot's ``Disk`` (a dynamic slot's is
    its ``RequestDisk`` rounded up), as HTCondor sizes a job's scratch volume; the
    job's ``RequestDisk`` when the slot ad has none; None when neither is a number."""
    for ad, attr in ((slot_ad, "Disk"), (job_ad, "RequestDisk")):
        value = ad.get(attr)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value)
    return None
