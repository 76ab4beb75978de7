"""Compile a syntax tree into nested Python closures: parse once, evaluate many times.

Each node becomes ``fn(scope, target, state) -> value``. Constant sub-trees are folded at
compile time; the common cases of each operator (two numbers, two strings, booleans)
run inline and everything else falls back to :mod:`condorpy.classad.ops`. Attribute
references probe the scope's constant map first, then its expressions, then enclosing
records, then the TARGET ad (HTCondor's matchmaking rule: unscoped names are looked
up in MY, then TARGET). An attribute being evaluated again inside its own evaluation is
a circular reference and yields ``undefined``, as HTCondor's library gives: the inner
reference is undefined and the outer evaluation carries on with that (so
``[a = isUndefined(a)].a`` is true). Nothing is cached between references: the
reference evaluates an attribute afresh each time it is named, and so do we.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, TypeAlias

from condorpy.classad import ops
from condorpy.classad.ast import (AttrRef, Binary, Call, Cond, Elvis, ListExpr, Literal,
                                  Node, Paren, RecordExpr, Select, Subscript, Unary)
from condorpy.classad.budget import CHARS_PER_STEP_SHIFT, Budget
from condorpy.classad.functions.registry import CallContext, FunctionSpec
from condorpy.classad.functions.special import if_then_else
from condorpy.classad.lexer import INT_MAX, INT_MIN
from condorpy.classad.parser import parse_node
from condorpy.classad.place import contained, frame, here, home
from condorpy.classad.scope import Scope
from condorpy.classad.values import Error, RelTime, Undefined, Value
from condorpy.errors import ClassAdSyntaxError

if TYPE_CHECKING:
    from condorpy.classad.expr import Expr

Fn = Callable[[Any, Any, "list[Any]"], Any]


class _NoConst:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOCONST"


NOCONST: Any = _NoConst()
_MISS: Any = object()

# How deeply attribute evaluations may nest (a chain a1 = a2, a2 = a3, ...). HTCondor's
# library stops an evaluation nested about 400 nodes deep (it then fails the whole
# evaluation), and each attribute hop costs at least one node, so no chain longer than
# this has a value there; beyond it condorpy gives ``error``. It also keeps Python's
# stack (one frame per hop of a plain chain) well inside the interpreter's limit.
MAX_ATTR_DEPTH = 399
_TEXTS_MAX = 1024  # (Compiler.compile_text)
# The calls that may move the evaluation (place.py) when their first argument is an
# attribute reference, with the numbers of arguments they take.
MOVING_CALLS = {"countmatches": (2, 2), "evalineachcontext": (2, 2), "unresolved": (1, 2)}


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
    evaluations), else a default one of its own."""
    ctx = st[0]
    b = None if ctx is None else ctx.budget
    if b is None:
        b = Budget()
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
    """``lc`` in scope ``s`` or its enclosing records; _MISS when absent."""
    while s is not None:
        v = s.consts.get(lc, _MISS)
        if v is not _MISS:
            return v
        e = s.exprs.get(lc)
        if e is not None:
            return eval_attr(s, lc, e.fn, target, st)
        s = s.parent
    return _MISS


def lookup_unscoped(lc: str, scope: Any, target: Any, st: EvalState) -> Any:
    v = lookup_in(scope, lc, target, st)
    if v is not _MISS:
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
        if v is not _MISS:
            return v
    return Undefined


def lookup_target(lc: str, scope: Any, target: Any, st: EvalState) -> Any:
    if target is None or not isinstance(target, Scope):
        return Undefined
    v = lookup_in(target, lc, None if scope is None else _root(scope), st)
    if v is _MISS:
        return target if lc == "my" else (scope if lc == "target" and scope is not None
                                           else Undefined)
    return v


def lookup_my(lc: str, scope: Any, target: Any, st: EvalState) -> Any:
    v = lookup_in(scope, lc, target, st)
    if v is _MISS:
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
        return Undefined if v is _MISS else v
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
        return Undefined if v is _MISS else v
    return Error


# --- the compiler --------------------------------------------------------------------

