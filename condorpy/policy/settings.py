"""The policy knobs, read once from a configuration into a frozen record.

Anything that looks up a knob by name (a :class:`condorpy.config.Config`, a dict in a
test) can build :class:`PolicySettings` through :func:`settings_from_lookup`, so the
engine can be exercised with hand-written expression text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from condorpy.config.arith import ArithError, eval_arith
from condorpy.errors import PolicyError
from condorpy.policy.slot_layer import SlotLayerSettings, layer_settings
from condorpy.slots.inventory import CustomResource

Lookup = Callable[[str], "str | None"]

# Policy expressions the slot ad carries, with HTCondor 25.x's built-in defaults.
EXPR_DEFAULTS: dict[str, str] = {
    "START": "True",
    "IS_OWNER": "False",
    "RANK": "0",
    "WANT_SUSPEND": "False",
    "SUSPEND": "False",
    "CONTINUE": "True",
    "PREEMPT": "False",
    "WANT_VACATE": "True",
    "KILL": "False",
    "MAXJOBRETIREMENTTIME": "0",
    "MachineMaxVacateTime": "600",
    "CLAIM_WORKLIFE": "1200",
    "RUNBENCHMARKS": "LastBenchmark == 0",
    "START_BACKFILL": "False",
    "EVICT_BACKFILL": "False",
    "HIBERNATE": "\"NONE\"",
}

# Expressions that have a _VANILLA variant chosen for JobUniverse 5.
VANILLA_VARIANTS = ("WANT_SUSPEND", "SUSPEND", "CONTINUE", "PREEMPT", "WANT_VACATE", "KILL")

INT_DEFAULTS: dict[str, int] = {
    "KILLING_TIMEOUT": 30,
    "MATCH_TIMEOUT": 120,
    "POLLING_INTERVAL": 5,
    "UPDATE_INTERVAL": 300,
    "ALIVE_INTERVAL": 300,
    "MAX_CLAIM_ALIVES_MISSED": 6,
    "HIBERNATE_CHECK_INTERVAL": 0,
    "NUM_CPUS": 1,
    "MEMORY": 1024,
    "DISK": 1048576,
    "NUM_SLOTS": 1,
}


@dataclass(frozen=True)
class PolicySettings:
    """Everything the engine reads from the configuration."""

    exprs: Mapping[str, str]                  # slot-ad policy expressions (and _VANILLA ones)
    slot_exprs: Mapping[int, Mapping[str, str]] = field(default_factory=dict)  # SLOTn_ overrides
    extra_attrs: Mapping[str, str] = field(default_factory=dict)  # STARTD_ATTRS and latch sources
    latch_exprs: tuple[str, ...] = ()
    slot_attrs: tuple[str, ...] = ()          # STARTD_SLOT_ATTRS
    killing_timeout: int = 30
    match_timeout: int = 120
    polling_interval: int = 5
    update_interval: int = 300
    alive_interval: int = 300
    max_claim_alives_missed: int = 6
    hibernate_check_interval: int = 0
    enable_backfill: bool = False
    # machine layout for simulation
    num_cpus: int = 1
    memory: int = 1024
    disk: int = 1048576
    num_slots: int = 1
    partitionable: bool = False
    # custom resources and the carving policy of the partitionable slot
    slot_layer: SlotLayerSettings = field(default_factory=SlotLayerSettings)

    def expr_for(self, name: str, slot_id: int) -> str | None:
        per_slot = self.slot_exprs.get(slot_id, {})
        if name in per_slot:
            return per_slot[name]
        return self.exprs.get(name)


def _int(lookup: Lookup, name: str) -> int:
    text = lookup(name)
    if text is None or text.strip() == "":
        return INT_DEFAULTS[name]
    try:
        return int(float(text.strip()))
    except ValueError:
        value = _arith(text)
        if value is None:
            raise PolicyError(f"{name} must be an integer, not {text!r}", expression=name) \
                from None
        return value


def _arith(text: str) -> int | None:
    """Integer knobs such as ``15 * 60`` (what HTCondor's param_integer accepts)."""
    try:
        return int(eval_arith(text))
    except (ArithError, ZeroDivisionError, OverflowError):
        return None


def _bool(lookup: Lookup, name: str, default: bool) -> bool:
    text = lookup(name)
    if text is None or not text.strip():
        return default
    t = text.strip().lower()
    if t in ("true", "1", "yes", "t"):
        return True
    if t in ("false", "0", "no", "f"):
        return False
    raise PolicyError(f"{name} must be True or False, not {text!r}", expression=name)


def _names(lookup: Lookup, name: str) -> tuple[str, ...]:
    text = lookup(name) or ""
    return tuple(n for n in text.replace(",", " ").split() if n)


def settings_from_lookup(lookup: Lookup, slot_ids: tuple[int, ...] = (),
                         custom: Mapping[str, CustomResource] | None = None) -> PolicySettings:
    """Read every policy knob through ``lookup(name) -> text or None``; ``custom`` are
    the machine's custom resources (GPUs, ...), given to the partitionable slot."""
    exprs: dict[str, str] = {}
    for name, default in EXPR_DEFAULTS.items():
        text = lookup(name)
        exprs[name] = text if text is not None and text.strip() else default
    for name in VANILLA_VARIANTS:
        text = lookup(f"{name}_VANILLA")
        if text is not None and text.strip():
            exprs[f"{name}_VANILLA"] = text
    num_slots = _int(lookup, "NUM_SLOTS")
    ids = slot_ids or tuple(range(1, max(num_slots, 1) + 1))
    slot_exprs: dict[int, dict[str, str]] = {}
    for sid in ids:
        for name in list(EXPR_DEFAULTS) + [f"{n}_VANILLA" for n in VANILLA_VARIANTS]:
            text = lookup(f"SLOT{sid}_{name}")
            if text is not None and text.strip():
                slot_exprs.setdefault(sid, {})[name] = text
    latch = _names(lookup, "STARTD_LATCH_EXPRS")
    extra: dict[str, str] = {}
    for name in _names(lookup, "STARTD_ATTRS") + _names(lookup, "STARTD_EXPRS") + latch:
        text = lookup(name)
        if text is not None and text.strip():
            extra[name] = text
    partitionable = _bool(lookup, "SLOT_TYPE_1_PARTITIONABLE", False)
    if partitionable:
        num_slots = _int_or(lookup, "NUM_SLOTS_TYPE_1", 1)
    return PolicySettings(
        exprs=exprs, slot_exprs=slot_exprs, extra_attrs=extra, latch_exprs=latch,
        slot_attrs=_names(lookup, "STARTD_SLOT_ATTRS"),
        killing_timeout=_int(lookup, "KILLING_TIMEOUT"),
        match_timeout=_int(lookup, "MATCH_TIMEOUT"),
        polling_interval=_int(lookup, "POLLING_INTERVAL"),
        update_interval=_int(lookup, "UPDATE_INTERVAL"),
        alive_interval=_int(lookup, "ALIVE_INTERVAL"),
        max_claim_alives_missed=_int(lookup, "MAX_CLAIM_ALIVES_MISSED"),
        hibernate_check_interval=_int(lookup, "HIBERNATE_CHECK_INTERVAL"),
        enable_backfill=_bool(lookup, "ENABLE_BACKFILL", False),
        num_cpus=_int(lookup, "NUM_CPUS"), memory=_int(lookup, "MEMORY"),
        disk=_int(lookup, "DISK"), num_slots=num_slots, partitionable=partitionable,
        slot_layer=layer_settings(lookup, custom),
    )


def _int_or(lookup: Lookup, name: str, default: int) -> int:
    text = lookup(name)
    if text is None or not text.strip():
        return default
    value = _arith(text.strip())
    if value is None:
        raise PolicyError(f"{name} must be an integer, not {text!r}", expression=name)
    return value


def settings_from_dict(knobs: Mapping[str, Any]) -> PolicySettings:
    """Settings from a plain mapping of knob names (case-insensitive) to text."""
    folded = {k.upper(): str(v) for k, v in knobs.items()}
    return settings_from_lookup(lambda name: folded.get(name.upper()))
