"""Policy engines built down the one path (configuration text → virtual host → slot
layer → engine) on a manual clock, for tests that drive the engine directly."""

from __future__ import annotations

from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.policy.engine import PolicyEngine
from condorpy.startd.core import Core

# The timelines were written for one static slot whose owner's keyboard and console
# count (HTCondor connects no slot to them by default; `use POLICY : Desktop` connects
# every slot).
ONE_DESKTOP_SLOT = ("NUM_SLOTS = 1\nSLOTS_CONNECTED_TO_KEYBOARD = 1\n"
                    "SLOTS_CONNECTED_TO_CONSOLE = 1\n")


def core_from_text(text: str) -> Core:
    cfg = Config.from_text(text, source="<test>", env={}, detected=VIRTUAL_DETECTED)
    return Core(cfg, virtual_inventory(cfg))


def engine_from_text(text: str, clock: ManualClock | None = None) -> PolicyEngine:
    return core_from_text(text).engine(clock or ManualClock(0.0))
