"""What compiled expressions run on: the per-evaluation state, the budget it spends,
and the attribute lookups (MY, then enclosing records, then TARGET) every attribute
reference ends in. The closures the compiler builds (compiler.py, fastpaths.py,
calls.py) call these; nothing here compiles.
"""

from __future__ import annotations

from typing import Any, Callable, TypeAlias

from condorpy.classad.budget import AllowedBudget, Budget
from condorpy.classad.functions.registry import CallContext
from condorpy.classad.scope import Scope
from condorpy.classad.values import Error, RelTime, Undefined

Fn = Callable[[Any, Any, "list[Any]"], Any]


class _NoConst:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOCONST"

NOCONST: Any = _NoConst()
MISS: Any = object()

# How deeply attribute evaluations may nest (a chain a1 = a2, a2 = a3, ...). HTCondor's
# library stops an evaluation nested about 400 nodes deep (it then fails the whole
# evaluation), and each attribute hop costs at least one node, so no chain longer than
# this has a value there; beyond it condorpy gives ``error``. It also keeps Python's
# stack (one frame per hop of a plain chain) well inside the interpreter's limit.
MAX_ATTR_DEPTH = 399


# Per-evaluation bookkeeping, a three-slot list because it is created on every
# evaluation and a list is the cheapest object Python makes:
#   [0] the CallContext (None until a function needs it: making one costs microseconds)
#   [1] the set of (scope id, attribute) under evaluation (None until the first one)
#   [2] the Budget being spent (None until the first charge: see open_budget)
EvalState: TypeAlias = "list[Any]"


def literal_value(v: Any) -> Any:
    """What a literal evaluates to. A relative-time literal (``relTime("01:30")``, read
    as a literal when parsing) is a real number of seconds, as in HTCondor's library
    (so ``-relTime("01:30")`` is -90.0 and ``relTime("01:30") > 60`` is true), while
    ``relTime(90)``, a call, gives a relative time."""
    return float(v.seconds) if type(v) is RelTime else v


def new_state(ctx: CallContext | None = None) -> "EvalState":
    return [ctx, None, None]


def state_ctx(st: "EvalState") -> CallContext:
    ctx = st[0]
    if ctx is None:
        ctx = st[0] = CallContext()
    return ctx  # type: ignore[no-any-return]


def open_budget(st: EvalState) -> Budget:
    """The budget the evaluation ``st`` spends: its context's (shared by a request's
    evaluations), else one of its own from the context's allowance or the defaults."""
    ctx = st[0]
    if ctx is None:
        b = Budget()
    else:
        b = ctx.budget
        if b is None:
            a = ctx.allowance
            b = Budget() if a is None else AllowedBudget(a)
        else:
            b.begin()
    st[2] = b
    return b


def charge_size(st: EvalState, size: int) -> bool:
    """Charge ``size`` characters of work to the evaluation; True when its budget is
    spent."""
    b = st[2]
    if b is None:
        b = open_budget(st)
    return b.charge_size(size)  # type: ignore[no-any-return]


def charge_one(st: EvalState) -> bool:
    """Charge one step to the evaluation; True when its budget is spent."""
    b = st[2]
    if b is None:
        b = open_budget(st)
    t = b.ticks - 1
    b.ticks = t
    return t <= 0 and b.tick()  # type: ignore[no-any-return]


def budget_exceeded(st: EvalState) -> bool:
    b = st[2]
    return b is not None and b.exceeded  # type: ignore[no-any-return]


# --- attribute resolution ------------------------------------------------------------

def eval_attr(s: Scope, lc: str, fn: Fn, target: Any, st: EvalState) -> Any:
    key = (s.ident, lc)
    active = st[1]
    if active is None:
        active = st[1] = set()
    if key in active:
        return Undefined  # a circular reference
    if len(active) >= MAX_ATTR_DEPTH:
        return Error
    # one step of the budget per attribute expression evaluated (inline: Budget.charge)
    b = st[2]
    if b is None:
        b = open_budget(st)
    t = b.ticks - 1
    b.ticks = t
    if t <= 0 and b.tick():
        return Error
    active.add(key)
    try:
        return fn(s, target, st)
    finally:
        active.discard(key)


def _root(s: Scope) -> Scope:
    while s.parent is not None:
        s = s.parent
    return s


def lookup_in(s: Scope | None, lc: str, target: Any, st: EvalState) -> Any:
    """``lc`` in scope ``s`` or its enclosing records; MISS when absent."""
    while s is not None:
        v = s.consts.get(lc, MISS)
        if v is not MISS:
            return v
        e = s.exprs.get(lc)
        if e is not None:
            return eval_attr(s, lc, e.fn, target, st)
        s = s.parent
    return MISS


def lookup_unscoped(lc: str, scope: Any, target: Any, st: EvalState) -> Any:
    v = lookup_in(scope, lc, target, st)
    if v is not MISS:
        return v
    if lc == "my":
        return Undefined if scope is None else scope
    if lc == "target":
        return Undefined if target is None else target
    # a name missing from a nested record's chain is not looked for in TARGET (as in
    # HTCondor's library, where only the matched ads themselves have an alternate
    # scope): [r = [a = y]] with y in TARGET only gives r.a undefined
    if target is not None and isinstance(target, Scope) and (
            scope is None or scope.parent is None or scope.alt):
        v = lookup_in(target, lc, None if scope is None else _root(scope), st)
        if v is not MISS:
            return v
    return Undefined


def lookup_target(lc: str, scope: Any, target: Any, st: EvalState) -> Any:
    if target is None or not isinstance(target, Scope):
        return Undefined
    v = lookup_in(target, lc, None if scope is None else _root(scope), st)
    if v is MISS:
        return target if lc == "my" else (scope if lc == "target" and scope is not None
                                           else Undefined)
    return v


def lookup_my(lc: str, scope: Any, target: Any, st: EvalState) -> Any:
    v = lookup_in(scope, lc, target, st)
    if v is MISS:
        if lc == "my" and scope is not None:
            return scope
        if lc == "target" and target is not None:
            return target
        return Undefined
    return v


def record_target(rec: Scope, scope: Any, target: Any) -> Any:
    """TARGET for what is evaluated inside record ``rec`` reached from an evaluation
    standing in ``scope`` with ``target``: the matched ad ``rec`` does not belong to
    (HTCondor's library finds TARGET through the record's own enclosing ads), none for
    a record of neither."""
    if target is None:
        return None
    r = rec
    while r.parent is not None:
        r = r.parent
    t = target
    while t.parent is not None:
        t = t.parent
    if r is t:
        return None if scope is None else _root(scope)
    if scope is not None and r is _root(scope):
        return target
    return None


def select(base: Any, lc: str, scope: Any, target: Any, st: EvalState) -> Any:
    """``base.name``: a record's attribute; over a list, the list of selections."""
    if isinstance(base, Scope):
        v = lookup_in(base, lc, record_target(base, scope, target), st)
        return Undefined if v is MISS else v
    if base is Undefined:
        return Undefined
    if type(base) is list:
        return [select(b, lc, scope, target, st) for b in base]
    return Error


def subscript(base: Any, idx: Any, scope: Any, target: Any, st: EvalState) -> Any:
    if base is Error or idx is Error:
        return Error
    if base is Undefined or idx is Undefined:
        return Undefined
    if type(base) is list:
        if type(idx) is not int:
            return Error
        if 0 <= idx < len(base):
            return base[idx]
        return Error
    if isinstance(base, Scope):
        if type(idx) is not str:
            return Error
        v = lookup_in(base, idx.lower(), record_target(base, scope, target), st)
        return Undefined if v is MISS else v
    return Error
