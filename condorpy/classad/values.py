"""Run-time values of the ClassAd language.

Evaluated values are plain Python objects wherever a Python type fits exactly, which
keeps the evaluator fast and the results easy to use:

=================  ===========================================
ClassAd type       Python representation
=================  ===========================================
integer            ``int`` (never ``bool``: test with ``type(v) is int``)
real               ``float``
string             ``str``
boolean            ``bool``
list               ``list`` of values (never mutated once built)
record / ClassAd   :class:`condorpy.classad.ClassAd`
absolute time      :class:`AbsTime`
relative time      :class:`RelTime`
undefined          :data:`Undefined` (a singleton)
error              :data:`Error` (a singleton)
=================  ===========================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeAlias


class _UndefinedType:
    __slots__ = ()
    _instance: "_UndefinedType | None" = None

    def __new__(cls) -> "_UndefinedType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Undefined"

    def __bool__(self) -> bool:
        raise TypeError("Undefined has no truth value; test `v is Undefined`")

    def __reduce__(self) -> str:
        return "Undefined"


class _ErrorType:
    __slots__ = ()
    _instance: "_ErrorType | None" = None

    def __new__(cls) -> "_ErrorType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Error"

    def __bool__(self) -> bool:
        raise TypeError("Error has no truth value; test `v is Error`")

    def __reduce__(self) -> str:
        return "Error"


Undefined: Final = _UndefinedType()
Error: Final = _ErrorType()


@dataclass(frozen=True, slots=True)
class AbsTime:
    """An absolute time: seconds since the epoch (UTC) plus the zone offset in seconds east of UTC."""

    epoch: float
    tz_offset: int = 0


@dataclass(frozen=True, slots=True)
class RelTime:
    """A relative time (a duration) in seconds."""

    seconds: float


# ``Value`` is what evaluation returns. ``Any`` stands in for ClassAd to avoid an import
# cycle; code that needs the record type imports ClassAd from the package.
Value: TypeAlias = "int | float | str | bool | list[Any] | AbsTime | RelTime | _UndefinedType | _ErrorType | Any"


def is_number(v: object) -> bool:
    t = type(v)
    return t is int or t is float


def type_name(v: object) -> str:
    """The ClassAd type name of a value, as error messages and isX() functions use it."""
    t = type(v)
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    if t is float:
        return "real"
    if t is str:
        return "string"
    if t is list:
        return "list"
    if t is AbsTime:
        return "absolute time"
    if t is RelTime:
        return "relative time"
    if v is Undefined:
        return "undefined"
    if v is Error:
        return "error"
    return "classad"
