"""The starter: one job per process, in its sandbox and cgroup, until it ends.

    from condorpy.starter import Starter, StarterSettings
    outcome = Starter(job_values, slot_values, StarterSettings(execute=...)).run()

`job_values` and `slot_values` are mappings of evaluated ad attributes; the outcome's
`attributes` go into the final job ad. See docs/starter.md.

The names below are loaded when first used: `condorpy submit` reads one small module
of the package (:mod:`.reserved`) and must not load the whole starter with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condorpy.starter.holds import HoldCode, JobHold
    from condorpy.starter.protocol import Command, StarterClient
    from condorpy.starter.settings import MemoryPolicy, StarterSettings
    from condorpy.starter.starter import JobState, Outcome, Starter

_HOMES = {"HoldCode": "holds", "JobHold": "holds", "Command": "protocol",
          "StarterClient": "protocol", "MemoryPolicy": "settings",
          "StarterSettings": "settings", "JobState": "starter", "Outcome": "starter",
          "Starter": "starter"}

__all__ = ["Starter", "StarterSettings", "MemoryPolicy", "Outcome", "JobState", "HoldCode",
           "JobHold", "Command", "StarterClient"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
