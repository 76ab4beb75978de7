"""Numeric functions: floor, ceil/ceiling, round, pow, quantize, random."""

from __future__ import annotations

import math
from typing import Callable

from condorpy.classad.functions.registry import CallContext, FunctionTable
from condorpy.classad.functions.types import real_to_int, strtod_prefix, wrap_int
from condorpy.classad.values import AbsTime, Error, RelTime, Value

TABLE = FunctionTable()


def _numeric(v: Value) -> int | float | None:
    """Argument conversion of the rounding functions: strings read like real()."""
    t = type(v)
    if t is int or t is float:
        return v  # type: ignore[return-value]
    if t is bool:
        return 1 if v else 0
    if t is str:
        return strtod_prefix(v)  # type: ignore[arg-type]
    if t is AbsTime:
        return int(v.epoch)  # type: ignore[union-attr]
    if t is RelTime:
        return real_to_int(v.seconds)  # type: ignore[union-attr]
    return None


def _round_with(v: Value, fn: Callable[[float], float]) -> Value:
    x = _numeric(v)
    if x is None:
        return Error
    if type(x) is int:
        return x
    return real_to_int(fn(x)) if math.isfinite(x) else real_to_int(x)


@TABLE.strict("floor", 1, 1)
def floor(v: Value) -> Value:
    return _round_with(v, math.floor)


@TABLE.strict("ceil", 1, 1)
def ceil(v: Value) -> Value:
    return _round_with(v, math.ceil)


@TABLE.strict("ceiling", 1, 1)
def ceiling(v: Value) -> Value:
    return _round_with(v, math.ceil)


def _c_rint(x: float) -> float:
    # rint() in the default rounding mode: halves go to the even neighbour
    return float(round(x))


@TABLE.strict("round", 1, 1)
def round_(v: Value) -> Value:
    return _round_with(v, _c_rint)


@TABLE.strict("pow", 2, 2)
def pow_(base: Value, exp: Value) -> Value:
    if type(base) is int and type(exp) is int:
        b: int = base
        e: int = exp
        if e >= 0:
            return _int_pow(b, e)
        return _real_pow(float(b), float(e))
    x, y = _numeric(base), _numeric(exp)
    if x is None or y is None:
        return Error
    return _real_pow(float(x), float(y))


def _int_pow(b: int, e: int) -> int:
    # HTCondor computes the power in floating point and rounds by adding 0.5 before
    # truncating (so pow(-2, 3) is -7): reproduced so results agree exactly
    return real_to_int(_real_pow(float(b), float(e)) + 0.5)


def _real_pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except ValueError:
        return math.nan if x < 0 else math.inf
    except OverflowError:
        return math.inf if x > 0 or float(y).is_integer() and int(y) % 2 == 0 else -math.inf


def _as_num(v: Value) -> int | float | None:
    t = type(v)
    if t is int or t is float:
        return v  # type: ignore[return-value]
    if t is bool:
        return 1.0 if v else 0.0
    if t is str:
        return strtod_prefix(v)  # type: ignore[arg-type]
    if t is AbsTime:
        return int(v.epoch)  # type: ignore[union-attr]
    if t is RelTime:
        return v.seconds  # type: ignore[union-attr]
    return None


def _quantum(a: Value, x: int | float, q: int | float, both_int: bool) -> Value:
    # HTCondor treats a quantum within 1e-8 of zero as zero: the value comes back as is
    if -1e-8 <= q <= 1e-8:
        return a
    if both_int:
        # C integer division truncates toward zero
        num = wrap_int(int(x) + int(q) - 1)
        quot = abs(num) // abs(int(q)) * (1 if (num >= 0) == (q > 0) else -1)
        return wrap_int(quot * int(q))
    ratio = float(x) / float(q)
    if not math.isfinite(ratio):
        return ratio if math.isnan(ratio) else math.nan
    # C's ceil keeps the sign of a result that rounds to zero
    up = math.copysign(float(math.ceil(ratio)), ratio)
    return up * float(q)


@TABLE.strict("quantize", 2, 2)
def quantize(a: Value, q: Value) -> Value:
    x = _as_num(a)
    if x is None:
        return Error
    if type(q) is list:
        last: Value = None
        for e in q:
            n = _as_num(e)
            if n is None:
                return Error
            if n >= x:
                return e
            last = e
        if last is None:
            return a
        q = last
    n = _as_num(q)
    if n is None:
        return Error
    return _quantum(a, x, n, type(a) is int and type(q) is int)


@TABLE.strict("random", 0, 1, needs_ctx=True, pure=False)
def random(ctx: CallContext, limit: Value = None) -> Value:
    if limit is None:
        return ctx.rng.random()
    if type(limit) is int:
        if limit <= 0:
            return Error
        return ctx.rng.randrange(limit)
    if type(limit) is float:
        return ctx.rng.random() * limit
    return Error
