"""The policy knobs, read once from a configuration into a frozen record.

Every value comes through the configuration's one typed reader
(:class:`condorpy.config.Config`), so a bad value names its file and line exactly as
every other command reports it. Per-slot expressions resolve as the slot layer's do:
``SLOT<N>_<name>``, then ``SLOT_TYPE_<T>_<name>``, then ``<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from condorpy.classad import parse_expr
from condorpy.config import Config
from condorpy.errors import ClassAdError, ConfigError

# Policy expressions the slot ad carries, with HTCondor 25.x's built-in defaults.
EXPR_DEFAULTS: dict[str, str] = {
    "START": "True",
    "IS_OWNER": "False",
    "RANK": "0.0",
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
    "WANT_HOLD": "False",
}

# Policy expressions the slot ad carries only when configured (no built-in default):
# what a hold the startd's WANT_HOLD asks for says (`use POLICY : WANT_HOLD_IF`).
OPTIONAL_EXPRS = ("WANT_HOLD_REASON", "WANT_HOLD_SUBCODE")

# Expressions that have a _VANILLA variant chosen for JobUniverse 5.
VANILLA_VARIANTS = ("WANT_SUSPEND", "SUSPEND", "CONTINUE", "PREEMPT", "WANT_VACATE", "KILL")


@dataclass(frozen=True, kw_only=True)
class PolicySettings:
    """Everything the engine reads from the configuration (the layout is the slot
    layer's: :class:`condorpy.slots.manager.SlotManager`).

    The timing knobs are public for every part of the daemon (the pool side, the
    event loop): they read ``engine.settings`` instead of reading the knobs again.
    They have no defaults here: :func:`settings_from_config` takes each from the
    configuration, whose built-in table (:mod:`condorpy.config.defaults`) is the one
    place a default lives."""

    exprs: Mapping[str, str]                  # slot-ad policy expressions (and _VANILLA ones)
    slot_exprs: Mapping[int, Mapping[str, str]] = field(default_factory=dict)  # by SlotID
    extra_attrs: Mapping[str, str] = field(default_factory=dict)  # latch sources
    latch_exprs: tuple[str, ...] = ()
    # job attributes a claimed slot's ad carries: STARTD_JOB_ATTRS, STARTD_JOB_EXPRS,
    # SYSTEM_STARTD_JOB_ATTRS
    job_attrs: tuple[str, ...] = ()
    killing_timeout: int          # KILLING_TIMEOUT, seconds
    match_timeout: int            # MATCH_TIMEOUT, seconds
    polling_interval: int         # POLLING_INTERVAL, seconds between cycles while claimed
    update_interval: int          # UPDATE_INTERVAL, seconds between cycles otherwise
    alive_interval: int           # ALIVE_INTERVAL, seconds
    max_claim_alives_missed: int  # MAX_CLAIM_ALIVES_MISSED
    hibernate_check_interval: int  # HIBERNATE_CHECK_INTERVAL, seconds (0: never)
    enable_backfill: bool         # ENABLE_BACKFILL
    # CONDORPY_EVAL_STEP_LIMIT: steps any one evaluation of an expression that a job,
    # a hook or a pool brought may take (classad/budget.py)
    eval_step_limit: int

    def expr_for(self, name: str, slot_id: int) -> str | None:
        per_slot = self.slot_exprs.get(slot_id, {})
        if name in per_slot:
            return per_slot[name]
        return self.exprs.get(name)


def _check_compiles(cfg: Config, exprs: Mapping[str, str],
                    slot_exprs: Mapping[int, Mapping[str, str]],
                    extra: Mapping[str, str], slot_types: Mapping[int, int]) -> None:
    """Every expression the slot ads will carry parses, or a ConfigError names the
    knob: settings are all good or not made at all, so a reconfig that does not parse
    changes nothing (a half-installed START failed every later claim, and each failed
    carve kept its d-slot's resources)."""
    named = [(n, n, t) for n, t in (*exprs.items(), *extra.items())]
    for sid, table in slot_exprs.items():
        for name, text in table.items():
            # the knob that set it: SLOT<N>_<name>, else SLOT_TYPE_<T>_<name>
            knob = next((k for k in (f"SLOT{sid}_{name}",
                                     f"SLOT_TYPE_{slot_types.get(sid, 0)}_{name}")
                         if cfg.where(k) is not None), name)
            named.append((knob, name, text))
    for knob, attr, text in named:
        try:
            parse_expr(text, source=knob, attribute=attr)
        except ClassAdError as exc:
            where = cfg.where(knob)
            raise ConfigError(f"{knob} is not a ClassAd expression: {exc}",
                              file=where[0] if where else None,
                              line=where[1] if where else None, name=knob) from None


# The knobs read here whose defaults the built-in table must hold (tested).
TIMING_KNOBS = ("KILLING_TIMEOUT", "MATCH_TIMEOUT", "POLLING_INTERVAL", "UPDATE_INTERVAL",
                "ALIVE_INTERVAL", "MAX_CLAIM_ALIVES_MISSED", "HIBERNATE_CHECK_INTERVAL")


def _int(cfg: Config, name: str) -> int:
    """An integer knob, its default the configuration's built-in one (a typed read
    without a default of its own falls back to the table)."""
    value = cfg.get_int(name)
    if value is None:
        raise ConfigError(f"{name} has no built-in default", name=name)
    return value


def settings_from_config(cfg: Config, slot_types: Mapping[int, int] | None = None
                         ) -> PolicySettings:
    """Read every policy knob. ``slot_types`` maps each SlotID of the layout to its
    SlotTypeID, for the per-slot and per-type expressions."""
    exprs: dict[str, str] = {}
    for name, default in EXPR_DEFAULTS.items():
        text = cfg.get(name)
        if text is None and cfg.where(name) is not None:
            # Set to nothing (as `use POLICY : Desktop` does to CLAIM_WORKLIFE): HTCondor
            # leaves the attribute out of the slot ad, so it is undefined (no limit).
            continue
        exprs[name] = text or default
    optional = [f"{n}_VANILLA" for n in VANILLA_VARIANTS] + list(OPTIONAL_EXPRS)
    for name in optional:
        text = cfg.get(name)
        if text:
            exprs[name] = text
    slot_exprs: dict[int, dict[str, str]] = {}
    names = list(EXPR_DEFAULTS) + optional
    for sid, tid in (slot_types or {}).items():
        for name in names:
            text = cfg.slot_get(name, sid, tid if tid > 0 else None)
            if text and text != exprs.get(name):
                slot_exprs.setdefault(sid, {})[name] = text
    latch = tuple(cfg.get_list("STARTD_LATCH_EXPRS"))
    extra: dict[str, str] = {}
    for name in latch:
        text = cfg.get(name)
        if text:
            extra[name] = text
    _check_compiles(cfg, exprs, slot_exprs, extra, slot_types or {})
    job_attrs: dict[str, str] = {}
    for knob in ("STARTD_JOB_ATTRS", "STARTD_JOB_EXPRS", "SYSTEM_STARTD_JOB_ATTRS"):
        for name in cfg.get_list(knob):
            job_attrs.setdefault(name.lower(), name)
    return PolicySettings(
        exprs=exprs, slot_exprs=slot_exprs, extra_attrs=extra, latch_exprs=latch,
        job_attrs=tuple(job_attrs.values()),
        killing_timeout=_int(cfg, "KILLING_TIMEOUT"),
        match_timeout=_int(cfg, "MATCH_TIMEOUT"),
        polling_interval=_int(cfg, "POLLING_INTERVAL"),
        update_interval=_int(cfg, "UPDATE_INTERVAL"),
        alive_interval=_int(cfg, "ALIVE_INTERVAL"),
        max_claim_alives_missed=_int(cfg, "MAX_CLAIM_ALIVES_MISSED"),
        hibernate_check_interval=_int(cfg, "HIBERNATE_CHECK_INTERVAL"),
        enable_backfill=bool(cfg.get_bool("ENABLE_BACKFILL")),
        eval_step_limit=_step_limit(cfg),
    )


def _step_limit(cfg: Config) -> int:
    steps = _int(cfg, "CONDORPY_EVAL_STEP_LIMIT")
    if steps < 1:
        raise cfg.invalid("CONDORPY_EVAL_STEP_LIMIT", "a positive integer")
    return steps
