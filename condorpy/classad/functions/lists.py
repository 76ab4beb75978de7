"""List functions: membership, size, aggregates, anyCompare/allCompare.

Element comparisons follow the ClassAd operators: ``==`` and ``<`` compare strings
without regard to case and numbers across int/real/bool; ``is``/``isnt`` are exact.
"""

from __future__ import annotations

from typing import Any, Callable

from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.functions.types import (
    is_record, record_size, to_number, wrap_int,
)
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined, Value

TABLE = FunctionTable()


def identical(a: Any, b: Any) -> Value:
    """The ``=?=`` operator on two values."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        return False
    if ta is list or is_record(a):
        return Error
    if ta is AbsTime:
        return int(a.epoch) == int(b.epoch)
    return bool(a == b)


def compare(op: str, a: Any, b: Any) -> Value:
    """A relational ClassAd operator (``<  <= == != >= >``) on two values."""
    if a is Error or b is Error:
        return Error
    if a is Undefined or b is Undefined:
        return Undefined
    ta, tb = type(a), type(b)
    x: Any
    y: Any
    if ta is str and tb is str:
        x, y = a.lower(), b.lower()
    elif ta is AbsTime and tb is AbsTime:
        x, y = int(a.epoch), int(b.epoch)
    elif ta is RelTime and tb is RelTime:
        x, y = a.seconds, b.seconds
    else:
        x, y = to_number(a), to_number(b)
        if x is None or y is None:
            return Error
    if op == "<":
        return bool(x < y)
    if op == "<=":
        return bool(x <= y)
    if op == "==":
        return bool(x == y)
    if op == "!=":
        return bool(x != y)
    if op == ">=":
        return bool(x >= y)
    return bool(x > y)


def _member(value: Value, lst: Value, exact: bool) -> Value:
    if lst is Undefined or (value is Undefined and not exact):
        return Undefined
    if type(lst) is not list or type(value) is list or is_record(value):
        return Error
    if value is Error and not exact:
        return Error
    for elem in lst:
        r = identical(value, elem) if exact else compare("==", value, elem)
        if r is True:
            return True
    return False


@TABLE.strict("member", 2, 2)
def member(value: Value, lst: Value) -> Value:
    return _member(value, lst, False)


@TABLE.strict("identicalMember", 2, 2)
def identical_member(value: Value, lst: Value) -> Value:
    return _member(value, lst, True)


@TABLE.strict("size", 1, 1)
def size(v: Value) -> Value:
    t = type(v)
    if t is list:
        return len(v)  # type: ignore[arg-type]
    if t is str:
        return len(v.encode("utf-8"))  # type: ignore[union-attr]
    if v is Undefined:
        return Undefined
    if is_record(v):
        return record_size(v)
    return Error


def _numbers(v: Value) -> list[Any] | Value:
    """The defined elements of a list argument, or the Undefined/Error result."""
    if v is Undefined:
        return Undefined
    if type(v) is not list:
        return Error
    out: list[Any] = []
    for e in v:
        if e is Undefined:
            continue
        t = type(e)
        if t is not int and t is not float and t is not bool:
            return Error
        out.append(e)
    return out


def _add(a: Any, b: Any) -> Any:
    x = int(a) if type(a) is bool else a
    y = int(b) if type(b) is bool else b
    if type(x) is int and type(y) is int:
        return wrap_int(x + y)
    return float(x) + float(y)


@TABLE.strict("sum", 1, 1)
def sum_(v: Value) -> Value:
    nums = _numbers(v)
    if type(nums) is not list:
        return nums
    if not nums:
        return 0
    # the first defined element starts the sum, so a lone boolean comes back as itself
    total: Any = nums[0]
    for e in nums[1:]:
        total = _add(total, e)
    return total


@TABLE.strict("avg", 1, 1)
def avg(v: Value) -> Value:
    nums = _numbers(v)
    if type(nums) is not list:
        return nums
    if not nums:
        return 0
    total: Any = 0
    for e in nums:
        total = _add(total, e)
    return float(total) / len(nums)


def _extreme(v: Value, better: Callable[[Any, Any], bool]) -> Value:
    nums = _numbers(v)
    if type(nums) is not list:
        return nums
    if not nums:
        return Undefined
    best: Any = nums[0]
    any_real = False
    for e in nums:
        if type(e) is float:
            any_real = True
        if better(to_number(e), to_number(best)):
            best = e
    if any_real:
        return float(to_number(best))  # type: ignore[arg-type]
    if len(nums) > 1 and type(best) is bool:
        return int(best)
    return best


@TABLE.strict("min", 1, 1)
def min_(v: Value) -> Value:
    return _extreme(v, lambda a, b: bool(a < b))


@TABLE.strict("max", 1, 1)
def max_(v: Value) -> Value:
    return _extreme(v, lambda a, b: bool(a > b))


_COMPARE_OPS = {"<", "<=", "==", "!=", ">=", ">", "is", "isnt"}


def _compare_all(op: Value, lst: Value, value: Value, want_any: bool) -> Value:
    if op is Undefined:
        return Undefined
    if type(op) is not str or op not in _COMPARE_OPS:
        return Error
    name: str = op
    if lst is Undefined:
        return Undefined
    if type(lst) is not list:
        return Error
    for elem in lst:
        if name == "is":
            r = identical(elem, value)
        elif name == "isnt":
            r = identical(elem, value)
            r = (not r) if type(r) is bool else r
        else:
            r = compare(name, elem, value)
        if r is Error:
            return Error
        if r is Undefined:
            return False  # HTCondor stops at the first undefined comparison
        if want_any and r is True:
            return True
        if not want_any and r is not True:
            return False
    return not want_any


@TABLE.strict("anyCompare", 3, 3)
def any_compare(op: Value, lst: Value, value: Value) -> Value:
    return _compare_all(op, lst, value, True)


@TABLE.strict("allCompare", 3, 3)
def all_compare(op: Value, lst: Value, value: Value) -> Value:
    return _compare_all(op, lst, value, False)
