"""Type tests, conversions (int, real, string, bool) and the value helpers they share.

HTCondor's C++ strings are byte strings and its numbers are 64-bit; the helpers here
reproduce that where results show it (integer wrap-around, ``strtod`` prefixes, the
``%.15E`` real format that ``string()`` and ``strcat()`` use).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from condorpy.classad.functions.refprint import real_text, record_text
from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.lexer import INT_MAX, INT_MIN
from condorpy.classad.ops import wrap
from condorpy.classad.scope import Scope
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined, Value

TABLE = FunctionTable()

# 64-bit two's-complement wrap, as C++ integer arithmetic does (one definition, in ops).
wrap_int = wrap

_SCALARS = (int, float, str, bool, list, AbsTime, RelTime)


def is_record(v: object) -> bool:
    """A ClassAd record: anything that is not one of the plain value types."""
    return not isinstance(v, _SCALARS) and v is not Undefined and v is not Error


def record_size(v: Any) -> int:
    return len(v)


def wrap_int32(n: int) -> int:
    """C's conversion of a 64-bit integer to a 32-bit ``int``."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= (1 << 31) else n


def real_to_int(x: float) -> int:
    """C++ ``(long long)x``: truncation; out of range and NaN give INT64_MIN on x86-64."""
    if math.isnan(x) or x >= 9.223372036854775807e18 or x < -9.223372036854775808e18:
        return INT_MIN
    return int(x)


_STRTOD = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)(?:"
    r"(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    r"|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?))", re.IGNORECASE)


def strtod_prefix(s: str) -> float | None:
    """The number C's ``strtod`` reads at the start of ``s``; None if it reads nothing."""
    m = _STRTOD.match(s)
    if m is None:
        return None
    sign = -1.0 if m.group(1) == "-" else 1.0
    if m.group(2):
        h = m.group(2)
        if h.endswith(("x", "X")):
            return 0.0 * sign
        try:
            return sign * float.fromhex(h)
        except (ValueError, OverflowError):
            return sign * math.inf
    if m.group(3):
        # a dangling exponent such as "1e" is not part of the number
        return sign * float(m.group(3))
    word = m.group(4).lower()
    return sign * (math.nan if word.startswith("nan") else math.inf)


def format_real(x: float) -> str:
    """A real as ``string()``/``strcat()`` print it."""
    if math.isnan(x):
        return 'real("NaN")'
    if math.isinf(x):
        return 'real("INF")' if x > 0 else 'real("-INF")'
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    return "%.15E" % x


def format_reltime(secs: float) -> str:
    """A relative time in HTCondor's ``[-][D+][HH:][MM:]SS`` form (whole seconds)."""
    neg = secs < 0
    total = int(abs(secs))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    out = "-" if neg and total else ""
    if days:
        out += f"{days}+{hours:02d}:{minutes:02d}:{seconds:02d}"
    elif hours:
        out += f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    elif minutes:
        out += f"{minutes:02d}:{seconds:02d}"
    else:
        out += f"{seconds:02d}"
    return out


def format_abstime(t: AbsTime) -> str:
    """An absolute time in ISO 8601 form with its zone offset (``-00:00`` for UTC)."""
    import time as _time
    epoch = int(t.epoch)
    tm = _time.gmtime(epoch + t.tz_offset)
    off = t.tz_offset
    sign = "+" if off > 0 else "-"
    off = abs(off)
    return (f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d}T"
            f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}"
            f"{sign}{off // 3600:02d}:{off % 3600 // 60:02d}")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r",
            "\b": "\\b", "\f": "\\f"}


def quote_string(s: str) -> str:
    return '"' + "".join(_ESCAPES.get(c, c) for c in s) + '"'


