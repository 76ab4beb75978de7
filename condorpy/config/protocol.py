"""What the packages above the configuration layer type against.

:class:`condorpy.config.Config` satisfies both protocols; tests and stand-ins build a
real one with :meth:`Config.from_mapping`, so every typed read goes through the one
reader and a bad value names its knob, file and line the same way everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, overload

from condorpy.errors import ConfigError

if TYPE_CHECKING:
    from condorpy.classad import Expr


class KnobTexts(Protocol):
    """Expanded knob text by name, and the names defined: enough for code that only
    passes text on (resource inventories, expressions handed to the ClassAd layer)."""

    def get(self, name: str) -> str | None: ...

    def names(self) -> list[str]: ...


class KnobReader(KnobTexts, Protocol):
    """The one typed knob reader. Each typed getter returns ``default`` when the knob is
    undefined or empty and raises :class:`ConfigError` (``NAME = value at FILE:LINE is
    not an integer``) when its value cannot be read as that type."""

    def where(self, name: str) -> tuple[str, int] | None: ...

    def slot_get(self, name: str, slot_id: int, slot_type: int | None = None,
                 default: str | None = None) -> str | None: ...

    def slot_name(self, name: str, slot_id: int, slot_type: int | None = None) -> str: ...

    @overload
    def get_int(self, name: str) -> int | None: ...
    @overload
    def get_int(self, name: str, default: int) -> int: ...

    @overload
    def get_float(self, name: str) -> float | None: ...
    @overload
    def get_float(self, name: str, default: float) -> float: ...

    @overload
    def get_bool(self, name: str) -> bool | None: ...
    @overload
    def get_bool(self, name: str, default: bool) -> bool: ...

    @overload
    def get_duration(self, name: str) -> float | None: ...
    @overload
    def get_duration(self, name: str, default: float) -> float: ...

    # A knob with a built-in default (config/defaults.py) is read with these: its
    # default lives in the table only. No value and no default raises ConfigError.
    def knob_int(self, name: str) -> int: ...

    def knob_float(self, name: str) -> float: ...

    def knob_bool(self, name: str) -> bool: ...

    def get_list(self, name: str, default: list[str] | None = None) -> list[str]: ...

    def get_expr(self, name: str, default: str | Expr | None = None) -> Expr | None: ...

    def invalid(self, name: str, what: str) -> ConfigError: ...
