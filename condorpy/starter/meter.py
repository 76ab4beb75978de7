"""What a running job uses, measured while it runs: its processes sampled on the
starter's update cadence (and at once on a memory event), its sandbox walked in slices
for the disk it fills, its image size written to the job's log as it grows, and the
usage report the starter broadcasts to its clients.
"""

from __future__ import annotations

import math
from typing import Any

from condorpy.machine.pressure import read_cgroup_pressure, to_wire
from condorpy.starter.cgroup import CgroupSample
from condorpy.starter.holds import JobHold
from condorpy.starter.proctrack import JobProcesses
from condorpy.starter.usage import MIB, DiskWatch, Usage
from condorpy.starter.userlog import UserLog


class UsageMeter:
    def __init__(self) -> None:
        self.usage = Usage()
        self.enforced = False             # the job runs in a cgroup of its own
        self.processes: JobProcesses | None = None
        self.disk: DiskWatch | None = None
        self.disk_hold: JobHold | None = None   # the job went over its disk
        self.logged_image_kb = 0

    def attributes(self) -> dict[str, object]:
        attrs = self.usage.attributes()
        if self.enforced:
            attrs["CgroupEnforced"] = True      # as HTCondor's starter publishes it
        return attrs

    def sample(self) -> CgroupSample | None:
        assert self.processes is not None
        return self.processes.sample(self.usage)

    def disk_due(self) -> float | None:
        """When the next slice of the sandbox walk is due; None when none is."""
        if self.disk is None or self.disk_hold is not None:
            return None
        return self.disk.due

    def measure_disk(self, job_id: str) -> JobHold | None:
        """One slice of the sandbox walk: the hold of a job just found over its disk,
        else None."""
        assert self.disk is not None
        reading = self.disk.tick()
        if reading is None:
            return None
        self.usage.add_disk(reading.kb, reading.files)
        if self.disk.over(reading.kb):
            self.disk.close()
            self.disk_hold = self.disk.hold(reading, job_id)
            return self.disk_hold
        return None

    def report(self, state: str, userlog: UserLog | None) -> dict[str, Any]:
        """A sample taken now, as the usage event the starter broadcasts."""
        sample = self.sample()
        self.log_image_size(userlog)
        report: dict[str, Any] = {"event": "usage", "state": state,
                                  "usage": self.attributes()}
        if sample is not None:      # the startd updates the job ad on a rise
            report["memory_events"] = sample.memory_events
        cgroup = self.processes.cgroup if self.processes is not None else None
        if cgroup is not None:      # the job's PSI, for its slot ad (JobPressure*)
            pressure = read_cgroup_pressure(cgroup.slice)
            if pressure.lines:
                report["pressure"] = to_wire(pressure)
        return report

    def log_image_size(self, userlog: UserLog | None) -> None:
        u = self.usage
        image_kb = math.ceil(max(u.image_bytes, u.memory_bytes) / 1024)
        if userlog is not None and image_kb > self.logged_image_kb:
            self.logged_image_kb = image_kb
            userlog.image_size(image_kb, math.ceil(u.memory_bytes / MIB),
                               math.ceil(u.rss_bytes / 1024))

    def final_disk(self, job_id: str = "") -> None:
        """The whole sandbox measured once more, at the job's end; a job that filled its
        own volume (its writes failed) is held even when it exited before a reading."""
        if self.disk is not None:
            last = self.disk.final()
            self.usage.add_disk(last.kb, last.files)
            if self.disk_hold is None and self.disk.holds_at_end and self.disk.over(last.kb):
                self.disk_hold = self.disk.hold(last, job_id)
            self.disk.close()
