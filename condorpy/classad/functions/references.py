"""unresolved(): the references of an attribute's expression that resolve nowhere.

``unresolved(Requirements)`` lists them, comma-separated; ``unresolved(Requirements,
"^Target")`` says whether one of them matches a regular expression. As in HTCondor's
library (``classad2`` is the reference):

* The argument must be an attribute reference (``x``, ``MY.x``, ``TARGET.x``,
  ``r.x``); it is looked up like evalInEachContext's, and that lookup moves the
  evaluation for the rest of the expression the same way (place.py). A reference that
  finds nothing gives undefined.
* From the ad the expression was found in, each name is looked up in that ad and the
  records around it, never in the other matched ad (the evaluation's fallback to
  TARGET does not apply); a name found is followed into its own expression, from the
  ad it was found in. ``MY.x`` and ``TARGET.x`` and ``r.x`` look ``x`` up in that ad or
  record; when the prefix itself is undefined the reference is listed whole
  (``r.x``), a ``TARGET.`` prefix dropped from the printed name. A prefix that is
  neither undefined nor a record, or a chain of references that comes back to itself,
  makes the answer empty (false with a pattern).
* Names come out sorted and deduplicated ignoring case (sorted before the ``TARGET.``
  prefix is dropped).
"""

from __future__ import annotations

from typing import Any

from condorpy.classad import place
from condorpy.classad.ast import (AttrRef, Call, ListExpr, Literal, Node, RecordExpr, Select,
                                  unparse)
from condorpy.classad.functions.eachcontext import Match, deref
from condorpy.classad.functions.regex import OutOfTime, compile_pattern, search
from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.scope import Scope
from condorpy.classad.values import Error, Undefined

TABLE = FunctionTable()

# How many attributes deep the walk follows references (HTCondor's library stops about
# as deep, and a chain that comes back to itself always ends there).
_DEPTH = 400
# How many nodes one call may visit before its budget is charged again.
_CHUNK = 1024


class _Failed(Exception):
    """The walk cannot go on: the answer is empty."""


class _Walk:
    __slots__ = ("call", "m", "found", "visited")

    def __init__(self, call: Any, m: Match) -> None:
        self.call = call
        self.m = m
        self.found: dict[str, str] = {}  # lower-cased name -> the first spelling
        self.visited = 0

    def add(self, name: str) -> None:
        self.found.setdefault(name.lower(), name)

    def names(self) -> list[str]:
        out = []
        for lc in sorted(self.found):
            name = self.found[lc]
            out.append(name[7:] if lc.startswith("target.") else name)
        return out

    def lookup(self, start: Scope, name: str, depth: int) -> None:
        s: Scope | None = start
        lc = name.lower()
        while s is not None:
            e = s.exprs.get(lc)
            if e is not None:
                if depth >= _DEPTH:
                    raise _Failed
                self.walk(e.node, s, depth + 1)
                return
            s = s.parent
        self.add(name)

    def prefix(self, node: Node, cur: Any) -> Any:
        """The value of a reference's prefix, evaluated where the walk stands."""
        t = type(node)
        if t is AttrRef and node.name.lower() in ("my", "self") and not node.scope:  # type: ignore[attr-defined]
            return cur if isinstance(cur, Scope) else Undefined
        if t is AttrRef and node.name.lower() == "target" and not node.scope:  # type: ignore[attr-defined]
            other = self.m.other(cur) if isinstance(cur, Scope) else None
            return other if other is not None else Undefined
        where = self.m.at(cur) if isinstance(cur, Scope) else (None, None)
        return self.call.compiler.compiled(node)(*where, self.call.state)

    def walk(self, node: Node, cur: Any, depth: int) -> None:
        self.visited += 1
        if self.visited % _CHUNK == 0 and self.call.charge(_CHUNK):
            raise _Failed
        t = type(node)
        if t is Literal:
            return
        if t is AttrRef or t is Select:
            if t is AttrRef:
                kind = node.scope  # type: ignore[attr-defined]
                base: Node | None = AttrRef(kind) if kind else None
            else:
                base = node.base  # type: ignore[attr-defined]
            name = node.name  # type: ignore[attr-defined]
            if base is None:
                start = cur
            else:
                v = self.prefix(base, cur)
                if v is Undefined:
                    self.add(f"{unparse(base)}.{name}")
                    return
                if not isinstance(v, Scope):
                    raise _Failed
                start = v
            if not isinstance(start, Scope):
                self.add(name)  # (nowhere to look)
                return
            self.lookup(start, name, depth)
            return
        if t is Call or t is ListExpr:
            if depth >= _DEPTH:
                raise _Failed
            for child in node.children():
                self.walk(child, cur, depth + 1)
            return
        if t is RecordExpr:
            if depth >= _DEPTH:
                raise _Failed
            for _, child in node.items:  # type: ignore[attr-defined]
                self.walk(child, cur, depth + 1)
            return
        for child in node.children():  # operators, parentheses: no depth of their own
            self.walk(child, cur, depth)


@TABLE.lazy("unresolved", 1, 2)
def unresolved(call: Any) -> Any:
    first = call.nodes[0]
    if type(first) is not AttrRef and type(first) is not Select:
        return Error
    m = Match(call)
    e, f, held, where = deref(call, m, first, m.here)
    place.move(call.state, where[0], where[1], m.here)
    if e is None or f is None:
        return Undefined
    rx = None
    if len(call.nodes) == 2:
        pattern = call.compiler.compiled(call.nodes[1])(*where, call.state)
        if type(pattern) is not str:
            return Error
        rx = compile_pattern(pattern, "i")
        if rx is None:
            return Error
    w = _Walk(call, m)
    try:
        w.walk(e.node, f, 0)
    except (_Failed, RecursionError):
        return "" if rx is None else False
    if rx is None:
        return ",".join(w.names())
    budget = call.budget
    try:
        return any(search(budget, rx, n.encode("utf-8")) for n in w.names())
    except OutOfTime:
        return Error
