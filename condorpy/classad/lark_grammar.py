"""The lark LALR parser built from ``grammar.lark``: the grammar's executable form.

It reads the same tokens as the fast parser (``parser.py``) and builds the same tree;
the test-suite parses generated text with both and requires identical trees, so the
grammar file stays the true description of what condorpy accepts. Built once, cached.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Iterator

from lark import Lark, Token, Transformer, UnexpectedInput
from lark.lexer import Lexer

from condorpy.classad.ast import (AttrRef, Binary, Call, Cond, Elvis, ListExpr, Literal,
                                  Node, Paren, RecordExpr, Select, Subscript, Unary)
from condorpy.classad.lexer import number_value, syntax_error, tokenize, unescape
from condorpy.classad.parser import time_literal
from condorpy.classad.values import Error, Undefined
from condorpy.errors import ClassAdSyntaxError

_TYPES = {"||": "OROR", "&&": "ANDAND", "|": "BOR", "^": "XOR", "&": "BAND",
          "==": "EQOP", "!=": "EQOP", "=?=": "EQOP", "=!=": "EQOP",
          "<": "RELOP", "<=": "RELOP", ">": "RELOP", ">=": "RELOP",
          "<<": "SHIFTOP", ">>": "SHIFTOP", ">>>": "SHIFTOP", "+": "ADDOP", "-": "ADDOP",
          "*": "MULOP", "/": "MULOP", "%": "MULOP", "!": "UNOP", "~": "UNOP", ";": "SEMI"}
_ANON = {"?": "QMARK", ":": "COLON", "(": "LPAR", ")": "RPAR", "[": "LSQB", "]": "RSQB",
         "{": "LBRACE", "}": "RBRACE", ",": "COMMA", ".": "DOT", "=": "EQUAL"}
_OPERAND_END = frozenset({")", "]", "}"})
_VALUE_KW = {"true": True, "false": False, "undefined": Undefined, "error": Error}
_DIGITS = "0123456789"


class _ClassAdLexer(Lexer):
    def __init__(self, conf: Any) -> None:
        pass

    def lex(self, data: str) -> Iterator[Token]:  # type: ignore[override]
        toks, raw = tokenize(data)
        ws = [r[:len(r) - len(t)] for t, r in zip(toks, raw)]
        pos = 0
        prev = ""
        i = 0
        while toks[i]:
            t = toks[i]
            pos += len(ws[i])
            c = t[0]
            nxt = toks[i + 1]
            operand_before = prev and prev.lower() not in ("is", "isnt") and (
                prev[0] not in "=!<>&|^+-*/%~?:([{,;." or prev in _OPERAND_END)
            if t == "-" and not operand_before and nxt[:1] and (
                    nxt[0] in _DIGITS or (nxt[0] == "." and len(nxt) > 1)) and not ws[i + 1]:
                yield Token("NEGNUM", "-" + nxt, start_pos=pos)
                pos += len(t) + len(nxt)
                prev = nxt
                i += 2
                continue
            if t == "?" and nxt == ":":
                yield Token("ELVIS", "?:", start_pos=pos)
                pos += len(t) + len(ws[i + 1]) + 1
                prev = ":"
                i += 2
                continue
            if c in _DIGITS or (c == "." and len(t) > 1):
                kind = "NUMBER"
            elif c == '"':
                kind = "STRING"
            elif c == "'":
                kind = "QNAME"
            elif c.isalpha() or c == "_":
                low = t.lower()
                kind = "VALUEKW" if low in _VALUE_KW else (
                    "EQOP" if low in ("is", "isnt") else "NAME")
            else:
                kind = _TYPES.get(t) or _ANON[t]
            yield Token(kind, t, start_pos=pos)
            pos += len(t)
            prev = t
            i += 1


class _ToAst(Transformer[Any, Node]):
    def number(self, items: list[Token]) -> Node:
        t = str(items[0])
        v = number_value(t.lstrip("-"), t.startswith("-"))
        if v is None:
            raise ValueError(f"bad number {t}")
        return Literal(v)

    def string(self, items: list[Token]) -> Node:
        s = unescape(str(items[0])[1:-1])
        if s is None:
            raise ValueError("NUL in a string")
        return Literal(s)

    def keyword(self, items: list[Token]) -> Node:
        return Literal(_VALUE_KW[str(items[0]).lower()])

    def attr_name(self, items: list[Token]) -> str:
        t = items[0]
        if t.type == "QNAME":
            v = unescape(str(t)[1:-1])
            if not v:
                raise ValueError("bad quoted name")
            return v
        return str(t)

    def attr(self, items: list[str]) -> Node:
        return AttrRef(items[0])

    def select(self, items: list[Any]) -> Node:
        base, name = items
        if type(base) is AttrRef and not base.scope and base.name.lower() in ("my", "target"):
            return AttrRef(name, base.name)
        return Select(base, name)

    def subscript(self, items: list[Node]) -> Node:
        return Subscript(items[0], items[1])

    def call(self, items: list[Any]) -> Node:
        node = Call(str(items[0]), tuple(a for a in items[1:] if a is not None))
        if node.name.lower() in ("abstime", "reltime"):
            lit = time_literal(node)
            if lit is None:
                raise ValueError(f"bad time in {node.name}()")
            return lit
        return node

    def paren(self, items: list[Node]) -> Node:
        return Paren(items[0])

    def list_expr(self, items: list[Any]) -> Node:
        return ListExpr(tuple(a for a in items if a is not None))

    def empty_record(self, items: list[Any]) -> Node:
        return RecordExpr(())

    def pair(self, items: list[Any]) -> tuple[str, Node]:
        return (items[0], items[1])

    def record(self, items: list[Any]) -> Node:
        found: dict[str, tuple[str, Node]] = {}
        for it in items:
            if isinstance(it, tuple):
                name, value = it
                low = name.lower()
                found[low] = (found[low][0], value) if low in found else (name, value)
        return RecordExpr(tuple(found.values()))

    def binary(self, items: list[Any]) -> Node:
        left, op, right = items
        o = str(op)
        o = {"=?=": "is", "=!=": "isnt"}.get(o, o.lower() if o[0] in "iI" else o)
        return Binary(o, left, right)

    def unary(self, items: list[Any]) -> Node:
        return Unary(str(items[0]), items[1])

    def elvis(self, items: list[Any]) -> Node:
        return Elvis(items[0], items[2])

    def cond(self, items: list[Node]) -> Node:
        return Cond(items[0], items[1], items[2])


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    text = (Path(__file__).with_name("grammar.lark")).read_text()
    return Lark(text, parser="lalr", lexer=_ClassAdLexer, transformer=_ToAst(),
                maybe_placeholders=True)


def lark_parse(text: str) -> Node:
    """Parse with the grammar file; ClassAdSyntaxError on bad input."""
    try:
        node = _parser().parse(text)
    except ClassAdSyntaxError:
        raise
    except UnexpectedInput as e:
        raise syntax_error(f"syntax error: {e.__class__.__name__}", text,
                           getattr(e, "pos_in_stream", 0) or 0) from None
    except Exception as e:  # lark wraps transformer errors
        raise syntax_error(f"syntax error: {e}", text, 0) from None
    assert isinstance(node, Node)
    return node
