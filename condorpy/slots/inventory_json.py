"""A :class:`MachineInventory` written as JSON, to pin a machine for tests and demos.

The keys are the record's field names; ``custom`` maps a resource name to
``{"ids": [...], "count": N, "properties": {id: {...}}, "extra_attrs": {...}}``.
``condorpy status --offline --inventory FILE`` (or ``CONDORPY_INVENTORY=FILE``) uses it
in place of the probes.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from condorpy.errors import MachineError
from condorpy.inputs import loads_json
from condorpy.slots.inventory import CustomResource, MachineInventory


class InventoryFileError(MachineError):
    pass


def inventory_from_json(text: str, source: str = "inventory") -> MachineInventory:
    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise InventoryFileError(f"{source}, line {exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InventoryFileError(f"{source}: expected a JSON object")
    fields = {f.name for f in dataclasses.fields(MachineInventory)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise InventoryFileError(f"{source}: unknown key(s) {', '.join(unknown)} "
                                 f"(known: {', '.join(sorted(fields))})")
    values: dict[str, Any] = dict(data)
    try:
        values["custom"] = {name: _custom(name, spec, source)
                            for name, spec in (data.get("custom") or {}).items()}
        values["slot_disk_kb"] = {int(k): int(v)
                                  for k, v in (data.get("slot_disk_kb") or {}).items()}
        return MachineInventory(**values)
    except (TypeError, ValueError) as exc:
        raise InventoryFileError(f"{source}: {exc}") from None


def _custom(name: str, spec: Any, source: str) -> CustomResource:
    if isinstance(spec, (int, float)):
        return CustomResource(name, count=spec)
    if not isinstance(spec, dict):
        raise InventoryFileError(f"{source}: custom.{name}: expected a count or an object")
    ids = tuple(str(i) for i in spec.get("ids", ()))
    return CustomResource(name, ids, spec.get("count", len(ids)),
                          dict(spec.get("properties", {})), dict(spec.get("extra_attrs", {})))


def inventory_to_json(inventory: MachineInventory) -> str:
    return json.dumps(dataclasses.asdict(inventory), indent=2, sort_keys=True)
