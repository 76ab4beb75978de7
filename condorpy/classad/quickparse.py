"""The parser's quick path: common expressions read in one loop.

Most expressions are operators, parentheses, names, numbers, plain strings and function
calls. :func:`quick_parse` reads those over :func:`quick_split`'s pieces in a single
operator-precedence loop (no call per token, no regular expression per token) and builds
the same tree as :class:`condorpy.classad.parser.Parser`. On anything else (selections,
subscripts, lists, records, the Elvis operator, comments, escapes, errors of any kind, deep
nesting) it gives up with None, and the Parser, which reports errors where they are,
reads the text instead. So this path only has to be right about text it accepts; the tests
hold it to the grammar (``grammar.lark``) like the Parser.

Length costs nothing here but time: a flat chain of 20,000 operators is one pass of the
loop with a short stack. Only nesting makes the stack grow, and past QUICK_MAX_STACK
entries the text is left to the Parser, which owns the nesting limit and its message.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from condorpy.classad.ast import (AttrRef, Binary, Call, Literal, Node, Paren, new_attr,
                                  new_binary, new_call, new_cond, new_node, new_unary)
from condorpy.classad.functions.timefuncs import parse_abstime_text, parse_reltime_text
from condorpy.classad.lexer import (NUMBER_RE, STRING_MARK, number_value, quick_split,
                                    split_piece)
from condorpy.classad.values import Error, Undefined

# A stack deeper than this means nesting (parentheses, calls, prefix operators,
# conditionals): the text is left to the Parser, which refuses what nests past its
# limit (parser.MAX_DEPTH, above this; each stack entry is at least one level, and each
# level adds at most one binary operator per precedence level, fewer than 16).
QUICK_MAX_STACK = 64

_KEYWORDS = frozenset({"true", "false", "undefined", "error", "is", "isnt"})
_KW_FIRST = frozenset("tTfFuUeEiI")
# Literal nodes are immutable, so every true (false, ...) can be the same node.
_KW_NODES = {"true": Literal(True), "false": Literal(False), "undefined": Literal(Undefined),
             "error": Literal(Error)}
_SCOPES = frozenset({"my", "target"})
_DIGITS = frozenset("0123456789")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_UNARY = frozenset({"-", "+", "!", "~"})
# binary operators' precedence (higher binds tighter), as ast.BINARY_PREC
_BIN = {"||": 2, "&&": 3, "|": 4, "^": 5, "&": 6,
        "==": 7, "!=": 7, "=?=": 7, "=!=": 7, "is": 7, "isnt": 7,
        "<": 8, "<=": 8, ">": 8, ">=": 8, "<<": 9, ">>": 9, ">>>": 9,
        "+": 10, "-": 10, "*": 11, "/": 11, "%": 11}
_CANON = {"=?=": "is", "=!=": "isnt"}
_UNARY_PREC = 12  # above every binary operator: a prefix operator takes its operand alone
_END = "\n"  # after the last piece (no piece holds a space)
_NUMBER = NUMBER_RE.fullmatch

_OPEN = (0, "(", None)
_FLOOR = (-1, None, None)
# what an operator-place token does: a binary operator's precedence (2 and up), else
# _CLOSE for ")", _SEP for ",", ":" and the end, _QMARK for "?"
_CLOSE, _SEP, _QMARK, _OTHER = 0, -1, -2, -3
_AFTER_OPERAND = dict(_BIN, **{")": _CLOSE, ",": _SEP, ":": _SEP, _END: _SEP, "?": _QMARK})


def quick_parse(text: str) -> Node | None:
    """The tree of a common expression, or None where the Parser must read the text."""
    split = quick_split(text)
    if split is None:
        return None
    toks, bodies = split
    toks.append(_END)
    base = iter(toks)
    nxt = base.__next__
    # the tokens of pieces split up and not read yet (see _resplit), before `base`
    split_rest: Any = iter(())
    body = iter(bodies).__next__
    # Pending operators as (precedence, operator, what it holds), top's precedence in
    # `top`, the operand read last in `cur`:
    #   binary operator      (its precedence, op, left operand)
    #   prefix operator      (_UNARY_PREC, op, None)
    #   "?" / ":"            (1, "?", condition) / (1, ":", (condition, then))
    #   "(" / a call         (0, "(", None) / (0, name, arguments so far)
    #   the floor            (-1, None, None)
    stack: list[tuple[int, Any, Any]] = [_FLOOR]
    top = -1
    cur: Any  # a Node (built here field by field: see ast.new_node)
    name: Any = None  # the attribute reference just read, if it was a bare name
    v: int | float | None
    after = _AFTER_OPERAND.get
    new = new_node
    un = _UNARY_PREC
    while True:
        # --- an operand is expected
        t = nxt()
        if t == "(":
            stack.append(_OPEN)
            top = 0
            if len(stack) > QUICK_MAX_STACK:
                return None
            continue
        if t.isidentifier():
            if t[0] in _KW_FIRST and t.lower() in _KEYWORDS:
                kw = _KW_NODES.get(t.lower())
                if kw is None:
                    return None  # is, isnt
                cur = kw
            else:
                cur = name = new(AttrRef)
                cur.name = t
                cur.scope = ""
        elif t == STRING_MARK:
            cur = new(Literal)
            cur.value = body()
        elif t.isdigit():
            if len(t) < 19 and (t[0] != "0" or len(t) == 1):
                v = int(t)
            else:
                v = number_value(t, False)  # 007 is 7, 08 is wrong, huge is 0
                if v is None:
                    return None
            cur = new(Literal)
            cur.value = v
        else:
            c = t[0]
            if t in _UNARY:
                stack.append((un, t, None))
                top = un
                if len(stack) > QUICK_MAX_STACK:
                    return None
                continue
            if (c in _DIGITS or c == "-" or c == ".") and _NUMBER(t):
                # written together, "-5" is a negative number
                v = number_value(t[1:], True) if c == "-" else number_value(t, False)
                if v is None:
                    return None
                cur = new(Literal)
                cur.value = v
            elif c in _NAME_START and (scoped := _scoped_piece(t)) is not None:
                cur = scoped
            elif t == ")" and top == 0 and stack[-1][2] == []:
                cur = new_call(stack.pop()[1], ())  # f()
                top = stack[-1][0]
            else:
                parts = split_piece(t) if len(t) > 1 else None
                if parts is None or len(parts) == 1:
                    return None
                # read parts next; the rest of an earlier split stays after them, and
                # `base` is never copied (long text with many such pieces stays linear)
                split_rest = iter(parts + list(split_rest))
                nxt = chain(split_rest, base).__next__
                continue
        # --- an operator is expected
        while True:
            t = nxt()
            p = after(t, _OTHER)
            if p > 1:  # a binary operator
                if p == 7:
                    t = _CANON.get(t, t)
                while top >= p:
                    q, o, left = stack.pop()
                    if q == un:
                        cur = new_unary(o, cur)
                    else:
                        b = new(Binary)
                        b.op = o
                        b.left = left
                        b.right = cur
                        cur = b
                    top = stack[-1][0]
                stack.append((p, t, cur))
                top = p
                break
            if p == _CLOSE:
                while top > 0:
                    q, o, left = stack.pop()
                    if q > 1:
                        if q == un:
                            cur = new_unary(o, cur)
                        else:
                            b = new(Binary)
                            b.op = o
                            b.left = left
                            b.right = cur
                            cur = b
                    elif o == ":":
                        cur = new_cond(left[0], left[1], cur)
                    else:
                        return None  # a "?" without its ":"
                    top = stack[-1][0]
                if top != 0:
                    return None
                q, o, left = stack.pop()
                top = stack[-1][0]
                if left is None:
                    node = new(Paren)
                    node.inner = cur
                    cur = node
                else:
                    left.append(cur)
                    cur = new_call(o, tuple(left))
                    low = o.lower()
                    if low == "abstime" or low == "reltime":
                        lit = time_literal(cur)
                        if lit is None:
                            return None
                        cur = lit
                continue
            if p == _SEP:  # ",", ":" or the end: finish back to the call, "?" or floor
                while top > 0:
                    q, o, left = stack.pop()
                    if q > 1:
                        if q == un:
                            cur = new_unary(o, cur)
                        else:
                            cur = new_binary(o, left, cur)
                    elif o == ":":
                        cur = new_cond(left[0], left[1], cur)
                    elif t == ":":  # the "?" this ":" belongs to
                        stack.append((1, ":", (left, cur)))
                        top = 1
                        break
                    else:
                        return None  # a "?" without its ":"
                    top = stack[-1][0]
                if t == ",":
                    args = stack[-1][2]
                    if top != 0 or args is None:
                        return None  # a comma outside a call's parentheses
                    args.append(cur)
                    break
                if t == ":":
                    if top != 1:
                        return None
                    break
                # the end of the text
                if top != -1:
                    return None
                tree: Node = cur
                return tree
            if p == _QMARK:
                while top >= 2:  # conditionals nest to the right
                    q, o, left = stack.pop()
                    cur = new_unary(o, cur) if q == un else new_binary(o, left, cur)
                    top = stack[-1][0]
                stack.append((1, "?", cur))
                top = 1
                if len(stack) > QUICK_MAX_STACK:
                    return None  # conditionals nested to the right
                break
            if t == "(" and cur is name:
                # the name just read is a function's: f(x) ("f()" is read as an operand)
                stack.append((0, name.name, []))
                top = 0
                if len(stack) > QUICK_MAX_STACK:
                    return None
                break
            if t == "." and cur is name and name.name.lower() in _SCOPES:
                # MY.x or TARGET.x (a piece such as "MY.x<1" is split up first)
                t = nxt()
                if not t.isidentifier() or t.lower() in _KEYWORDS:
                    return None
                cur = new_attr(t, name.name)
                continue
            c = t[0]
            if (c == "i" or c == "I") and t.lower() in ("is", "isnt"):
                parts = [t.lower()]
            elif c == "-" and len(t) > 1 and _NUMBER(t):
                parts = ["-", t[1:]]  # "a -5" is a minus, then the number 5
            else:
                # a piece of several tokens ("==5"); other selections, "[", "{", ";",
                # "=" and errors are the Parser's
                parts = split_piece(t) if len(t) > 1 else None  # type: ignore[assignment]
                if parts is None or len(parts) == 1:
                    return None
            split_rest = iter(parts + list(split_rest))
            nxt = chain(split_rest, base).__next__


def _scoped_piece(t: str) -> AttrRef | None:
    """MY.x or TARGET.x written as one piece, else None."""
    a, dot, b = t.partition(".")
    if dot and a.isidentifier() and b.isidentifier() and a.lower() in _SCOPES \
            and b.lower() not in _KEYWORDS:
        return new_attr(b, a)
    return None


def time_literal(call: Call) -> Node | None:
    """The reference reads ``absTime("...")`` and ``relTime("...")`` of a literal string
    as a time literal while parsing (and refuses a string that is not a time). Returns
    the node to use, or None for such a bad string."""
    args = call.args
    if len(args) != 1 or type(args[0]) is not Literal or type(args[0].value) is not str:
        return call
    text = args[0].value
    value = parse_abstime_text(text) if call.name.lower() == "abstime" else \
        parse_reltime_text(text)
    return None if value is None else Literal(value)
