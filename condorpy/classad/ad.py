"""The ClassAd container: case-insensitive names keeping their spelling, compiled values."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Self

from condorpy.classad import adtext
from condorpy.classad.ast import Literal, Node
from condorpy.classad.compiler import NOCONST, Compiler, EvalState
from condorpy.classad.expr import Expr, install_compiler, parse_expr, value_to_node
from condorpy.classad.functions import FUNCTIONS
from condorpy.classad.functions.registry import CallContext
from condorpy.classad.scope import Scope
from condorpy.classad.values import Error, Undefined
from condorpy.errors import ClassAdError


_INT_LO, _INT_HI = -(1 << 63), (1 << 63) - 1


def _literal_expr(value: Any) -> Expr:
    return Expr(Literal(value))


class ClassAd(Scope):
    """A set of named expressions. ``ClassAd({"Memory": 512, "Start": parse_expr(...)})``."""

    __slots__ = ()

    def __init__(self, attrs: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None
                 ) -> None:
        super().__init__()
        if attrs:
            self.update(attrs)

    # --- construction -------------------------------------------------------------

    @classmethod
    def from_items(cls, items: tuple[tuple[str, Node], ...], parent: Scope | None
                   ) -> Self:
        """A record of (name, syntax tree) pairs inside ``parent`` (the compiler's
        record factory, and the new-format and JSON readers')."""
        ad = cls()
        for name, node in items:
            ad._set(name, Expr.from_node(node))
        ad.parent = parent
        return ad

    def with_parent(self, parent: Scope | None) -> "ClassAd":
        """This record as a record literal evaluates inside ``parent``: a shallow copy
        that looks names up through ``parent`` and is, to the circular-reference
        check, one record with every other copy made in the same scope."""
        ad = ClassAd()
        ad.exprs = self.exprs.copy()
        ad.consts = self.consts.copy()
        ad.spelling = self.spelling.copy()
        ad.parent = parent
        ad.ident = (id(self), id(parent))
        return ad

    @classmethod
    def parse_old(cls, text: str, source: str | None = None) -> Self:
        return adtext.parse_old(cls, text, source)

    @classmethod
    def parse_old_many(cls, text: str, source: str | None = None) -> list[Self]:
        return adtext.parse_old_many(cls, text, source)

    @classmethod
    def parse_new(cls, text: str, source: str | None = None) -> Self:
        return adtext.parse_new(cls, text, source)

    @classmethod
    def from_json(cls, text: str, source: str | None = None) -> Self:
        return adtext.from_json(cls, text, source)

    # --- writing --------------------------------------------------------------------

    def to_old(self) -> str:
        return adtext.to_old(self)

    def to_new(self) -> str:
        return adtext.to_new(self)

    def to_json(self) -> str:
        return adtext.to_json(self)

    # --- mapping interface ------------------------------------------------------------

    def _set(self, name: str, expr: Expr) -> None:
        lc = name.lower()
        if lc not in self.spelling:
            self.spelling[lc] = name
        self.exprs[lc] = expr
        if expr.const is not NOCONST:
            self.consts[lc] = expr.const
        else:
            self.consts.pop(lc, None)

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ClassAdError(f"bad attribute name {name!r}")
        if isinstance(value, Expr):
            self._set(name, value)
            return
        t = type(value)
        if t is int or t is str or t is bool:
            # Re-setting the literal an attribute already holds (a daemon republishing
            # its state every cycle) changes nothing: skip making a new Expr.
            lc = name.lower()
            old = self.consts.get(lc, NOCONST)
            if type(old) is t and old == value and lc in self.spelling \
                    and type(self.exprs[lc].node) is Literal:
                return
            if t is not int or _INT_LO <= value <= _INT_HI:
                self._set(name, _literal_expr(value))
                return
        try:
            self._set(name, Expr.from_node(value_to_node(value)))
        except ClassAdError as e:
            raise ClassAdError(e.message, attribute=name) from None

    @staticmethod
    def literal_batch(items: Iterable[tuple[str, Expr]]) -> tuple[dict[str, str],
                                                                  dict[str, Expr],
                                                                  dict[str, Any]]:
        """(name, literal Expr) pairs prepared once for :meth:`set_literals` on many
        ads; ClassAdError when an Expr is not a literal."""
        names: dict[str, str] = {}
        exprs: dict[str, Expr] = {}
        consts: dict[str, Any] = {}
        for name, e in items:
            if e.const is NOCONST:
                raise ClassAdError("not a literal", attribute=name)
            lc = name.lower()
            names.setdefault(lc, name)
            exprs[lc] = e
            consts[lc] = e.const
        return names, exprs, consts

    def set_literals(self, batch: tuple[dict[str, str], dict[str, Expr], dict[str, Any]]
                      ) -> None:
        """Set what :meth:`literal_batch` prepared: as ``ad[name] = expr`` for each, in bulk. What a
        policy engine does to every slot ad on every cycle, so kept lean."""
        names, exprs, consts = batch
        if not self.spelling.keys() >= names.keys():
            for lc, name in names.items():
                self.spelling.setdefault(lc, name)
        self.exprs.update(exprs)
        self.consts.update(consts)

    def set_expr(self, name: str, text: str, source: str | None = None) -> None:
        self._set(name, parse_expr(text, source=source, attribute=name))

    def __getitem__(self, name: str) -> Any:
        """The value of a literal attribute, else its Expr (like classad2); KeyError if absent."""
        lc = name.lower()
        e = self.exprs.get(lc)
        if e is None:
            raise KeyError(name)
        c = e.const
        if c is not NOCONST and type(e.node) is Literal:
            return c
        return e

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def lookup(self, name: str) -> Expr | None:
        return self.exprs.get(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self.exprs

    def __delitem__(self, name: str) -> None:
        lc = name.lower()
        if lc not in self.exprs:
            raise KeyError(name)
        del self.exprs[lc]
        del self.spelling[lc]
        self.consts.pop(lc, None)

    def __len__(self) -> int:
        return len(self.exprs)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.spelling.values()))

    def keys(self) -> list[str]:
        return list(self.spelling.values())

    def items(self) -> list[tuple[str, Expr]]:
        return [(self.spelling[lc], e) for lc, e in self.exprs.items()]

    def name_of(self, name: str) -> str | None:
        """The attribute's spelling in this ad."""
        return self.spelling.get(name.lower())

    def update(self, other: "ClassAd | Mapping[str, Any] | Iterable[tuple[str, Any]]") -> None:
        if isinstance(other, ClassAd):
            for lc, e in other.exprs.items():
                self._set(other.spelling[lc], e)
            return
        pairs = other.items() if isinstance(other, Mapping) else other
        for k, v in pairs:
            self[k] = v

    def copy(self) -> "ClassAd":
        ad = self.with_parent(self.parent)
        ad.ident = id(ad)  # a copy is an ad of its own
        return ad

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClassAd):
            return NotImplemented
        return self.exprs == other.exprs

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return self.to_new()

    # --- evaluation ---------------------------------------------------------------------

    def evaluate(self, name: str, target: "ClassAd | None" = None,
                 ctx: CallContext | None = None) -> Any:
        """The named attribute evaluated with MY = this ad; Undefined when absent."""
        return self.evaluate_lc(name.lower(), target, ctx)

    def evaluate_lc(self, lc: str, target: "ClassAd | None",
                     ctx: CallContext | None = None) -> Any:
        """:meth:`evaluate` for a name already in lower case (a caller's hot path)."""
        c = self.consts.get(lc, NOCONST)
        if c is not NOCONST:
            return c
        e = self.exprs.get(lc)
        if e is None:
            return Undefined
        try:
            # The attribute itself is not marked as under evaluation, as in HTCondor's
            # library: with a = isUndefined(a), the inner reference evaluates a once more
            # and meets the cycle there, so a is false (the reference's ad.eval gives that)
            return e.fn(self, target, [ctx, None, None])
        except RecursionError:
            return Error

    def eval_expr(self, expr: Expr | str, target: "ClassAd | None" = None,
                  ctx: CallContext | None = None) -> Any:
        if isinstance(expr, str):
            expr = parse_expr(expr)
        return expr.evaluate(self, target, ctx)


def match(a: ClassAd, b: ClassAd, ctx: CallContext | None = None) -> bool:
    """True when a's Requirements hold against b and b's against a."""
    return a.evaluate("Requirements", b, ctx) is True and \
        b.evaluate("Requirements", a, ctx) is True


def rank(a: ClassAd, b: ClassAd, ctx: CallContext | None = None) -> float:
    """a's Rank evaluated against b; 0.0 unless it is a number."""
    v = a.evaluate("Rank", b, ctx)
    t = type(v)
    if t is int or t is float or t is bool:
        return float(v)
    return 0.0


# Expressions compile with the whole function table, and records they build are
# ClassAds: both are known only here, above expr.py, which is handed the compiler.
install_compiler(Compiler(FUNCTIONS, ClassAd.from_items))
