"""The closures of calls of built-in functions, and :class:`LazyCall`, what a lazy
function (one that decides itself which arguments to evaluate) is handed.

A strict call evaluates its arguments, calls the function and charges the evaluation's
budget for the characters and list items it was given and returned; an exception from
a function is an ``error`` value, never the caller's exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from condorpy.classad.ast import Node
from condorpy.classad.budget import CHARS_PER_STEP_SHIFT, Budget
from condorpy.classad.evaluation import NOCONST, EvalState, Fn, charge_size, open_budget, \
    state_ctx
from condorpy.classad.functions.registry import CallContext, FunctionSpec
from condorpy.classad.values import Error

if TYPE_CHECKING:
    from condorpy.classad.compiler import Compiler
    from condorpy.classad.expr import Expr


def call_closure(spec: FunctionSpec, fns: tuple[Fn, ...], nodes: tuple[Node, ...],
                 const: bool, compiler: Compiler) -> tuple[Fn, bool]:
    """(closure, foldable) of a call of ``spec`` with the arguments ``nodes``, compiled
    to ``fns`` (``const``: all of them constant) by ``compiler``."""
    impl = spec.impl
    if spec.lazy:

        def lazy(s: Any, tg: Any, st: EvalState) -> Any:
            try:
                return impl(LazyCall(fns, nodes, s, tg, st, compiler))
            except RecursionError:
                return Error
            except Exception:  # an implementation bug must not reach the user
                return Error
        return lazy, False
    # Every strict call is charged for the characters (list items) it is given and
    # returns, 2**CHARS_PER_STEP_SHIFT to a step: what keeps strcat's doubling and
    # a long list walked over and over inside the budget. Short ones cost nothing.
    unit = 1 << CHARS_PER_STEP_SHIFT
    foldable = const and spec.pure and not spec.needs_budget
    if spec.makes_records:
        new_record = compiler.new_record
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


def _size(args: list[Any], r: Any) -> int:
    """Characters and list items a call was given and returned (its sized charge)."""
    n = len(r) if type(r) is str or type(r) is list else 0
    for a in args:
        ta = type(a)
        if ta is str or ta is list:
            n += len(a)
    return n


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
