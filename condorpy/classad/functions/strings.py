"""String functions: strcat, join, case, substr, comparisons, split and friends.

Arguments that are not strings are converted as ``string()`` converts them. Lengths and
offsets count UTF-8 bytes, as HTCondor's C++ strings do.
"""

from __future__ import annotations

from typing import Any

from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.functions.types import to_string, wrap_int32
from condorpy.classad.values import Error, Undefined, Value

TABLE = FunctionTable()


def _bytes_slice(s: str, start: int, end: int) -> str:
    return s.encode("utf-8")[start:end].decode("utf-8", errors="replace")


@TABLE.strict("strcat", 0, None)
def strcat(*args: Value) -> Value:
    parts: list[str] = []
    for a in args:
        if a is Undefined or a is Error:
            return a
        s = to_string(a)
        assert s is not None
        parts.append(s)
    return "".join(parts)


@TABLE.strict("join", 0, None)
def join(*args: Value) -> Value:
    if not args:
        return ""
    items: list[Any]
    if len(args) == 1:
        if args[0] is Undefined or args[0] is Error:
            return args[0]
        if type(args[0]) is not list:
            return ""
        sep: Value = ""
        items = args[0]
    elif len(args) == 2 and type(args[1]) is list:
        sep, items = args[0], args[1]
    else:
        sep, items = args[0], list(args[1:])
        if len(args) == 2 and (args[1] is Undefined or args[1] is Error):
            return args[1]
    if sep is Error:
        return Error
    sep_text = "" if sep is Undefined else to_string(sep)
    # the separator goes only after text already joined, so empty items vanish
    out = ""
    joined = False
    for e in items:
        if e is Undefined:
            continue
        if e is Error:
            return Error
        s = to_string(e)
        assert s is not None
        if out:
            out += sep_text or ""
        out += s
        joined = True
    # items that are all undefined join to undefined (no items at all join to "")
    return out if joined or not items else Undefined


def _case(v: Value, upper: bool) -> Value:
    if v is Undefined or v is Error:
        return v
    s = to_string(v)
    assert s is not None
    # C's toupper/tolower in the "C" locale change ASCII letters only
    table = _UPPER if upper else _LOWER
    return s.translate(table)


_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}
_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


@TABLE.strict("toUpper", 1, 1)
def to_upper(v: Value) -> Value:
    return _case(v, True)


@TABLE.strict("toLower", 1, 1)
def to_lower(v: Value) -> Value:
    return _case(v, False)


@TABLE.strict("substr", 2, 3)
def substr(s: Value, offset: Value, length: Value = None) -> Value:
    args = [s, offset] if length is None else [s, offset, length]
    for a in args:
        if a is Undefined:
            return Undefined
    if type(s) is not str or type(offset) is not int:
        return Error
    if length is not None and type(length) is not int:
        return Error
    n = len(s.encode("utf-8"))
    # HTCondor holds offset and length in 32-bit ints
    off: int = wrap_int32(offset)
    if off < 0:
        off = max(0, n + off)
    if off > n:
        return ""
    if length is None:
        end = n
    else:
        ln: int = wrap_int32(length)
        end = off + ln if ln >= 0 else n + ln
        end = min(end, n)
        if end <= off:
            return ""
    return _bytes_slice(s, off, end)


def _cmp(a: Value, b: Value, fold: bool) -> Value:
    if a is Undefined or b is Undefined:
        return Undefined
    if a is Error or b is Error:
        return Error
    x, y = to_string(a), to_string(b)
    assert x is not None and y is not None
    xb, yb = x.encode("utf-8"), y.encode("utf-8")
    if fold:
        xb, yb = xb.lower(), yb.lower()
    return (xb > yb) - (xb < yb)


@TABLE.strict("strcmp", 2, 2)
def strcmp(a: Value, b: Value) -> Value:
    return _cmp(a, b, False)


@TABLE.strict("stricmp", 2, 2)
def stricmp(a: Value, b: Value) -> Value:
    return _cmp(a, b, True)


_WHITESPACE = " \t\n\v\f\r"


def split_tokens(s: str, delims: str) -> list[str]:
    """HTCondor's ``split`` tokenizer: runs of delimiters separate items; within a run
    (whitespace aside) each pair of adjacent identical delimiters yields an empty item."""
    dset = set(delims)
    out: list[str] = []
    i, n = 0, len(s)
    while True:
        prev = ""
        while i < n and s[i] in dset:
            c = s[i]
            if c not in _WHITESPACE:
                if c == prev:
                    out.append("")
                prev = c
            i += 1
        if i >= n:
            return out
        start = i
        while i < n and s[i] not in dset:
            i += 1
        out.append(s[start:i])


@TABLE.strict("split", 1, 2)
def split(s: Value, delims: Value = " ,\t") -> Value:
    if type(s) is not str or type(delims) is not str:
        return Error
    if not delims:
        return [s] if s else []
    return split_tokens(s, delims)


def _split_at(s: Value, none_first: bool) -> Value:
    if type(s) is not str:
        return Error
    head, at, tail = s.partition("@")
    if not at:
        return ["", s] if none_first else [s, ""]
    return [head, tail]


@TABLE.strict("splitUserName", 1, 1)
def split_user_name(s: Value) -> Value:
    return _split_at(s, False)


@TABLE.strict("splitSlotName", 1, 1)
def split_slot_name(s: Value) -> Value:
    return _split_at(s, True)
