"""Functions on string lists: ``"a, b, c"`` texts split at delimiter characters
(comma and whitespace unless a delimiter argument says otherwise); items are trimmed
of whitespace and empty items are dropped."""

from __future__ import annotations

import re
from typing import Any

from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.budget import Budget
from condorpy.classad.functions.regex import OutOfTime, compile_pattern, search
from condorpy.classad.functions.strings import split_tokens
from condorpy.classad.functions.types import real_to_int, strtod_prefix, wrap_int
from condorpy.classad.values import Error, Undefined, Value

TABLE = FunctionTable()

DEFAULT_DELIMS = " ,"
_WS = " \t\n\v\f\r"


def string_list_items(text: str, delims: str = DEFAULT_DELIMS) -> list[str]:
    if not delims:
        items = [text]
    else:
        items = re.split("[" + re.escape(delims) + "]", text)
    return [s for s in (i.strip(_WS) for i in items) if s]


def _delims(d: Value) -> str | None:
    if d is None or d is Undefined:
        return DEFAULT_DELIMS
    if type(d) is str:
        return d
    return None


def _list_arg(lst: Value, d: Value) -> list[str] | Value:
    if lst is Undefined or lst is Error:
        return Error
    delims = DEFAULT_DELIMS if d is None else d if type(d) is str else None
    if type(lst) is not str or delims is None:
        return Error
    return string_list_items(lst, delims)


@TABLE.strict("stringListSize", 1, 2)
def string_list_size(lst: Value, d: Value = None) -> Value:
    items = _list_arg(lst, d)
    return len(items) if type(items) is list else items


_INT = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+$")


_BARE_HEX = re.compile(r"[ \t\n\v\f\r]*[+-]?0[xX](?![0-9a-fA-F])")


def _item_number(s: str) -> int | float | None:
    if _BARE_HEX.match(s):
        return None  # HTCondor refuses a "0x" with no digits in a number list
    if _INT.match(s):
        return wrap_int(int(s))
    return strtod_prefix(s)


def _numbers(lst: Value, d: Value) -> tuple[list[int | float], bool] | Value:
    items = _list_arg(lst, d)
    if type(items) is not list:
        return items
    nums: list[int | float] = []
    all_int = True
    for s in items:
        n = _item_number(s)
        if n is None:
            return Error
        if type(n) is float:
            all_int = False
        nums.append(n)
    return nums, all_int


def _int_total(nums: list[int | float]) -> int:
    # Wrapping once equals wrapping after every addition, as C++ does (mod 2**64).
    return wrap_int(sum(int(n) for n in nums))


@TABLE.strict("stringListSum", 1, 2)
def string_list_sum(lst: Value, d: Value = None) -> Value:
    r = _numbers(lst, d)
    if type(r) is not tuple:
        return r
    nums, all_int = r
    if not nums:
        return 0.0
    if all_int:
        return _int_total(nums)
    return float(sum(float(n) for n in nums))


@TABLE.strict("stringListAvg", 1, 2)
def string_list_avg(lst: Value, d: Value = None) -> Value:
    r = _numbers(lst, d)
    if type(r) is not tuple:
        return r
    nums, all_int = r
    if not nums:
        return 0.0
    if all_int:
        total = _int_total(nums)
        q = abs(total) // len(nums)
        return q if total >= 0 else -q
    return sum(float(n) for n in nums) / len(nums)


def _extreme(lst: Value, d: Value, want_max: bool) -> Value:
    r = _numbers(lst, d)
    if type(r) is not tuple:
        return r
    nums, all_int = r
    if not nums:
        return Undefined
    # HTCondor starts from FLT_MIN / FLT_MAX (not -FLT_MAX), so an all-negative list
    # has FLT_MIN (0 in integer form) as its maximum: reproduced
    best: Any = _FLT_MIN if want_max else _FLT_MAX
    for n in nums:
        if (n > best) if want_max else (n < best):
            best = n
    return real_to_int(float(best)) if all_int else float(best)


