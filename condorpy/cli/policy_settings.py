"""Policy settings from a configuration file or text, through :mod:`condorpy.config`
(templates such as ``use POLICY : Desktop``, macro expansion, built-in defaults).

It lives with the command front ends because it reads files and, for custom resources,
uses the machine probes' parsers; the policy engine below it stays pure."""

from __future__ import annotations

import shlex
from pathlib import Path, PurePath
from typing import Any

from condorpy.config import Config, DetectedFacts
from condorpy.errors import ConfigError
from condorpy.inputs import read_text
from condorpy.policy.settings import PolicySettings, settings_from_lookup
from condorpy.slots.inventory import CustomResource

# The machine a simulation sees unless its configuration says otherwise, so that a
# timeline gives the same answer wherever it runs.
VIRTUAL_HOST = DetectedFacts(full_hostname="localhost", cpus=1, cores=1, physical_cpus=1,
                             memory_mb=1024)


def _simulated_command(value: str) -> bool:
    try:
        argv = shlex.split(value)
    except ValueError:
        return False
    return bool(argv) and PurePath(argv[0]).name == "condor_gpu_discovery" \
        and any(a.lower().startswith("-sim") for a in argv[1:])


class _Reproducible:
    """A configuration view without the resource sources that read this host."""

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg

    def names(self) -> list[str]:
        names = getattr(self._cfg, "names", None)
        return [str(n) for n in names()] if callable(names) else []

    def get(self, name: str) -> str | None:
        value: str | None = self._cfg.get(name)
        up = name.upper()
        if up == "STARTD_DETECT_GPUS":
            if value is None:
                extra = self._cfg.get("GPU_DISCOVERY_EXTRA") or ""
                value = f"-properties {extra}"
            return value if "-sim" in value.lower() else "false"
        if value is not None and up.startswith("MACHINE_RESOURCE_INVENTORY_") \
                and not _simulated_command(value):
            return None
        return value


def reproducible_resources(cfg: Any) -> dict[str, CustomResource]:
    """Custom resources of a configuration that do not depend on the host."""
    from condorpy.machine.resources import custom_resources  # the I/O shell, used purely
    from condorpy.machine.roots import HostRoots
    return custom_resources(_Reproducible(cfg), HostRoots(env={}, use_nvml=False))


def settings_from_text(text: str, source: str = "<config>", *,
                       this_host: bool = False) -> PolicySettings:
    """Settings from configuration text; DETECTED_* describe this host when
    ``this_host``, else :data:`VIRTUAL_HOST`. Custom resources are those the
    configuration defines without reading the host (MACHINE_RESOURCE_<name>, GPU
    discovery with -simulate), in both cases."""
    if this_host:
        cfg = Config.from_text(text, source=source, env={})
    else:
        cfg = Config.from_text(text, source=source, env={}, detected=VIRTUAL_HOST)
    return settings_from_lookup(cfg.get, custom=reproducible_resources(cfg))


def settings_from_file(path: str | Path, *, this_host: bool = False) -> PolicySettings:
    p = Path(path)
    text = read_text(str(p), f"configuration file {p}", on_os_error=lambda why: ConfigError(
        f"cannot read configuration: {why}", file=str(p)))
    return settings_from_text(text, str(p), this_host=this_host)
