"""Typed reads of the knobs the slot layer uses, over anything with ``get(name)``.

The slot layer needs only ``get(name) -> str | None`` (already macro-expanded), so it
works with :class:`condorpy.config.Config` and with small stand-ins. Bad values raise
:class:`SlotKnobError`, which names the knob.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from condorpy.errors import ConfigError


class KnobSource(Protocol):
    def get(self, name: str) -> str | None: ...


class SlotKnobError(ConfigError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}", name=name)


_TRUE = {"true", "yes", "t", "y", "1", "on"}
_FALSE = {"false", "no", "f", "n", "0", "off"}


@dataclass(frozen=True)
class Knobs:
    source: KnobSource

    def text(self, name: str) -> str | None:
        value = self.source.get(name)
        if value is None or not value.strip():
            return None
        return value.strip()

    def integer(self, name: str, default: int) -> int:
        value = self.text(name)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            pass
        result = _evaluate_constant(value)
        if type(result) is int or (type(result) is float and result == int(result)):
            return int(result)
        raise SlotKnobError(name, f"expected an integer, got {value!r}")

    def boolean(self, name: str, default: bool) -> bool:
        value = self.text(name)
        if value is None:
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        result = _evaluate_constant(value)
        if isinstance(result, bool):
            return result
        raise SlotKnobError(name, f"expected True or False, got {value!r}")

    def names(self, name: str) -> list[str]:
        """A list knob (comma and/or space separated)."""
        value = self.text(name) or ""
        return [item for item in value.replace(",", " ").split() if item]

    def for_slot(self, name: str, slot_id: int, type_id: int) -> str | None:
        """``SLOT<N>_<name>``, else ``SLOT_TYPE_<T>_<name>``, else ``<name>``."""
        for candidate in (f"SLOT{slot_id}_{name}",
                          f"SLOT_TYPE_{type_id}_{name}" if type_id > 0 else None, name):
            if candidate is not None and (value := self.text(candidate)) is not None:
                return value
        return None


def _evaluate_constant(text: str) -> object:
    """Knobs such as ``NUM_SLOTS_TYPE_1 = $(DETECTED_CPUS) / 2`` are ClassAd expressions."""
    from condorpy.classad import parse_expr  # the config layer already depends on it
    from condorpy.errors import ClassAdError
    try:
        return parse_expr(text).evaluate()
    except ClassAdError:
        return None