class Compiler:
    def __init__(self, functions: dict[str, FunctionSpec],
                 make_record: Callable[[tuple[tuple[str, Node], ...], Any], Any]) -> None:
        self.functions = functions
        self.make_record = make_record
        # eval()'s texts, compiled: (closure, constant or NOCONST) by text. Bounded:
        # cleared when full.
        self._texts: dict[str, tuple[Fn, Any]] = {}
        # sub-trees a lazy function evaluates on its own (a list literal's items), by
        # id of the node, kept with the node so that the id stays its own. Bounded.
        self._nodes: dict[int, tuple[Node, Fn]] = {}
        # How many calls that move the evaluation (see place.py) have been compiled:
        # compile() compares it before and after a node to learn that the node's
        # evaluation may move, without walking the tree again.
        self._moves = 0
        # How many calls that read where the evaluation stands have been compiled.
        self._reads = 0
        # Compiling the parts of an expression that may move (see _moving)?
        self._lexical = False

    def new_record(self, fields: dict[str, Value]) -> Any:
        """A record holding plain values (what a ``makes_records`` function gets)."""
        return self.make_record(tuple((k, Literal(v)) for k, v in fields.items()), None)

    def compile_text(self, text: str) -> tuple[Fn, Any] | None:
        """compile() of the expression ``text``, None where it does not parse."""
        done = self._texts.get(text)
        if done is None:
            try:
                # (not an evaluation of its own: a move in the text outlasts eval())
                done = self.compile(parse_node(text))
            except (ClassAdSyntaxError, RecursionError):
                return None
            if len(self._texts) >= _TEXTS_MAX:
                self._texts.clear()
            self._texts[text] = done
        return done

    def compiled(self, node: Node) -> Fn:
        """The closure of ``node``, compiled once (for a lazy function that evaluates
        parts of an argument, or of an attribute's expression, itself)."""
        done = self._nodes.get(id(node))
        if done is None or done[0] is not node:
            done = (node, self.compile(node)[0])
            if len(self._nodes) >= _TEXTS_MAX:
                self._nodes.clear()
            self._nodes[id(node)] = done
        return done[1]

    def compile_root(self, node: Node) -> tuple[Fn, Any]:
        """compile() of a whole expression (an attribute's): one that may move the
        evaluation (place.py) keeps the move to itself."""
        n0, r0 = self._moves, self._reads
        fn, const = self.compile(node)
        if self._moves != n0 or self._reads != r0:
            # (one that only reads the place must not read a place moved outside it)
            self._moves, self._reads = n0, r0
            return frame(fn), const
        return fn, const

    def compile(self, node: Node) -> tuple[Fn, Any]:
        """(closure, constant value or NOCONST)."""
        t = type(node)
        if t is Literal:
            v = literal_value(node.value)  # type: ignore[attr-defined]
            return (lambda s, tg, st: v), v
        if t is Paren:
            return self.compile(node.inner)  # type: ignore[attr-defined]
        meth = getattr(self, "_c_" + t.__name__)
        n0 = self._moves
        fn, foldable = meth(node)
        if self._moves != n0:
            # the node's evaluation may move (place.py): what it evaluates after a part
            # that moved must be evaluated where that part left it
            if t is Select or t is RecordExpr:
                self._moves = n0  # an attribute reference puts the place back
                return (contained(fn) if t is Select else fn), NOCONST
            fn = self._moving(node, fn)
            return fn, NOCONST
        if foldable:
            st = new_state()
            v = fn(None, None, st)
            if budget_exceeded(st):
                # too costly to fold: left to each evaluation, under its own budget
                return fn, NOCONST
            return (lambda s, tg, st: v), v
        return fn, NOCONST

    # Each _c_X returns (closure, foldable): foldable when every child is constant and
    # the node itself depends on nothing but its children.

    def _c_AttrRef(self, node: AttrRef) -> tuple[Fn, bool]:
        lc = node.name.lower()
        kind = node.scope.lower()
        if kind == "target":
            def target_attr(s: Any, tg: Any, st: EvalState) -> Any:
                if isinstance(tg, Scope):
                    v = tg.consts.get(lc, _MISS)  # lookup_target's first probe, inline
                    if v is not _MISS:
                        return v
                return lookup_target(lc, s, tg, st)
            return target_attr, False
        if kind == "my":
            return (lambda s, tg, st: lookup_my(lc, s, tg, st)), False
        lookup = lookup_unscoped
        depth = MAX_ATTR_DEPTH

        def attr(s: Any, tg: Any, st: EvalState) -> Any:
            if s is not None:
                v = s.consts.get(lc, _MISS)
                if v is not _MISS:
                    return v
                e = s.exprs.get(lc)
                if e is not None:
                    # eval_attr inlined: attribute chains are the evaluator's hot path
                    key = (s.ident, lc)
                    active = st[1]
                    if active is None:
                        active = st[1] = set()
                    if key in active:
                        return Undefined  # a circular reference
                    if len(active) >= depth:
                        return Error
                    b = st[2]
                    if b is None:
                        b = open_budget(st)
                    t = b.ticks - 1
                    b.ticks = t
                    if t <= 0 and b.tick():
                        return Error
                    active.add(key)
                    try:
                        return e.fn(s, tg, st)
                    finally:
                        active.discard(key)
            return lookup(lc, s, tg, st)
        return attr, False

    def _c_Select(self, node: Select) -> tuple[Fn, bool]:
        bf, bc = self.compile(node.base)
        lc = node.name.lower()
        if self._lexical:
            def lexical_select(s: Any, tg: Any, st: EvalState) -> Any:
                b = bf(s, tg, st)
                h = home(st, s, tg)  # (which ad a record belongs to: see _moving)
                return select(b, lc, h[0], h[1], st)
            return lexical_select, False
        return (lambda s, tg, st: select(bf(s, tg, st), lc, s, tg, st)), False

    def _c_Subscript(self, node: Subscript) -> tuple[Fn, bool]:
        bf, _ = self.compile(node.base)
        xf, _ = self.compile(node.index)
        if self._lexical:
            return self._moving(node, bf), False
        return (lambda s, tg, st: subscript(bf(s, tg, st), xf(s, tg, st), s, tg, st)), False

    def _c_ListExpr(self, node: ListExpr) -> tuple[Fn, bool]:
        compiled = [self.compile(i) for i in node.items]
        fns = tuple(f for f, _ in compiled)
        const = all(c is not NOCONST for _, c in compiled)
        return (lambda s, tg, st: [f(s, tg, st) for f in fns]), const

    def _c_RecordExpr(self, node: RecordExpr) -> tuple[Fn, bool]:
        make = self.make_record
        proto = make(node.items, None)  # compiles the attribute expressions once

        if self._lexical:
            def lexical_record(s: Any, tg: Any, st: EvalState) -> Any:
                return proto.with_parent(home(st, s, tg)[0])
            return lexical_record, False

        def record(s: Any, tg: Any, st: EvalState) -> Any:
            return proto.with_parent(s)
        return record, False

    def _c_Unary(self, node: Unary) -> tuple[Fn, bool]:
        f, c = self.compile(node.operand)
        op = node.op
        slow = ops.unary
        if op == "!":
            def not_(s: Any, tg: Any, st: EvalState) -> Any:
                v = f(s, tg, st)
                if v is True:
                    return False
                if v is False:
                    return True
                return slow("!", v)
            return not_, c is not NOCONST
        return (lambda s, tg, st: slow(op, f(s, tg, st))), c is not NOCONST

    def _c_Binary(self, node: Binary) -> tuple[Fn, bool]:
        op = node.op
        if op == "&&" or op == "||":
            fused = self._and_leaf_or(node) if op == "&&" else None
            if fused is not None:
                return fused, False
            # a && b && c is (a && b) && c: one closure walks the whole chain
            chain = [self.compile(n) for n in _chain(node, op)]
            fns = [f for f, _ in chain]
            foldable = all(c is not NOCONST for _, c in chain)
            leaf = None if foldable or len(fns) != 2 else self._leaf(_chain_first(node, op))
            if leaf is not None and not leaf[1]:
                return (_and_leaf if op == "&&" else _or_leaf)(leaf, fns[0], fns[1]), False
            if len(fns) == 2:
                return (_and if op == "&&" else _or)(fns[0], fns[1]), foldable
            return (_and_n if op == "&&" else _or_n)(fns), foldable
        spine = _spine(node)
        if spine is not None:
            return self._c_spine(*spine)
        if op in _CMP_OPS:
            fused = self._cmp_ite_is(node) or self._cmp_arith(node)
            if fused is not None:
                return fused, False
        lf, lc_ = self.compile(node.left)
        rf, rc = self.compile(node.right)
        foldable = lc_ is not NOCONST and rc is not NOCONST
        if op in ("+", "-", "*"):
            return _arith(op, lf, rf, rc, _attr_name(node.left), _attr_name(node.right)), foldable
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return _compare(op, lf, rf, rc, _attr_name(node.left),
                            _attr_name(node.left, "target")), foldable
        if (op == "is" or op == "isnt") and (type(rc) in _SCALARS or rc is Undefined
                                             or rc is Error):
            return _identical(op == "isnt", lf, rc, _attr_name(node.left)), foldable
        slow = ops.BINARY[op]
        return (lambda s, tg, st: slow(lf(s, tg, st), rf(s, tg, st))), foldable

    def _c_spine(self, first: Node, links: list[tuple[str, Node]]) -> tuple[Fn, bool]:
        """A long left-nested chain (``1 + 2 - 3 + ...``) as one loop: compiling and
        evaluating it node by node would recurse once per operator."""
        ff, fc = self.compile(first)
        foldable = fc is not NOCONST
        steps: list[tuple[Callable[[Any, Any], Any], Fn]] = []
        for op, right in links:
            rf, rc = self.compile(right)
            foldable = foldable and rc is not NOCONST
            steps.append((ops.BINARY[op], rf))
        rest = tuple(steps)

        def spine(s: Any, tg: Any, st: EvalState) -> Any:
            a = ff(s, tg, st)
            for op_fn, rf in rest:
                a = op_fn(a, rf(s, tg, st))
            return a
        return spine, foldable

    def _cmp_ite_is(self, node: Binary) -> Fn | None:
        """``ifThenElse(X is K, a, b) OP number`` (Desktop's SUSPEND) as one closure: what
        _if_then_else_is and then _compare's closure return. Decided from the tree's
        shape alone so that nothing is compiled twice."""
        left, right = node.left, node.right
        while type(left) is Paren:
            left = left.inner  # type: ignore[attr-defined]
        while type(right) is Paren:
            right = right.inner  # type: ignore[attr-defined]
        if type(right) is not Literal or type(left) is not Call \
                or len(left.args) != 3:  # type: ignore[attr-defined]
            return None
        c = right.value  # type: ignore[attr-defined]
        if type(c) is not int and type(c) is not float:
            return None
        spec = self.functions.get(left.name.lower())  # type: ignore[attr-defined]
        if spec is None or spec.impl is not if_then_else:
            return None
        args = left.args  # type: ignore[attr-defined]
        test = _is_test(args[0])
        if test is None:
            return None
        la, attr_node, k, negate = test
        tf, tk = self.compile(args[1])
        ef, ek = self.compile(args[2])
        return _cmp_ite_is(node.op, c, la, self.compile(attr_node)[0], k, negate, tf, ef,
                           tk, ek)

    def _and_leaf_or(self, node: Binary) -> Fn | None:
        """``leaf && (b || c)`` (Desktop's START) as one closure: _and_leaf with the
        closure _or would make run inline. Decided from the tree's shape alone so that
        nothing is compiled twice."""
        operands = _chain(node, "&&")
        if len(operands) != 2:
            return None
        right = operands[1]
        while type(right) is Paren:
            right = right.inner  # type: ignore[attr-defined]
        if type(right) is not Binary or right.op != "||":  # type: ignore[attr-defined]
            return None
        ors = _chain(right, "||")
        if len(ors) != 2:
            return None
        leaf = self._leaf(operands[0])
        if leaf is None or leaf[1]:
            return None
        return _and_leaf_or(leaf, self.compile(operands[0])[0], self.compile(ors[0])[0],
                            self.compile(ors[1])[0])

    def _cmp_arith(self, node: Binary) -> Fn | None:
        """``a OP b CMP number`` with a, b unscoped attributes and OP one of + - *
        (Desktop's ``(LoadAvg - CondorLoadAvg) <= 0.3``) as one closure: what _arith's
        arith_aa and then _compare's cmp_num return."""
        left, right = node.left, node.right
        while type(left) is Paren:
            left = left.inner  # type: ignore[attr-defined]
        while type(right) is Paren:
            right = right.inner  # type: ignore[attr-defined]
        if type(right) is not Literal or type(left) is not Binary \
                or left.op not in ("+", "-", "*"):  # type: ignore[attr-defined]
            return None
        c = right.value  # type: ignore[attr-defined]
        if type(c) is not int and type(c) is not float:
            return None
        la = _attr_name(left.left)  # type: ignore[attr-defined]
        ra = _attr_name(left.right)  # type: ignore[attr-defined]
        if la is None or ra is None:
            return None
        return _cmp_arith_aa(node.op, c, left.op, la, ra,  # type: ignore[attr-defined]
                             self.compile(left.left)[0],  # type: ignore[attr-defined]
                             self.compile(left.right)[0])  # type: ignore[attr-defined]

    def _leaf(self, node: Node) -> "_Leaf | None":
        """How to test ``node`` inline when it compares an attribute (unscoped or
        TARGET.) with a constant number or string."""
        while type(node) is Paren:
            node = node.inner  # type: ignore[attr-defined]
        if type(node) is not Binary or node.op not in _CMP_OPS:  # type: ignore[attr-defined]
            return None
        on_target = False
        la = _attr_name(node.left)  # type: ignore[attr-defined]
        if la is None:
            la = _attr_name(node.left, "target")  # type: ignore[attr-defined]
            on_target = True
        if la is None:
            return None
        k = self.compile(node.right)[1]  # type: ignore[attr-defined]
        tk = type(k)
        if tk is str:
            k = k.lower()
        elif tk is not int and tk is not float:
            return None
        return la, on_target, _PYOPS[node.op], k, tk  # type: ignore[attr-defined]

    def _c_Cond(self, node: Cond, *parts: Fn) -> tuple[Fn, bool]:
        if parts:
            cf, tf, ef = parts
            cc = tc = ec = NOCONST
        else:
            cf, cc = self.compile(node.cond)
            tf, tc = self.compile(node.then)
            ef, ec = self.compile(node.else_)
        to_bool = ops.to_bool

        def cond(s: Any, tg: Any, st: EvalState) -> Any:
            c = cf(s, tg, st)
            if c is True:
                return tf(s, tg, st)
            if c is False:
                return ef(s, tg, st)
            b = to_bool(c)
            if b is True:
                return tf(s, tg, st)
            if b is False:
                return ef(s, tg, st)
            return b
        return cond, cc is not NOCONST and tc is not NOCONST and ec is not NOCONST

    def _c_Elvis(self, node: Elvis) -> tuple[Fn, bool]:
        lf, lc_ = self.compile(node.left)
        rf, rc = self.compile(node.right)

        def elvis(s: Any, tg: Any, st: EvalState) -> Any:
            v = lf(s, tg, st)
            return rf(s, tg, st) if v is Undefined else v
        return elvis, lc_ is not NOCONST and rc is not NOCONST

    def _moving(self, node: Node, fn: Fn) -> Fn:
        """``node``'s closure when a part of it may move the evaluation (place.py):
        each part evaluated where the evaluation stands when that part is reached, and
        none of the fast paths that read an attribute from the scope they were given."""
        # A record written in the expression belongs to the ad the expression is
        # written in wherever the evaluation has moved (and TARGET inside it is the
        # other matched ad): the parts are compiled to look that place up (_lexical).
        lexical = self._lexical
        self._lexical = True
        try:
            return self._moving_parts(node, fn)
        finally:
            self._lexical = lexical

    def _moving_parts(self, node: Node, fn: Fn) -> Fn:
        t = type(node)
        if t is Binary:
            lf = self.compile(node.left)[0]  # type: ignore[attr-defined]
            rf = here(self.compile(node.right)[0])  # type: ignore[attr-defined]
            op = node.op  # type: ignore[attr-defined]
            if op == "&&":
                return _and(lf, rf)
            if op == "||":
                return _or(lf, rf)
            slow = ops.BINARY[op]
            return lambda s, tg, st: slow(lf(s, tg, st), rf(s, tg, st))
        if t is Cond:
            cf = self.compile(node.cond)[0]  # type: ignore[attr-defined]
            return self._c_Cond(node, cf, here(self.compile(node.then)[0]),  # type: ignore[arg-type,attr-defined]
                                here(self.compile(node.else_)[0]))[0]  # type: ignore[attr-defined]
        if t is Elvis:
            lf = self.compile(node.left)[0]  # type: ignore[attr-defined]
            rf = here(self.compile(node.right)[0])  # type: ignore[attr-defined]
            return lambda s, tg, st: (lambda v: rf(s, tg, st) if v is Undefined else v)(
                lf(s, tg, st))
        if t is Subscript:
            bf = self.compile(node.base)[0]  # type: ignore[attr-defined]
            base = node.base  # type: ignore[attr-defined]
            while type(base) is Paren:
                base = base.inner  # type: ignore[attr-defined]
            if type(base) is ListExpr:
                # an item taken from a list written here is evaluated in the ad the
                # list is written in (the other list functions take it where they are)
                bf = _at_home(bf)
            xf = here(self.compile(node.index)[0])  # type: ignore[attr-defined]

            def moving_subscript(s: Any, tg: Any, st: EvalState) -> Any:
                b = bf(s, tg, st)
                x = xf(s, tg, st)
                h = home(st, s, tg)
                return subscript(b, x, h[0], h[1], st)
            return moving_subscript
        if t is ListExpr:
            fns = tuple(here(self.compile(i)[0]) for i in node.items)  # type: ignore[attr-defined]
            return lambda s, tg, st: [f(s, tg, st) for f in fns]
        if t is Call and node.name.lower() not in MOVING_CALLS:  # type: ignore[attr-defined]
            return self._c_Call(node, here)[0]  # type: ignore[arg-type]
        return fn  # one part (a unary operator), or evalInEachContext/countMatches itself

    def _c_Call(self, node: Call, wrap: Callable[[Fn], Fn] | None = None
                ) -> tuple[Fn, bool]:
        lname = node.name.lower()
        arity = MOVING_CALLS.get(lname)
        if arity is not None:
            self._reads += 1  # (it reads where the evaluation stands: compile_root)
            if arity[0] <= len(node.args) <= arity[1] and (
                    type(node.args[0]) is AttrRef or type(node.args[0]) is Select):
                self._moves += 1  # (compile() learns from this that the call may move)
        elif lname == "eval":
            self._moves += 1  # its text may hold such a call, moving what follows eval()
        spec = self.functions.get(lname)
        compiled = [self.compile(a) for a in node.args]
        if wrap is not None:
            compiled = [(wrap(f), NOCONST) for f, _ in compiled]
        n = len(compiled)
        if spec is None or n < spec.min_args or (spec.max_args is not None and n > spec.max_args):
            return (lambda s, tg, st: Error), True
        fns = tuple(f for f, _ in compiled)
        impl = spec.impl
        if impl is if_then_else and n == 3:
            foldable = all(c is not NOCONST for _, c in compiled)
            tk, ek = compiled[1][1], compiled[2][1]
            test = _is_test(node.args[0])
            if test is not None and not foldable:
                la, left, k, negate = test
                return _if_then_else_is(la, self.compile(left)[0], k, negate, fns[1:],
                                        tk, ek), False
            return _if_then_else(fns, tk, ek), foldable
        if spec.lazy:
            nodes = node.args
            compiler = self

            def lazy(s: Any, tg: Any, st: EvalState) -> Any:
                try:
                    return impl(LazyCall(fns, nodes, s, tg, st, compiler))
                except RecursionError:
                    return Error
                except Exception:  # an implementation bug must not reach the user
                    return Error
            return lazy, False
        const = all(c is not NOCONST for _, c in compiled)
        # Every strict call is charged for the characters (list items) it is given and
        # returns, 2**CHARS_PER_STEP_SHIFT to a step: what keeps strcat's doubling and
        # a long list walked over and over inside the budget. Short ones cost nothing.
        unit = 1 << CHARS_PER_STEP_SHIFT
        foldable = const and spec.pure and not spec.needs_budget
        if spec.makes_records:
            new_record = self.new_record
            needs_ctx = spec.needs_ctx

            def call_records(s: Any, tg: Any, st: EvalState) -> Any:
                args = [f(s, tg, st) for f in fns]
                try:
                    if needs_ctx:
                        r = impl(new_record, state_ctx(st), *args)
                    else:
                        r = impl(new_record, *args)
                except RecursionError:
                    return Error
                except Exception:
                    return Error
                n = _size(args, r)
                return Error if n >= unit and charge_size(st, n) else r
            return call_records, foldable
        if spec.needs_budget:
            def call_budget(s: Any, tg: Any, st: EvalState) -> Any:
                args = [f(s, tg, st) for f in fns]
                b = st[2]
                if b is None:
                    b = open_budget(st)
                if b.exceeded:
                    return Error
                try:
                    r = impl(b, *args)
                except RecursionError:
                    return Error
                except Exception:
                    return Error
                n = _size(args, r)
                return Error if n >= unit and b.charge_size(n) else r
            return call_budget, foldable
        if spec.needs_ctx:
            def call_ctx(s: Any, tg: Any, st: EvalState) -> Any:
                args = [f(s, tg, st) for f in fns]
                try:
                    r = impl(state_ctx(st), *args)
                except RecursionError:
                    return Error
                except Exception:
                    return Error
                n = _size(args, r)
                return Error if n >= unit and charge_size(st, n) else r
            return call_ctx, foldable

        def call(s: Any, tg: Any, st: EvalState) -> Any:
            args = [f(s, tg, st) for f in fns]
            try:
                r: Any = impl(*args)
            except RecursionError:
                return Error
            except Exception:
                return Error
            # _size inline: most calls take and give short values
            tr = type(r)
            n = len(r) if tr is str or tr is list else 0
            for a in args:
                ta = type(a)
                if ta is str or ta is list:
                    n += len(a)
            return Error if n >= unit and charge_size(st, n) else r
        return call, foldable


