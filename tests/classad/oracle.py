"""Helpers to compare condorpy's ClassAd results with the reference library (classad2)."""

from __future__ import annotations

import datetime
import math
from typing import Any

from condorpy.classad import AbsTime, ClassAd, Error, RelTime, Undefined, parse_expr

classad2: Any = None
try:
    import classad2 as _reference
    classad2 = _reference
except ImportError:  # the reference wheel is a test dependency; tests skip without it
    pass


def ref_eval(text: str, my: Any = None, target: Any = None) -> Any:
    """("parse-error", None) or ("ok", value) from the reference."""
    try:
        e = classad2.ExprTree(text)
    except Exception:
        return ("parse-error", None)
    return ("ok", e.eval(my, target) if my is not None or target is not None else e.eval())


def ref_is_reltime(text: str, my: Any = None, target: Any = None) -> bool:
    """Is classad2's value of ``text`` a relative time (it returns those as floats)?"""
    try:
        e = classad2.ExprTree(f"isReltime({text}\n)")  # (a newline ends a // comment)
    except Exception:
        return False
    return (e.eval(my, target) if my is not None or target is not None else e.eval()) is True


def same(ours: Any, ref: Any, my: Any = None, target: Any = None, depth: int = 0) -> bool:
    """Do a condorpy value and a classad2 value agree (reals within 1e-12 relative)?"""
    if depth > 20:
        return True
    V = classad2.Value
    if isinstance(ref, classad2.ExprTree):
        ref = ref.eval(my, target) if my is not None else ref.eval()
    if ref is V.Undefined:
        return ours is Undefined
    if ref is V.Error:
        return ours is Error
    if isinstance(ref, bool):
        return type(ours) is bool and ours == ref
    if isinstance(ref, int):
        return type(ours) is int and ours == ref
    if isinstance(ref, float):
        if type(ours) is RelTime:
            ours = ours.seconds
        if type(ours) is not float:
            return False
        if math.isnan(ref):
            return math.isnan(ours)
        if ref == ours:
            return True
        return abs(ours - ref) <= 1e-12 * max(abs(ref), abs(ours))
    if isinstance(ref, str):
        return type(ours) is str and ours == ref
    if isinstance(ref, datetime.datetime):
        return type(ours) is AbsTime and abs(ours.epoch - ref.timestamp()) < 1e-6
    if isinstance(ref, list):
        return type(ours) is list and len(ours) == len(ref) and all(
            same(o, r, my, target, depth + 1) for o, r in zip(ours, ref))
    if isinstance(ref, classad2.ClassAd):
        if not isinstance(ours, ClassAd):
            return False
        if sorted(k.lower() for k in ref.keys()) != sorted(k.lower() for k in ours):
            return False
        # the reference hands records back without their enclosing scope, so compare the
        # attribute expressions themselves (through our parser, to share one spelling)
        return all(str(parse_expr(str(ref.lookup(k)))) == str(ours.lookup(k))
                   for k in ref.keys())
    return False
