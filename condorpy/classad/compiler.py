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

The compiler walks the tree and decides; the closures it picks come from its parts:
the operators' fast paths (fastpaths.py), the tree shapes that select them (shapes.py),
function calls and what lazy functions see (calls.py), and the lookups and
per-evaluation state every closure runs on (evaluation.py).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from condorpy.classad import ops
from condorpy.classad.ast import (AttrRef, Binary, Call, Cond, Elvis, ListExpr, Literal,
                                  Node, Paren, RecordExpr, Select, Subscript, Unary)
from condorpy.classad.calls import LazyCall, call_closure
from condorpy.classad.evaluation import (MAX_ATTR_DEPTH, MISS, NOCONST, EvalState, Fn,
                                         budget_exceeded, charge_one, literal_value, lookup_my,
                                         lookup_target, lookup_unscoped, new_state,
                                         open_budget, select, subscript)
from condorpy.classad.fastpaths import CMP_OPS, SCALARS, make_and, make_and_leaf, make_and_n, \
    make_arith, make_compare, make_identical, make_ite, make_ite_is, make_or, make_or_leaf, \
    make_or_n
from condorpy.classad.functions.registry import FunctionSpec
from condorpy.classad.functions.special import if_then_else
from condorpy.classad.parser import parse_node
from condorpy.classad.place import contained, frame, here, home
from condorpy.classad.scope import Scope
from condorpy.classad.shapes import attr_name, chain_first, chain_of, fuse_and_leaf_or, \
    fuse_cmp_arith, fuse_cmp_ite_is, is_test, leaf_test, spine_of
from condorpy.classad.values import Error, Undefined, Value
from condorpy.errors import ClassAdSyntaxError

# What the rest of the package takes from here (the runtime lives in evaluation.py).
__all__ = ["Compiler", "EvalState", "Fn", "LazyCall", "MOVING_CALLS", "NOCONST",
           "literal_value"]

_TEXTS_MAX = 1024  # (Compiler.compile_text)
# The calls that may move the evaluation (place.py) when their first argument is an
# attribute reference, with the numbers of arguments they take.
MOVING_CALLS = {"countmatches": (2, 2), "evalineachcontext": (2, 2), "unresolved": (1, 2)}


class Compiler:
    def __init__(self, functions: Mapping[str, FunctionSpec],
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
                    v = tg.consts.get(lc, MISS)  # lookup_target's first probe, inline
                    if v is not MISS:
                        return v
                return lookup_target(lc, s, tg, st)
            return target_attr, False
        if kind == "my":
            return (lambda s, tg, st: lookup_my(lc, s, tg, st)), False
        lookup = lookup_unscoped
        depth = MAX_ATTR_DEPTH

        def attr(s: Any, tg: Any, st: EvalState) -> Any:
            if s is not None:
                v = s.consts.get(lc, MISS)
                if v is not MISS:
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

        # Making a record costs tens of microseconds, a hundred times a step: each is
        # charged a step, so that a list of thousands of records evaluated again and
        # again (countMatches over it, level after level) reaches the clock check.
        if self._lexical:
            def lexical_record(s: Any, tg: Any, st: EvalState) -> Any:
                if charge_one(st):
                    return Error
                return proto.with_parent(home(st, s, tg)[0])
            return lexical_record, False

        def record(s: Any, tg: Any, st: EvalState) -> Any:
            if charge_one(st):
                return Error
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
            fused = fuse_and_leaf_or(node, self) if op == "&&" else None
            if fused is not None:
                return fused, False
            # a && b && c is (a && b) && c: one closure walks the whole chain
            chain = [self.compile(n) for n in chain_of(node, op)]
            fns = [f for f, _ in chain]
            foldable = all(c is not NOCONST for _, c in chain)
            leaf = None if foldable or len(fns) != 2 else leaf_test(chain_first(node, op), self)
            if leaf is not None and not leaf[1]:
                return (make_and_leaf if op == "&&" else make_or_leaf)(leaf, fns[0], fns[1]), False
            if len(fns) == 2:
                return (make_and if op == "&&" else make_or)(fns[0], fns[1]), foldable
            return (make_and_n if op == "&&" else make_or_n)(fns), foldable
        spine = spine_of(node)
        if spine is not None:
            return self._c_spine(*spine)
        if op in CMP_OPS:
            fused = fuse_cmp_ite_is(node, self) or fuse_cmp_arith(node, self)
            if fused is not None:
                return fused, False
        lf, lc_ = self.compile(node.left)
        rf, rc = self.compile(node.right)
        foldable = lc_ is not NOCONST and rc is not NOCONST
        if op in ("+", "-", "*"):
            return make_arith(op, lf, rf, rc, attr_name(node.left),
                              attr_name(node.right)), foldable
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return make_compare(op, lf, rf, rc, attr_name(node.left),
                                attr_name(node.left, "target")), foldable
        if (op == "is" or op == "isnt") and (type(rc) in SCALARS or rc is Undefined
                                             or rc is Error):
            return make_identical(op == "isnt", lf, rc, attr_name(node.left)), foldable
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
                return make_and(lf, rf)
            if op == "||":
                return make_or(lf, rf)
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
            test = is_test(node.args[0])
            if test is not None and not foldable:
                la, left, k, negate = test
                return make_ite_is(la, self.compile(left)[0], k, negate, fns[1:],
                                   tk, ek), False
            return make_ite(fns, tk, ek), foldable
        return call_closure(spec, fns, node.args, all(c is not NOCONST for _, c in compiled),
                            self)


def _at_home(f: Fn) -> Fn:
    """``f`` evaluated where the expression is written (place.home)."""
    def at_home(s: Any, tg: Any, st: EvalState) -> Any:
        h = home(st, s, tg)
        return f(h[0], h[1], st)
    return at_home
