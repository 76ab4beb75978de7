"""Reading and writing ClassAds: the old format, the new format, and HTCondor's JSON.

The readers take the class of the ads they build (``ClassAd``, or a subclass) as their
first argument, so this module sits below :mod:`condorpy.classad.ad`, which imports it
for ClassAd's own ``parse_*`` / ``to_*`` methods; :mod:`condorpy.classad.formats` gives
the same functions with ``ClassAd`` filled in.

* old: one ``Name = expression`` per line, as ``condor_status -l`` prints; ``#`` lines
  and blank lines are ignored (several ads: separated by blank lines).
* new: ``[ Name = expression; ... ]``.
* JSON: an object per ad; numbers, strings, booleans, lists and records map to JSON,
  ``undefined`` to null, and every other expression to the string ``"\\/Expr(...)\\/"``.

Writing never loses information: reals carry as many digits as they need, and strings
are escaped in every format (HTCondor's old-format writer prints newlines raw).
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, TypeVar

from condorpy.classad.ast import (ListExpr, Literal, Node, RecordExpr, format_name,
                                  format_real_shown, format_scalar, quote_string,
                                  unparse)
from condorpy.classad.compiler import NOCONST
from condorpy.classad.expr import Expr, parse_expr
from condorpy.classad.lexer import unescape
from condorpy.classad.parser import Parser, parse_node
from condorpy.classad.parser_limits import (MAX_EXPR_TOKENS, check_ad_lines,
                                            check_ad_text)
from condorpy.classad.scope import Scope
from condorpy.classad.values import Undefined
from condorpy.errors import ClassAdError, ClassAdSyntaxError
from condorpy.inputs import loads_json

if TYPE_CHECKING:
    from condorpy.classad.ad import ClassAd

AdT = TypeVar("AdT", bound="ClassAd")


# --- values -------------------------------------------------------------------------

def format_value(v: Any) -> str:
    """An evaluated value in new-ClassAd literal syntax: ``10``, ``"a"``, ``{ 1,2 }``."""
    if type(v) is list:
        if not v:
            return "{ }"
        return "{ " + ",".join(format_value(x) for x in v) + " }"
    if isinstance(v, Scope):
        return to_new(v)
    if isinstance(v, Expr):
        return str(v)
    return format_scalar(v)


def format_shown(v: Any) -> str:
    """A value as HTCondor's tools print it for ``-af``: ``format_value`` with reals at
    the tools' 16 significant digits (``format_real_shown``)."""
    if type(v) is float:
        return format_real_shown(v)
    if type(v) is list and v:
        return "{ " + ",".join(format_shown(x) for x in v) + " }"
    return format_value(v)


# --- old format ------------------------------------------------------------------------

def _relocate(e: ClassAdSyntaxError, full: str, line: int, col0: int,
              source: str | None, attribute: str | None = None) -> ClassAdSyntaxError:
    col = e.column + col0 if e.line == 1 else e.column
    return ClassAdSyntaxError(e.reason, text=full, line=line + e.line - 1, column=col,
                              source=source, attribute=attribute)


_QUOTED_NAME_RE = re.compile(r"\s*'((?:[^'\\]|\\.)+)'\s*=")


def _parse_old_lines(cls: type[AdT], lines: list[tuple[int, str]], text: str,
                     source: str | None) -> AdT:
    # A job ad is mostly literals (ints, plain strings, booleans, reals) and a few
    # expressions whose texts repeat from ad to ad (every job of a submit file has the
    # same Requirements). So: literals are recognised here without the parser and
    # shared (immutable Exprs), expressions go through parse_expr's cache by text, and
    # the ad's maps are filled in one go. Everything is still read (and any error
    # reported with its line) here, when the ad is read.
    names: dict[str, str] = {}
    exprs: dict[str, Expr] = {}
    consts: dict[str, Any] = {}
    plain = "\0" not in text
    for lineno, raw in lines:
        name, eq, value = raw.partition("=")
        name = name.strip()
        if not (eq and name.isidentifier() and name.isascii()):
            name, expr = _parse_old_line(lineno, raw, text, source)
        else:
            v = value.strip()
            # a long value goes through the parser, which holds it to its limits
            quick = plain and len(v) <= MAX_EXPR_TOKENS
            expr = _LITERALS.get(v) if quick else None  # type: ignore[assignment]
            if expr is None:
                expr = _old_value(v, quick)
                if expr is None:
                    # the value starts after the "=" and its own leading space
                    col0 = len(raw) - len(value.lstrip())
                    expr = _old_expr(v, lineno, col0, text, source, name)
        lc = name.lower()
        if lc not in names:
            names[lc] = name
        exprs[lc] = expr
        c = expr.const
        if c is not NOCONST:
            consts[lc] = c
        elif lc in consts:
            del consts[lc]
    ad = cls()
    ad.adopt(names, exprs, consts)
    return ad


