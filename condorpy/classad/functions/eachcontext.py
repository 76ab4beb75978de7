"""evalInEachContext and countMatches: an expression evaluated inside each record of a list.

They are HTCondor's matchmaking idiom for custom resources: a slot lists its GPUs as
references to property records (``AvailableGPUs = { GPUs_GPU_a0; GPUs_GPU_b1 }``), a
job names what it needs as an unevaluated expression (``RequireGPUs = Capability >= 8.0``)
and its Requirements count the records that satisfy it
(``countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs``).

What follows reproduces HTCondor's library (``classad2``), which the differential tests
hold it to, including where that library's rules are surprising:

* A first argument that is an attribute reference (``x``, ``MY.x``, ``TARGET.x``,
  ``r.x``) stands for the expression that attribute holds, evaluated in each record
  (so ``RequireGPUs``'s ``Capability`` is each GPU's). A reference that finds nothing
  stays itself: ``evalInEachContext(Capability, ...)`` projects an attribute.
* Looking the reference up moves the evaluation to the ad where the lookup ended, and
  the second argument is evaluated there: after ``TARGET.x`` a ``TARGET.List`` names
  the ad that first held the expression's other side, and after a lookup that found
  nothing in a match, every name is undefined (the lookup ended above both ads). The
  move outlasts the call: the rest of the expression is evaluated from there too
  (condorpy.classad.place, and Compiler._moving for the expressions around the call).
* The list's elements are evaluated where the call is (that moved place), not where
  the list is written, also when the list is held in an attribute or reached through
  a chain of them or a conditional (_held_list); a record in it written literally
  belongs to the ad the list is written in.
* In each record, a name the record's scopes do not hold goes on to the other matched
  ad only when the record sits directly in one of them (a GPU record of the slot: yes;
  a record nested deeper: no). TARGET there is the other ad either way.
* The second argument: a list, else undefined gives undefined (countMatches: 0), and
  anything else (a single record too) error. An element that is not a record gives
  error (undefined for undefined); countMatches counts the results that are true or a
  non-zero number.
"""

from __future__ import annotations

from typing import Any

from condorpy.classad import place
from condorpy.classad.ast import (AttrRef, Call, Cond, Elvis, ListExpr, Node, Paren,
                                  RecordExpr, Select)
from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.ops import to_bool
from condorpy.classad.scope import Scope
from condorpy.classad.values import Error, Undefined

TABLE = FunctionTable()

# Names the reference library resolves by rule rather than lookup (it misbehaves, even
# crashes, dereferencing them as an argument here); condorpy leaves them unresolved.
_SPECIAL = frozenset({"my", "target", "self", "parent", "root", "toplevel", "currenttime"})

# Where an evaluation stands: (scope, target). Above both matched ads, nothing resolves.
_NOWHERE: tuple[Any, Any] = (None, None)


def _root(s: Scope) -> Scope:
    while s.parent is not None:
        s = s.parent
    return s


class Match:
    """The two ads of the evaluation (b is None outside a match) and the call's place."""

    __slots__ = ("a", "b", "here", "home")

    def __init__(self, call: Any) -> None:
        s, tg = call.scope, call.target
        self.here: tuple[Any, Any] = (s, tg)
        # where the call is written: what a record written in it belongs to, and
        # which two ads are matched (where the call stands may have moved: place.py)
        self.home = place.home(call.state, s, tg)
        hs, htg = self.home
        self.a = _root(hs) if isinstance(hs, Scope) else None
        self.b = _root(htg) if isinstance(htg, Scope) else None

    def other(self, s: Scope) -> Any:
        """TARGET for an evaluation standing in ``s``: the other matched ad."""
        r = _root(s)
        if r is self.a:
            return self.b
        if r is self.b:
            return self.a
        return None

    def at(self, s: Scope) -> tuple[Any, Any]:
        return (s, self.other(s))

    def ended(self, top: Scope) -> tuple[Any, Any]:
        """Where a lookup that found nothing leaves the evaluation: above the matched
        ads in a match, else at the top of the scopes it walked."""
        if self.b is not None and (top is self.a or top is self.b):
            return _NOWHERE
        return self.at(top)


