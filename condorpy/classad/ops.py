"""Operator semantics of the ClassAd language, as the reference library behaves.

These are the general (slow) paths: the compiler inlines the common int/real/bool cases
and calls these for everything else. Observed reference behaviour worth knowing:
integers wrap at 64 bits; shift counts are taken modulo 64; ``>>>`` on a negative number
masks with ``~(-1 << (64 - n))`` exactly as the reference computes it (so ``-1 >>> 0``
is 0); a real result of +infinity is an error while -infinity and NaN are values;
``%`` on reals is an error; booleans count as 0/1 in arithmetic and comparison but not in
bit operations or unary minus; ``is`` on two lists or two records is an error.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from condorpy.classad.lexer import INT_MAX, INT_MIN
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined

_INF = math.inf
_MASK = (1 << 64) - 1


def wrap(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v > INT_MAX else v


def _num(v: Any) -> Any:
    """int/float unchanged, bool as 0/1, anything else None."""
    t = type(v)
    if t is int or t is float:
        return v
    if t is bool:
        return int(v)
    return None


def _real(r: float) -> Any:
    return Error if r == _INF else r


def _fdiv(a: float, b: float) -> Any:
    if b == 0.0:
        if a == 0.0 or a != a:
            return math.nan
        neg = (a < 0) != (math.copysign(1.0, b) < 0)
        return -_INF if neg else Error
    return _real(a / b)


def _rel_whole(seconds: float) -> int:
    """A relative time's seconds as the reference adds them to an absolute time: cut to
    a 32-bit integer, with anything outside (NaN included) becoming its minimum, as the
    x86 conversion the reference compiles to does."""
    if seconds == seconds and -2147483649.0 < seconds < 2147483648.0:
        return int(seconds)
    return -2147483648


def _time_arith(op: str, a: Any, b: Any) -> Any:
    """Arithmetic with an absolute or relative time. Absolute times stay whole seconds;
    relative times scale by integers and reals (not booleans) with the real-number rules,
    infinities and NaN included (the reference's relative times have no error range)."""
    ta, tb = type(a), type(b)
    if op == "+":
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.epoch + _rel_whole(b.seconds), a.tz_offset)
        if ta is RelTime and tb is AbsTime:
            return AbsTime(b.epoch + _rel_whole(a.seconds), b.tz_offset)
        if ta is RelTime and tb is RelTime:
            return RelTime(a.seconds + b.seconds)
    elif op == "-":
        if ta is AbsTime and tb is AbsTime:
            return RelTime(float(a.epoch - b.epoch))
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.epoch - _rel_whole(b.seconds), a.tz_offset)
        if ta is RelTime and tb is RelTime:
            return RelTime(a.seconds - b.seconds)
    elif op == "*":
        if ta is RelTime and (tb is int or tb is float):
            return RelTime(a.seconds * b)
        if tb is RelTime and (ta is int or ta is float):
            return RelTime(b.seconds * a)
    elif op == "/":
        if ta is RelTime and (tb is int or tb is float):
            if b == 0:
                x = float(a.seconds)
                if x == 0.0 or x != x:
                    return RelTime(math.nan)
                neg = (x < 0) != (math.copysign(1.0, b) < 0)
                return RelTime(-_INF if neg else _INF)
            return RelTime(a.seconds / b)
    return Error


def arith(op: str, a: Any, b: Any) -> Any:
    if a is Error or b is Error:
        return Error
    if a is Undefined or b is Undefined:
        return Undefined
    x, y = _num(a), _num(b)
    if x is None or y is None:
        return _time_arith(op, a, b)
    if type(x) is int and type(y) is int:
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif op == "/":
            if y == 0:
                return Error
            if x == INT_MIN and y == -1:
                return INT_MAX
            q = abs(x) // abs(y)
            r = q if (x < 0) == (y < 0) else -q
        else:  # %
            if y == 0:
                return Error
            if y == -1:
                return 0
            m = abs(x) % abs(y)
            r = -m if x < 0 else m
        return r if INT_MIN <= r <= INT_MAX else wrap(r)
    fx, fy = float(x), float(y)
    if op == "+":
        return _real(fx + fy)
    if op == "-":
        return _real(fx - fy)
    if op == "*":
        return _real(fx * fy)
    if op == "/":
        return _fdiv(fx, fy)
    return Error  # % on reals