# Literal Exprs by their text, shared between ads (an Expr never changes): 0, 1, true,
# "alice", ... repeat in every ad. Bounded: cleared when full.
_LITERALS: dict[str, Expr] = {}
_LITERALS_MAX = 4096
_REAL_RE = re.compile(r"-?[0-9]+\.[0-9]+\Z")


def _old_value(v: str, plain: bool) -> Expr | None:
    """The Expr of a value written as a plain literal (int, real, boolean, string
    without escapes), else None (the parser reads it)."""
    if not plain or not v:
        return None
    c = v[0]
    val: Any
    if c == '"':
        if len(v) < 2 or v[-1] != '"' or v.count('"') != 2 or "\\" in v:
            return None
        val = v[1:-1]
    elif c in "0123456789" or c == "-":
        digits = v[1:] if c == "-" else v
        if digits.isdigit() and digits.isascii() and len(digits) < 19 and \
                (digits[0] != "0" or len(digits) == 1):
            val = int(v)
        elif _REAL_RE.match(v):
            val = float(v)
        else:
            return None
    else:
        low = v.lower()
        if low == "true":
            val = True
        elif low == "false":
            val = False
        else:
            return None
    e = Expr(Literal(val))
    if len(_LITERALS) >= _LITERALS_MAX:
        _LITERALS.clear()
    _LITERALS[v] = e
    return e


def _old_expr(v: str, lineno: int, col0: int, text: str, source: str | None,
              name: str) -> Expr:
    """An expression attribute's value (v: stripped, starting at column col0 + 1)."""
    try:
        if "\\" in v:  # the old format reads backslashes its own way: no shared cache
            return Expr(parse_node(v, old_strings=True))
        return parse_expr(v)
    except ClassAdSyntaxError as e:
        raise _relocate(e, text, lineno, col0, source, name) from None


def _parse_old_line(lineno: int, raw: str, text: str, source: str | None
                    ) -> tuple[str, Expr]:
    """A line the quick reading above does not take: a quoted name, or an error."""
    lead = len(raw) - len(raw.lstrip())
    q = _QUOTED_NAME_RE.match(raw)
    if q:
        name = unescape(q.group(1)) or ""
        eq = q.end() - 1
    else:
        eq = raw.find("=")
        if eq < 0:
            raise ClassAdSyntaxError("expected 'Name = expression'", text=text,
                                     line=lineno, column=lead + 1, source=source)
        name = raw[:eq].strip()
    if not name or (not q and not _is_name(name)):
        raise ClassAdSyntaxError(f"bad attribute name {name!r}", text=text, line=lineno,
                                 column=lead + 1, source=source)
    try:
        expr = Expr(parse_node(raw[eq + 1:], old_strings=True))
    except ClassAdSyntaxError as e:
        raise _relocate(e, text, lineno, eq + 1, source, name) from None
    return name, expr


def _is_name(s: str) -> bool:
    return s.replace("_", "a").isalnum() and s.isascii() and not s[0].isdigit()


def _old_blocks(text: str) -> list[list[tuple[int, str]]]:
    blocks: list[list[tuple[int, str]]] = [[]]
    for i, raw in enumerate(text.split("\n"), 1):
        s = raw.strip()
        if not s:
            if blocks[-1]:
                blocks.append([])
            continue
        if s.startswith("#"):
            continue
        blocks[-1].append((i, raw.rstrip("\r")))
    return [b for b in blocks if b]


def parse_old(cls: type[AdT], text: str, source: str | None = None) -> AdT:
    check_ad_text(text, source)
    lines = [ln for block in _old_blocks(text) for ln in block]
    check_ad_lines(len(lines), text, source)
    return _parse_old_lines(cls, lines, text, source)


def parse_old_many(cls: type[AdT], text: str, source: str | None = None) -> list[AdT]:
    blocks = _old_blocks(text)      # (many ads: no bound on the text's lines)
    for b in blocks:
        check_ad_lines(len(b), text, source)
    return [_parse_old_lines(cls, b, text, source) for b in blocks]


def to_old(ad: ClassAd) -> str:
    return "".join(f"{format_name(name)} = {unparse(e.node, old=True)}\n"
                   for name, e in ad.items())


# --- new format ------------------------------------------------------------------------

def parse_new(cls: type[AdT], text: str, source: str | None = None) -> AdT:
    try:
        p = Parser(text)
        if p.toks[p.i] != "[":
            raise p.error("a new-format ClassAd starts with '['")
        p.i += 1
        items = p.record_items("]")
        p.expect_end()
    except ClassAdSyntaxError as e:
        if source:
            raise ClassAdSyntaxError(e.reason, text=text, line=e.line, column=e.column,
                                     source=source) from None
        raise
    try:
        return cls.from_items(tuple(items), None)
    except RecursionError:
        raise ClassAdSyntaxError("expression nested too deeply", text=text,
                                 source=source) from None