def _at_home(f: Fn) -> Fn:
    """``f`` evaluated where the expression is written (place.home)."""
    def at_home(s: Any, tg: Any, st: EvalState) -> Any:
        h = home(st, s, tg)
        return f(h[0], h[1], st)
    return at_home


def _size(args: list[Any], r: Any) -> int:
    """Characters and list items a call was given and returned (its sized charge)."""
    n = len(r) if type(r) is str or type(r) is list else 0
    for a in args:
        ta = type(a)
        if ta is str or ta is list:
            n += len(a)
    return n


# --- inline fast paths ----------------------------------------------------------------

def _if_then_else(fns: tuple[Fn, ...], tk: Any, ek: Any) -> Fn:
    """ifThenElse(c, a, b) without the lazy-call machinery; the rules of
    :func:`condorpy.classad.functions.special.if_then_else`: a number is true when not
    zero, undefined stays undefined, anything else is an error. ``tk``/``ek``: the
    branches' constant values (NOCONST when not constant), returned without a call."""
    cf, tf, ef = fns

    def ite(s: Any, tg: Any, st: EvalState) -> Any:
        try:
            c = cf(s, tg, st)
            if c is not True and c is not False:
                t = type(c)
                if t is not int and t is not float:
                    return Undefined if c is Undefined else Error
                c = c != 0
            if c:
                return tk if tk is not NOCONST else tf(s, tg, st)
            return ek if ek is not NOCONST else ef(s, tg, st)
        except RecursionError:
            return Error
        except Exception:  # as for any built-in: an implementation bug is an error value
            return Error
    return ite


