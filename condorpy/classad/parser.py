"""The parser: a precedence-climbing reader over :func:`tokenize`'s tokens.

The grammar it implements is written out in ``grammar.lark``; the lark LALR parser built
from that file (:mod:`condorpy.classad.lark_grammar`) reads the same language into the
same tree, and the tests check the two agree on generated input. This hand-written
reader exists for speed: parsing should cost about what HTCondor's own parser costs.
:func:`parse_node` first tries the quick path (:mod:`condorpy.classad.quickparse`), which
reads common expressions faster still; what it leaves, errors included, comes here.
"""

from __future__ import annotations

from condorpy.classad.ast import (BINARY_PREC, AttrRef, Call, Cond, Elvis, ListExpr, Node,
                                  RecordExpr, Select, Subscript, Unary, new_attr, new_binary,
                                  new_literal, new_paren)
from condorpy.classad.lexer import (number_value, syntax_error, tokenize, unescape,
                                    unescape_old)
from condorpy.classad.parser_limits import check_expr_text
from condorpy.classad.quickparse import QUICK_MAX_STACK, quick_parse
from condorpy.classad.quickparse import time_literal as time_literal
from condorpy.classad.values import Error, Undefined
from condorpy.errors import ClassAdSyntaxError

# Nesting deeper than this is refused at parse time: evaluation recurses per level.
MAX_DEPTH = 200

_KW_VALUES = {"true": True, "false": False, "undefined": Undefined, "error": Error}
_KEYWORDS = frozenset({"true", "false", "undefined", "error", "is", "isnt"})
_CANON = {"=?=": "is", "=!=": "isnt"}
_BIN = dict(BINARY_PREC)
_BIN.update({"=?=": 7, "=!=": 7})
_BIN.pop("is")
_BIN.pop("isnt")
_SCOPES = frozenset({"my", "target"})
_DIGITS = frozenset("0123456789")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_UNARY = frozenset({"-", "+", "!", "~"})


