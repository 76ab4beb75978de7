"""Reading the slot layer's knobs: slot types, carving policies and ad settings.

Every read goes through the configuration's :class:`~condorpy.config.KnobReader`, so a
bad value names its file and line (``NUM_SLOTS = abc at FILE:LINE is not an integer``).
List knobs are read with an explicit empty default: set to nothing they mean nothing,
rather than their table default.
"""

from __future__ import annotations

from condorpy.config import KnobReader
from condorpy.slots.ads import AdSettings, SlotConfigAttrs
from condorpy.slots.carving import (DEFAULT_CONSUMPTION, DEFAULT_JOB_REQUESTS, DEFAULT_MODIFY,
                                    STANDARD_REQUESTS, CarvePolicy)
from condorpy.slots.health import HealthExprsError, parse_health
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.layout import SlotTypeConfig
from condorpy.slots.load import IdlePolicy
from condorpy.slots.shares import Share, ShareKind, SlotTypeSpec, parse_slot_type


def slot_types(cfg: KnobReader, inventory: MachineInventory) -> list[SlotTypeConfig]:
    """Slot types in HTCondor's order of precedence: `NUM_SLOTS_TYPE_<N>` when any is
    set; else `NUM_SLOTS` equal static slots; else one partitionable slot with all."""
    custom = tuple(inventory.custom)
    max_types = cfg.knob_int("MAX_SLOT_TYPES")
    types = []
    for n in range(1, max_types + 1):
        count = cfg.get_int(f"NUM_SLOTS_TYPE_{n}", 0)
        if count <= 0:
            continue
        spec = parse_slot_type(cfg.get(f"SLOT_TYPE_{n}") or "", custom, f"SLOT_TYPE_{n}")
        types.append(SlotTypeConfig(n, spec, count,
                                    cfg.get_bool(f"SLOT_TYPE_{n}_PARTITIONABLE", False)))
    if types:
        return types
    if cfg.get("NUM_SLOTS") is not None:
        return [SlotTypeConfig(0, SlotTypeSpec(source="NUM_SLOTS"),
                               cfg.get_int("NUM_SLOTS", inventory.cpus), False)]
    everything = SlotTypeSpec(default=Share(ShareKind.FRACTION, 1.0, text="100%"),
                              source="the default partitionable slot")
    return [SlotTypeConfig(1, everything, 1, True)]


def carve_knob_names(type_id: int, custom: tuple[str, ...]) -> list[str]:
    """Every knob :func:`carve_policy` may read, for callers that hold only a look-up."""
    names = [f"{kind}_{attr.upper()}" for attr in STANDARD_REQUESTS.values()
             for kind in ("MODIFY_REQUEST_EXPR", "JOB_DEFAULT")]
    names += [f"MODIFY_REQUEST_EXPR_REQUEST{name.upper()}" for name in custom]
    for prefix in (f"SLOT_TYPE_{type_id}_", ""):
        names.append(prefix + "CONSUMPTION_POLICY")
        names += [prefix + f"CONSUMPTION_{r.upper()}"
                  for r in list(STANDARD_REQUESTS) + list(custom)]
    return names


def carve_policy(cfg: KnobReader, type_id: int, custom: tuple[str, ...]) -> CarvePolicy:
    modify = {}
    defaults = {}
    for resource, attr in STANDARD_REQUESTS.items():
        modify[resource] = (cfg.get(f"MODIFY_REQUEST_EXPR_{attr.upper()}")
                            or DEFAULT_MODIFY[resource])
        defaults[resource] = (cfg.get(f"JOB_DEFAULT_{attr.upper()}")
                              or DEFAULT_JOB_REQUESTS[resource])
    for name in custom:
        text = cfg.get(f"MODIFY_REQUEST_EXPR_REQUEST{name.upper()}")
        if text:
            modify[name] = text
    prefix = f"SLOT_TYPE_{type_id}_"
    consumption = cfg.get_bool(prefix + "CONSUMPTION_POLICY",
                                cfg.knob_bool("CONSUMPTION_POLICY"))
    exprs = {}
    for resource in list(STANDARD_REQUESTS) + list(custom):
        text = (cfg.get(prefix + f"CONSUMPTION_{resource.upper()}")
                or cfg.get(f"CONSUMPTION_{resource.upper()}"))
        exprs[resource] = text or DEFAULT_CONSUMPTION.get(
            resource, f"ifThenElse(target.Request{resource} is undefined, 0, "
                      f"target.Request{resource})")
    return CarvePolicy(modify, defaults, consumption, exprs)


