"""Reading the slot layer's knobs: slot types, carving policies and ad settings."""

from __future__ import annotations

from condorpy.slots.ads import AdSettings, SlotConfigAttrs
from condorpy.slots.carving import (DEFAULT_CONSUMPTION, DEFAULT_JOB_REQUESTS, DEFAULT_MODIFY,
                                    STANDARD_REQUESTS, CarvePolicy)
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.knobs import Knobs
from condorpy.slots.layout import SlotTypeConfig
from condorpy.slots.load import IdlePolicy
from condorpy.slots.shares import Share, ShareKind, SlotTypeSpec, parse_slot_type


def slot_types(knobs: Knobs, inventory: MachineInventory) -> list[SlotTypeConfig]:
    """Slot types in HTCondor's order of precedence: `NUM_SLOTS_TYPE_<N>` when any is
    set; else `NUM_SLOTS` equal static slots; else one partitionable slot with all."""
    custom = tuple(inventory.custom)
    max_types = knobs.integer("MAX_SLOT_TYPES", 10)
    types = []
    for n in range(1, max_types + 1):
        count = knobs.integer(f"NUM_SLOTS_TYPE_{n}", 0)
        if count <= 0:
            continue
        spec = parse_slot_type(knobs.text(f"SLOT_TYPE_{n}") or "", custom, f"SLOT_TYPE_{n}")
        types.append(SlotTypeConfig(n, spec, count,
                                    knobs.boolean(f"SLOT_TYPE_{n}_PARTITIONABLE", False)))
    if types:
        return types
    if knobs.text("NUM_SLOTS") is not None:
        return [SlotTypeConfig(0, SlotTypeSpec(source="NUM_SLOTS"),
                               knobs.integer("NUM_SLOTS", inventory.cpus), False)]
    everything = SlotTypeSpec(default=Share(ShareKind.FRACTION, 1.0, text="100%"),
                              source="the default partitionable slot")
    return [SlotTypeConfig(1, everything, 1, True)]


def carve_policy(knobs: Knobs, type_id: int, custom: tuple[str, ...]) -> CarvePolicy:
    modify = {}
    defaults = {}
    for resource, attr in STANDARD_REQUESTS.items():
        modify[resource] = (knobs.text(f"MODIFY_REQUEST_EXPR_{attr.upper()}")
                            or DEFAULT_MODIFY[resource])
        defaults[resource] = (knobs.text(f"JOB_DEFAULT_{attr.upper()}")
                              or DEFAULT_JOB_REQUESTS[resource])
    for name in custom:
        text = knobs.text(f"MODIFY_REQUEST_EXPR_REQUEST{name.upper()}")
        if text:
            modify[name] = text
    prefix = f"SLOT_TYPE_{type_id}_"
    consumption = knobs.boolean(prefix + "CONSUMPTION_POLICY",
                                knobs.boolean("CONSUMPTION_POLICY", False))
    exprs = {}
    for resource in list(STANDARD_REQUESTS) + list(custom):
        text = (knobs.text(prefix + f"CONSUMPTION_{resource.upper()}")
                or knobs.text(f"CONSUMPTION_{resource.upper()}"))
        exprs[resource] = text or DEFAULT_CONSUMPTION.get(
            resource, f"ifThenElse(target.Request{resource} is undefined, 0, "
                      f"target.Request{resource})")
    return CarvePolicy(modify, defaults, consumption, exprs)


def ad_settings(knobs: Knobs, inventory: MachineInventory,
                slots: list[tuple[int, int]], started_at: float) -> AdSettings:
    """``slots`` lists (SlotID, SlotTypeID) of the static and partitionable slots."""
    host = knobs.text("FULL_HOSTNAME") or inventory.hostname
    per_slot = {}
    common = knobs.names("STARTD_ATTRS") + knobs.names("STARTD_EXPRS")
    for slot_id, type_id in slots:
        names = common + knobs.names(f"SLOT{slot_id}_STARTD_ATTRS") \
            + knobs.names(f"SLOT{slot_id}_STARTD_EXPRS")
        seen: set[str] = set()
        custom = []
        for name in names:
            if name.lower() in seen:
                continue
            seen.add(name.lower())
            value = knobs.for_slot(name, slot_id, type_id)
            if value is not None:
                custom.append((name, value))
        per_slot[slot_id] = SlotConfigAttrs(
            start=knobs.for_slot("START", slot_id, type_id) or "True",
            rank=knobs.for_slot("RANK", slot_id, type_id) or "0.0",
            custom=tuple(custom))
    return AdSettings(
        hostname=host,
        uid_domain=knobs.text("UID_DOMAIN") or host,
        filesystem_domain=knobs.text("FILESYSTEM_DOMAIN") or host,
        idle=IdlePolicy(knobs.integer("SLOTS_CONNECTED_TO_KEYBOARD", 0),
                        knobs.integer("SLOTS_CONNECTED_TO_CONSOLE", 0),
                        knobs.integer("DISCONNECTED_KEYBOARD_IDLE_BOOST", 1200)),
        slot_attrs=tuple(knobs.names("STARTD_SLOT_ATTRS") + knobs.names("STARTD_SLOT_EXPRS")),
        per_slot=per_slot,
        started_at=started_at)
