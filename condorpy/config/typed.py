"""Knob text to typed values, with the rules of HTCondor's typed parameter look-ups.

These functions are the only place condorpy turns configuration text into booleans
and numbers; :class:`condorpy.config.Config` wraps them with the knob's name, file and
line. They return None for text HTCondor would refuse, so that the caller can say
where the bad value came from.

HTCondor 25's rules (``string_is_boolean_param``, ``string_is_long_param`` and
``string_is_double_param`` in condor_utils, confirmed against the 25.14.1 library):

* booleans: ``true``/``false``/``1``/``0`` in any case, trailing blanks allowed; any
  other text is evaluated as a ClassAd expression, and a boolean or a number (non-zero
  is true) counts. ``yes``, ``no``, ``on``, ``off``, ``t``, ``f`` are refused: to the
  ClassAd language they are attribute references, which evaluate to undefined.
* integers: a decimal literal; else a ClassAd expression giving a number or a boolean,
  a real one truncated towards zero (``2.7`` reads as 2).
* numbers: a C floating-point literal (including ``0x`` hexadecimal); else a ClassAd
  expression giving a number or a boolean.
"""

from __future__ import annotations

import math
import re

from condorpy.errors import ClassAdError

# Pattern texts, compiled (and cached) by the re module at their first use: a command
# that reads no typed knob does not compile them at start-up.
_BOOL_LITERAL = r"(?i)(true|false|1|0)\s*\Z"
_INT_LITERAL = r"\s*[+-]?\d+\s*\Z"
_FLOAT_LITERAL = (
    r"(?i)\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)\s*\Z")
_HEX_LITERAL = r"\s*[+-]?0[xX][0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?(?:[pP][+-]?\d+)?\s*\Z"
# The configuration's expression parser (old ClassAd syntax) has no octal or hex
# integers: HTCondor refuses ``01`` or ``0x10`` inside an expression, where the
# ClassAd language proper reads 1 and 0.
_STRING = r'"(?:\\.|[^"\\])*"'
_OLD_SYNTAX_INT = r"(?<![\w.])0[0-9xX][0-9A-Za-z]*(?![.\w])"
_DURATION_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600,
                   "d": 86400, "day": 86400}
_DURATION = r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*\Z"


def boolean_value(text: str) -> bool | None:
    """``text`` as HTCondor's param_boolean reads it; None if it would refuse it."""
    if re.match(_BOOL_LITERAL, text.strip()):
        return text.strip()[0] in "tT1"
    value = _constant(text)
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and not math.isnan(value):
        return value != 0
    return None


def integer_value(text: str) -> int | None:
    """``text`` as HTCondor's param_integer reads it; None if it would refuse it."""
    if re.match(_INT_LITERAL, text):
        return int(text)
    value = _constant(text)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)  # truncation towards zero, as a C cast does
    return None


def number_value(text: str) -> float | None:
    """``text`` as HTCondor's param_double reads it; None if it would refuse it."""
    if re.match(_FLOAT_LITERAL, text):
        return float(text)
    if re.match(_HEX_LITERAL, text):
        return float.fromhex(text.strip())
    value = _constant(text)
    if isinstance(value, (bool, int, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def duration_value(text: str) -> float | None:
    """Seconds: a number, or a number with a unit (s, sec, m, min, h, hr, d, day)."""
    m = re.match(_DURATION, text)
    if m:
        unit = _DURATION_UNITS.get(m.group(2).lower())
        return None if unit is None else float(m.group(1)) * unit
    return number_value(text)


_LOG_SIZE = r"\s*(\d+)\s*([A-Za-z]*)\s*\Z"
_LOG_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def log_size_value(text: str) -> int | None:
    """A daemon log's size limit (``MAX_<SUBSYS>_LOG``) in bytes: a whole number with
    an optional binary unit, B, K, M, G or T, with or without a trailing b/B or iB
    (``10 Mb``, ``500K``), as HTCondor's dprintf reads it. HTCondor also takes a time
    (``1 h``, ``10 min``, or a lone ``m``) there to rotate by age; condorpy rotates by
    size only and refuses it (None), as it refuses anything else."""
    m = re.match(_LOG_SIZE, text)
    if m is None:
        return None
    unit = m.group(2)
    key, rest = unit[:1].lower(), unit[1:].lower()
    if unit == "m" or key not in _LOG_UNITS or rest not in ("", "b", "ib") \
            or (key == "b" and rest):
        return None     # a lone m is minutes to HTCondor; s, h, d, w are times too
    return int(m.group(1)) * _LOG_UNITS[key]


_ADDRESS = r"\s*(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_.-]+)):(\d{1,5})\s*\Z"


def address_value(text: str) -> tuple[str, int] | None:
    """A listening address ``host:port`` (``[v6addr]:port`` for IPv6) as (host, port);
    port 0 asks the kernel for a free one. None for anything else."""
    m = re.match(_ADDRESS, text)
    if m is None:
        return None
    port = int(m.group(3))
    if port > 65535:
        return None
    return (m.group(1) or m.group(2)), port


def _constant(text: str) -> object:
    """``text`` evaluated as a ClassAd expression in an empty ad (what HTCondor's typed
    look-ups do for values such as ``$(A) && true``); None when it is not one."""
    if re.search(_OLD_SYNTAX_INT, re.sub(_STRING, '""', text)):
        return None
    # (a literal never gets here: reading one does not load the ClassAd library)
    from condorpy.classad import parse_expr
    try:
        return parse_expr(text).evaluate()
    except ClassAdError:  # not an expression
        return None
