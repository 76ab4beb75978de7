"""Time functions: the clock, absolute/relative time conversions, broken-down times,
``formatTime`` and ``interval``.

The local time zone comes from ``CallContext.tz_offset`` when set, otherwise from the
process's zone (what HTCondor uses). Absolute times carry whole seconds, as in HTCondor.
"""

from __future__ import annotations

import re
import time as _time
from typing import Callable

from condorpy.classad.functions.registry import CallContext, FunctionTable
from condorpy.classad.functions.types import (
    real_to_int, strtod_prefix, wrap_int32,
)
from condorpy.classad.timetext import (local_offset, parse_abstime_text,  # noqa: F401
                                       parse_reltime_text)
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined, Value

TABLE = FunctionTable()


def _int32(x: float) -> int:
    # absTime(real) goes through a 32-bit int in HTCondor: out-of-range reals give INT_MIN
    if x != x or x >= 2147483648.0 or x <= -2147483649.0:
        return -2147483648
    return int(x)


def _broken_down(t: AbsTime) -> _time.struct_time | None:
    try:
        return _time.gmtime(int(t.epoch) + t.tz_offset)
    except (OverflowError, OSError, ValueError):
        return None


# --- the clock ------------------------------------------------------------------------

@TABLE.strict("time", 0, 0, needs_ctx=True, pure=False)
def time_(ctx: CallContext) -> Value:
    return int(ctx.now())


@TABLE.strict("currentTime", 0, 0, needs_ctx=True, pure=False)
def current_time(ctx: CallContext) -> Value:
    now = int(ctx.now())
    return AbsTime(now, local_offset(ctx, now))


@TABLE.strict("timeZoneOffset", 0, 0, needs_ctx=True, pure=False)
def time_zone_offset(ctx: CallContext) -> Value:
    return RelTime(float(local_offset(ctx, ctx.now())))


@TABLE.strict("dayTime", 0, 0, needs_ctx=True, pure=False)
def day_time(ctx: CallContext) -> Value:
    now = int(ctx.now())
    return RelTime(float((now + local_offset(ctx, now)) % 86400))


# --- conversions ----------------------------------------------------------------------

@TABLE.strict("absTime", 0, 2, needs_ctx=True, pure=False)
def abs_time(ctx: CallContext, v: Value = None, offset: Value = None) -> Value:
    if v is None:
        now = int(ctx.now())
        return AbsTime(now, local_offset(ctx, now))
    if offset is not None and type(offset) not in (int, float, RelTime):
        return Error
    if v is Undefined:
        return Undefined
    t = type(v)
    if t is str:
        # HTCondor reads absTime("...") of a literal string when parsing (see
        # parse_abstime_text); at run time a string argument passes through unchanged.
        return v
    if t is AbsTime:
        return v
    epoch: int
    if t is int:
        epoch = wrap_int32(v)  # type: ignore[arg-type]
    elif t is float:
        epoch = _int32(v)  # type: ignore[arg-type]
    elif t is RelTime:
        epoch = _int32(v.seconds)  # type: ignore[union-attr]
    else:
        return Error
    if offset is None:
        return AbsTime(epoch, local_offset(ctx, epoch))
    to = type(offset)
    if to is int:
        return AbsTime(epoch, wrap_int32(offset))  # type: ignore[arg-type]
    if to is float:
        return AbsTime(epoch, _int32(offset))  # type: ignore[arg-type]
    if to is RelTime:
        return AbsTime(epoch, _int32(offset.seconds))  # type: ignore[union-attr]
    return Error


@TABLE.strict("relTime", 1, 1)
def rel_time(v: Value) -> Value:
    t = type(v)
    if t is int:
        return RelTime(float(wrap_int32(v)))  # type: ignore[arg-type]
    if t is float:
        return RelTime(v)  # type: ignore[arg-type]
    if t is RelTime:
        return v
    if t is AbsTime:
        return RelTime(float(int(v.epoch)))  # type: ignore[union-attr]
    if t is str:
        # see abs_time: literal strings are read by the parser; at run time, zero
        return RelTime(0.0)
    if v is Undefined:
        return Undefined
    return Error


