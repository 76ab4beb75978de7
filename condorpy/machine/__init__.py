"""Probes of the host: CPUs, memory, disk, load, owner activity, GPUs, network, OS.

Each probe reads through a :class:`HostRoots` (the /proc, /sys, /dev, cgroup and /etc
roots, the clock, uname), so tests run them against fake trees. The entry points are
:func:`probe_machine`, which builds the :class:`~condorpy.slots.inventory.MachineInventory`
the slot layer divides, and :func:`detected_facts`, the computed configuration macros.

The names below are loaded when first used: importing one module of the package (such
as :mod:`condorpy.machine.facts` for `condorpy config-val`) must not load every probe
and the libraries they use (pyroute2, psutil).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condorpy.machine.classad_text import InventoryError
    from condorpy.machine.probe import Activity, detected_facts, measure_activity, probe_machine
    from condorpy.machine.roots import HostRoots, Uname

_HOMES = {"InventoryError": "classad_text", "Activity": "probe", "detected_facts": "probe",
          "measure_activity": "probe", "probe_machine": "probe", "HostRoots": "roots",
          "Uname": "roots"}

__all__ = ["Activity", "HostRoots", "InventoryError", "Uname",
           "detected_facts", "measure_activity", "probe_machine"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
