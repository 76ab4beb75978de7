"""Policy settings from a configuration file or text, through :mod:`condorpy.config`
(templates such as ``use POLICY : Desktop``, macro expansion, built-in defaults)."""

from __future__ import annotations

from pathlib import Path

from condorpy.config import Config, DetectedFacts
from condorpy.errors import ConfigError
from condorpy.policy.settings import PolicySettings, settings_from_lookup

# The machine a simulation sees unless its configuration says otherwise, so that a
# timeline gives the same answer wherever it runs.
VIRTUAL_HOST = DetectedFacts(full_hostname="localhost", cpus=1, cores=1, physical_cpus=1,
                             memory_mb=1024)


def settings_from_text(text: str, source: str = "<config>", *,
                       this_host: bool = False) -> PolicySettings:
    """Settings from configuration text; DETECTED_* describe this host when
    ``this_host``, else :data:`VIRTUAL_HOST`."""
    if this_host:
        cfg = Config.from_text(text, source=source, env={})
    else:
        cfg = Config.from_text(text, source=source, env={}, detected=VIRTUAL_HOST)
    return settings_from_lookup(cfg.get)


def settings_from_file(path: str | Path, *, this_host: bool = False) -> PolicySettings:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read configuration: {exc.strerror}", file=str(p)) from None
    return settings_from_text(text, str(p), this_host=this_host)