def _find(start: Scope, lc: str) -> tuple[Any, Scope]:
    """(the expression ``lc`` names in ``start``'s chain or None, the scope it is in or
    the top of the chain)."""
    s = start
    while True:
        e = s.exprs.get(lc)
        if e is not None:
            return e, s
        if s.parent is None:
            return None, s
        s = s.parent


def deref(call: Any, m: Match, node: Node, where: tuple[Any, Any]
           ) -> tuple[Any, Any, tuple[Any, Any], tuple[Any, Any]]:
    """An attribute-reference argument looked up from ``where``: (its expression or
    None, the scope holding it or None, the place it stood in, where the evaluation
    stands afterwards)."""
    s, tg = where
    t = type(node)
    if t is AttrRef:
        lc = node.name.lower()  # type: ignore[attr-defined]
        kind = node.scope.lower()  # type: ignore[attr-defined]
        if kind == "target":
            if not isinstance(tg, Scope):
                return None, None, where, where  # TARGET undefined: nothing moves
            e, f = _find(tg, lc)
            return (e, f, m.at(f), m.at(f)) if e is not None else (None, None, where,
                                                                  m.ended(f))
        if not isinstance(s, Scope) or (kind == "" and lc in _SPECIAL):
            return None, None, where, where
        e, f = _find(s, lc)
        if e is not None:
            return e, f, (f, tg), (f, tg)
        if kind == "" and isinstance(tg, Scope) and (s.parent is None or s.alt):
            e, g = _find(tg, lc)
            if e is not None:
                return e, g, m.at(g), m.at(g)
            f = g
        return None, None, where, m.ended(f)
    if t is Select:
        base = call.compiler.compiled(node.base)(s, tg, call.state)  # type: ignore[attr-defined]
        lc = node.name.lower()  # type: ignore[attr-defined]
        if isinstance(base, Scope):
            e, f = _find(base, lc)
            return (e, f, m.at(f), m.at(f)) if e is not None else (None, None, where,
                                                                  m.ended(f))
        if type(base) is list:
            # a projection over a list: the list of its selections, as a constant
            value = call.compiler.compiled(node)(s, tg, call.state)
            return Const(value), None, where, where
    return None, None, where, where


class Const:
    """A value standing where an expression would (a projection over a list)."""

    __slots__ = ("fn",)

    def __init__(self, value: Any) -> None:
        self.fn = lambda s, tg, st: value


def _unparen(node: Node) -> Node:
    while type(node) is Paren:
        node = node.inner  # type: ignore[attr-defined]
    return node


def _held_list(call: Any, m: Match, node: Node, where: tuple[Any, Any], hops: int = 0
               ) -> Any:
    """The items of the list expression ``node`` stands for, looked up from ``where``,
    and the place that list is written in (its records belong there); _CYCLE when it
    leads back to an attribute it is reached through (the reference gives undefined
    there); None when it does not lead to a list written as such (it is evaluated
    instead). The library takes a list held in an attribute, or reached through a chain
    of them or a conditional, as the expression it is, not as a value: its items are
    evaluated where the call stands, not where they are written."""
    node = _unparen(node)
    t = type(node)
    st = call.state
    if t is ListExpr:
        return node.items, where  # type: ignore[attr-defined]
    if t is Cond or (t is Call and len(node.args) == 3  # type: ignore[attr-defined]
                     and node.name.lower() == "ifthenelse"):  # type: ignore[attr-defined]
        parts = ((node.cond, node.then, node.else_) if t is Cond  # type: ignore[attr-defined]
                 else node.args)  # type: ignore[attr-defined]
        c = to_bool(call.compiler.compiled(parts[0])(*where, st))
        if c is True or c is False:
            return _held_list(call, m, parts[1] if c else parts[2], where, hops)
        return None
    if t is Elvis:
        left = _held_list(call, m, node.left, where, hops)  # type: ignore[attr-defined]
        if left is not None and left is not _CYCLE:
            return left
        if left is None and call.compiler.compiled(node.left)(  # type: ignore[attr-defined]
                *where, st) is not Undefined:
            return None
        return _held_list(call, m, node.right, where, hops)  # type: ignore[attr-defined]
    if (t is not AttrRef and t is not Select) or hops >= _MAX_HOPS:
        return None
    e, f, held, _ = deref(call, m, node, where)
    if e is None or isinstance(e, Const):
        return None
    # the attribute is under evaluation while its expression is followed: the
    # evaluation's own circular-reference check sees it (compiler.eval_attr)
    key = (f.ident, node.name.lower())  # type: ignore[attr-defined]
    active = st[1]
    if active is None:
        active = st[1] = set()
    if key in active:
        return _CYCLE
    active.add(key)
    try:
        return _held_list(call, m, e.node, held, hops + 1)
    finally:
        active.discard(key)


