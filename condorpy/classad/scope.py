"""The lookup side of a ClassAd, shared by the container and the evaluator.

A :class:`Scope` maps lower-cased attribute names to compiled expressions, keeps the
literal values of constant attributes in a second map so the evaluator can answer them
with a single dictionary probe, and points to its enclosing record (``parent``) for
nested-record scoping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condorpy.classad.expr import Expr


class Scope:
    __slots__ = ("_exprs", "_consts", "_names", "_parent", "_ident", "__weakref__")

    def __init__(self) -> None:
        self._exprs: dict[str, "Expr"] = {}
        self._consts: dict[str, Any] = {}
        self._names: dict[str, str] = {}
        self._parent: Scope | None = None
        # Who this scope is to the evaluator's circular-reference check. A record
        # literal makes a new scope each time it is evaluated; all of them, made from
        # one literal in one enclosing scope, are the same record to HTCondor (one
        # object there), so they share this (see ClassAd._with_parent).
        self._ident: Any = id(self)
