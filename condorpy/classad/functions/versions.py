"""Version-string comparisons: versioncmp and the versionXX predicates built on it."""

from __future__ import annotations

from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.functions.types import to_string
from condorpy.classad.values import Error, Undefined, Value

TABLE = FunctionTable()

def _signed(c: int) -> int:
    # HTCondor compares plain (signed) chars
    return c - 256 if c >= 128 else c


def _isdigit(c: int) -> bool:
    return 0x30 <= c <= 0x39


def compare_versions(a: bytes, b: bytes) -> int:
    """HTCondor's version order: digit runs compare as numbers (more leading zeros
    first sorts lower), other bytes compare as chars; the result is the deciding
    difference (a count or a byte difference), as HTCondor returns it."""
    i = j = 0
    na, nb = len(a), len(b)
    while True:
        c1 = a[i] if i < na else 0
        c2 = b[j] if j < nb else 0
        if _isdigit(c1) and _isdigit(c2):
            e1, e2 = i, j
            while e1 < na and _isdigit(a[e1]):
                e1 += 1
            while e2 < nb and _isdigit(b[e2]):
                e2 += 1
            z1 = _leading_zeros(a, i, e1)
            z2 = _leading_zeros(b, j, e2)
            if z1 != z2:
                return z2 - z1
            l1, l2 = e1 - i - z1, e2 - j - z2
            if l1 != l2:
                return l1 - l2
            for k in range(l1):
                d = a[i + z1 + k] - b[j + z2 + k]
                if d:
                    return d
            i, j = e1, e2
            continue
        d = _signed(c1) - _signed(c2)
        if d:
            return d
        if c1 == 0:
            return 0
        i += 1
        j += 1


def _leading_zeros(s: bytes, start: int, end: int) -> int:
    n = 0
    while start + n < end - 1 and s[start + n] == 0x30:
        n += 1
    return n


def _versions(a: Value, b: Value) -> int | Value:
    if a is Undefined or b is Undefined:
        return Undefined
    if a is Error or b is Error:
        return Error
    x, y = to_string(a), to_string(b)
    assert x is not None and y is not None
    return compare_versions(x.encode("utf-8"), y.encode("utf-8"))


@TABLE.strict("versioncmp", 2, 2)
def versioncmp(a: Value, b: Value) -> Value:
    return _versions(a, b)


def _predicate(a: Value, b: Value, test: str) -> Value:
    r = _versions(a, b)
    if type(r) is not int:
        return r
    n: int = r
    return {"LT": n < 0, "LE": n <= 0, "EQ": n == 0, "GE": n >= 0, "GT": n > 0}[test]


@TABLE.strict("versionLT", 2, 2)
def version_lt(a: Value, b: Value) -> Value:
    return _predicate(a, b, "LT")


@TABLE.strict("versionLE", 2, 2)
def version_le(a: Value, b: Value) -> Value:
    return _predicate(a, b, "LE")


@TABLE.strict("versionEQ", 2, 2)
def version_eq(a: Value, b: Value) -> Value:
    return _predicate(a, b, "EQ")


@TABLE.strict("versionGE", 2, 2)
def version_ge(a: Value, b: Value) -> Value:
    return _predicate(a, b, "GE")


@TABLE.strict("versionGT", 2, 2)
def version_gt(a: Value, b: Value) -> Value:
    return _predicate(a, b, "GT")


@TABLE.strict("version_in_range", 3, 3)
def version_in_range(v: Value, low: Value, high: Value) -> Value:
    if v is Undefined:
        return Error
    lo = _versions(v, low)
    if type(lo) is not int:
        return lo
    hi = _versions(v, high)
    if type(hi) is not int:
        return hi
    return lo >= 0 and hi <= 0
