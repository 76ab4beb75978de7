"""The syntax tree of ClassAd expressions, and its unparse (HTCondor's spelling).

Nodes are frozen dataclasses (to the type checker: see the end of the module);
``children()`` gives the sub-expressions in source order so tools (the policy "explain"
view) can walk a tree and evaluate each part. Parentheses written by the user are kept as
:class:`Paren` nodes so an unparse shows what was written; for trees built by code,
:func:`unparse` adds the parentheses precedence needs.
"""

from __future__ import annotations

import math
import re
import time
from typing import TYPE_CHECKING, Any, Callable

from condorpy.classad.values import AbsTime, Error, RelTime, Undefined

if TYPE_CHECKING:
    from typing import TypeVar

    from typing_extensions import dataclass_transform

    _N = TypeVar("_N")

    @dataclass_transform(frozen_default=True)
    def node_record(cls: type[_N]) -> type[_N]: ...
else:
    def node_record(cls: type) -> type:
        return cls


class Node:
    __slots__ = ()

    def children(self) -> tuple["Node", ...]:
        return ()

    def __str__(self) -> str:
        return unparse(self)


@node_record
class Literal(Node):
    __slots__ = ("value",)
    value: Any  # int | float | str | bool | Undefined | Error | AbsTime | RelTime

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, value: Any) -> None:
            self.value = value

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.value,) == (other.value,)

        def __hash__(self) -> int:
            return hash((self.value,))

        def __repr__(self) -> str:
            return f"Literal(value={self.value!r})"


@node_record
class AttrRef(Node):
    __slots__ = ("name", "scope")
    name: str
    if TYPE_CHECKING:
        scope: str = ""  # "" unscoped, else "MY" or "TARGET" as spelled in the source
    else:
        scope: str

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, name: str, scope: str = "") -> None:
            self.name = name
            self.scope = scope

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.name, self.scope) == (other.name, other.scope)

        def __hash__(self) -> int:
            return hash((self.name, self.scope))

        def __repr__(self) -> str:
            return f"AttrRef(name={self.name!r}, scope={self.scope!r})"

    @property
    def scope_kind(self) -> str:
        return self.scope.lower()


@node_record
class Select(Node):
    __slots__ = ("base", "name")
    base: Node
    name: str

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, base: Node, name: str) -> None:
            self.base = base
            self.name = name

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.base, self.name) == (other.base, other.name)

        def __hash__(self) -> int:
            return hash((self.base, self.name))

        def __repr__(self) -> str:
            return f"Select(base={self.base!r}, name={self.name!r})"

    def children(self) -> tuple[Node, ...]:
        return (self.base,)


@node_record
class Subscript(Node):
    __slots__ = ("base", "index")
    base: Node
    index: Node

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, base: Node, index: Node) -> None:
            self.base = base
            self.index = index

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.base, self.index) == (other.base, other.index)

        def __hash__(self) -> int:
            return hash((self.base, self.index))

        def __repr__(self) -> str:
            return f"Subscript(base={self.base!r}, index={self.index!r})"

    def children(self) -> tuple[Node, ...]:
        return (self.base, self.index)


@node_record
class Call(Node):
    __slots__ = ("name", "args")
    name: str
    args: tuple[Node, ...]

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, name: str, args: tuple[Node, ...]) -> None:
            self.name = name
            self.args = args

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.name, self.args) == (other.name, other.args)

        def __hash__(self) -> int:
            return hash((self.name, self.args))

        def __repr__(self) -> str:
            return f"Call(name={self.name!r}, args={self.args!r})"

    def children(self) -> tuple[Node, ...]:
        return self.args


@node_record
class Unary(Node):
    __slots__ = ("op", "operand")
    op: str
    operand: Node

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, op: str, operand: Node) -> None:
            self.op = op
            self.operand = operand

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.op, self.operand) == (other.op, other.operand)

        def __hash__(self) -> int:
            return hash((self.op, self.operand))

        def __repr__(self) -> str:
            return f"Unary(op={self.op!r}, operand={self.operand!r})"

    def children(self) -> tuple[Node, ...]:
        return (self.operand,)


