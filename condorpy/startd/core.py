"""The one path from the configuration to the policy engine.

Every front end goes down it: ``status --offline``, ``policy simulate``, ``policy
explain`` and the daemon. Configuration (``-config FILE``, else ``$CONDOR_CONFIG``, else
/etc/condorpy/condor_config, then ``_CONDOR_*``) → machine facts (measured, pinned
from an inventory file, or simulate's virtual host) → slot layout and slot ads
(:mod:`condorpy.slots`) → policy engine (:mod:`condorpy.policy`). They differ only in
their clock and their measurements, never in the code that decides.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Mapping

from condorpy.clock import Clock
from condorpy.config import Config, DetectedFacts, load_config
from condorpy.errors import MachineError
from condorpy.inputs import read_text
from condorpy.machine.facts import probed_facts
from condorpy.machine.probe import probe_machine
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.settings import PolicySettings, settings_from_config
from condorpy.slots.ads import Measurements
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_from_json
from condorpy.slots.manager import SlotManager

# A JSON machine snapshot that pins the hardware for tests and demonstrations.
INVENTORY_ENV = "CONDORPY_INVENTORY"


class Host(Enum):
    THIS = "this"          # measure this machine
    VIRTUAL = "virtual"    # policy simulate's fixed virtual host (condorpy.machine.virtual)


@dataclass(frozen=True)
class Core:
    """One reading of the configuration and the machine it describes."""

    config: Config
    inventory: MachineInventory

    def engine(self, clock: Clock) -> PolicyEngine:
        """A policy engine over a fresh layout of this machine, started at the clock's
        time, with the inventory's measurements."""
        now = clock.time()
        layout = SlotManager.from_config(self.config, self.inventory, started_at=now,
                                         clock=clock)
        return PolicyEngine(self.settings(layout), layout, now=now,
                            measurements=Measurements.from_inventory(self.inventory),
                            utc_offset=clock.utc_offset)

    def settings(self, layout: SlotManager) -> PolicySettings:
        return settings_from_config(self.config, {s.slot_id: s.type_id for s in layout})


def load_core(config_path: str | None = None, *, host: Host = Host.THIS,
              inventory_path: str | None = None,
              env: Mapping[str, str] | None = None) -> Core:
    """Read the configuration and the machine. ``inventory_path`` (or
    $CONDORPY_INVENTORY) pins the machine; otherwise ``host`` says which one."""
    environ = dict(os.environ if env is None else env)
    pinned_path = inventory_path or environ.get(INVENTORY_ENV)
    if pinned_path:
        pinned = read_inventory(Path(pinned_path))
        cfg = load_config(config_path, env=environ, detected=detected_of(pinned))
        return Core(cfg, pinned)
    if host is Host.VIRTUAL:
        cfg = load_config(config_path, env=environ, detected=VIRTUAL_DETECTED)
        return Core(cfg, virtual_inventory(cfg))
    cfg = load_config(config_path, env=environ, detected=probed_facts())
    return Core(cfg, probe_machine(cfg))


def read_inventory(path: Path) -> MachineInventory:
    text = read_text(str(path), f"the inventory file {path}", on_os_error=lambda why:
                     MachineError(f"cannot read the inventory file {path}: {why}"))
    return inventory_from_json(text, str(path))


def detected_of(inventory: MachineInventory) -> DetectedFacts:
    """The computed macros (DETECTED_CPUS, FULL_HOSTNAME, ...) of a pinned machine."""
    cpus = inventory.detected_cpus or inventory.cpus
    return DetectedFacts(
        full_hostname=inventory.hostname, cpus=cpus,
        cores=inventory.detected_cores or cpus,
        physical_cpus=inventory.detected_physical_cpus or cpus,
        memory_mb=inventory.detected_memory_mb or inventory.memory_mb,
        arch=str(inventory.facts.get("Arch", "X86_64")),
        opsys=str(inventory.facts.get("OpSys", "LINUX")))
