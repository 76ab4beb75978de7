"""The ClassAd language: parse, compile, evaluate; the ClassAd container; formats.

    from condorpy.classad import ClassAd, parse_expr, Undefined, Error
    ad = ClassAd.parse_old(text)
    parse_expr("Memory > 512").evaluate(my=ad, target=job)
"""

from __future__ import annotations

from condorpy.classad.ad import ClassAd, match, rank
from condorpy.classad.budget import Allowance, Budget
from condorpy.classad.expr import Expr, LazyCall, parse_expr
from condorpy.classad.formats import format_shown, format_value
from condorpy.classad.functions.registry import CallContext
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined

__all__ = ["ClassAd", "Expr", "LazyCall", "parse_expr", "Undefined", "Error", "AbsTime",
           "RelTime", "format_shown", "format_value", "match", "rank", "CallContext", "Budget",
           "Allowance"]
