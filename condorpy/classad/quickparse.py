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
nesting entries the text is left to the Parser, which owns the nesting limit and its
message.

The loop is written for CPython's costs, where a call (even of a built-in) costs several
plain operations: tokens are read by index, the operator table by subscript (a piece
missing from it, rare, costs an exception), and the stack is a linked list of tuples
(packing and unpacking one is no call), so an operator costs no call but the one that
makes its node, and an operand one lookup in the memo. (The memo is read with get: a
name met for the first time would cost an exception, and first-time names are common
enough for that to cost more than the call saves.)
"""

from __future__ import annotations

from typing import Any

from condorpy.classad.ast import (AttrRef, Binary, Call, Literal, Node, Paren, new_attr,
                                  new_binary, new_call, new_cond, new_node, new_unary)
from condorpy.classad.lexer import (NUMBER_RE, STRING_MARK, number_value, quick_split,
                                    split_piece)
from condorpy.classad.timetext import parse_abstime_text, parse_reltime_text
from condorpy.classad.values import Error, Undefined

# More nesting entries on the stack than this (parentheses, calls, prefix operators,
# conditionals) and the text is left to the Parser, which refuses what nests past its
# limit (parser.MAX_DEPTH, above this: each nesting entry is one of its levels).
# Binary operators do not count: each nesting level holds at most one per precedence.
QUICK_MAX_STACK = 64

_KEYWORDS = frozenset({"true", "false", "undefined", "error", "is", "isnt"})
_KW_FIRST = frozenset("tTfFuUeEiI")
# Literal nodes are immutable, so every true (false, ...) can be the same node.
_KW_NODES = {"true": Literal(True), "false": Literal(False), "undefined": Literal(Undefined),
             "error": Literal(Error)}
_SCOPES = frozenset({"my", "target"})
_DIGITS = frozenset("0123456789")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
# binary operators' precedence (higher binds tighter), as ast.BINARY_PREC; =?= and =!=
# get codes of their own so that only they pay for being renamed to is / isnt
_IS, _ISNT = 70, 71
_BIN = {"||": 2, "&&": 3, "|": 4, "^": 5, "&": 6,
        "==": 7, "!=": 7, "=?=": _IS, "=!=": _ISNT, "is": 7, "isnt": 7,
        "<": 8, "<=": 8, ">": 8, ">=": 8, "<<": 9, ">>": 9, ">>>": 9,
        "+": 10, "-": 10, "*": 11, "/": 11, "%": 11}
_UNARY_PREC = 12  # above every binary operator: a prefix operator takes its operand alone
_END = "\n"  # after the last piece (no piece holds a space)
_NUMBER = NUMBER_RE.fullmatch

_FLOOR = (-1, None, None, None)
# what an operator-place token does: a binary operator's precedence (2 and up), else
# _CLOSE for ")", _SEP for ",", ":" and the end, _QMARK for "?", _CALL for "(" (after a
# function's name), _DOT for "." (after MY or TARGET); _OTHER: any piece not in the table
_CLOSE, _SEP, _QMARK, _CALL, _DOT, _OTHER = 0, -1, -2, -3, -4, -5
_AFTER_OPERAND = dict(_BIN, **{")": _CLOSE, ",": _SEP, ":": _SEP, _END: _SEP, "?": _QMARK,
                               "(": _CALL, ".": _DOT})

# What a piece read where an operand is expected stands for: a node, or _MARK for the
# pieces that are not operands themselves ("(", a prefix operator, a string, ")" of
# "f()"). A piece that is a name, a number or MY.x means the same node wherever it
# stands and nodes are immutable, so one node serves every parse: configuration and
# ads repeat the same names and numbers endlessly. Bounded: cleared when full. (What it
# holds never changes a tree, so a parse that finds it cleared under it just makes its
# nodes again, or leaves the text to the Parser.)
_MARK: Any = object()
_MEMO_START: dict[str, Any] = {"(": _MARK, STRING_MARK: _MARK, ")": _MARK, "-": _MARK,
                               "+": _MARK, "!": _MARK, "~": _MARK, **_KW_NODES}
_MEMO: dict[str, Any] = dict(_MEMO_START)
_MEMO_MAX = 8192
_GIVE_UP: Any = object()  # _operand's answer for a piece that makes the text the Parser's
_TIME_CALLS = frozenset({"abstime", "reltime"})


def quick_parse(text: str) -> Node | None:
    """The tree of a common expression, or None where the Parser must read the text."""
    split = quick_split(text)
    if split is None:
        return None
    toks, bodies = split
    toks.append(_END)
    i = 0  # the next piece
    k = 0  # the next string body
    expanded = False  # whether the pieces left have been split into tokens (_expand)
    memo = _MEMO
    known = memo.get
    table = _AFTER_OPERAND
    # Pending operators, a linked list (what it holds, the entry below), top's
    # precedence in `top`, the operand read last in `cur`:
    #   binary operator      (its precedence, op, left operand, below)
    #   prefix operator      (_UNARY_PREC, op, None, below)
    #   "?" / ":"            (1, "?", condition, below) / (1, ":", (condition, then), below)
    #   "(" / a call         (0, "(", None, below) / (0, name, arguments so far, below)
    #   the floor            (-1, None, None, None)
    stack: Any = _FLOOR
    top = -1
    nest = 0  # nesting entries on the stack (all but binary operators and the floor)
    cur: Any  # a Node (built here field by field: see ast.new_node)
    new = new_node
    un = _UNARY_PREC
    # the module's constants the loop tests on every token, as locals (cheaper to read)
    mark, smark, qmark, is_ = _MARK, STRING_MARK, _QMARK, _IS
    while True:
        # --- an operand is expected
        t = toks[i]
        i += 1
        cur = known(t)
        if cur is None:
            if t.isidentifier() and t.lower() not in _KEYWORDS:
                cur = new(AttrRef)  # a name never read before (_operand, inline)
                cur.name = t
                cur.scope = ""
            else:
                cur = _operand(t)
            if cur is None:  # several tokens in one piece ("x>=5")
                if expanded:
                    return None
                toks = _expand(toks, i - 1)
                expanded = True
                i -= 1
                continue
            if cur is _GIVE_UP:
                return None
            if len(memo) >= _MEMO_MAX:
                memo.clear()
                memo.update(_MEMO_START)
            memo[t] = cur
        if cur is mark:
            if t == smark:
                cur = new(Literal)
                cur.value = bodies[k]
                k += 1
            elif t == ")":
                if top != 0 or stack[2] != []:
                    return None
                cur = new_call(stack[1], ())  # f()
                stack = stack[3]
                top = stack[0]
                nest -= 1
            else:  # "(" or a prefix operator
                stack = (0, "(", None, stack) if t == "(" else (un, t, None, stack)
                top = stack[0]
                nest += 1
                if nest > QUICK_MAX_STACK:
                    return None
                continue
        # --- an operator is expected
        while True:
            t = toks[i]
            i += 1
            try:
                p = table[t]
            except KeyError:
                p = _OTHER
            if p < qmark:
                # (an unscoped AttrRef here is always the bare name just read)
                if p == _CALL:
                    if type(cur) is not AttrRef or cur.scope:
                        return None  # "(x)(", "MY.f(": the Parser's
                    # the name is a function's: f(x) ("f()" is read as an operand)
                    stack = (0, cur.name, [], stack)
                    top = 0
                    nest += 1
                    if nest > QUICK_MAX_STACK:
                        return None
                    break
                if p == _DOT:
                    if type(cur) is not AttrRef or cur.scope \
                            or cur.name.lower() not in _SCOPES:
                        return None  # a selection: the Parser's
                    # MY.x or TARGET.x (a piece such as "MY.x<1" is split up first)
                    t = toks[i]
                    i += 1
                    if not t.isidentifier() or t.lower() in _KEYWORDS:
                        return None
                    cur = new_attr(t, cur.name)
                    continue
                low = t.lower()
                if low == "is" or low == "isnt":
                    t = low
                    p = 7
                elif t[0] == "-" and len(t) > 1 and _NUMBER(t):
                    # "a -5" is a minus, then the number 5 (read next, in this piece)
                    i -= 1
                    toks[i] = t[1:]
                    t = "-"
                    p = 10
                else:
                    # a piece of several tokens ("==5"); other selections, "[", "{",
                    # ";", "=" and errors are the Parser's
                    if expanded:
                        return None
                    toks = _expand(toks, i - 1)
                    expanded = True
                    i -= 1
                    continue
            if p > 1:  # a binary operator
                if p >= is_:
                    t = "is" if p == _IS else "isnt"
                    p = 7
                while top >= p:
                    q, o, left, stack = stack
                    if q == un:
                        cur = new_unary(o, cur)
                        nest -= 1
                    else:
                        b = new(Binary)
                        b.op = o
                        b.left = left
                        b.right = cur
                        cur = b
                    top = stack[0]
                stack = (p, t, cur, stack)
                top = p
                break
            if p == _CLOSE:
                while top > 0:
                    q, o, left, stack = stack
                    if q > 1:
                        if q == un:
                            cur = new_unary(o, cur)
                            nest -= 1
                        else:
                            b = new(Binary)
                            b.op = o
                            b.left = left
                            b.right = cur
                            cur = b
                    elif o == ":":
                        cur = new_cond(left[0], left[1], cur)
                        nest -= 1
                    else:
                        return None  # a "?" without its ":"
                    top = stack[0]
                if top != 0:
                    return None
                q, o, left, stack = stack
                top = stack[0]
                nest -= 1
                if left is None:
                    node = new(Paren)
                    node.inner = cur
                    cur = node
                else:
                    left.append(cur)
                    node = new(Call)
                    node.name = o
                    node.args = tuple(left)
                    cur = node
                    if o[0] in "aArR" and o.lower() in _TIME_CALLS:
                        lit = time_literal(cur)
                        if lit is None:
                            return None
                        cur = lit
                continue
            if p == _SEP:  # ",", ":" or the end: finish back to the call, "?" or floor
                while top > 0:
                    q, o, left, below = stack
                    if q > 1:
                        if q == un:
                            cur = new_unary(o, cur)
                            nest -= 1
                        else:
                            cur = new_binary(o, left, cur)
                    elif o == ":":
                        cur = new_cond(left[0], left[1], cur)
                        nest -= 1
                    elif t == ":":  # the "?" this ":" belongs to
                        stack = (1, ":", (left, cur), below)
                        break
                    else:
                        return None  # a "?" without its ":"
                    stack = below
                    top = stack[0]
                if t == ",":
                    args = stack[2]
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
                    q, o, left, stack = stack
                    if q == un:
                        cur = new_unary(o, cur)
                        nest -= 1
                    else:
                        cur = new_binary(o, left, cur)
                    top = stack[0]
                stack = (1, "?", cur, stack)
                top = 1
                nest += 1
                if nest > QUICK_MAX_STACK:
                    return None  # conditionals nested to the right
                break
            return None  # "(" or "[" after an operand that is not a name, ...


def _expand(toks: list[str], i: int) -> list[str]:
    """The pieces with those from ``i`` on split into their tokens (where split_piece
    can): a piece of several tokens ("x>=5", "==-1") met at ``i``. Done once for the rest
    of the text, so that text with many such pieces stays linear."""
    out = toks[:i]
    table = _AFTER_OPERAND
    memo = _MEMO
    for t in toks[i:]:
        if t in table or t in memo or t.isidentifier():
            out.append(t)
            continue
        parts = split_piece(t) if len(t) > 1 else None
        if parts is None:
            out.append(t)  # not tokens: quick_parse gives up when it gets there
        else:
            out.extend(parts)
    return out


def _operand(t: str) -> Any:
    """The node of a piece read where an operand is expected and not in the memo: a
    name, a number or MY.x / TARGET.x; None for a piece to split up into its tokens;
    _GIVE_UP where the text is the Parser's."""
    if t.isidentifier():
        if t[0] in _KW_FIRST:
            low = t.lower()
            if low in _KEYWORDS:
                return _KW_NODES.get(low, _GIVE_UP)  # is, isnt: not an operand
        n = new_node(AttrRef)
        n.name = t
        n.scope = ""
        return n
    c = t[0]
    if c in _NAME_START:
        # MY.x or TARGET.x written as one piece
        a, dot, b = t.partition(".")
        if dot and a.lower() in _SCOPES and b.isidentifier() and b.lower() not in _KEYWORDS:
            n = new_node(AttrRef)
            n.name = b
            n.scope = a
            return n
        return None
    v: int | float | None
    if t.isdigit():
        if len(t) < 19 and (c != "0" or len(t) == 1):
            v = int(t)
        else:
            v = number_value(t, False)  # 007 is 7, 08 is wrong, huge is 0
    elif t[-1] != "." and t.replace(".", "", 1).isdigit():
        v = float(t)  # 1.5, .5 (ASCII digits: quick_split's text is ASCII)
    elif (c in _DIGITS or c == "-" or c == ".") and _NUMBER(t):
        # written together, "-5" is a negative number
        v = number_value(t[1:], True) if c == "-" else number_value(t, False)
    else:
        return None
    if v is None:
        return _GIVE_UP
    n = new_node(Literal)
    n.value = v
    return n


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
