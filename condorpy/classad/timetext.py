"""Time literals' text as HTCondor reads it while parsing (``absTime("...")`` and
``relTime("...")`` of a literal string), apart from the time functions themselves so
that the parser does not load the function library to read one."""

from __future__ import annotations

import re
import time as _time
from typing import TYPE_CHECKING

from condorpy.classad.values import AbsTime, RelTime

if TYPE_CHECKING:
    from condorpy.classad.functions.registry import CallContext


def local_offset(ctx: CallContext | None, epoch: float) -> int:
    """Seconds east of UTC of the local zone at ``epoch``."""
    if ctx is not None and ctx.tz_offset is not None:
        return int(ctx.tz_offset(epoch))
    try:
        return int(_time.localtime(epoch).tm_gmtoff)
    except (OverflowError, OSError, ValueError):
        return 0


_ISO = re.compile(
    r"(\d{4})(?:-?(\d{2})-?(\d{2})"
    r"(?:[T ](\d{2})(?::?(\d{2})(?::?(\d{2}))?)?)?"
    r"(?:(Z)|([+-])(\d{2}):?(\d{2})?)?)?$")


def _timegm(year: int, mon: int, day: int, hour: int, minute: int, sec: int) -> int:
    """Seconds since the epoch of a UTC wall-clock time, fields out of range carried over
    as C's ``timegm``/``mktime`` do (month 13 is January next year, day 0 the last day
    of the month before)."""
    import calendar
    year += (mon - 1) // 12
    mon = (mon - 1) % 12 + 1
    base = calendar.timegm((year, mon, 1, 0, 0, 0, 0, 0, 0))
    return base + (day - 1) * 86400 + hour * 3600 + minute * 60 + sec


def parse_abstime_text(text: str, ctx: CallContext | None = None) -> AbsTime | None:
    """``absTime("2020-01-01T00:00:00+02:00")`` as HTCondor reads it when parsing;
    None when the text is not such a time."""
    m = _ISO.match(text.strip())
    if m is None:
        return None
    year = int(m.group(1))
    if m.group(2) is None:
        mon, day = 1, 0  # a bare year reads as "day 0 of January" in HTCondor
    else:
        mon, day = int(m.group(2)), int(m.group(3))
    hour = int(m.group(4) or 0)
    minute = int(m.group(5) or 0)
    sec = int(m.group(6) or 0)
    naive = _timegm(year, mon, day, hour, minute, sec)
    # HTCondor first reads the wall-clock time in the local zone (mktime), whose error
    # value -1 makes the one second before 1970 local time unreadable
    local = local_offset(ctx, naive)
    local = local_offset(ctx, naive - local)
    if naive - local == -1:
        return None
    if m.group(7):
        epoch, off = naive, 0
    elif m.group(8):
        off = int(m.group(9)) * 3600 + int(m.group(10) or 0) * 60
        off = -off if m.group(8) == "-" else off
        epoch = naive - off
    else:
        # no zone given: the local zone at that wall-clock time
        epoch, off = naive - local, local
    return AbsTime(epoch, off)


_REL = re.compile(r"([+-])?(?:(\d+)\+)?(?:(\d+):)?(?:(\d+):)?(\d+(?:\.\d*)?)$")
_REL_UNITS = re.compile(r"([+-])?((?:\d+[dhms])+)$", re.IGNORECASE)


def parse_reltime_text(text: str) -> RelTime | None:
    """``relTime("1+02:03:04")`` (or ``"1d2h3m4s"``) as HTCondor reads it when parsing."""
    s = text.strip()
    m = _REL.match(s)
    if m is not None:
        days, a, b, secs = m.group(2), m.group(3), m.group(4), m.group(5)
        hours, minutes = (a, b) if b is not None else (None, a)
        total = (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
                 + float(secs))
        return RelTime(-total if m.group(1) == "-" else total)
    m = _REL_UNITS.match(s)
    if m is not None:
        scale = {"d": 86400, "h": 3600, "m": 60, "s": 1}
        total = float(sum(int(n) * scale[u.lower()]
                          for n, u in re.findall(r"(\d+)([dhmsDHMS])", m.group(2))))
        return RelTime(-total if m.group(1) == "-" else total)
    return None
