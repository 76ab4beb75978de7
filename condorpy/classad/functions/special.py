"""The lazy built-ins: they decide themselves which arguments to evaluate and where."""

from __future__ import annotations

from typing import Any

from condorpy.classad.ast import AttrRef
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


def _attr_expr(call: Any) -> Any:
    """The expression an attribute-reference argument names, or None."""
    node = call.nodes[0]
    if type(node) is not AttrRef:
        return None
    scope = call.scope if node.scope.lower() != "target" else call.target
    lc = node.name.lower()
    s = scope
    while isinstance(s, Scope):
        e = s.exprs.get(lc)
        if e is not None:
            return e
        s = s.parent
    if not node.scope and isinstance(call.target, Scope):
        return call.target.exprs.get(lc)
    return None


@TABLE.lazy("unparse", 1, 1)
def unparse_(call: Any) -> Any:
    """The text of an attribute's expression; "" when the attribute is missing or the
    reference is scoped (as the reference does), error when the argument is not an
    attribute reference."""
    node = call.nodes[0]
    if type(node) is not AttrRef:
        return Error
    if node.scope:
        return ""
    e = _attr_expr(call)
    return "" if e is None else ref_unparse(e.node, pretty=True)


def _resolves(lc: str, scopes: list[Any]) -> bool:
    for s in scopes:
        while isinstance(s, Scope):
            if lc in s.exprs:
                return True
            s = s.parent
    return False


@TABLE.lazy("unresolved", 1, 1)
def unresolved(call: Any) -> Any:
    """The references of an attribute's expression that resolve nowhere, as the
    reference spells them: sorted, comma-separated, MY. kept, TARGET. dropped."""
    e = _attr_expr(call)
    if e is None:
        return Undefined
    missing: set[str] = set()
    stack = [e.node]
    while stack:
        n = stack.pop()
        if type(n) is AttrRef:
            kind = n.scope.lower()
            lc = n.name.lower()
            if kind == "target":
                if not _resolves(lc, [call.target]):
                    missing.add(n.name)
            elif kind == "my":
                if not _resolves(lc, [call.scope]):
                    missing.add(f"{n.scope}.{n.name}")
            elif not _resolves(lc, [call.scope, call.target]):
                missing.add(n.name)
        stack.extend(n.children())
    return ",".join(sorted(missing))


@TABLE.lazy("debug", 1, 1)
def debug(call: Any) -> Any:
    """Evaluates its argument (the reference also logs it; condorpy has no log here)."""
    return call.arg(0)