def to_new(ad: Scope) -> str:
    """An ad (any record: a Scope's maps are all it reads) in the new format."""
    if not ad.exprs:
        return "[ ]"
    names = ad.spelling
    return "[ " + "; ".join(f"{format_name(names[lc])} = {unparse(e.node)}"
                            for lc, e in ad.exprs.items()) + " ]"


# --- JSON -------------------------------------------------------------------------------

_EXPR_PREFIX = "/Expr("
_EXPR_SUFFIX = ")/"


def from_json(cls: type[AdT], text: str, source: str | None = None) -> AdT:
    try:
        data = loads_json(text)
    except ValueError as e:
        line = getattr(e, "lineno", 1)
        col = getattr(e, "colno", 1)
        msg = getattr(e, "msg", "nested too deeply")
        raise ClassAdSyntaxError(f"bad JSON: {msg}", text=text, line=line, column=col,
                                 source=source) from None
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        raise ClassAdSyntaxError("a JSON ClassAd is an object", text=text, source=source)
    try:
        return cls.from_items(_json_items(data, source), None)
    except RecursionError:
        raise ClassAdSyntaxError("JSON nested too deeply", text=text, source=source) from None


def from_json_many(cls: type[AdT], text: str, source: str | None = None) -> list[AdT]:
    try:
        data = loads_json(text)
    except ValueError as e:
        raise ClassAdSyntaxError(f"bad JSON: {getattr(e, 'msg', e)}", text=text,
                                 line=getattr(e, "lineno", 1), column=getattr(e, "colno", 1),
                                 source=source) from None
    if isinstance(data, dict):
        data = [data]
    return [from_json(cls, json.dumps(d), source) for d in data]


def _json_items(d: dict[str, Any], source: str | None) -> tuple[tuple[str, Node], ...]:
    return tuple((k, _json_node(v, source, k)) for k, v in d.items())


def _json_node(v: Any, source: str | None, attr: str) -> Node:
    if v is None:
        return Literal(Undefined)
    t = type(v)
    if t is bool or t is float:
        return Literal(v)
    if t is int:
        if not -(1 << 63) <= v < (1 << 63):
            raise ClassAdError(f"integer {v} does not fit in 64 bits", attribute=attr,
                               source=source)
        return Literal(v)
    if t is str:
        if v.startswith(_EXPR_PREFIX) and v.endswith(_EXPR_SUFFIX):
            return parse_expr(v[len(_EXPR_PREFIX):-len(_EXPR_SUFFIX)], source=source,
                              attribute=attr).node
        return Literal(v)
    if t is list:
        return ListExpr(tuple(_json_node(x, source, attr) for x in v))
    if t is dict:
        return RecordExpr(_json_items(v, source))
    raise ClassAdError(f"unsupported JSON value {v!r}", attribute=attr, source=source)


def to_json(ad: ClassAd) -> str:
    out: list[str] = []
    _json_record(ad, 0, out)
    return "".join(out)


def _json_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _json_record_items(items: list[tuple[str, Node]], indent: int, out: list[str]) -> None:
    if not items:
        out.append("{}")
        return
    pad = "  " * (indent + 1)
    out.append("{\n")
    for i, (name, node) in enumerate(items):
        out.append(f"{pad}{_json_str(name)}: ")
        _json_value(node, indent + 1, out)
        out.append(",\n" if i < len(items) - 1 else "\n")
    out.append("  " * indent + "}")


def _json_record(ad: ClassAd, indent: int, out: list[str]) -> None:
    _json_record_items([(n, e.node) for n, e in ad.items()], indent, out)


def _json_value(node: Node, indent: int, out: list[str]) -> None:
    t = type(node)
    if t is Literal:
        v = node.value  # type: ignore[attr-defined]
        tv = type(v)
        if tv is bool:
            out.append("true" if v else "false")
            return
        if tv is int:
            out.append(str(v))
            return
        if tv is float and math.isfinite(v):
            out.append(format_scalar(v))
            return
        if tv is str:
            out.append(_json_str(v))
            return
        if v is Undefined:
            out.append("null")
            return
    elif t is ListExpr:
        items = node.items  # type: ignore[attr-defined]
        if not items:
            out.append("[]")
            return
        pad = "  " * (indent + 1)
        out.append("[\n")
        for i, it in enumerate(items):
            out.append(pad)
            _json_value(it, indent + 1, out)
            out.append(",\n" if i < len(items) - 1 else "\n")
        out.append("  " * indent + "]")
        return
    elif t is RecordExpr:
        _json_record_items(list(node.items), indent, out)  # type: ignore[attr-defined]
        return
    text = _json_str(_EXPR_PREFIX + unparse(node) + _EXPR_SUFFIX)
    out.append(text.replace("/", "\\/"))