def unparse_value(v: Any) -> str:
    """A value in ClassAd literal syntax, as it appears inside a printed list or record:
    the reference's spelling (reals as ``%.15E``, ``{  }`` and ``[  ]`` when empty)."""
    t = type(v)
    if t is str:
        return quote_string(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return real_text(v)
    if t is list:
        return "{ " + ",".join(unparse_value(e) for e in v) + " }"
    if t is AbsTime:
        return f'absTime("{format_abstime(v)}")'
    if t is RelTime:
        return f'relTime("{format_reltime(v.seconds)}")'
    if v is Undefined:
        return "undefined"
    if v is Error:
        return "error"
    if isinstance(v, Scope):
        # a record prints its attributes' expressions, unevaluated, as the reference does
        exprs = v.exprs
        return record_text([(name, exprs[lc].node) for lc, name in v.spelling.items()])
    if isinstance(v, Mapping):
        return "[ " + "; ".join(f"{k} = {unparse_value(x)}" for k, x in v.items()) + " ]"
    return str(v)


def to_string(v: Any) -> str | None:
    """A value converted to text as ``string()`` does; None for undefined/error."""
    t = type(v)
    if t is str:
        return v  # type: ignore[no-any-return]
    if t is float:
        return format_real(v)
    if t is AbsTime:
        return format_abstime(v)
    if t is RelTime:
        return format_reltime(v.seconds)
    if v is Undefined or v is Error:
        return None
    return unparse_value(v)


def to_number(v: Any) -> int | float | None:
    """Numbers and booleans as numbers; anything else None."""
    t = type(v)
    if t is int or t is float:
        return v  # type: ignore[no-any-return]
    if t is bool:
        return 1 if v else 0
    return None


# --- type tests ---------------------------------------------------------------------

@TABLE.strict("isUndefined", 1, 1)
def is_undefined(v: Value) -> Value:
    return v is Undefined


@TABLE.strict("isError", 1, 1)
def is_error(v: Value) -> Value:
    return v is Error


@TABLE.strict("isString", 1, 1)
def is_string(v: Value) -> Value:
    return type(v) is str


@TABLE.strict("isInteger", 1, 1)
def is_integer(v: Value) -> Value:
    return type(v) is int


@TABLE.strict("isReal", 1, 1)
def is_real(v: Value) -> Value:
    return type(v) is float


@TABLE.strict("isBoolean", 1, 1)
def is_boolean(v: Value) -> Value:
    return type(v) is bool


@TABLE.strict("isList", 1, 1)
def is_list(v: Value) -> Value:
    return type(v) is list


@TABLE.strict("isClassAd", 1, 1)
def is_classad(v: Value) -> Value:
    return is_record(v)


@TABLE.strict("isAbstime", 1, 1)
def is_abstime(v: Value) -> Value:
    return type(v) is AbsTime


@TABLE.strict("isReltime", 1, 1)
def is_reltime(v: Value) -> Value:
    return type(v) is RelTime


# --- conversions ----------------------------------------------------------------------

@TABLE.strict("int", 1, 1)
def to_int(v: Value) -> Value:
    t = type(v)
    if t is int:
        return v
    if t is bool:
        return 1 if v else 0
    if t is float:
        return real_to_int(v)  # type: ignore[arg-type]
    if t is str:
        x = strtod_prefix(v)  # type: ignore[arg-type]
        return Error if x is None else real_to_int(x)
    if t is AbsTime:
        return int(v.epoch)  # type: ignore[union-attr]
    if t is RelTime:
        return real_to_int(v.seconds)  # type: ignore[union-attr]
    if v is Undefined:
        return Undefined
    return Error


@TABLE.strict("real", 1, 1)
def to_real(v: Value) -> Value:
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)  # type: ignore[arg-type]
    if t is bool:
        return 1.0 if v else 0.0
    if t is str:
        x = strtod_prefix(v)  # type: ignore[arg-type]
        return Error if x is None else x
    if t is AbsTime:
        return float(int(v.epoch))  # type: ignore[union-attr]
    if t is RelTime:
        return float(real_to_int(v.seconds))  # type: ignore[union-attr]
    if v is Undefined:
        return Undefined
    return Error


@TABLE.strict("string", 1, 1)
def to_string_fn(v: Value) -> Value:
    s = to_string(v)
    if s is None:
        return v
    return s


@TABLE.strict("bool", 1, 1)
def to_bool(v: Value) -> Value:
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    if t is RelTime:
        return v.seconds != 0  # type: ignore[union-attr]
    if t is str:
        low = v.lower()  # type: ignore[union-attr]
        if low == "true":
            return True
        if low == "false":
            return False
        return Undefined
    if v is Undefined:
        return Undefined
    return Error