# --- broken-down times ----------------------------------------------------------------

def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _c_mod(a: int, b: int) -> int:
    return a - _c_div(a, b) * b


def _abs_field(ctx: CallContext, v: Value, field: str) -> Value:
    # HTCondor breaks absolute times down in the process's local zone here, not in the
    # value's own offset (splitTime and formatTime use the value's offset)
    if type(v) is not AbsTime:
        return Error
    epoch = int(v.epoch)
    tm = _broken_down(AbsTime(epoch, local_offset(ctx, epoch)))
    if tm is None:
        return Error
    return int(getattr(tm, field))


def _time_field(ctx: CallContext, v: Value, field: str, rel_unit: int,
                rel_mod: int | None) -> Value:
    if type(v) is RelTime:
        secs = _int32(v.seconds)
        if rel_mod is not None:
            secs = _c_mod(secs, rel_mod)
        return _c_div(secs, rel_unit)
    return _abs_field(ctx, v, field)


@TABLE.strict("getYear", 1, 1, needs_ctx=True, pure=False)
def get_year(ctx: CallContext, v: Value) -> Value:
    return _abs_field(ctx, v, "tm_year")


@TABLE.strict("getMonth", 1, 1, needs_ctx=True, pure=False)
def get_month(ctx: CallContext, v: Value) -> Value:
    return _abs_field(ctx, v, "tm_mon")


@TABLE.strict("getDayOfYear", 1, 1, needs_ctx=True, pure=False)
def get_day_of_year(ctx: CallContext, v: Value) -> Value:
    r = _abs_field(ctx, v, "tm_yday")
    return r - 1 if type(r) is int else r


@TABLE.strict("getDayOfMonth", 1, 1, needs_ctx=True, pure=False)
def get_day_of_month(ctx: CallContext, v: Value) -> Value:
    return _abs_field(ctx, v, "tm_mday")


@TABLE.strict("getDayOfWeek", 1, 1, needs_ctx=True, pure=False)
def get_day_of_week(ctx: CallContext, v: Value) -> Value:
    r = _abs_field(ctx, v, "tm_wday")
    # Python counts Monday as 0, C counts Sunday as 0
    return (r + 1) % 7 if type(r) is int else r


@TABLE.strict("getDays", 1, 1)
def get_days(v: Value) -> Value:
    # whole days of a relative time (HTCondor has no day count for absolute times)
    if type(v) is not RelTime:
        return Error
    return _c_div(_int32(v.seconds), 86400)


@TABLE.strict("getHours", 1, 1, needs_ctx=True, pure=False)
def get_hours(ctx: CallContext, v: Value) -> Value:
    return _time_field(ctx, v, "tm_hour", 3600, 86400)


@TABLE.strict("getMinutes", 1, 1, needs_ctx=True, pure=False)
def get_minutes(ctx: CallContext, v: Value) -> Value:
    return _time_field(ctx, v, "tm_min", 60, 3600)


@TABLE.strict("getSeconds", 1, 1, needs_ctx=True, pure=False)
def get_seconds(ctx: CallContext, v: Value) -> Value:
    return _time_field(ctx, v, "tm_sec", 1, 60)


