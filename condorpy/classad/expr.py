"""Compiled expressions: :class:`Expr`, :func:`parse_expr`, and what lazy functions see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from condorpy.classad.ast import (AttrRef, Call, ListExpr, Literal, Node, RecordExpr, Select,
                                  unparse)
from condorpy.classad.compiler import (NOCONST, Compiler, EvalState, Fn, LazyCall,
                                       literal_value)
from condorpy.classad.functions.registry import CallContext
from condorpy.classad.parser import parse_node
from condorpy.classad.scope import Scope
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined
from condorpy.errors import ClassAdError, ClassAdSyntaxError

if TYPE_CHECKING:
    from condorpy.classad.ad import ClassAd

__all__ = ["Expr", "LazyCall", "install_compiler", "parse_expr", "parse_expr_uncached",
           "value_to_node"]


def _compiler() -> Compiler:
    if _COMPILER is None:
        raise RuntimeError("condorpy.classad.ad has not installed the compiler")
    return _COMPILER


def install_compiler(compiler: Compiler) -> None:
    """Set the compiler every Expr uses. ad.py does this when it is imported (which
    importing any module of the package does first): the compiler's function table and
    record factory sit above this module, so this module is handed the compiler rather
    than importing what builds it."""
    global _COMPILER
    _COMPILER = compiler


_COMPILER: Compiler | None = None


class Expr:
    """A parsed ClassAd expression. Immutable; compiled on first evaluation, then cheap.

    Not meant to be subclassed: an uncompiled Expr is an _Uncompiled until its first use."""

    __slots__ = ("node", "fn", "const")
    # fn: the compiled closure, ``fn(scope, target, state)``. Public for the evaluator
    # (compiler.py, ClassAd.evaluate), which calls it on every attribute reference: a
    # plain slot read costs nothing more. Read-only by convention; until the first use
    # it is unset (see _Uncompiled). Callers outside the ClassAd library use evaluate().
    fn: Fn

    def __init__(self, node: Node) -> None:
        self.node = node
        if type(node) is Literal:
            v = literal_value(node.value)
            self.const: Any = v  # the value when the expression is constant, else NOCONST
            self.fn = lambda s, tg, st: v
        else:
            # fn stays unset until first used. (A bound method standing in for it
            # would make every Expr a reference cycle, which only the cyclic garbage
            # collector frees: that made parsing a fifth slower.)
            self.const = NOCONST
            self.__class__ = _Uncompiled

    def compile(self) -> None:
        """Compile now (evaluation does it on first use)."""
        try:
            object.__getattribute__(self, "fn")
        except AttributeError:
            fn, const = _compiler().compile_root(self.node)
            self.fn = fn
            self.const = const
            self.__class__ = Expr

    @classmethod
    def from_node(cls, node: Node) -> "Expr":
        return cls(node)

    @classmethod
    def literal(cls, value: Any) -> "Expr":
        return cls(value_to_node(value))

    @property
    def is_constant(self) -> bool:
        return self.const is not NOCONST

    def evaluate(self, my: "ClassAd | None" = None, target: "ClassAd | None" = None,
                 ctx: CallContext | None = None) -> Any:
        c = self.const
        if c is not NOCONST:
            return c
        try:
            return self.fn(my, target, [ctx, None, None])
        except RecursionError:
            return Error

    def eval_in(self, my: Any, target: Any, state: EvalState) -> Any:
        """Evaluate inside an ongoing evaluation (lazy functions, sub-expressions)."""
        c = self.const
        if c is not NOCONST:
            return c
        return self.fn(my, target, state)

    def references(self) -> set[str]:
        """Lower-cased names of every attribute the expression refers to."""
        refs = self.scoped_references()
        return refs["my"] | refs["target"] | refs["unscoped"]

    def calls_any(self, names: frozenset[str]) -> bool:
        """Whether the expression calls a function named in ``names`` (lower-cased):
        one whose result the attributes it names do not fix (eval, random...)."""
        stack: list[Node] = [self.node]
        while stack:
            n = stack.pop()
            if type(n) is Call and n.name.lower() in names:
                return True
            stack.extend(n.children())
        return False

    def scoped_references(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {"my": set(), "target": set(), "unscoped": set()}
        stack: list[Node] = [self.node]
        while stack:
            n = stack.pop()
            if type(n) is AttrRef:
                kind = n.scope.lower() or "unscoped"
                out[kind].add(n.name.lower())
            elif type(n) is Select and type(n.base) is AttrRef:
                # a.b: "a" is the reference; b lives inside a's record
                pass
            stack.extend(n.children())
        return out

    def __str__(self) -> str:
        return unparse(self.node)

    def __repr__(self) -> str:
        return f"Expr({unparse(self.node)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and self.node == other.node

    def __hash__(self) -> int:
        return hash(self.node)


class _Uncompiled(Expr):
    """An Expr before its first use: reading its unset fn compiles it, and it becomes a
    plain Expr. A class of its own because a __getattr__ makes every attribute read of
    its class's instances slower (CPython cannot specialise them), and a compiled Expr's
    const and fn are read on every evaluation."""

    __slots__ = ()

    if not TYPE_CHECKING:  # (to the type checker fn is always there)
        def __getattr__(self, name):
            # called only for an unset slot
            if name != "fn":
                raise AttributeError(name)
            self.compile()
            return self.fn


# Parsed expressions by text. Expressions are immutable, so handing out the same Expr
# for the same text is safe, and configuration and ads repeat the same texts endlessly
# (every slot's START, every job's Requirements). Bounded: cleared when full.
_PARSED: dict[str, Expr] = {}
_PARSED_MAX = 4096


def parse_expr(text: str, *, source: str | None = None, attribute: str | None = None) -> Expr:
    """Parse one expression (compiled on first evaluation); ClassAdSyntaxError on bad input."""
    if type(text) is not str:
        raise ClassAdError(f"an expression must be text, not {type(text).__name__}",
                           source=source, attribute=attribute)
    e = _PARSED.get(text)
    if e is not None:
        return e
    e = parse_expr_uncached(text, source=source, attribute=attribute)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[text] = e
    return e


def parse_expr_uncached(text: str, *, source: str | None = None,
                        attribute: str | None = None) -> Expr:
    """parse_expr without the cache (what the benchmark measures as parsing)."""
    try:
        return Expr(parse_node(text))
    except ClassAdSyntaxError as e:
        if source or attribute:
            raise ClassAdSyntaxError(e.reason, text=text, line=e.line, column=e.column,
                                     source=source, attribute=attribute) from None
        raise
    except RecursionError:
        raise ClassAdSyntaxError("expression nested too deeply", text=text, line=1,
                                 column=1, source=source, attribute=attribute) from None


def value_to_node(value: Any) -> Node:
    """A syntax tree whose value is ``value`` (Python values become literals)."""
    t = type(value)
    if t is RelTime:
        # a relative-time literal reads as a real (literal_value); the call keeps it a
        # relative time, here and when the ad is written and read back by HTCondor
        return Call("relTime", (Literal(float(value.seconds)),))
    if t is int or t is float or t is str or t is bool or t is AbsTime \
            or value is Undefined or value is Error:
        if t is int and not (-(1 << 63) <= value < (1 << 63)):
            raise ClassAdError(f"integer {value} does not fit in 64 bits")
        return Literal(value)
    if isinstance(value, Expr):
        return value.node
    if isinstance(value, Node):
        return value
    if isinstance(value, (list, tuple)):
        return ListExpr(tuple(value_to_node(v) for v in value))
    if isinstance(value, Scope):  # a ClassAd (its base class, to stay below ad.py)
        return RecordExpr(tuple((name, value.exprs[lc].node)
                                for lc, name in value.spelling.items()))
    if isinstance(value, dict):
        return RecordExpr(tuple((str(k), value_to_node(v)) for k, v in value.items()))
    if value is None:
        return Literal(Undefined)
    raise ClassAdError(f"cannot store a {type(value).__name__} in a ClassAd")
