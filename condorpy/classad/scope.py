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
    __slots__ = ("_exprs", "_consts", "_names", "_parent", "__weakref__")

    def __init__(self) -> None:
        self._exprs: dict[str, "Expr"] = {}
        self._consts: dict[str, Any] = {}
        self._names: dict[str, str] = {}
        self._parent: Scope | None = None