def _is_test(node: Node) -> tuple[str, Node, Any, bool] | None:
    """(name, left, constant, negated) when ``node`` is ``name is/isnt constant`` with
    ``name`` an unscoped attribute and a literal constant (scalar, undefined or error):
    HTCondor's idiom ifThenElse(X =!= UNDEFINED, ...)."""
    while type(node) is Paren:
        node = node.inner  # type: ignore[attr-defined]
    if type(node) is not Binary or node.op not in ("is", "isnt"):  # type: ignore[attr-defined]
        return None
    la = _attr_name(node.left)  # type: ignore[attr-defined]
    right = node.right  # type: ignore[attr-defined]
    while type(right) is Paren:
        right = right.inner  # type: ignore[attr-defined]
    if la is None or type(right) is not Literal:
        return None
    k = right.value  # type: ignore[attr-defined]
    if not (type(k) in _SCALARS or k is Undefined or k is Error):
        return None
    return la, node.left, k, node.op == "isnt"  # type: ignore[attr-defined]


def _if_then_else_is(la: str, lf: Fn, k: Any, negate: bool, branches: tuple[Fn, ...],
                     tk: Any, ek: Any) -> Fn:
    """_if_then_else whose condition is ``la is k`` (``isnt``) for a constant scalar,
    undefined or error ``k``: the test of _identical inline; it is always a boolean."""
    tf, ef = branches
    single = k is Undefined or k is Error
    tkk = type(k)

    def ite_is(s: Any, tg: Any, st: EvalState) -> Any:
        try:
            a = _MISS if s is None else s.consts.get(la, _MISS)
            if a is _MISS:
                a = lf(s, tg, st)
            if (a is k if single else (type(a) is tkk and a == k)) is not negate:
                return tk if tk is not NOCONST else tf(s, tg, st)
            return ek if ek is not NOCONST else ef(s, tg, st)
        except RecursionError:
            return Error
        except Exception:  # as _if_then_else
            return Error
    return ite_is


