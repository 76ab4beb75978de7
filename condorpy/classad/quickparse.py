"""The parser's quick path: common expressions read in one loop over whitespace pieces.

Most expressions are operators, parentheses, names, numbers, plain strings and function
calls. :func:`quick_parse` reads those over ``str.split()``'s pieces in a single
operator-precedence loop and builds the same tree as
:class:`condorpy.classad.parser.Parser`. On anything else (selections, subscripts, lists,
records, the Elvis operator, comments, escapes, errors of any kind, deep nesting) it gives
up with None, and the Parser, which reports errors where they are, reads the text
instead. So this path only has to be right about text it accepts; the tests hold it to
the grammar (``grammar.lark``) like the Parser.

A piece is what the text holds between spaces: ``((KeyboardIdle``, ``60)``, ``&&``,
``ifThenElse(JobStart``, ``UNDEFINED,``. What a piece stands for is worked out the first
time it is met and kept in a memo (bounded: cleared when full), so that a piece costs one
dictionary look-up: configuration and ads repeat the same pieces endlessly, and nodes are
immutable, so one node serves every parse. The memo never changes a tree: a parse that
finds it cleared under it works the pieces out again (or leaves the text to the Parser).
Making out a new piece such as ``((KeyboardIdle`` costs more than a bare token, so the
first few parses after a start or a clear (a cold memo, where every piece is new) space
out brackets and commas and read tokens, remembering names and numbers.

Two memos, by where the piece stands: where an operand belongs, a piece is a leaf
(``_LEAVES``: its node) or a leaf with parentheses before or after it (``_OPERANDS``:
opening parentheses, node, closing parentheses), or something rarer (a call, a prefix
operator, a comma after the leaf: a code, details in ``_DETAILS``); where an operator
belongs (``_OPERATORS``), a binary operator's precedence, or a code (``)``, ``,``,
``?``, ...). Pieces the loop cannot take whole (``x>=5``, ``f(a,b)``) are read as their
tokens.

Parentheses cost no stack entry: each one raises the *level* by ``_STEP``, which is above
every precedence, and an operator's place on the stack is its precedence plus the level,
so an operator inside parentheses never reduces one outside them. The stack is a linked
list of tuples (packing and unpacking one is no call); a binary operator costs no call
but the one that makes its node.

Length costs nothing here but time: a flat chain of 20,000 operators is one pass of the
loop with a short stack. Only nesting makes the stack grow, and past QUICK_MAX_STACK
levels (parentheses and calls, or prefix operators and conditionals, half each) the text
is left to the Parser, which owns the nesting limit and its message.

The loop is written for CPython's costs: a piece costs a look-up and a few comparisons
of small integers; the tests decide whether a change keeps the trees identical, and
``benchmarks/classad_bench.py`` whether it pays.
"""

from __future__ import annotations

import itertools
from typing import Any

from condorpy.classad.ast import (AttrRef, Binary, Call, Literal, Node, Paren, new_attr,
                                  new_binary, new_call, new_cond, new_node, new_unary)
from condorpy.classad.lexer import NUMBER_RE, number_value, split_piece
from condorpy.classad.timetext import parse_abstime_text, parse_reltime_text
from condorpy.classad.values import Error, Undefined

__all__ = ["QUICK_MAX_STACK", "quick_parse", "clear_memo", "memo_size", "time_literal"]

# More nesting than this and the text is left to the Parser, which refuses what nests
# past its limit (parser.MAX_DEPTH, above this: each nesting entry is one of its levels).
# Binary operators do not count: each nesting level holds at most one per precedence.
QUICK_MAX_STACK = 64

_KEYWORDS = frozenset({"true", "false", "undefined", "error", "is", "isnt"})
# every spelling of a keyword (they are read without regard to case)
_KW_ANY = frozenset("".join(c) for k in _KEYWORDS
                    for c in itertools.product(*((ch, ch.upper()) for ch in k)))
# Literal nodes are immutable, so every true (false, ...) can be the same node.
_KW_NODES: dict[str, Node] = {"true": Literal(True), "false": Literal(False),
                              "undefined": Literal(Undefined), "error": Literal(Error)}
_SCOPES = frozenset({"my", "target"})
_DIGITS = frozenset("0123456789")
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NUMBER = NUMBER_RE.fullmatch
_TIME_CALLS = frozenset({"abstime", "reltime"})
_PREFIX_OPS = frozenset({"!", "~", "-", "+"})