@node_record
class Binary(Node):
    __slots__ = ("op", "left", "right")
    op: str  # canonical: "is"/"isnt" stand for =?= / =!=
    left: Node
    right: Node

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, op: str, left: Node, right: Node) -> None:
            self.op = op
            self.left = left
            self.right = right

        def __repr__(self) -> str:
            return f"Binary(op={self.op!r}, left={self.left!r}, right={self.right!r})"

    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    # A chain ``a || b || c ...`` nests to the left as deeply as it is long (thousands
    # of terms in a START listing owners): equality and hashing walk that spine in a
    # loop where the dataclass's would recurse once per term.

    def __eq__(self, other: object) -> bool:
        a: Node = self
        b: object = other
        while type(a) is Binary:
            if type(b) is not Binary:
                return False
            if a.op != b.op or a.right != b.right:  # type: ignore[attr-defined]
                return False
            a, b = a.left, b.left  # type: ignore[attr-defined]
        return a == b

    def __hash__(self) -> int:
        spine: list[Binary] = []
        n: Node = self
        while type(n) is Binary:
            spine.append(n)  # type: ignore[arg-type]
            n = n.left  # type: ignore[attr-defined]
        h = hash(n)
        for b in reversed(spine):
            h = hash((b.op, h, b.right))
        return h


@node_record
class Cond(Node):
    __slots__ = ("cond", "then", "else_")
    cond: Node
    then: Node
    else_: Node

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, cond: Node, then: Node, else_: Node) -> None:
            self.cond = cond
            self.then = then
            self.else_ = else_

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.cond, self.then, self.else_) == (other.cond, other.then, other.else_)

        def __hash__(self) -> int:
            return hash((self.cond, self.then, self.else_))

        def __repr__(self) -> str:
            return f"Cond(cond={self.cond!r}, then={self.then!r}, else_={self.else_!r})"

    def children(self) -> tuple[Node, ...]:
        return (self.cond, self.then, self.else_)


@node_record
class Elvis(Node):
    __slots__ = ("left", "right")
    left: Node
    right: Node

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, left: Node, right: Node) -> None:
            self.left = left
            self.right = right

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.left, self.right) == (other.left, other.right)

        def __hash__(self) -> int:
            return hash((self.left, self.right))

        def __repr__(self) -> str:
            return f"Elvis(left={self.left!r}, right={self.right!r})"

    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)


@node_record
class Paren(Node):
    __slots__ = ("inner",)
    inner: Node

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, inner: Node) -> None:
            self.inner = inner

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.inner,) == (other.inner,)

        def __hash__(self) -> int:
            return hash((self.inner,))

        def __repr__(self) -> str:
            return f"Paren(inner={self.inner!r})"

    def children(self) -> tuple[Node, ...]:
        return (self.inner,)


@node_record
class ListExpr(Node):
    __slots__ = ("items",)
    items: tuple[Node, ...]

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, items: tuple[Node, ...]) -> None:
            self.items = items

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.items,) == (other.items,)

        def __hash__(self) -> int:
            return hash((self.items,))

        def __repr__(self) -> str:
            return f"ListExpr(items={self.items!r})"

    def children(self) -> tuple[Node, ...]:
        return self.items


@node_record
class RecordExpr(Node):
    __slots__ = ("items",)
    items: tuple[tuple[str, Node], ...]

    if not TYPE_CHECKING:       # (the type checker sees a frozen dataclass)
        def __init__(self, items: tuple[tuple[str, Node], ...]) -> None:
            self.items = items

        def __eq__(self, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return (self.items,) == (other.items,)

        def __hash__(self) -> int:
            return hash((self.items,))

        def __repr__(self) -> str:
            return f"RecordExpr(items={self.items!r})"

    def children(self) -> tuple[Node, ...]:
        return tuple(n for _, n in self.items)


# --- precedence (higher binds tighter) -------------------------------------------

BINARY_PREC: dict[str, int] = {
    "||": 2, "&&": 3, "|": 4, "^": 5, "&": 6,
    "==": 7, "!=": 7, "is": 7, "isnt": 7,
    "<": 8, "<=": 8, ">": 8, ">=": 8,
    "<<": 9, ">>": 9, ">>>": 9,
    "+": 10, "-": 10, "*": 11, "/": 11, "%": 11,
}
COND_PREC = 1
UNARY_PREC = 12
ELVIS_PREC = 13  # the reference binds a ?: b tighter than every other operator
POSTFIX_PREC = 14
ATOM_PREC = 15


def precedence(node: Node) -> int:
    """How tightly ``node`` binds when printed (the *_PREC scale): a child binding
    less tightly than its place needs is printed in parentheses."""
    t = type(node)
    if t is Binary:
        return BINARY_PREC[node.op]  # type: ignore[attr-defined]
    if t is Cond:
        return COND_PREC
    if t is Elvis:
        return ELVIS_PREC
    if t is Unary:
        return UNARY_PREC
    if t is Literal:
        v = node.value  # type: ignore[attr-defined]
        if (type(v) is int or type(v) is float) and (v < 0 or str(v)[0] == "-"):
            return UNARY_PREC  # a negative literal reads like a unary minus
        return ATOM_PREC
    if t is Select or t is Subscript:
        return POSTFIX_PREC
    return ATOM_PREC


# --- literal spelling ---------------------------------------------------------------

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset({"true", "false", "undefined", "error", "is", "isnt", "parent"})


def format_real(v: float) -> str:
    """A real as HTCondor prints it (``%.16G``, ``.0`` added to integral values).

    Where 16 significant digits do not give the same double back, 17 are used, so that
    writing and reading an ad never changes a value (HTCondor would lose the last bit).
    """
    if v != v:
        return 'real("NaN")'
    if v == math.inf:
        return 'real("INF")'
    if v == -math.inf:
        return 'real("-INF")'
    s = "%.16G" % v
    if float(s) != v:
        s = "%.17G" % v
    if "." not in s and "E" not in s:
        s += ".0"
    return s


def format_real_shown(v: float) -> str:
    """A real as HTCondor's tools show it (condor_status/condor_q ``-af``, ``-l``): 16
    significant digits, even where that does not give the same double back (0.1 + 0.2
    shows as ``0.3``); ``format_real`` is for writing ads that are read again."""
    if v != v or v in (math.inf, -math.inf):
        return format_real(v)
    s = "%.16G" % v
    if "." not in s and "E" not in s:
        s += ".0"
    return s


def quote_string(s: str, quote: str = '"') -> str:
    out = [quote]
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + quote)
        elif o < 0x20 or o == 0x7F:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b",
                        "\f": "\\f"}.get(ch) or "\\%03o" % o)
        else:
            out.append(ch)
    out.append(quote)
    return "".join(out)


