"""Probes of the host: CPUs, memory, disk, load, owner activity, GPUs, network, OS.

Each probe reads through a :class:`HostRoots` (the /proc, /sys, /dev, cgroup and /etc
roots, the clock, uname), so tests run them against fake trees. The entry points are
:func:`probe_machine`, which builds the :class:`~condorpy.slots.inventory.MachineInventory`
the slot layer divides, and :func:`detected_facts`, the computed configuration macros.
"""

from condorpy.machine.classad_text import InventoryError
from condorpy.machine.probe import Activity, detected_facts, measure_activity, probe_machine
from condorpy.machine.roots import HostRoots, Uname

__all__ = ["Activity", "HostRoots", "InventoryError", "Uname",
           "detected_facts", "measure_activity", "probe_machine"]