def ad_settings(cfg: KnobReader, inventory: MachineInventory,
                slots: list[tuple[int, int]], started_at: float) -> AdSettings:
    """``slots`` lists (SlotID, SlotTypeID) of the static and partitionable slots."""
    host = cfg.get("FULL_HOSTNAME") or inventory.hostname
    per_slot = {}
    common = _names(cfg, "STARTD_ATTRS") + _names(cfg, "STARTD_EXPRS")
    for slot_id, type_id in slots:
        names = common + _names(cfg, f"SLOT{slot_id}_STARTD_ATTRS") \
            + _names(cfg, f"SLOT{slot_id}_STARTD_EXPRS")
        seen: set[str] = set()
        custom = []
        for name in names:
            if name.lower() in seen:
                continue
            seen.add(name.lower())
            value = cfg.slot_get(name, slot_id, _type(type_id))
            if value is not None:
                custom.append((name, value))
        per_slot[slot_id] = SlotConfigAttrs(
            start=cfg.slot_get("START", slot_id, _type(type_id)) or "True",
            rank=cfg.slot_get("RANK", slot_id, _type(type_id)) or "0.0",
            custom=tuple(custom))
    return AdSettings(
        hostname=host,
        uid_domain=cfg.get("UID_DOMAIN") or host,
        filesystem_domain=cfg.get("FILESYSTEM_DOMAIN") or host,
        idle=IdlePolicy(cfg.knob_int("SLOTS_CONNECTED_TO_KEYBOARD"),
                        cfg.knob_int("SLOTS_CONNECTED_TO_CONSOLE"),
                        cfg.knob_int("DISCONNECTED_KEYBOARD_IDLE_BOOST")),
        slot_attrs=tuple(_names(cfg, "STARTD_SLOT_ATTRS") + _names(cfg, "STARTD_SLOT_EXPRS")),
        per_slot=per_slot,
        started_at=started_at,
        health=_health(cfg),
        daemon_name=daemon_name(cfg.get("STARTD_NAME"), host))


def daemon_name(startd_name: str | None, fqdn: str) -> str:
    """The name a startd goes by, from STARTD_NAME, as HTCondor makes a daemon's name
    valid: a name with ``@`` as it is; the host itself (its full name, or its first
    label) the host's full name; anything else ``<name>@<full host name>``."""
    name = (startd_name or "").strip()
    if not name:
        return fqdn
    if "@" in name:
        return name
    low, full = name.lower(), fqdn.lower()
    if low == full or ("." not in low and low == full.split(".", 1)[0]):
        return fqdn
    return f"{name}@{fqdn}"


def _health(cfg: KnobReader) -> tuple[tuple[str, str], ...]:
    text = (cfg.get("STARTD_HEALTH_EXPRS") or "").strip()
    if not text:
        return ()
    try:
        return parse_health(text).attrs()
    except HealthExprsError as exc:
        raise cfg.invalid("STARTD_HEALTH_EXPRS", "a list of ClassAd expressions") from exc


def _names(cfg: KnobReader, name: str) -> list[str]:
    return cfg.get_list(name, [])


def _type(type_id: int) -> int | None:
    """Static slots of NUM_SLOTS have type 0, which has no SLOT_TYPE_0_ knobs."""
    return type_id if type_id > 0 else None