_FLT_MIN = 1.1754943508222875e-38
_FLT_MAX = 3.4028234663852886e+38


@TABLE.strict("stringListMin", 1, 2)
def string_list_min(lst: Value, d: Value = None) -> Value:
    return _extreme(lst, d, False)


@TABLE.strict("stringListMax", 1, 2)
def string_list_max(lst: Value, d: Value = None) -> Value:
    return _extreme(lst, d, True)


def _loose_args(*args: Value) -> Value | None:
    """Non-string arguments are an error; both texts undefined give undefined (one
    undefined text reads as empty)."""
    for a in args:
        if a is not Undefined and a is not None and type(a) is not str:
            return Error
    if args[0] is Undefined and args[1] is Undefined:
        return Undefined
    return None


def _member(item: Value, lst: Value, d: Value, fold: bool) -> Value:
    bad = _loose_args(item, lst, d)
    if bad is not None:
        return bad
    item = "" if item is Undefined else item
    lst = "" if lst is Undefined else lst
    delims = _delims(d)
    if type(item) is not str or type(lst) is not str or delims is None:
        return Error
    items = string_list_items(lst, delims)
    if fold:
        low = item.lower()
        return any(i.lower() == low for i in items)
    return item in items


@TABLE.strict("stringListMember", 2, 3)
def string_list_member(item: Value, lst: Value, d: Value = None) -> Value:
    return _member(item, lst, d, False)


@TABLE.strict("stringListIMember", 2, 3)
def string_list_imember(item: Value, lst: Value, d: Value = None) -> Value:
    return _member(item, lst, d, True)


def _subset(a: Value, b: Value, d: Value, fold: bool) -> Value:
    bad = _loose_args(a, b, d)
    if bad is not None:
        return bad
    a = "" if a is Undefined else a
    b = "" if b is Undefined else b
    delims = _delims(d)
    if type(a) is not str or type(b) is not str or delims is None:
        return Error
    small = string_list_items(a, delims)
    big = string_list_items(b, delims)
    if not small and a:
        return False  # text with no items (",") is not the empty list
    if fold:
        small = [s.lower() for s in small]
        big = [s.lower() for s in big]
    have = set(big)
    return all(s in have for s in small)


@TABLE.strict("stringListSubsetMatch", 2, 3)
def string_list_subset_match(a: Value, b: Value, d: Value = None) -> Value:
    return _subset(a, b, d, False)


@TABLE.strict("stringListISubsetMatch", 2, 3)
def string_list_isubset_match(a: Value, b: Value, d: Value = None) -> Value:
    return _subset(a, b, d, True)


@TABLE.strict("stringListsIntersect", 2, 3)
def string_lists_intersect(a: Value, b: Value, d: Value = None) -> Value:
    for v in (a, b, d):
        if v is Undefined:
            return Undefined
    for v in (a, b, d):
        if v is Error:
            return Error
    delims = _delims(d)
    if type(a) is not str or type(b) is not str or delims is None:
        return Error
    # this one comes from the ClassAd library and splits as split() does
    seps = delims or " ,"
    left = set(split_tokens(a, seps))
    return any(i in left for i in split_tokens(b, seps))


@TABLE.strict("stringList_regexpMember", 2, 4, needs_budget=True)
def string_list_regexp_member(budget: Budget, pattern: Value, lst: Value, d: Value = None,
                              options: Value = "") -> Value:
    if type(pattern) is not str or type(lst) is not str:
        return Error
    delims = DEFAULT_DELIMS if d is None else d if type(d) is str else None
    if delims is None or type(options) is not str:
        return Error
    rx = compile_pattern(pattern, options)
    if rx is None:
        return Error
    items = string_list_items(lst, delims)
    if not items:
        return Undefined
    try:
        return any(search(budget, rx, i.encode("utf-8")) for i in items)
    except OutOfTime:
        return Error