class Parser:
    __slots__ = ("text", "toks", "raw", "i", "depth", "unescape")

    def __init__(self, text: str, old_strings: bool = False) -> None:
        self.text = text
        # the old ClassAd format reads backslashes in strings literally (but for \")
        self.unescape = unescape_old if old_strings else unescape
        self.toks, self.raw = tokenize(text)
        self.i = 0
        self.depth = 0

    # --- helpers -----------------------------------------------------------------

    def pos(self, i: int) -> int:
        raw = self.raw
        return sum(len(raw[j]) for j in range(i)) + len(raw[i]) - len(self.toks[i])

    def glued(self, i: int) -> bool:
        """No space between token i and the one before it."""
        return len(self.raw[i]) == len(self.toks[i])

    def error(self, msg: str, i: int | None = None) -> ClassAdSyntaxError:
        return syntax_error(msg, self.text, self.pos(self.i if i is None else i))

    def describe(self, i: int | None = None) -> str:
        t = self.toks[self.i if i is None else i]
        return repr(t) if t else "the end of the text"

    def expect(self, tok: str) -> None:
        if self.toks[self.i] != tok:
            raise self.error(f"expected {tok!r}, found {self.describe()}")
        self.i += 1

    def expect_end(self) -> None:
        if self.toks[self.i]:
            raise self.error(f"unexpected {self.describe()} after the expression")

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error("expression nested too deeply")

    # --- expressions ----------------------------------------------------------------

    def expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error("expression nested too deeply")
        cond = self.binary(2)
        if self.toks[self.i] == "?":
            self.i += 1
            then = self.expr()
            self.expect(":")
            node: Node = Cond(cond, then, self.expr())
        else:
            node = cond
        self.depth -= 1
        return node

    def binary(self, min_prec: int) -> Node:
        # A chain of operators of one precedence is read by this loop, not by recursion,
        # and builds a left-nested tree as long as the chain: that is length, not
        # nesting, and every walker of the tree (compiler, unparse, equality) takes such
        # a spine iteratively, so it is not counted against MAX_DEPTH.
        left = self.operand()
        toks = self.toks
        while True:
            t = toks[self.i]
            prec = _BIN.get(t)
            if prec is None:
                if t[:1] in ("i", "I"):
                    op = t.lower()
                    if op != "is" and op != "isnt":
                        return left
                    prec = 7
                else:
                    return left
            else:
                op = _CANON.get(t, t)
            if prec < min_prec:
                return left
            self.i += 1
            right = self.binary(prec + 1)
            left = new_binary(op, left, right)

    def operand(self) -> Node:
        """A primary with its prefix operators and its postfix selections/subscripts."""
        toks = self.toks
        i = self.i
        t = toks[i]
        if t == "(":  # first: policy expressions are full of parentheses
            self.i = i + 1
            inner = self.expr()
            if toks[self.i] != ")":
                raise self.error(f"expected ')', found {self.describe()}")
            self.i += 1
            node: Node = new_paren(inner)
            t = toks[self.i]
            if t == "." or t == "[" or t == "?":
                return self.after_primary(node)
            return node
        c = t[:1]
        if c in _NAME_START:
            low = t.lower()
            if low in _KEYWORDS:
                v2 = _KW_VALUES.get(low)
                if v2 is None:
                    raise self.error(f"expected an expression, found {t!r}", i)
                node = new_literal(v2)
                self.i = i + 1
            elif toks[i + 1] == "(":
                self.i = i + 2
                node = Call(t, self.items(")"))
                if low == "abstime" or low == "reltime":
                    lit = time_literal(node)
                    if lit is None:
                        raise self.error(f"bad time in {t}()", i)
                    node = lit
            else:
                node = new_attr(t)
                self.i = i + 1
        elif c in _DIGITS or (c == "." and len(t) > 1):
            node = self.number(t, False)
        elif t in _UNARY:
            self.i = i + 1
            n = toks[i + 1]
            if t == "-" and n and (n[0] in _DIGITS or (n[0] == "." and len(n) > 1)) \
                    and self.glued(i + 1):
                # "-5" written together is a negative literal, "- 5" a unary minus
                node = self.number(n, True)
            else:
                self.deeper()
                node = Unary(t, self.operand())
                self.depth -= 1
                return node
        elif c == '"':
            s = self.unescape(t[1:-1])
            if s is None:
                raise self.error("a string may not contain a NUL character")
            self.i = i + 1
            node = new_literal(s)
        elif c == "'":
            self.i = i + 1
            node = AttrRef(self.qname(t))
        elif t == "{":
            self.i = i + 1
            node = ListExpr(self.items("}"))
        elif t == "[":
            self.i = i + 1
            node = RecordExpr(tuple(self.record_items("]")))
        else:
            raise self.error(f"expected an expression, found {self.describe()}")
        t = toks[self.i]
        if t == "." or t == "[" or t == "?":
            return self.after_primary(node)
        return node

    def after_primary(self, node: Node) -> Node:
        """Selections and subscripts after a primary, then a possible Elvis operator."""
        toks = self.toks
        t = toks[self.i]
        if t == "." or t == "[":
            node = self.postfix(node)
            t = toks[self.i]
        if t == "?" and toks[self.i + 1] == ":":
            # The reference reads the Elvis operator a ?: b between two postfix
            # expressions, binding tighter than any other operator: -x ?: 5 is
            # -(x ?: 5) and 7 ?: 2 * 3 is (7 ?: 2) * 3; b may not start with a prefix
            # operator (a negative number is fine).
            self.i += 2
            t = toks[self.i]
            if t in _UNARY and not (t == "-" and toks[self.i + 1][:1] in _DIGITS
                                    and self.glued(self.i + 1)):
                raise self.error(f"unexpected {t!r} after '?:'")
            self.deeper()
            node = Elvis(node, self.operand())
            self.depth -= 1
        return node

    def number(self, t: str, negative: bool) -> Node:
        i = self.i
        if t.isdigit() and (t[0] != "0" or len(t) == 1) and len(t) < 19:
            v: int | float | None = -int(t) if negative else int(t)
        else:
            v = number_value(t, negative)
            if v is None:
                raise self.error(f"bad number {t}")
        if self.toks[i + 1] == "." and self.glued(i + 1) and type(v) is int:
            raise self.error("a real number needs digits after the decimal point", i + 1)
        self.i = i + 1
        return new_literal(v)

    def postfix(self, node: Node) -> Node:
        toks = self.toks
        while True:
            t = toks[self.i]
            if t == ".":
                self.i += 1
                n = toks[self.i]
                if n[:1] in _NAME_START and n.lower() not in _KEYWORDS:
                    name = n
                elif n[:1] == "'":
                    name = self.qname(n)
                else:
                    raise self.error(f"expected an attribute name after '.', found {self.describe()}")
                self.i += 1
                if type(node) is AttrRef and not node.scope and node.name.lower() in _SCOPES:
                    node = AttrRef(name, node.name)
                else:
                    node = Select(node, name)
            elif t == "[":
                self.i += 1
                idx = self.expr()
                self.expect("]")
                node = Subscript(node, idx)
            else:
                return node
            self.deeper()

    def qname(self, t: str) -> str:
        v = unescape(t[1:-1])
        if not v:
            raise self.error("bad quoted attribute name")
        return v

    def items(self, close: str) -> tuple[Node, ...]:
        toks = self.toks
        if toks[self.i] == close:
            self.i += 1
            return ()
        out = [self.expr()]
        while True:
            t = toks[self.i]
            if t == ",":
                self.i += 1
                out.append(self.expr())
            elif t == close:
                self.i += 1
                return tuple(out)
            else:
                raise self.error(f"expected ',' or {close!r}, found {self.describe()}")

    def record_items(self, close: str) -> list[tuple[str, Node]]:
        """``name = expr`` pairs separated by ';' (trailing and repeated ';' allowed)
        up to ``close`` ("]" inside an expression, "" for the end of the text)."""
        found: dict[str, tuple[str, Node]] = {}
        toks = self.toks
        first = True
        while True:
            t = toks[self.i]
            if t == close:
                if close:
                    self.i += 1
                return list(found.values())
            if not first:
                if t != ";":
                    raise self.error(f"expected ';' or {close or 'the end'!r}, found {self.describe()}")
                while toks[self.i] == ";":
                    self.i += 1
                if toks[self.i] == close:
                    continue
            n = toks[self.i]
            if n[:1] in _NAME_START and n.lower() not in _KEYWORDS:
                name = n
            elif n[:1] == "'":
                name = self.qname(n)
            else:
                raise self.error(f"expected an attribute name, found {self.describe()}")
            self.i += 1
            self.expect("=")
            value = self.expr()
            low = name.lower()
            if low in found:
                # the later definition wins, keeping the first one's spelling and place
                found[low] = (found[low][0], value)
            else:
                found[low] = (name, value)
            first = False


# the quick path leaves text to the Parser before nesting could reach the limit
assert QUICK_MAX_STACK < MAX_DEPTH - 1


def parse_node(text: str, old_strings: bool = False) -> Node:
    """The tree of one expression; ClassAdSyntaxError where the text is not one, or is
    over the limits of :mod:`condorpy.classad.parser_limits`."""
    check_expr_text(text)
    # the quick path takes no text with a backslash, the only place old strings differ
    node = quick_parse(text)
    if node is not None:
        return node
    p = Parser(text, old_strings)
    node = p.expr()
    p.expect_end()
    return node