def compare(op: str, a: Any, b: Any) -> Any:
    """< <= > >= == != (strings case-insensitive)."""
    if a is Error or b is Error:
        return Error
    if a is Undefined or b is Undefined:
        return Undefined
    x, y = _num(a), _num(b)
    if x is not None and y is not None:
        if type(x) is not type(y):
            x, y = float(x), float(y)  # an integer meets a real as a double, as in C
    else:
        ta, tb = type(a), type(b)
        if ta is str and tb is str:
            x, y = a.lower(), b.lower()
        elif ta is AbsTime and tb is AbsTime:
            x, y = a.epoch, b.epoch
        elif ta is RelTime and tb is RelTime:
            x, y = a.seconds, b.seconds
        else:
            return Error
    if op == "<":
        return x < y
    if op == "<=":
        return x <= y
    if op == ">":
        return x > y
    if op == ">=":
        return x >= y
    if op == "==":
        return x == y
    return x != y


def identical(a: Any, b: Any) -> Any:
    """``is`` / ``=?=``: same type and same value, case-sensitive, never undefined."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        return False
    if ta is list:
        return Error
    if ta is str or ta is int or ta is float or ta is bool:
        return a == b
    if a is Undefined or a is Error:
        return True
    if ta is AbsTime:
        return a.epoch == b.epoch
    if ta is RelTime:
        return a.seconds == b.seconds
    return Error  # two records


def bitwise(op: str, a: Any, b: Any) -> Any:
    if a is Error or b is Error:
        return Error
    if a is Undefined or b is Undefined:
        return Undefined
    if type(a) is not int or type(b) is not int:
        return Error
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    s = b & 63
    if op == "<<":
        return wrap(a << s)
    if op == ">>":
        if a < 0:
            # the reference shifts a negative number one bit at a time, b times: a
            # count of zero or less leaves it, a count over 63 leaves only the sign
            return a if b <= 0 else a >> min(b, 63)
        return a >> s
    # >>>
    if a >= 0:
        return a >> s
    return (a >> s) & ~wrap(-1 << ((64 - s) & 63))


def to_bool(v: Any) -> Any:
    """The truth value for && || ! ?: ; Undefined and Error pass through."""
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    if v is Undefined:
        return Undefined
    return Error


def logical_and(a: Any, b_thunk: Callable[[], Any]) -> Any:
    x = to_bool(a)
    if x is Error:
        return Error
    if x is False:
        return False
    y = to_bool(b_thunk())
    if y is Error:
        return Error
    if x is Undefined:
        return False if y is False else Undefined
    return y


def logical_or(a: Any, b_thunk: Callable[[], Any]) -> Any:
    x = to_bool(a)
    if x is Error:
        return Error
    if x is True:
        return True
    y = to_bool(b_thunk())
    if y is Error:
        return Error
    if x is Undefined:
        return True if y is True else Undefined
    return y


def unary(op: str, v: Any) -> Any:
    if v is Error:
        return Error
    if v is Undefined:
        return Undefined
    t = type(v)
    if op == "!":
        r = to_bool(v)
        return Error if r is Error else (not r)
    if op == "~":
        return ~v if t is int else Error
    if t is int:
        if op == "-":
            return wrap(-v)
        return v
    if t is float:
        return -v if op == "-" else v
    if t is RelTime:
        return RelTime(-v.seconds) if op == "-" else v
    return Error


BINARY: dict[str, Callable[[Any, Any], Any]] = {}
for _op in ("+", "-", "*", "/", "%"):
    BINARY[_op] = (lambda o: lambda a, b: arith(o, a, b))(_op)
for _op in ("<", "<=", ">", ">=", "==", "!="):
    BINARY[_op] = (lambda o: lambda a, b: compare(o, a, b))(_op)
for _op in ("&", "|", "^", "<<", ">>", ">>>"):
    BINARY[_op] = (lambda o: lambda a, b: bitwise(o, a, b))(_op)
BINARY["is"] = identical
BINARY["isnt"] = lambda a, b: (lambda r: r if r is Error else not r)(identical(a, b))