def _split_reltime(secs: float) -> dict[str, Value]:
    # components of |secs|; the sign goes on the first non-zero component
    neg = secs < 0
    rest = -secs if neg else secs
    days = int(rest // 86400)
    rest -= days * 86400
    hours = int(rest // 3600)
    rest -= hours * 3600
    minutes = int(rest // 60)
    seconds = rest - minutes * 60
    parts: list[int | float] = [days, hours, minutes, seconds]
    if neg:
        for k, p in enumerate(parts):
            if p != 0:
                parts[k] = -p
                break
    return {"Type": "RelativeTime", "Days": parts[0], "Hours": parts[1],
            "Minutes": parts[2], "Seconds": float(parts[3])}


@TABLE.strict("splitTime", 1, 1, needs_ctx=True, pure=False, makes_records=True)
def split_time(make_record: Callable[[dict[str, Value]], Value], ctx: CallContext,
               v: Value) -> Value:
    t = type(v)
    if v is Undefined:
        return Undefined
    if t is RelTime:
        return make_record(_split_reltime(v.seconds))  # type: ignore[union-attr]
    if t is int or t is float:
        epoch = int(v) if t is int else _int32(v)  # type: ignore[arg-type]
        at = AbsTime(epoch, local_offset(ctx, epoch))
    elif t is AbsTime:
        at = v  # type: ignore[assignment]
    else:
        return Error
    tm = _broken_down(at)
    if tm is None:
        return Error
    return make_record({"Type": "AbsoluteTime", "Year": tm.tm_year, "Month": tm.tm_mon,
                        "Day": tm.tm_mday, "Hours": tm.tm_hour, "Minutes": tm.tm_min,
                        "Seconds": tm.tm_sec, "Offset": at.tz_offset})


_FORMAT_ZONE = re.compile(r"%[%Zz]")


@TABLE.strict("formatTime", 0, 2, needs_ctx=True, pure=False)
def format_time(ctx: CallContext, v: Value = None, fmt: Value = "%c") -> Value:
    if v is None:
        now = int(ctx.now())
        at = AbsTime(now, local_offset(ctx, now))
    elif type(v) is AbsTime:
        at = v
    elif type(v) is int or type(v) is float:
        epoch = int(v) if type(v) is int else _int32(v)
        at = AbsTime(epoch, local_offset(ctx, epoch))
    else:
        return Error
    if type(fmt) is not str:
        return Error
    tm = _broken_down(at)
    if tm is None:
        return Error
    # The broken-down time is built in UTC shifted by the offset, so %z reads +0000
    # and %Z the zone's standard name, as in HTCondor.
    zone = _time.tzname[0]

    def zone_sub(m: re.Match[str]) -> str:
        c = m.group(0)
        if c == "%Z":
            return zone.replace("%", "%%")
        if c == "%z":
            return "+0000"
        return c
    text: str = fmt
    if not text:
        return ""
    try:
        return _time.strftime(_FORMAT_ZONE.sub(zone_sub, text), tm)
    except (ValueError, UnicodeError):
        return Error


@TABLE.strict("interval", 1, 1)
def interval(v: Value) -> Value:
    t = type(v)
    secs: int
    if t is int:
        secs = v  # type: ignore[assignment]
    elif t is bool:
        secs = 1 if v else 0
    elif t is float:
        secs = real_to_int(v)  # type: ignore[arg-type]
    elif t is RelTime:
        secs = real_to_int(v.seconds)  # type: ignore[union-attr]
    elif t is AbsTime:
        secs = int(v.epoch)  # type: ignore[union-attr]
    elif t is str:
        x = strtod_prefix(v)  # type: ignore[arg-type]
        if x is None:
            return Error
        secs = real_to_int(x)
    else:
        return Error
    # HTCondor formats a 32-bit int
    secs = wrap_int32(secs)
    sign = "-" if secs < 0 else ""
    n = abs(secs)
    days, rest = divmod(n, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{sign}{days}+{hours:02d}:{minutes:02d}:{seconds:02d}"
    if hours:
        return f"{sign}{hours}:{minutes:02d}:{seconds:02d}"
    if minutes:
        return f"{sign}{minutes}:{seconds:02d}"
    return f"{sign}{seconds}"


__all__ = ["TABLE", "local_offset", "parse_abstime_text", "parse_reltime_text"]