# (how many attribute hops _held_list follows; a longer chain is evaluated instead)
_MAX_HOPS = 64
_CYCLE: Any = object()


def _elements(call: Any, m: Match, where: tuple[Any, Any]) -> Any:
    """The second argument's elements, evaluated where the call stands (``where``); or
    Undefined or Error in place of a list."""
    node = call.nodes[1]
    st = call.state
    compiled = call.compiler.compiled
    if type(node) is ListExpr:
        items: Any = (node.items, m.home)
    else:
        items = _held_list(call, m, node, where)
        if items is _CYCLE:
            return Undefined
    if items is not None:
        s, tg = where
        nodes, home = items
        return [compiled(i)(*home, st) if type(i) is RecordExpr else compiled(i)(s, tg, st)
                for i in nodes]
    v = compiled(node)(*where, st)
    if type(v) is list:
        return v
    return Undefined if v is Undefined else Error


def _each(call: Any) -> Any:
    """The results of the first argument in each element of the second (a list), or
    Undefined/Error for the whole call."""
    m = Match(call)
    first = call.nodes[0]
    st = call.state
    e, _, _, where = deref(call, m, first, m.here)
    if type(first) is AttrRef or type(first) is Select:
        # the lookup moved the evaluation: the rest of it goes on from there
        place.move(st, where[0], where[1], m.here)
    fn = call.fns[0] if e is None else e.fn
    elems = _elements(call, m, where)
    if type(elems) is not list:
        return elems
    if call.charge(len(elems)):
        return Error
    out: list[Any] = []
    # each record is evaluated as an evaluation of its own (the library gives each a
    # fresh state): whatever moves there stays there
    saved = place.moved(st)
    budget = call.budget
    try:
        for v in elems:
            if budget.exceeded:
                return Error    # the rest would each give error: stop at once
            if len(st) > 3:
                st[3] = None
            if isinstance(v, Scope):
                p = v.parent
                if m.b is not None and p is not None and (p is m.a or p is m.b):
                    out.append(fn(v.alternate_view(), m.b if p is m.a else m.a, st))
                else:
                    out.append(fn(v, m.other(v), st))
            else:
                out.append(Undefined if v is Undefined else Error)
    finally:
        place.restore(st, saved)
    return out


@TABLE.lazy("evalInEachContext", 2, 2)
def eval_in_each_context(call: Any) -> Any:
    """The first argument evaluated in each record of the second."""
    return _each(call)


@TABLE.lazy("countMatches", 2, 2)
def count_matches(call: Any) -> Any:
    """How many records of the second argument make the first true (or non-zero);
    never undefined: 0 where evalInEachContext would give undefined."""
    r = _each(call)
    if type(r) is not list:
        return 0 if r is Undefined else r
    n = 0
    for v in r:
        t = type(v)
        if v is True or ((t is int or t is float) and v != 0):
            n += 1
    return n