_STEP = 13  # one level of parentheses: above every precedence inside it (prefix: 12)
_UNARY = 12
_MAX_LEVEL = (QUICK_MAX_STACK // 2) * _STEP
_MAX_NEST = QUICK_MAX_STACK // 2  # prefix operators and conditionals pending
_END_PIECE = "\n"  # after the last piece (no piece holds a space)
_STRING_PIECE = "\0"  # a string literal taken out of the text (a NUL is refused)
_FLOOR = (-1, None, None, None)
_BINARY = {"||": 2, "&&": 3, "|": 4, "^": 5, "&": 6, "==": 7, "!=": 7, "is": 7, "isnt": 7,
           "<": 8, "<=": 8, ">": 8, ">=": 8, "<<": 9, ">>": 9, ">>>": 9,
           "+": 10, "-": 10, "*": 11, "/": 11, "%": 11}

# Where an operator belongs: a binary operator's precedence (2 and up), else one of
_CLOSE1, _COMMA, _QMARK, _COLON, _END, _CALL, _DOT, _PMISS, _PSPLIT, _ALIAS, _PBAD = \
    1, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9
_OPERATORS_START: dict[str, int] = {
    **_BINARY, ")": _CLOSE1, ",": _COMMA, "?": _QMARK, ":": _COLON, _END_PIECE: _END,
    "(": _CALL, ".": _DOT, "=?=": _ALIAS, "=!=": _ALIAS}
_ALIASES_START = {"=?=": "is", "=!=": "isnt"}  # (and any other spelling of is, isnt)
# Where an operand belongs, past _LEAVES: (opening parentheses * _STEP, the leaf, closing
# parentheses), -1 for the closing parentheses where a comma follows the leaf; without a
# leaf the last is one of
_OMISS, _OGEN, _OPREFIX, _OSTR, _OSPLIT, _OBAD, _OEMPTY, _OCALL = \
    -11, -2, -3, -4, -5, -6, -7, -8
_OPERANDS_START: dict[str, tuple[int, Any, int]] = {
    "(": (_STEP, None, 0), "-": (0, None, _OPREFIX), "+": (0, None, _OPREFIX),
    "!": (0, None, _OPREFIX), "~": (0, None, _OPREFIX), _STRING_PIECE: (0, None, _OSTR),
    ")": (0, None, _OEMPTY)}
_OMISSING = (0, None, _OMISS)

_LEAVES: dict[str, Any] = dict(_KW_NODES)
_OPERANDS: dict[str, tuple[int, Any, int]] = dict(_OPERANDS_START)
_OPERATORS: dict[str, int] = dict(_OPERATORS_START)
_ALIASES: dict[str, str] = dict(_ALIASES_START)
# what _OGEN, _OCALL and _OSPLIT pieces stand for where an operand belongs, and _PSPLIT
# pieces where an operator does: two memos, as one piece ("+-2", "f(") can be met in
# either place and means something else in each
_DETAILS: dict[str, Any] = {}
_PDETAILS: dict[str, tuple[str, ...]] = {}
_MEMO_MAX = 8192
# parses left that read tokens rather than whole pieces (see quick_parse)
_WARM_UP = 8
_WARMING = _WARM_UP


def clear_memo() -> None:
    """Forget every piece (what a cold start sees; the benchmark's cold rows)."""
    global _WARMING
    _WARMING = _WARM_UP
    _LEAVES.clear()
    _LEAVES.update(_KW_NODES)
    _OPERANDS.clear()
    _OPERANDS.update(_OPERANDS_START)
    _DETAILS.clear()
    _PDETAILS.clear()
    if len(_OPERATORS) != len(_OPERATORS_START):
        _OPERATORS.clear()
        _OPERATORS.update(_OPERATORS_START)
        _ALIASES.clear()
        _ALIASES.update(_ALIASES_START)


def memo_size() -> int:
    """Entries the memos hold: bounded (each is cleared past _MEMO_MAX, before a parse),
    with the tables of operators and punctuation they start from."""
    return (len(_LEAVES) + len(_OPERANDS) + len(_OPERATORS) + len(_DETAILS)
            + len(_PDETAILS))


def quick_parse(text: str) -> Node | None:
    """The tree of a common expression, or None where the Parser must read the text."""
    global _WARMING
    if "\\" in text or "'" in text or "/*" in text or "\0" in text:
        return None
    if len(_LEAVES) + len(_OPERANDS) > _MEMO_MAX:  # (_operator_piece bounds the rest)
        clear_memo()
    if _WARMING:
        # The first parses after a start or a clear meet new pieces only, and a bare
        # token costs less to make out than a piece such as "((KeyboardIdle": brackets
        # and commas are spaced out and strings taken out of the text, and only names
        # and numbers are remembered.
        _WARMING -= 1
    elif text.isascii():
        # strings stay in their pieces; one holding a space (or anything else the
        # pieces cannot take) makes the loop give up, and the strings are taken out
        node = _parse(text.split(), None)
        if node is not None or '"' not in text:
            return node
    segs = text.split('"')
    if not len(segs) & 1:
        return None  # an unterminated string
    bodies = segs[1::2]
    text = " \0 ".join(segs[::2])
    if not text.isascii():
        return None  # (outside strings) so that a name is [A-Za-z_][A-Za-z0-9_]*
    return _parse(_spaced(text).split(), bodies)


def _spaced(text: str) -> str:
    return text.replace("(", " ( ").replace(")", " ) ").replace(",", " , ")


def _leaf(t: str) -> Node | None:
    """The node of one operand token (a name, MY.x / TARGET.x, a number, a string
    without escapes); None for anything else."""
    n: Any
    if t.isidentifier():
        low = t.lower()
        if low in _KEYWORDS:
            return _KW_NODES.get(low)  # (None for is, isnt)
        n = new_node(AttrRef)
        n.name = t
        n.scope = ""
        return n  # type: ignore[no-any-return]
    c = t[0]
    if c == '"':
        body = t[1:-1]
        if len(t) < 2 or t[-1] != '"' or '"' in body:
            return None
        n = new_node(Literal)
        n.value = body
        return n  # type: ignore[no-any-return]
    if c in _NAME_START:
        a, dot, b = t.partition(".")
        if dot and a.lower() in _SCOPES and b.isidentifier() and b.lower() not in _KEYWORDS:
            n = new_node(AttrRef)
            n.name = b
            n.scope = a
            return n  # type: ignore[no-any-return]
        return None
    v: int | float | None
    if t.isdigit():
        if len(t) < 19 and (c != "0" or len(t) == 1):
            v = int(t)
        else:
            v = number_value(t, False)
    elif t[-1] != "." and t.replace(".", "", 1).isdigit():
        v = float(t)
    elif (c in _DIGITS or c == "-" or c == ".") and _NUMBER(t):
        v = number_value(t[1:], True) if c == "-" else number_value(t, False)
    else:
        return None
    if v is None:
        return None
    n = new_node(Literal)
    n.value = v
    return n  # type: ignore[no-any-return]


def _operand_piece(t: str) -> tuple[int, Any, int]:
    """What a piece read where an operand belongs stands for (and not in the memo),
    remembered: a leaf in _LEAVES, the rest in _OPERANDS. The common shapes (a name,
    string or number, maybe a call's name before it, parentheses around it, a comma
    after it) are told apart here with as few calls as may be: a cold parse meets every
    piece here."""
    mid = t
    o = c = 0
    if t[0] == "(":
        mid = t.lstrip("(")
        o = len(t) - len(mid)
        if not mid:
            x = (o * _STEP, None, 0)
            _OPERANDS[t] = x
            return x
    comma = mid[-1] == ","
    if comma:
        mid = mid[:-1]
    if mid[-1:] == ")":
        core = mid
        mid = mid.rstrip(")")
        c = len(core) - len(mid)
    fn = ""
    if "(" in mid:  # f(x, f()
        fn, _, mid = mid.partition("(")
        if not fn.isidentifier() or fn in _KW_ANY or "(" in mid:
            return _remember(t, _operand_meaning(t))
    node: Any = _LEAVES.get(mid)
    if node is None:
        if mid.isidentifier():
            if mid in _KW_ANY:
                node = _KW_NODES.get(mid.lower())
                if node is None:  # is, isnt
                    return _remember(t, _operand_meaning(t))
            else:
                node = new_node(AttrRef)
                node.name = mid
                node.scope = ""
                _LEAVES[mid] = node
        elif mid[:1] == '"' and mid[-1] == '"' and mid.count('"') == 2:
            node = new_node(Literal)
            node.value = mid[1:-1]
        elif mid.isdigit() and len(mid) < 19 and (mid[0] != "0" or len(mid) == 1):
            node = new_node(Literal)
            node.value = int(mid)
        elif not mid and fn and c:  # f()
            node = new_call(fn, ())
            fn = ""
            c -= 1
        else:
            return _remember(t, _operand_meaning(t))
    if fn:
        if o or c or comma:
            _DETAILS[t] = ((None,) * o + (fn,), node, c, comma)
            x = (0, None, _OGEN)
        else:
            _DETAILS[t] = (fn, node)
            x = (0, None, _OCALL)
    elif comma:
        if c:
            _DETAILS[t] = ((None,) * o, node, c, comma)
            x = (0, None, _OGEN)
        else:
            x = (o * _STEP, node, -1)
    elif o or c:
        x = (o * _STEP, node, c)
    else:
        _LEAVES[t] = node
        return (0, node, 0)
    _OPERANDS[t] = x
    return x


def _remember(t: str, x: tuple[int, Any, int]) -> tuple[int, Any, int]:
    if x[0] or x[2] or x[1] is None:
        _OPERANDS[t] = x
    else:
        _LEAVES[t] = x[1]
    return x


def _operand_meaning(t: str) -> tuple[int, Any, int]:
    core = t.lstrip("(")
    o = len(t) - len(core)
    if not core:
        return (o * _STEP, None, 0)
    comma = core[-1] == ","
    if comma:
        core = core[:-1]
    mid = core.rstrip(")")
    c = len(core) - len(mid)
    if not mid:
        return _osplit(t)
    if mid[0] == '"' and (mid[-1] != '"' or len(mid) == 1):  # a string's own ")"
        return _osplit(t)
    node = _leaf(mid)
    pre: list[str | None] = [None] * o
    if node is None:
        toks = split_piece(mid)
        if toks is None:
            return _osplit(t)
        i = 0
        n = len(toks)
        while i < n:
            tk = toks[i]
            if tk == "(":
                pre.append(None)
            elif tk in _PREFIX_OPS:
                pre.append(tk)
            elif i + 1 < n and toks[i + 1] == "(" and tk.isidentifier() \
                    and tk.lower() not in _KEYWORDS:
                pre.append(tk)
                i += 1
            else:
                break
            i += 1
        if i < n:
            node = _leaf("".join(toks[i:]))
            if node is None:
                return _osplit(t, toks if mid is t else None)
        elif c and pre and pre[-1] is not None and pre[-1] not in _PREFIX_OPS:
            node = new_call(str(pre.pop()), ())  # f()
            c -= 1
    if node is None:
        if c or comma:
            return _osplit(t)
    elif pre.count(None) == len(pre):
        if not comma:
            return (o * _STEP, node, c)
        if not c:
            return (o * _STEP, node, -1)
    elif len(pre) == 1 and not c and not comma and pre[0] not in _PREFIX_OPS:
        _DETAILS[t] = (pre[0], node)
        return (0, None, _OCALL)
    _DETAILS[t] = (tuple(pre), node, c, comma)
    return (0, None, _OGEN)


def _osplit(t: str, parts: list[str] | None = None) -> tuple[int, Any, int]:
    """A piece to read as its tokens ("x>=5", "f(a,b)"), or one that is not tokens
    (``parts``: its tokens, where already known)."""
    if parts is None:
        parts = split_piece(t)
    if parts is None or len(parts) < 2:
        return (0, None, _OBAD)
    _DETAILS[t] = tuple(parts)
    return (0, None, _OSPLIT)


def _operator_piece(t: str) -> int:
    """What a piece read where an operator belongs stands for (and not in the memo): an
    odd spelling of is / isnt, or tokens to read one by one (else an error)."""
    if len(_OPERATORS) > _MEMO_MAX:  # (odd pieces where an operator belongs are rare)
        clear_memo()
    low = t.lower()
    if low == "is" or low == "isnt":
        _ALIASES[t] = low
        return _ALIAS
    if t[0] == "-":
        _PDETAILS[t] = ("-", t[1:])  # "x -5": a minus, then 5
        return _PSPLIT
    parts = split_piece(t)
    if parts is None or len(parts) < 2:
        return _PBAD
    _PDETAILS[t] = tuple(parts)
    return _PSPLIT


def _parse(toks: list[str], bodies: list[str] | None) -> Node | None:
    """The loop over the pieces (with ``bodies``: strings were taken out of the text,
    each piece _STRING_PIECE stands for the next)."""
    toks.append(_END_PIECE)
    leaf = _LEAVES.get
    xget = _OPERANDS.get
    pget = _OPERATORS.get
    xmiss = _OMISSING
    new = new_node
    k = 0
    stack: Any = _FLOOR
    top = -1
    L = 0  # the level: _STEP for each open parenthesis or call
    nest = 0
    cur: Any = None
    comma = False
    it = iter(toks)
    outer: Any = None  # the pieces' iterator while reading one piece's tokens
    try:
        while True:
            for t in it:
                if cur is None:  # --- an operand belongs here
                    cur = leaf(t)
                    if cur is not None:
                        continue
                    o, cur, c = xget(t, xmiss)
                    if c == _OMISS:  # a piece never read before
                        # the common ones here: a name, string or number with or
                        # without parentheses around it (a cold parse meets each)
                        if t.isidentifier():
                            if t not in _KW_ANY:  # a name
                                cur = new(AttrRef)
                                cur.name = t
                                cur.scope = ""
                                _LEAVES[t] = cur
                                continue
                        elif t[0] == '"' and t[-1] == '"' and t.count('"') == 2:
                            cur = new(Literal)  # a string
                            cur.value = t[1:-1]
                            _LEAVES[t] = cur
                            continue
                        head = t.lstrip("(")
                        mid = head.rstrip(")")
                        if mid.isidentifier():
                            if mid not in _KW_ANY:
                                cur = new(AttrRef)
                                cur.name = mid
                                cur.scope = ""
                        elif mid.isdigit():
                            if len(mid) < 19 and (mid[0] != "0" or len(mid) == 1):
                                cur = new(Literal)
                                cur.value = int(mid)
                        elif "." in mid:
                            scope, _, name = mid.partition(".")
                            if scope.lower() in _SCOPES and name.isidentifier() \
                                    and name not in _KW_ANY:
                                cur = new(AttrRef)  # MY.x, TARGET.x
                                cur.name = name
                                cur.scope = scope
                            elif mid[-1] != "." and mid.replace(".", "", 1).isdigit():
                                cur = new(Literal)
                                cur.value = float(mid)
                        elif mid[:1] == '"':
                            if mid[-1] == '"' and mid.count('"') == 2:
                                cur = new(Literal)
                                cur.value = mid[1:-1]
                        if cur is None:
                            o, cur, c = _operand_piece(t)
                        else:
                            o = (len(t) - len(head)) * _STEP
                            c = len(head) - len(mid)
                            if o or c:
                                _OPERANDS[t] = (o, cur, c)
                            else:
                                _LEAVES[t] = cur
                                continue
                    if o:
                        L += o
                        if L > _MAX_LEVEL:
                            return None
                    if cur is None:
                        if not c:
                            continue  # opening parentheses alone
                        if c == _OSTR:  # a string taken out of the text
                            if bodies is None:
                                return None
                            cur = new(Literal)
                            cur.value = bodies[k]
                            k += 1
                            continue
                        if c == _OCALL:
                            head, cur = _DETAILS[t]
                            L += _STEP
                            if L > _MAX_LEVEL:
                                return None
                            stack = (L, head, [], stack)
                            top = L
                            continue
                        if c == _OGEN:
                            pre, cur, c, comma = _DETAILS[t]
                            for item in pre:
                                if item is None:
                                    L += _STEP
                                elif item in _PREFIX_OPS:
                                    stack = (L + 12, item, None, stack)
                                    top = L + 12
                                    nest += 1
                                else:
                                    L += _STEP
                                    stack = (L, item, [], stack)
                                    top = L
                            if L > _MAX_LEVEL or nest > _MAX_NEST:
                                return None
                            if cur is None:
                                continue
                        elif c == _OPREFIX:
                            stack = (L + 12, t, None, stack)
                            top = L + 12
                            nest += 1
                            if nest > _MAX_NEST:
                                return None
                            continue
                        elif c == _OSPLIT:
                            break
                        elif c == _OEMPTY:  # f()
                            if top != L or not L or stack[2]:
                                return None
                            cur = new_call(stack[1], ())
                            stack = stack[3]
                            top = stack[0]
                            L -= _STEP
                            continue
                        else:
                            return None
                    elif not c:
                        continue
                else:  # --- an operator belongs here
                    p = pget(t, _PMISS)
                    if p > 1:  # a binary operator
                        p += L
                        while top >= p:
                            q, o, left, stack = stack
                            if left is None:
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
                        cur = None
                        continue
                    if p == 1:
                        c = 1
                    elif p == _ALIAS:
                        p = 7 + L
                        t = _ALIASES[t]
                        while top >= p:
                            q, o, left, stack = stack
                            if left is None:
                                cur = new_unary(o, cur)
                                nest -= 1
                            else:
                                cur = new_binary(o, left, cur)
                            top = stack[0]
                        stack = (p, t, cur, stack)
                        top = p
                        cur = None
                        continue
                    elif p == _COMMA:
                        c = 0
                        comma = True
                    elif p == _CALL:
                        if type(cur) is not AttrRef or cur.scope:
                            return None
                        L += _STEP
                        if L > _MAX_LEVEL:
                            return None
                        stack = (L, cur.name, [], stack)
                        top = L
                        cur = None
                        continue
                    elif p == _QMARK:
                        p = L + 2
                        while top >= p:
                            q, o, left, stack = stack
                            if left is None:
                                cur = new_unary(o, cur)
                                nest -= 1
                            else:
                                cur = new_binary(o, left, cur)
                            top = stack[0]
                        stack = (L + 1, "?", cur, stack)
                        top = L + 1
                        cur = None
                        nest += 1
                        if nest > _MAX_NEST:
                            return None
                        continue
                    elif p == _COLON or p == _END:
                        while top > L:
                            q, o, left, below = stack
                            if q > L + 1:
                                if left is None:
                                    cur = new_unary(o, cur)
                                    nest -= 1
                                else:
                                    cur = new_binary(o, left, cur)
                            elif o == ":":
                                cur = new_cond(left[0], left[1], cur)
                                nest -= 1
                            elif p == _COLON:  # the "?" this ":" belongs to
                                stack = (q, ":", (left, cur), below)
                                break
                            else:
                                return None  # a "?" without its ":"
                            stack = below
                            top = stack[0]
                        if p == _COLON:
                            if top != L + 1:
                                return None
                            cur = None
                            continue
                        if top != -1 or L:
                            return None
                        tree: Node = cur
                        return tree
                    elif p == _DOT:
                        if type(cur) is not AttrRef or cur.scope or cur.name.lower() not in _SCOPES:
                            return None
                        t = next(it, "")
                        if not t.isidentifier() or t.lower() in _KEYWORDS:
                            return None
                        cur = new_attr(t, cur.name)
                        continue
                    elif p == _PSPLIT:
                        break
                    elif p == _PMISS:
                        _OPERATORS[t] = _operator_piece(t)
                        break  # (to read it again)
                    else:
                        return None
                # c closing parentheses after the operand in cur, then maybe a comma
                while c > 0:
                    while top > L:
                        q, o, left, below = stack
                        if q > L + 1:
                            if left is None:
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
                            return None
                        stack = below
                        top = stack[0]
                    if top == L:  # a call's
                        q, o, left, stack = stack
                        top = stack[0]
                        left.append(cur)
                        b = new(Call)
                        b.name = o
                        b.args = tuple(left)
                        cur = b
                        if o[0] in "aArR" and o.lower() in _TIME_CALLS:
                            b = time_literal(cur)
                            if b is None:
                                return None
                            cur = b
                    else:
                        if not L:
                            return None
                        b = new(Paren)
                        b.inner = cur
                        cur = b
                    L -= _STEP
                    c -= 1
                if c or comma:
                    comma = False
                    while top > L:
                        q, o, left, below = stack
                        if q > L + 1:
                            if left is None:
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
                            return None
                        stack = below
                        top = stack[0]
                    if top != L or not L:
                        return None  # a comma outside a call's parentheses
                    stack[2].append(cur)
                    cur = None
            else:
                if outer is None:
                    return None
                it = outer
                outer = None
                continue
            # a break: the piece in t to read again, or as its tokens
            if cur is None and c == _OSPLIT:
                parts = _DETAILS[t]
            elif cur is not None and p == _PSPLIT:
                parts = _PDETAILS[t]
            else:
                parts = (t,)
            if outer is None:
                outer = it
                it = iter(parts)
            else:
                it = iter([*parts, *it])

    except KeyError:  # the memo was cleared under this parse (another thread)
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
