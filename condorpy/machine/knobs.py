"""The little of the configuration the probes read, behind a Protocol.

The probes need only ``get(name) -> str | None``; typed reads are done here so the
machine layer works with :class:`condorpy.config.Config` and with any mapping-like
stand-in (tests use :class:`DictConfig`). Values the user got wrong raise
:class:`KnobError`, which names the knob.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Protocol

from condorpy.errors import ConfigError


class KnobSource(Protocol):
    def get(self, name: str) -> str | None: ...


class KnobError(ConfigError):
    """A knob the machine layer reads has a value it cannot use."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}", name=name)


class DictConfig:
    """A case-insensitive, already-expanded configuration: enough for probes and tests."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = {k.upper(): (k, v) for k, v in (values or {}).items()}

    def get(self, name: str) -> str | None:
        hit = self._values.get(name.upper())
        return None if hit is None else hit[1]

    def names(self) -> list[str]:
        return [k for k, _ in self._values.values()]


def get_str(cfg: KnobSource, name: str, default: str | None = None) -> str | None:
    v = cfg.get(name)
    if v is None:
        return default
    v = v.strip()
    return v if v else default


def get_int(cfg: KnobSource, name: str, default: int) -> int:
    v = get_str(cfg, name)
    if v is None:
        return default
    try:
        return int(v)
    except ValueError:
        pass
    # knobs such as MEMORY = $(DETECTED_MEMORY) / 2 are ClassAd expressions once expanded
    result = _evaluate(v)
    if type(result) is int or type(result) is float:
        return int(result)
    raise KnobError(name, f"expected an integer, got {v!r}")


def _evaluate(text: str) -> object:
    from condorpy.classad import parse_expr
    from condorpy.errors import ClassAdError
    try:
        return parse_expr(text).evaluate()
    except ClassAdError:
        return None


def get_bool(cfg: KnobSource, name: str, default: bool) -> bool:
    v = get_str(cfg, name)
    if v is None:
        return default
    low = v.lower()
    if low in ("true", "t", "yes", "y", "1", "on"):
        return True
    if low in ("false", "f", "no", "n", "0", "off"):
        return False
    raise KnobError(name, f"expected a boolean, got {v!r}")


def get_list(cfg: KnobSource, name: str, default: Iterable[str] = ()) -> list[str]:
    v = get_str(cfg, name)
    if v is None:
        return list(default)
    return [item for item in re.split(r"[\s,]+", v) if item]


def knob_names(cfg: KnobSource) -> list[str]:
    """Every knob name the configuration defines (for MACHINE_RESOURCE_* and SLOT<N>_EXECUTE)."""
    for attr in ("names", "keys"):
        fn = getattr(cfg, attr, None)
        if callable(fn):
            return [str(n) for n in fn()]
    try:
        return [str(n) for n in iter(cfg)]  # type: ignore[call-overload]
    except TypeError:
        return []
