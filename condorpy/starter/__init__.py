"""The starter: one job per process, in its sandbox and cgroup, until it ends.

    from condorpy.starter import Starter, StarterSettings
    outcome = Starter(job_values, slot_values, StarterSettings(execute=...)).run()

`job_values` and `slot_values` are mappings of evaluated ad attributes; the outcome's
`attributes` go into the final job ad. See docs/starter.md.
"""

from __future__ import annotations

from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.protocol import Command, StarterClient
from condorpy.starter.settings import MemoryPolicy, StarterSettings
from condorpy.starter.starter import JobState, Outcome, Starter

__all__ = ["Starter", "StarterSettings", "MemoryPolicy", "Outcome", "JobState", "HoldCode",
           "JobHold", "Command", "StarterClient"]
