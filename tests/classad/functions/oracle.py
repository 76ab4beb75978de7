"""Calling the reference ``classad2`` and condorpy's function table on the same arguments."""

from __future__ import annotations

import datetime
import math
from typing import Any

from condorpy.classad import ClassAd
from condorpy.classad.budget import Budget
from condorpy.classad.functions import (
    envargs, lists, math as cmath, misc, regex, stringlists, strings, timefuncs, types,
    versions,
)
from condorpy.classad.functions.registry import CallContext, FunctionSpec, merge_tables
from condorpy.classad.functions.types import format_abstime, quote_string
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined

SPECS: dict[str, FunctionSpec] = merge_tables(
    types.TABLE, lists.TABLE, strings.TABLE, timefuncs.TABLE, cmath.TABLE, versions.TABLE,
    regex.TABLE, stringlists.TABLE, envargs.TABLE, misc.TABLE)


def render(v: Any) -> str:
    """A Python value as ClassAd text that evaluates to it."""
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v) if v >= 0 else f"(-{-v})" if v != -(1 << 63) else "(-9223372036854775807-1)"
    if t is float:
        if math.isnan(v):
            return 'real("NaN")'
        if math.isinf(v):
            return 'real("INF")' if v > 0 else 'real("-INF")'
        text = repr(abs(v))
        if "e" not in text and "." not in text:
            text += ".0"
        return f"(-{text})" if math.copysign(1.0, v) < 0 else text
    if t is str:
        return quote_string(v)
    if t is list:
        return "{" + ", ".join(render(e) for e in v) + "}"
    if t is AbsTime:
        return f"absTime({int(v.epoch)}, {v.tz_offset})"
    if t is RelTime:
        return f"relTime({render(v.seconds)})"
    if v is Undefined:
        return "undefined"
    if v is Error:
        return "error"
    if isinstance(v, dict):
        return "[" + "; ".join(f"{k} = {render(x)}" for k, x in v.items()) + "]"
    raise TypeError(v)


def reference(text: str) -> Any:
    """Evaluate ``text`` with classad2, converted to condorpy's value representation."""
    import classad2
    r = classad2.ExprTree(text).eval()
    return _convert(r, text)


def _convert(r: Any, text: str | None) -> Any:
    import classad2
    if isinstance(r, classad2.Value):
        return Undefined if r == classad2.Value.Undefined else Error
    if isinstance(r, datetime.datetime):
        # classad2 drops the zone offset: read it back from the printed form
        s = classad2.ExprTree(f"string({text})").eval() if text else None
        return ("abstime", int(r.timestamp()), s)
    if type(r) is float and text is not None:
        if classad2.ExprTree(f"isReltime({text})").eval() is True:
            return RelTime(r)
        return r
    if isinstance(r, list):
        return [_convert(e, None) for e in r]
    if isinstance(r, classad2.ClassAd):
        return {k.lower(): _convert(r.eval(k), None) for k in r.keys()}
    return r


def mine(name: str, args: list[Any], ctx: CallContext | None = None) -> Any:
    spec = SPECS.get(name.lower())
    if spec is None:
        return Error
    if len(args) < spec.min_args or (spec.max_args is not None and len(args) > spec.max_args):
        return Error
    if spec.needs_ctx:
        args = [ctx or CallContext(), *args]
    if spec.needs_budget:
        args = [Budget(), *args]  # what the compiler hands such a function
    if spec.makes_records:
        args = [ClassAd, *args]  # what the compiler hands such a function
    return spec.impl(*args)


def normalise(v: Any) -> Any:
    if type(v) is AbsTime:
        return ("abstime", int(v.epoch), format_abstime(v))
    if type(v) is list:
        return [normalise(e) for e in v]
    if isinstance(v, dict):
        return {k.lower(): normalise(x) for k, x in v.items()}
    if not isinstance(v, (int, float, str, bool, RelTime)) and v is not Undefined and v is not Error:
        return {k.lower(): normalise(v.evaluate(k)) for k in v}
    return v


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is float:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if a == b:
            return math.copysign(1.0, a) == math.copysign(1.0, b)
        return abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    if type(a) is RelTime:
        return same(a.seconds, b.seconds)
    if type(a) is list or type(a) is tuple:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a is b or a == b)


def call_text(name: str, args: list[Any]) -> str:
    """The call as ClassAd text for classad2."""
    parts = [render(a) for a in args]
    if name.lower() in ("abstime", "reltime"):
        # a literal string argument is read by classad2's parser, not by the function:
        # strcat() makes it a run-time string (the parser-time form is tested elsewhere)
        parts = [f"strcat({p})" if type(a) is str else p for a, p in zip(args, parts)]
    return f"{name}({', '.join(parts)})"


def as_record(v: Any) -> Any:
    """dict stand-ins for records become condorpy ClassAds (recursively in lists)."""
    from condorpy.classad import ClassAd
    if isinstance(v, dict):
        return ClassAd({k: as_record(x) for k, x in v.items()})
    if type(v) is list:
        return [as_record(e) for e in v]
    return v


def check(name: str, args: list[Any], ctx: CallContext | None = None
          ) -> tuple[str, Any, Any] | None:
    """None when both agree, else (call text, reference result, condorpy result)."""
    text = call_text(name, args)
    ref = reference(text)
    try:
        got = normalise(mine(name, [as_record(a) for a in args], ctx))
    except Exception as e:  # a raising implementation is a bug worth reporting
        got = f"raised {e!r}"
    if same(ref, got):
        return None
    return text, ref, got


def check_end_to_end(text: str) -> tuple[str, Any, Any] | None:
    """The same comparison through condorpy's parser and evaluator."""
    from condorpy.classad import parse_expr
    ref = reference(text)
    try:
        got = normalise(parse_expr(text).evaluate())
    except Exception as e:
        got = f"raised {e!r}"
    if same(ref, got):
        return None
    return text, ref, got