def format_name(name: str) -> str:
    if _IDENT_RE.match(name) and name.lower() not in _RESERVED:
        return name
    return quote_string(name, "'")


def format_abstime(t: AbsTime) -> str:
    off = int(t.tz_offset)
    tm = time.gmtime(math.floor(t.epoch) + off)
    sign = "+" if off > 0 else "-"
    a = abs(off)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", tm)
    return f'absTime("{stamp}{sign}{a // 3600:02d}:{a % 3600 // 60:02d}")'


def format_reltime(t: RelTime) -> str:
    """``relTime("[D+]HH:MM:SS")`` as the reference spells it (leading zero fields
    left out); fractional durations as ``relTime(seconds)``."""
    s = t.seconds
    if not float(s).is_integer() or not math.isfinite(s):
        return f"relTime({format_real(float(s))})"
    n = int(s)
    sign = "-" if n < 0 else ""
    n = abs(n)
    d, rest = divmod(n, 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    if d:
        body = f"{d}+{h:02d}:{m:02d}:{sec:02d}"
    elif h:
        body = f"{h:02d}:{m:02d}:{sec:02d}"
    elif m:
        body = f"{m:02d}:{sec:02d}"
    else:
        body = f"{sec:02d}"
    return f'relTime("{sign}{body}")'


def format_scalar(v: Any) -> str:
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return format_real(v)
    if t is str:
        return quote_string(v)
    if v is Undefined:
        return "undefined"
    if v is Error:
        return "error"
    if t is AbsTime:
        return format_abstime(v)
    if t is RelTime:
        return format_reltime(v)
    raise TypeError(f"not a ClassAd scalar: {v!r}")


# --- unparse -------------------------------------------------------------------------

class _Parts(list[str]):
    old = False  # spell strings the old-format way


def quote_string_old(s: str) -> str:
    """A string in the old ClassAd format, where a backslash only escapes a quote.

    Text holding a line break, or a backslash right before a quote or at the end, has no
    old-format spelling (HTCondor writes it broken); it is written with new-format
    escapes instead, which an old-format reader takes literally."""
    if "\n" in s or "\r" in s or "\\\"" in s or s.endswith("\\"):
        return quote_string(s)
    return '"' + s.replace('"', '\\"') + '"'


def unparse(node: Node, old: bool = False) -> str:
    """The expression as text; ``old``: strings spelled for the old ClassAd format."""
    parts = _Parts()
    parts.old = old
    _unparse(node, parts)
    return "".join(parts)


def _child(node: Node, min_prec: int, parts: list[str]) -> None:
    if precedence(node) < min_prec:
        parts.append("(")
        _unparse(node, parts)
        parts.append(")")
    else:
        _unparse(node, parts)


def _unparse(node: Node, parts: list[str]) -> None:
    t = type(node)
    if t is Literal:
        v = node.value  # type: ignore[attr-defined]
        if type(v) is str and getattr(parts, "old", False):
            parts.append(quote_string_old(v))
        else:
            parts.append(format_scalar(v))
    elif t is AttrRef:
        assert isinstance(node, AttrRef)
        if node.scope:
            parts.append(node.scope + ".")
        parts.append(format_name(node.name))
    elif t is Binary:
        # Left-associative: a left operand of the same or higher precedence needs no
        # parentheses and is written first. Down that spine in a loop, not recursion:
        # a flat chain is as long as the text.
        assert isinstance(node, Binary)
        spine = [node]
        n = node.left
        while type(n) is Binary and BINARY_PREC[n.op] >= BINARY_PREC[spine[-1].op]:  # type: ignore[attr-defined]
            spine.append(n)  # type: ignore[arg-type]
            n = n.left  # type: ignore[attr-defined]
        _child(n, BINARY_PREC[spine[-1].op], parts)
        for b in reversed(spine):
            parts.append(f" {b.op} ")
            _child(b.right, BINARY_PREC[b.op] + 1, parts)
    elif t is Paren:
        parts.append("(")
        _unparse(node.inner, parts)  # type: ignore[attr-defined]
        parts.append(")")
    elif t is Unary:
        assert isinstance(node, Unary)
        parts.append(node.op)
        _child(node.operand, UNARY_PREC, parts)
    elif t is Call:
        assert isinstance(node, Call)
        parts.append(node.name + "(")
        for i, a in enumerate(node.args):
            if i:
                parts.append(",")
            _unparse(a, parts)
        parts.append(")")
    elif t is Select:
        assert isinstance(node, Select)
        _child(node.base, POSTFIX_PREC, parts)
        parts.append("." + format_name(node.name))
    elif t is Subscript:
        assert isinstance(node, Subscript)
        _child(node.base, POSTFIX_PREC, parts)
        parts.append("[")
        _unparse(node.index, parts)
        parts.append("]")
    elif t is Cond:
        assert isinstance(node, Cond)
        _child(node.cond, COND_PREC + 1, parts)
        parts.append(" ? ")
        _unparse(node.then, parts)
        parts.append(" : ")
        _unparse(node.else_, parts)
    elif t is Elvis:
        assert isinstance(node, Elvis)
        _child(node.left, POSTFIX_PREC, parts)
        parts.append(" ?: ")
        _child(node.right, ELVIS_PREC, parts)
    elif t is ListExpr:
        assert isinstance(node, ListExpr)
        if not node.items:
            parts.append("{ }")
            return
        parts.append("{ ")
        for i, a in enumerate(node.items):
            if i:
                parts.append(",")
            _unparse(a, parts)
        parts.append(" }")
    elif t is RecordExpr:
        assert isinstance(node, RecordExpr)
        if not node.items:
            parts.append("[ ]")
            return
        parts.append("[ ")
        for i, (k, v) in enumerate(node.items):
            if i:
                parts.append("; ")
            parts.append(format_name(k) + " = ")
            _unparse(v, parts)
        parts.append(" ]")
    else:
        raise TypeError(f"not a ClassAd syntax node: {node!r}")


# --- fast construction for the parsers ----------------------------------------------
# Nodes are frozen dataclasses to the type checker, but at run time plain classes with
# slots whose methods are written out above (equality and hashing as a frozen
# dataclass's): making twelve dataclasses cost every command line that parses a ClassAd
# about 6 ms at import, and a frozen dataclass would send every field store through
# object.__setattr__, when building the tree was the larger part of parsing. The parsers
# make a bare node and store its fields, each a plain slot store; nothing else writes a
# field, and mypy holds all other code to reading them.

# object.__new__, typed so that the parsers may fill in what it makes
new_node: Callable[[type[Node]], Any] = object.__new__


def new_literal(value: Any) -> Literal:
    n = new_node(Literal)
    n.value = value
    return n  # type: ignore[no-any-return]


def new_binary(op: str, left: Node, right: Node) -> Binary:
    n = new_node(Binary)
    n.op = op
    n.left = left
    n.right = right
    return n  # type: ignore[no-any-return]


def new_attr(name: str, scope: str = "") -> AttrRef:
    n = new_node(AttrRef)
    n.name = name
    n.scope = scope
    return n  # type: ignore[no-any-return]


def new_paren(inner: Node) -> Paren:
    n = new_node(Paren)
    n.inner = inner
    return n  # type: ignore[no-any-return]


def new_unary(op: str, operand: Node) -> Unary:
    n = new_node(Unary)
    n.op = op
    n.operand = operand
    return n  # type: ignore[no-any-return]


def new_cond(cond: Node, then: Node, else_: Node) -> Cond:
    n = new_node(Cond)
    n.cond = cond
    n.then = then
    n.else_ = else_
    return n  # type: ignore[no-any-return]


def new_call(name: str, args: tuple[Node, ...]) -> Call:
    n = new_node(Call)
    n.name = name
    n.args = args
    return n  # type: ignore[no-any-return]
