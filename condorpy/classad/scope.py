"""The lookup side of a ClassAd, shared by the container and the evaluator.

A :class:`Scope` maps lower-cased attribute names to compiled expressions, keeps the
literal values of constant attributes in a second map so the evaluator can answer them
with a single dictionary probe, and points to its enclosing record (``parent``) for
nested-record scoping.

Its maps are public attributes, not private ones behind methods: the compiler's
closures (compiler.py) and the lazy functions (functions/special.py) probe them on
every attribute reference, where a method or property would cost a call each time,
and they live in modules apart from ClassAd's own (ad.py imports the compiler, so the
compiler cannot import ad.py). They are read-only by convention: only ClassAd's own
methods and :meth:`Scope.adopt` (for the readers that build an ad's maps in bulk)
write them; everyone else changes an ad through ClassAd's mapping interface, which
keeps the three maps in step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condorpy.classad.expr import Expr


class Scope:
    __slots__ = ("exprs", "consts", "spelling", "parent", "ident", "alt", "__weakref__")

    def __init__(self) -> None:
        # lower-cased name -> its compiled expression
        self.exprs: dict[str, "Expr"] = {}
        # lower-cased name -> value, for the attributes whose expression is constant
        self.consts: dict[str, Any] = {}
        # lower-cased name -> the name as first spelled (what the writers print)
        self.spelling: dict[str, str] = {}
        self.parent: Scope | None = None
        # Who this scope is to the evaluator's circular-reference check. A record
        # literal makes a new scope each time it is evaluated; all of them, made from
        # one literal in one enclosing scope, are the same record to HTCondor (one
        # object there), so they share this (see ClassAd.with_parent).
        self.ident: Any = id(self)
        # Does a name found nowhere in this scope's chain go on to the evaluation's
        # TARGET ad? HTCondor's library does that only from the ad an evaluation starts
        # in when that ad is one of the two matched (its "alternate scope"): a top-level
        # ad (parent None) always qualifies; a nested record only while
        # evalInEachContext/countMatches evaluates in it (see alternate_view).
        self.alt = False

    def alternate_view(self) -> "Scope":
        """This scope, sharing its maps and identity, with names it cannot resolve
        going on to TARGET: what a record of one matched ad is while
        evalInEachContext/countMatches evaluates an expression in it."""
        view = object.__new__(type(self))
        view.exprs = self.exprs
        view.consts = self.consts
        view.spelling = self.spelling
        view.parent = self.parent
        view.ident = self.ident
        view.alt = True
        return view

    def adopt(self, spelling: dict[str, str], exprs: dict[str, "Expr"],
              consts: dict[str, Any]) -> None:
        """Take these maps, built together by a reader (adtext's old-format fast
        path), as this scope's own, without copying them. They must agree: the same
        keys in ``spelling`` and ``exprs``, and in ``consts`` exactly the constant
        ones."""
        self.spelling = spelling
        self.exprs = exprs
        self.consts = consts
