"""Expressions printed the way HTCondor's library prints them for ``unparse()`` and
``string()``: reals as ``%.15E``, a space before a unary operator, ``[  ]`` and ``{  }``
for empty records and lists, and for ``unparse()`` its indented multi-line layout of
records (four columns a level) and lists (three). condorpy's own writer
(:func:`condorpy.classad.ast.unparse`) keeps its lossless one-line spelling; these two
functions return text a user compares with what HTCondor gives, so they match it.
"""

from __future__ import annotations

import math
from typing import Any

from condorpy.classad.ast import (BINARY_PREC, COND_PREC, ELVIS_PREC, POSTFIX_PREC,
                                  UNARY_PREC, AttrRef, Binary, Call, Cond, Elvis, ListExpr,
                                  Literal, Node, Paren, RecordExpr, Select, Subscript,
                                  Unary, format_name, format_real, format_scalar,
                                  precedence)

_RECORD_INDENT = 4
_LIST_INDENT = 3


def real_text(v: float) -> str:
    """A real inside a printed expression: ``2.500000000000000E+00``."""
    if math.isfinite(v):
        return f"{v:.15E}"
    return format_real(v)  # real("INF"), real("NaN"): no %E spelling reads back


def ref_unparse(node: Node, pretty: bool = False) -> str:
    out: list[str] = []
    _Printer(out, pretty).emit(node)
    return "".join(out)


def record_text(items: list[tuple[str, Node]], pretty: bool = False) -> str:
    """A record given as (name, expression) pairs."""
    out: list[str] = []
    _Printer(out, pretty).record(items)
    return "".join(out)


class _Printer:
    __slots__ = ("out", "pretty", "indent")

    def __init__(self, out: list[str], pretty: bool) -> None:
        self.out = out
        self.pretty = pretty
        self.indent = 0

    def child(self, node: Node, min_prec: int) -> None:
        if precedence(node) < min_prec:
            self.out.append("(")
            self.emit(node)
            self.out.append(")")
        else:
            self.emit(node)

    def emit(self, node: Node) -> None:
        out = self.out
        t = type(node)
        if t is Literal:
            v: Any = node.value  # type: ignore[attr-defined]
            out.append(real_text(v) if type(v) is float else format_scalar(v))
        elif t is AttrRef:
            assert isinstance(node, AttrRef)
            if node.scope:
                out.append(node.scope + ".")
            out.append(format_name(node.name))
        elif t is Binary:
            assert isinstance(node, Binary)
            p = BINARY_PREC[node.op]
            self.child(node.left, p)
            out.append(f" {node.op} ")
            self.child(node.right, p + 1)
        elif t is Paren:
            out.append("(")
            self.emit(node.inner)  # type: ignore[attr-defined]
            out.append(")")
        elif t is Unary:
            assert isinstance(node, Unary)
            o = node.operand
            if node.op == "-" and type(o) is Literal and type(o.value) in (int, float):  # type: ignore[attr-defined]
                # the reference reads a minus before a number as a negative number
                v = -o.value  # type: ignore[attr-defined]
                out.append(real_text(v) if type(v) is float else str(v))
                return
            out.append(" " + node.op)
            self.child(o, UNARY_PREC)
        elif t is Call:
            assert isinstance(node, Call)
            out.append(node.name + "(")
            for i, a in enumerate(node.args):
                if i:
                    out.append(",")
                self.emit(a)
            out.append(")")
        elif t is Select:
            assert isinstance(node, Select)
            self.child(node.base, POSTFIX_PREC)
            out.append("." + format_name(node.name))
        elif t is Subscript:
            assert isinstance(node, Subscript)
            self.child(node.base, POSTFIX_PREC)
            out.append("[")
            self.emit(node.index)
            out.append("]")
        elif t is Cond:
            assert isinstance(node, Cond)
            self.child(node.cond, COND_PREC + 1)
            out.append(" ? ")
            self.emit(node.then)
            out.append(" : ")
            self.emit(node.else_)
        elif t is Elvis:
            assert isinstance(node, Elvis)
            self.child(node.left, POSTFIX_PREC)
            out.append(" ?: ")
            self.child(node.right, ELVIS_PREC)
        elif t is ListExpr:
            assert isinstance(node, ListExpr)
            self.items("{", "}", ",", _LIST_INDENT, [(None, n) for n in node.items])
        elif t is RecordExpr:
            assert isinstance(node, RecordExpr)
            self.record(list(node.items))
        else:
            raise TypeError(f"not a ClassAd syntax node: {node!r}")

    def record(self, items: list[tuple[str, Node]]) -> None:
        self.items("[", "]", "; ", _RECORD_INDENT, list(items))

    def items(self, open_: str, close: str, sep: str, step: int,
              items: list[tuple[str | None, Node]]) -> None:
        out = self.out
        if not self.pretty:
            out.append(open_ + " ")
        else:
            self.indent += step
            out.append("\n" + " " * self.indent + open_)
            self.indent += step
        for i, (name, n) in enumerate(items):
            if self.pretty:
                out.append("\n" + " " * self.indent)
            if name is not None:
                out.append(format_name(name) + " = ")
            self.emit(n)
            if i + 1 < len(items):
                out.append(sep)
        if not self.pretty:
            out.append(" " + close)
        else:
            self.indent -= step
            out.append("\n" + " " * self.indent + close)
            self.indent -= step
