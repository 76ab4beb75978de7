"""StarterSettings from configuration knobs, given a lookup function, so that the
starter does not depend on where the configuration comes from (condor_config files,
``_CONDOR_<NAME>`` environment variables, command-line overrides)."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable

from condorpy.errors import ConfigError
from condorpy.starter.settings import MemoryPolicy, StarterSettings

Lookup = Callable[[str], "str | None"]
_SLOT_USER = re.compile(r"^SLOT(\d+)_USER$", re.IGNORECASE)


def _bool(lookup: Lookup, name: str, default: bool) -> bool:
    raw = lookup(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip().lower()
    if text in ("true", "yes", "1", "t", "y"):
        return True
    if text in ("false", "no", "0", "f", "n"):
        return False
    raise ConfigError(f"{name} = {raw!r} is not a boolean", name=name)


def _int(lookup: Lookup, name: str) -> int | None:
    raw = lookup(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(float(raw.strip()))
    except ValueError:
        raise ConfigError(f"{name} = {raw!r} is not a number", name=name) from None


def _float(lookup: Lookup, name: str, default: float) -> float:
    raw = lookup(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} = {raw!r} is not a number", name=name) from None


def settings_from_knobs(lookup: Lookup, *, execute: str, names: list[str],
                        custom_hard_mb: int | None = None,
                        custom_soft_mb: int | None = None) -> StarterSettings:
    """``names`` lists every knob name defined, to find the SLOT<N>_USER family."""
    policy_raw = (lookup("CGROUP_MEMORY_LIMIT_POLICY") or "none").strip().lower()
    try:
        policy = MemoryPolicy(policy_raw)
    except ValueError:
        raise ConfigError(f"CGROUP_MEMORY_LIMIT_POLICY = {policy_raw!r} is not one of "
                          "none, hard, soft, custom",
                          name="CGROUP_MEMORY_LIMIT_POLICY") from None
    slot_users: dict[int, str] = {}
    for name in names:
        m = _SLOT_USER.match(name)
        if m:
            value = (lookup(name) or "").strip()
            if value:
                slot_users[int(m.group(1))] = value
    pids = _int(lookup, "CONDORPY_CGROUP_PIDS_MAX")
    return StarterSettings(
        execute=execute, memory_policy=policy,
        disable_swap=_bool(lookup, "DISABLE_SWAP_FOR_JOB", False),
        machine_memory_mb=_int(lookup, "MEMORY"),
        custom_hard_mb=custom_hard_mb, custom_soft_mb=custom_soft_mb,
        pids_max=pids if pids else None,
        enforce_cpu_max=_bool(lookup, "CONDORPY_CGROUP_CPU_MAX", False),
        use_pid_namespaces=_bool(lookup, "USE_PID_NAMESPACES", False),
        allow_runas_owner=_bool(lookup, "STARTER_ALLOW_RUNAS_OWNER", True),
        slot_users=slot_users,
        allow_root_jobs=_bool(lookup, "CONDORPY_ALLOW_ROOT_JOBS", False),
        cgroup_base=(lookup("BASE_CGROUP") or "").strip() or None,
        use_cgroups=_bool(lookup, "CONDORPY_USE_CGROUPS", True),
        kill_timeout_s=_float(lookup, "KILLING_TIMEOUT", 30.0),
        update_interval_s=_float(lookup, "STARTER_UPDATE_INTERVAL", 5.0),
        hostname=(lookup("FULL_HOSTNAME") or socket.getfqdn()).strip())
