"""The lazy built-ins: they decide themselves which arguments to evaluate and where."""

from __future__ import annotations

from typing import Any

from condorpy.classad.ast import AttrRef, Select
from condorpy.classad.functions.refprint import ref_unparse
from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.ops import to_bool
from condorpy.classad.scope import Scope
from condorpy.classad.values import Error, Undefined

TABLE = FunctionTable()


@TABLE.lazy("ifThenElse", 3, 3)
def if_then_else(call: Any) -> Any:
    c = to_bool(call.arg(0))
    if c is True:
        return call.arg(1)
    if c is False:
        return call.arg(2)
    return c


@TABLE.lazy("eval", 1, 1)
def eval_(call: Any) -> Any:
    """Parse a string and evaluate it where eval() was called."""
    v = call.arg(0)
    if v is Undefined:
        return Error  # as the reference does
    if type(v) is not str:
        return v
    return call.evaluate_text(v)


@TABLE.lazy("unparse", 1, 1)
def unparse_(call: Any) -> Any:
    """The text of the expression of the attribute the argument names, looked up in the
    ad the evaluation stands in alone (no enclosing record, no TARGET), as the reference
    does; "" for a scoped reference (``MY.x``, ``r.x``: the reference looks their text
    up as a name) or a missing attribute; error when the argument is not an attribute
    reference."""
    node = call.nodes[0]
    t = type(node)
    if t is Select:
        return ""
    if t is not AttrRef:
        return Error
    s = call.scope
    e = None if node.scope or not isinstance(s, Scope) else s.exprs.get(node.name.lower())
    return "" if e is None else ref_unparse(e.node, pretty=True)


@TABLE.lazy("debug", 1, 1)
def debug(call: Any) -> Any:
    """Evaluates its argument (the reference also logs it; condorpy has no log here)."""
    return call.arg(0)