# (attribute, on TARGET, operator, constant (lower-cased string), its type)
_Leaf: TypeAlias = "tuple[str, bool, Callable[[Any, Any], Any], Any, type]"
_CMP_OPS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_lower: Callable[[Any], Any] = str.lower


def _chain_first(node: Node, op: str) -> Node:
    """The first operand of the chain _chain(node, op) returns."""
    while True:
        left = node.left  # type: ignore[attr-defined]
        while type(left) is Paren:
            left = left.inner  # type: ignore[attr-defined]
        if type(left) is not Binary or left.op != op:  # type: ignore[attr-defined]
            return left  # type: ignore[no-any-return]
        node = left


def _and_leaf(leaf: _Leaf, lf: Fn, rf: Fn) -> Fn:
    """_and whose left operand is a comparison _leaf describes: when the attribute is a
    constant of the constant's type, the comparison runs here (what _compare's closure
    would return); otherwise that closure runs."""
    slow = ops.logical_and
    la, _, pyop, k, tk = leaf
    low = tk is str

    def and_leaf(s: Any, tg: Any, st: EvalState) -> Any:
        a: Any = _MISS if s is None else s.consts.get(la, _MISS)
        if type(a) is tk:
            a = pyop(_lower(a), k) if low else pyop(a, k)
        else:
            a = lf(s, tg, st)
        if a is False:
            return False
        if a is True:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(True, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return and_leaf


def _and_leaf_or(leaf: _Leaf, lf: Fn, of1: Fn, of2: Fn) -> Fn:
    """_and_leaf whose right operand is ``of1 || of2``, evaluated here as _or's closure
    would."""
    slow_and = ops.logical_and
    slow_or = ops.logical_or
    la, _, pyop, k, tk = leaf
    low = tk is str

    def or_(s: Any, tg: Any, st: EvalState) -> Any:
        a = of1(s, tg, st)
        if a is True:
            return True
        if a is False:
            b = of2(s, tg, st)
            if b is True or b is False:
                return b
            return slow_or(False, lambda: b)
        return slow_or(a, lambda: of2(s, tg, st))

    def and_leaf_or(s: Any, tg: Any, st: EvalState) -> Any:
        a: Any = _MISS if s is None else s.consts.get(la, _MISS)
        if type(a) is tk:
            a = pyop(_lower(a), k) if low else pyop(a, k)
        else:
            a = lf(s, tg, st)
        if a is False:
            return False
        if a is not True:
            return slow_and(a, lambda: or_(s, tg, st))
        # b = or_(s, tg, st), inline
        b = of1(s, tg, st)
        if b is True:
            return True
        if b is False:
            c = of2(s, tg, st)
            if c is True or c is False:
                return c
            b = slow_or(False, lambda: c)
        else:
            b = slow_or(b, lambda: of2(s, tg, st))
        if b is True or b is False:
            return b
        return slow_and(True, lambda: b)
    return and_leaf_or


def _or_leaf(leaf: _Leaf, lf: Fn, rf: Fn) -> Fn:
    """_or with the left operand tested as in _and_leaf."""
    slow = ops.logical_or
    la, _, pyop, k, tk = leaf
    low = tk is str

    def or_leaf(s: Any, tg: Any, st: EvalState) -> Any:
        a: Any = _MISS if s is None else s.consts.get(la, _MISS)
        if type(a) is tk:
            a = pyop(_lower(a), k) if low else pyop(a, k)
        else:
            a = lf(s, tg, st)
        if a is True:
            return True
        if a is False:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(False, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return or_leaf


def _cmp_ite_is(op: str, c: Any, la: str, lf: Fn, k: Any, negate: bool, tf: Fn, ef: Fn,
                tk: Any, ek: Any) -> Fn:
    """_if_then_else_is followed by _compare's cmp_num against the number ``c``."""
    pyop = _PYOPS[op]
    slow = ops.BINARY[op]
    tc = type(c)
    single = k is Undefined or k is Error
    tkk = type(k)

    def cmp_ite(s: Any, tg: Any, st: EvalState) -> Any:
        try:
            a = _MISS if s is None else s.consts.get(la, _MISS)
            if a is _MISS:
                a = lf(s, tg, st)
            if (a is k if single else (type(a) is tkk and a == k)) is not negate:
                v = tk if tk is not NOCONST else tf(s, tg, st)
            else:
                v = ek if ek is not NOCONST else ef(s, tg, st)
        except RecursionError:
            v = Error
        except Exception:  # as _if_then_else
            v = Error
        tv = type(v)
        if tv is tc:
            return pyop(v, c)
        if tv is int or tv is float:
            return pyop(float(v), float(c))
        return slow(v, c)
    return cmp_ite


def _cmp_arith_aa(op: str, c: Any, aop: str, la: str, ra: str, lf: Fn, rf: Fn) -> Fn:
    """_arith's arith_aa for ``la aop ra`` followed by _compare's cmp_num against the
    number ``c``."""
    pyop = _PYOPS[op]
    slow = ops.BINARY[op]
    apy = _PYOPS[aop]
    aslow = ops.BINARY[aop]
    tc = type(c)
    lo, hi = INT_MIN, INT_MAX
    inf = float("inf")

    def cmp_arith(s: Any, tg: Any, st: EvalState) -> Any:
        if s is not None:
            consts = s.consts
            a = consts.get(la, _MISS)
            if a is _MISS:
                a = lf(s, tg, st)
            b = consts.get(ra, _MISS)
            if b is _MISS:
                b = rf(s, tg, st)
        else:
            a = lf(s, tg, st)
            b = rf(s, tg, st)
        ta = type(a)
        tb = type(b)
        if ta is int and tb is int:
            v = apy(a, b)
            if not lo <= v <= hi:
                v = aslow(a, b)
        elif (ta is float or ta is int) and (tb is float or tb is int):
            v = apy(a, b)
            if v == inf:
                v = Error
        else:
            v = aslow(a, b)
        tv = type(v)
        if tv is tc:
            return pyop(v, c)
        if tv is int or tv is float:
            return pyop(float(v), float(c))
        return slow(v, c)
    return cmp_arith


def _and(lf: Fn, rf: Fn) -> Fn:
    slow = ops.logical_and

    def and_(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        if a is False:
            return False
        if a is True:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(True, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return and_


def _or(lf: Fn, rf: Fn) -> Fn:
    slow = ops.logical_or

    def or_(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        if a is True:
            return True
        if a is False:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(False, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return or_


_PYOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}


_SCALARS = (int, float, str, bool)


def _identical(negate: bool, lf: Fn, k: Any, la: str | None) -> Fn:
    """``x is K`` / ``x isnt K`` against a constant scalar, undefined or error: never
    error then (only lists and records are), so the test is a type check and ``==``."""
    tk = type(k)
    single = k is Undefined or k is Error
    if la is not None:
        def is_attr(s: Any, tg: Any, st: EvalState) -> Any:
            a = _MISS if s is None else s.consts.get(la, _MISS)
            if a is _MISS:
                a = lf(s, tg, st)
            r = a is k if single else (type(a) is tk and a == k)
            return r is not negate
        return is_attr

    def is_(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        r = a is k if single else (type(a) is tk and a == k)
        return r is not negate
    return is_


def _attr_name(node: Node, scope: str = "") -> str | None:
    """The lower-cased name when ``node`` is a plain unscoped attribute reference (or one
    of ``scope``): the operators then probe the scope's (the target's) constants inline
    before calling the lookup."""
    while type(node) is Paren:
        node = node.inner  # type: ignore[attr-defined]
    if type(node) is AttrRef and node.scope.lower() == scope:  # type: ignore[attr-defined]
        return node.name.lower()  # type: ignore[attr-defined,no-any-return]
    return None


# A left-nested run of (non-logical) operators at least this long compiles to one loop
# (Compiler._c_spine); shorter ones keep an inline closure per operator, the fast paths.
_SPINE_MIN = 16


def _spine(node: Node) -> tuple[Node, list[tuple[str, Node]]] | None:
    """(first operand, [(operator, right operand), ...] in evaluation order) when
    ``node`` heads a left-nested run of _SPINE_MIN or more arithmetic, comparison or
    bit operators; else None. ``&&``/``||`` are not in it (they short-circuit: _chain)."""
    links: list[tuple[str, Node]] = []
    n = node
    while type(n) is Binary and n.op != "&&" and n.op != "||":  # type: ignore[attr-defined]
        links.append((n.op, n.right))  # type: ignore[attr-defined]
        n = n.left  # type: ignore[attr-defined]
        if len(links) < _SPINE_MIN and type(n) is not Binary:
            return None
    if len(links) < _SPINE_MIN:
        return None
    links.reverse()
    return n, links


def _chain(node: Node, op: str) -> list[Node]:
    """The operands of a left-nested chain ``a op b op c`` (parentheses looked through)."""
    out: list[Node] = []
    while True:
        out.append(node.right)  # type: ignore[attr-defined]
        left = node.left  # type: ignore[attr-defined]
        while type(left) is Paren:
            left = left.inner  # type: ignore[attr-defined]
        if type(left) is not Binary or left.op != op:  # type: ignore[attr-defined]
            out.append(left)
            break
        node = left
    out.reverse()
    return out


def _and_n(fns: list[Fn]) -> Fn:
    """_and folded over three or more operands, left to right."""
    slow = ops.logical_and
    first, rest = fns[0], tuple(fns[1:])

    def and_n(s: Any, tg: Any, st: EvalState) -> Any:
        a = first(s, tg, st)
        for f in rest:
            if a is False:
                return False
            if a is True:
                b = f(s, tg, st)
                a = b if b is True or b is False else slow(True, lambda: b)
            else:
                a = slow(a, lambda: f(s, tg, st))  # the thunk runs (or not) right here
        return a
    return and_n


def _or_n(fns: list[Fn]) -> Fn:
    """_or folded over three or more operands, left to right."""
    slow = ops.logical_or
    first, rest = fns[0], tuple(fns[1:])

    def or_n(s: Any, tg: Any, st: EvalState) -> Any:
        a = first(s, tg, st)
        for f in rest:
            if a is True:
                return True
            if a is False:
                b = f(s, tg, st)
                a = b if b is True or b is False else slow(False, lambda: b)
            else:
                a = slow(a, lambda: f(s, tg, st))
        return a
    return or_n


def _arith(op: str, lf: Fn, rf: Fn, rc: Any, la: str | None, ra: str | None) -> Fn:
    pyop = _PYOPS[op]
    slow = ops.BINARY[op]
    lo, hi = INT_MIN, INT_MAX
    inf = float("inf")
    if la is not None and ra is not None:
        def arith_aa(s: Any, tg: Any, st: EvalState) -> Any:
            if s is not None:
                c = s.consts
                a = c.get(la, _MISS)
                if a is _MISS:
                    a = lf(s, tg, st)
                b = c.get(ra, _MISS)
                if b is _MISS:
                    b = rf(s, tg, st)
            else:
                a = lf(s, tg, st)
                b = rf(s, tg, st)
            ta = type(a)
            tb = type(b)
            if ta is int and tb is int:
                r = pyop(a, b)
                if lo <= r <= hi:
                    return r
            elif (ta is float or ta is int) and (tb is float or tb is int):
                r = pyop(a, b)
                return r if r != inf else Error
            return slow(a, b)
        return arith_aa
    if type(rc) is int or type(rc) is float:
        k = rc
        ki = type(rc) is int

        def arith_c(s: Any, tg: Any, st: EvalState) -> Any:
            a = lf(s, tg, st)
            ta = type(a)
            if ta is int and ki:
                r = pyop(a, k)
                if lo <= r <= hi:
                    return r
            elif ta is float or ta is int:
                r = pyop(a, k)
                return r if r != inf else Error
            return slow(a, k)
        return arith_c

    def arith(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        b = rf(s, tg, st)
        ta = type(a)
        tb = type(b)
        if ta is int and tb is int:
            r = pyop(a, b)
            if lo <= r <= hi:
                return r
        elif (ta is float or ta is int) and (tb is float or tb is int):
            r = pyop(a, b)
            return r if r != inf else Error
        return slow(a, b)
    return arith


def _compare(op: str, lf: Fn, rf: Fn, rc: Any, la: str | None, lt: str | None = None
             ) -> Fn:
    pyop = _PYOPS[op]
    slow = ops.BINARY[op]
    tc = type(rc)
    # A boolean constant compares as 0/1: with a boolean the Python operators agree,
    # with a number the mixed path below gives what ops.compare gives.
    if (tc is int or tc is float or tc is bool) and lt is not None:
        kt = rc
        tkt = tc

        def cmp_target_num(s: Any, tg: Any, st: EvalState) -> Any:
            a = tg.consts.get(lt, _MISS) if isinstance(tg, Scope) else _MISS
            if a is _MISS:
                a = lf(s, tg, st)
            ta = type(a)
            if ta is tkt:
                return pyop(a, kt)
            if ta is int or ta is float:
                return pyop(float(a), float(kt))
            return slow(a, kt)
        return cmp_target_num
    if (tc is int or tc is float or tc is bool) and la is not None:
        k = rc
        tk = tc

        def cmp_attr_num(s: Any, tg: Any, st: EvalState) -> Any:
            a = _MISS if s is None else s.consts.get(la, _MISS)
            if a is _MISS:
                a = lf(s, tg, st)
            ta = type(a)
            if ta is tk:
                return pyop(a, k)
            if ta is int or ta is float:
                return pyop(float(a), float(k))  # mixed: compared as doubles, like C
            return slow(a, k)
        return cmp_attr_num
    if tc is str and la is not None:
        ks = rc
        kl = rc.lower()

        def cmp_attr_str(s: Any, tg: Any, st: EvalState) -> Any:
            a = _MISS if s is None else s.consts.get(la, _MISS)
            if a is _MISS:
                a = lf(s, tg, st)
            if type(a) is str:
                return pyop(a.lower(), kl)
            return slow(a, ks)
        return cmp_attr_str
    if tc is int or tc is float or tc is bool:
        c = rc

        def cmp_num(s: Any, tg: Any, st: EvalState) -> Any:
            a = lf(s, tg, st)
            ta = type(a)
            if ta is tc:
                return pyop(a, c)
            if ta is int or ta is float:
                return pyop(float(a), float(c))
            return slow(a, c)
        return cmp_num
    if tc is str:
        cs = rc
        cl = rc.lower()

        def cmp_str(s: Any, tg: Any, st: EvalState) -> Any:
            a = lf(s, tg, st)
            if type(a) is str:
                return pyop(a.lower(), cl)
            return slow(a, cs)
        return cmp_str

    def cmp(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        b = rf(s, tg, st)
        ta = type(a)
        tb = type(b)
        if ta is tb and (ta is int or ta is float):
            return pyop(a, b)
        return slow(a, b)
    return cmp


class LazyCall:
    """What a lazy function receives: its argument trees, and a way to evaluate them."""

    __slots__ = ("fns", "nodes", "scope", "target", "state", "compiler")

    def __init__(self, fns: tuple[Fn, ...], nodes: tuple[Node, ...], scope: Any,
                 target: Any, state: EvalState, compiler: Compiler) -> None:
        self.fns = fns
        self.nodes = nodes
        self.scope = scope
        self.target = target
        self.state = state
        self.compiler = compiler  # the one that compiled the call

    def __len__(self) -> int:
        return len(self.fns)

    def arg(self, i: int) -> Any:
        return self.fns[i](self.scope, self.target, self.state)

    @property
    def ctx(self) -> CallContext:
        return state_ctx(self.state)

    @property
    def budget(self) -> Budget:
        """The evaluation's budget (for a function that runs regular expressions)."""
        b = self.state[2]
        return open_budget(self.state) if b is None else b  # type: ignore[no-any-return]

    def charge(self, size: int) -> bool:
        """Charge ``size`` items of the function's own work (a list it walks); True when
        the budget is spent and the function should give ``error``."""
        return charge_size(self.state, size)

    def evaluate(self, expr: "Expr", scope: Any = None, target: Any = None) -> Any:
        return expr.eval_in(scope, target, self.state)

    def evaluate_here(self, expr: "Expr") -> Any:
        return expr.eval_in(self.scope, self.target, self.state)

    def evaluate_text(self, text: str) -> Any:
        """The expression ``text`` evaluated where the call is (eval()); error where it
        does not parse."""
        if len(text) >= 1 << CHARS_PER_STEP_SHIFT and charge_size(self.state, len(text)):
            return Error  # parsing a long text is work of its own
        done = self.compiler.compile_text(text)
        if done is None:
            return Error
        fn, const = done
        if const is not NOCONST:
            return const
        return fn(self.scope, self.target, self.state)
