"""``condorpy status --offline``: the slot ads this machine would advertise at start-up.

    condorpy status --offline [-config FILE] [-l] [-af ATTR ...] [-constraint EXPR] [-json]

The machine is measured by the probes unless ``--inventory FILE`` (or the environment
variable ``CONDORPY_INVENTORY``) names a JSON machine snapshot, which pins it for tests
and demonstrations.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from condorpy.classad import ClassAd, parse_expr
from condorpy.config import DetectedFacts, host_facts, load_config
from condorpy.errors import CondorpyError, MachineError
from condorpy.inputs import read_text
from condorpy.slots.ads import SlotStatus
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_from_json
from condorpy.slots.knobs import KnobSource
from condorpy.slots.manager import SlotManager
from condorpy.slots.status_format import (render_autoformat, render_json, render_long,
                                          render_table)

INVENTORY_ENV = "CONDORPY_INVENTORY"


class StatusUsageError(CondorpyError):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="condorpy status",
                                description="show this machine's slot ads (like condor_status)")
    p.add_argument("--offline", "-offline", action="store_true",
                   help="compute the ads from the configuration and the machine, "
                        "without a running daemon")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="read this configuration file instead of CONDOR_CONFIG")
    p.add_argument("-l", "-long", "--long", dest="long", action="store_true",
                   help="print whole ads")
    p.add_argument("-af", "-autoformat", dest="af", nargs="+", metavar="EXPR",
                   help="print these expressions' values (attributes or any ClassAd "
                        "expression), one line per slot")
    p.add_argument("-constraint", "--constraint", metavar="EXPR",
                   help="only slots whose ad satisfies EXPR")
    p.add_argument("-json", "--json", dest="json", action="store_true",
                   help="print the ads as JSON")
    p.add_argument("--inventory", metavar="FILE", help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not args.offline:
        print("condorpy status: only --offline is available: it shows the ads this machine "
              "would advertise, computed from its configuration", file=sys.stderr)
        return 2
    chosen = sum(bool(x) for x in (args.long, args.af, args.json))
    if chosen > 1:
        raise StatusUsageError("choose one of -l, -af and -json")
    now = time.time()
    inventory_path = args.inventory or os.environ.get(INVENTORY_ENV)
    pinned = _read_inventory(Path(inventory_path)) if inventory_path else None
    cfg = _load_config(args.config, pinned)
    inventory = pinned if pinned is not None else _probe(cfg)
    manager = SlotManager.from_config(cfg, inventory, started_at=now)
    ads = _startup_ads(manager, cfg, now)
    if args.constraint:
        constraint = parse_expr(args.constraint, source="-constraint")
        ads = [ad for ad in ads if constraint.evaluate(my=ad) is True]
    if args.long:
        out = render_long(ads)
    elif args.af:
        out = render_autoformat(ads, args.af)
    elif args.json:
        out = render_json(ads)
    else:
        out = render_table(ads, now) if ads else ""
    sys.stdout.write(out)
    return 0


def _read_inventory(path: Path) -> MachineInventory:
    text = read_text(str(path), f"the inventory file {path}", on_os_error=lambda why:
                     MachineError(f"cannot read the inventory file {path}: {why}"))
    return inventory_from_json(text, str(path))


def _detected(inventory: MachineInventory) -> DetectedFacts:
    """The computed macros (DETECTED_CPUS, FULL_HOSTNAME, ...) of a pinned machine."""
    cpus = inventory.detected_cpus or inventory.cpus
    return DetectedFacts(
        full_hostname=inventory.hostname, cpus=cpus,
        cores=inventory.detected_cores or cpus,
        physical_cpus=inventory.detected_physical_cpus or cpus,
        memory_mb=inventory.detected_memory_mb or inventory.memory_mb,
        arch=str(inventory.facts.get("Arch", "X86_64")),
        opsys=str(inventory.facts.get("OpSys", "LINUX")))


def _probed_facts() -> DetectedFacts:
    from condorpy.cli.facts import probed_facts
    return probed_facts()


def _load_config(path: str | None, pinned: MachineInventory | None) -> KnobSource:
    detected = _detected(pinned) if pinned is not None else _probed_facts()
    cfg: KnobSource = load_config(path, detected=detected)
    return cfg


def _probe(cfg: KnobSource) -> MachineInventory:
    from condorpy.machine import probe
    inventory: MachineInventory = probe.probe_machine(cfg)
    return inventory


def _startup_ads(manager: SlotManager, cfg: KnobSource, now: float) -> list[ClassAd]:
    """Every slot starts in Owner and leaves it at the first evaluation unless
    IS_OWNER holds, so the ads at start-up show Owner or Unclaimed."""
    is_owner = cfg.get("IS_OWNER") or "False"
    statuses = {}
    for slot, ad in zip(manager.slots, manager.ads(now)):
        owner = parse_expr(is_owner, source="IS_OWNER").evaluate(my=ad) is True
        statuses[slot.name] = SlotStatus("Owner" if owner else "Unclaimed", "Idle", now)
    return manager.ads(now, statuses)
