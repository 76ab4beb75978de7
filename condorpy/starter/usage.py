"""What a job used: running totals and latched peaks, from cgroup samples, /proc
session scans and wait4's rusage."""

from __future__ import annotations

import math
from dataclasses import dataclass

from condorpy.starter.cgroup import CgroupSample

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

    def attributes(self) -> dict[str, object]:
        return {
            "RemoteUserCpu": round(self.user_s, 3),
            "RemoteSysCpu": round(self.system_s, 3),
            "MemoryUsage": math.ceil(self.memory_bytes / MIB),
            "ResidentSetSize": math.ceil(self.memory_bytes / 1024),
            "ImageSize": math.ceil(max(self.image_bytes, self.memory_bytes) / 1024),
            "NumPids": self.pids,
        }

    def add_cgroup(self, s: CgroupSample) -> None:
        self.user_s = max(self.user_s, s.user_usec / 1e6)
        self.system_s = max(self.system_s, s.system_usec / 1e6)
        self.memory_bytes = max(self.memory_bytes, s.memory_bytes)
        self.rss_bytes = s.memory_bytes
        if s.peak_bytes is not None:
            self.image_bytes = max(self.image_bytes, s.peak_bytes)
        self.pids = max(self.pids, s.pids)

    def add_session(self, user_s: float, system_s: float, rss_bytes: int,
                    count: int) -> None:
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
