"""Regular-expression functions: regexp, regexpMember, regexps, replace, replaceAll.

HTCondor uses PCRE2; patterns are translated to the ``regex`` module's dialect (that of
Python's ``re``) where they differ (POSIX classes, ``\\z``/``\\Z``, ``(?<name>``,
``\\h``). ``regex`` rather than ``re`` because a match can be given a timeout: a
backtracking pattern (``(a|aa)+$``) takes time exponential in its subject, and a match in
``re`` cannot be interrupted. Each match gets what is left of the evaluation's
:class:`~condorpy.classad.budget.Budget`; one that runs out gives ``error`` and spends
the budget, as PCRE2 hitting its match limit gives ``error`` in HTCondor (fnCall.cpp,
regexp_helper: any pcre2_match failure other than no-match). As there, an element of
regexpMember's list whose match fails so simply does not match. Option letters (lower
case only, as in HTCondor): ``i`` ignore case, ``m`` multi-line anchors, ``s`` dot
matches newline, ``x`` extended (whitespace and comments ignored), ``g`` every match and
``f`` keep the unmatched text (substitutions); other letters are ignored.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

from condorpy.classad.budget import Budget
from condorpy.classad.functions.registry import FunctionTable
from condorpy.classad.values import Error, Undefined, Value

TABLE = FunctionTable()

_POSIX = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
    "lower": "a-z", "space": r" \t\n\r\f\v", "blank": r" \t", "punct": r"!-/:-@\[-`{-~",
    "xdigit": "0-9A-Fa-f", "word": r"\w", "cntrl": r"\x00-\x1f\x7f", "print": r" -~",
    "graph": r"!-~", "ascii": r"\x00-\x7f",
}
_TRANSLATE = re.compile(
    r"\\Q(?s:.*?)(?:\\E|$)|\\k<|\\k\{|\\k'|\\.|\[:(\^?)([a-z]+):\]"
    r"|\(\?<(?=[A-Za-z_])|\(\?P?'")


def _translate(pattern: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _TRANSLATE.finditer(pattern):
        out.append(pattern[pos:m.start()])
        tok = m.group(0)
        if tok.startswith("\\Q"):
            body = tok[2:]
            out.append(re.escape(body[:-2] if body.endswith("\\E") else body))
        elif tok.startswith("[:"):
            cls = _POSIX.get(m.group(2))
            if cls is None:
                raise re.error("unknown POSIX class")
            if m.group(1):
                raise re.error("negated POSIX class")  # kept simple: not translated
            out.append(cls)
        elif tok == "(?<":
            out.append("(?P<")
        elif tok in ("\\k<", "\\k{", "\\k'"):
            out.append("(?P=")
            # the closing delimiter is rewritten below
            rest = pattern[m.end():]
            close = {"<": ">", "{": "}", "'": "'"}[tok[-1]]
            end = rest.find(close)
            if end < 0:
                raise re.error("bad back reference")
            out.append(rest[:end] + ")")
            pos = m.end() + end + 1
            continue
        elif tok.startswith("(?"):
            raise re.error("unsupported group syntax")
        elif tok == "\\z":
            out.append(r"\Z")
        elif tok == "\\Z":
            out.append(r"(?=\n?\Z)")
        elif tok == "\\h":
            out.append(r"[ \t]")
        elif tok == "\\H":
            out.append(r"[^ \t]")
        elif tok == "\\e":
            out.append(r"\x1b")
        else:
            out.append(tok)
        pos = m.end()
    out.append(pattern[pos:])
    return "".join(out)


@lru_cache(maxsize=512)
def _compile(pattern: str, options: str) -> Any:
    # HTCondor runs PCRE2 without UTF mode: patterns and subjects are bytes, "." is one
    # byte, \w and case folding are ASCII. Bytes patterns behave the same. VERSION0 is
    # the module's re-compatible dialect.
    # the regex module costs a command's start-up about 10 ms: loaded at the first
    # pattern, not with the function table
    import regex as _rx
    flags = _rx.VERSION0
    for low in options:
        if low == "i":
            flags |= _rx.IGNORECASE
        elif low == "m":
            flags |= _rx.MULTILINE
        elif low == "s":
            flags |= _rx.DOTALL
        elif low == "x":
            flags |= _rx.VERBOSE
    try:
        return _rx.compile(_translate(pattern).encode("utf-8"), flags)
    except (re.error, _rx.error, RecursionError, OverflowError, ValueError):
        return None


class OutOfTime(Exception):
    """A match ran out of the budget's time (the budget is then spent)."""


def search(budget: Budget, rx: Any, subject: bytes) -> bool:
    """Whether ``rx`` matches somewhere in ``subject``, within what ``budget`` has left;
    raises OutOfTime (and spends the budget) when it runs out."""
    left = budget.timeout()
    if left is None:
        raise OutOfTime
    try:
        found = rx.search(subject, timeout=left) is not None
    except TimeoutError:
        budget.exhaust()
        raise OutOfTime from None
    if budget.settle():
        raise OutOfTime
    return found


def _finditer(budget: Budget, rx: Any, subject: bytes) -> Iterator[Any]:
    left = budget.timeout()
    if left is None:
        raise OutOfTime
    try:
        # the timeout covers the whole scan, every match found by it; the caller
        # settles the time spent, since a caller that stops early never resumes this
        yield from rx.finditer(subject, timeout=left)
    except TimeoutError:
        budget.exhaust()
        raise OutOfTime from None


def _args(*args: Value) -> Value | None:
    """Undefined/Error among string arguments, or Error for a non-string; None if fine."""
    for a in args:
        if a is Error:
            return Error
    for a in args:
        if a is Undefined:
            return Undefined
    for a in args:
        if type(a) is not str:
            return Error
    return None


@TABLE.strict("regexp", 2, 3, needs_budget=True)
def regexp(budget: Budget, pattern: Value, target: Value, options: Value = "") -> Value:
    bad = _args(pattern, target, options)
    if bad is not None:
        return bad
    rx = _compile(pattern, options)  # type: ignore[arg-type]
    if rx is None:
        return Error
    try:
        return search(budget, rx, target.encode("utf-8"))  # type: ignore[union-attr]
    except OutOfTime:
        return Error


@TABLE.strict("regexpMember", 2, 3, needs_budget=True)
def regexp_member(budget: Budget, pattern: Value, lst: Value, options: Value = "") -> Value:
    if lst is Undefined:
        return Undefined
    bad = _args(pattern, options)
    if bad is not None:
        return bad
    if type(lst) is not list:
        return Error
    # unlike regexp(), a bad pattern here simply matches nothing
    rx = _compile(pattern, options)  # type: ignore[arg-type]
    saw_undefined = False
    for e in lst:
        if e is Undefined:
            saw_undefined = True
            continue
        if type(e) is not str:
            return Error
        if rx is None:
            continue
        try:
            if search(budget, rx, e.encode("utf-8")):
                return True
        except OutOfTime:
            # HTCondor: an element whose match fails does not match; the spent budget
            # still fails the evaluation for a caller that asks. No time is left for
            # the rest either: they are not tried.
            rx = None
            continue
    return Undefined if saw_undefined else False


class _BadGroup(Exception):
    pass


_SUBST = re.compile(rb"\\([0-9])")


def _expand(subst: bytes, m: Any) -> bytes:
    # PCRE2 reports groups up to the highest one that took part in the match; a
    # reference beyond it is an error, an unset group below it is empty
    highest = max((i for i in range(1, m.re.groups + 1) if m.start(i) != -1), default=0)

    def group(g: re.Match[bytes]) -> bytes:
        n = int(g.group(1))
        if n > highest:
            raise _BadGroup
        return m.group(n) or b""
    return _SUBST.sub(group, subst)


def _substitute(budget: Budget, pattern: Value, target: Value, subst: Value,
                options: Value, whole: bool, every: bool) -> Value:
    bad = _args(pattern, target, subst, options)
    if bad is not None:
        return bad
    opts: str = options  # type: ignore[assignment]
    rx = _compile(pattern, opts)  # type: ignore[arg-type]
    if rx is None:
        return Error
    text: bytes = target.encode("utf-8")  # type: ignore[union-attr]
    template: bytes = subst.encode("utf-8")  # type: ignore[union-attr]
    every = every or "g" in opts
    whole = whole or "f" in opts
    out: list[bytes] = []
    pos = 0
    try:
        for m in _finditer(budget, rx, text):
            if every and m.start() == m.end():
                return Error  # HTCondor refuses empty matches when substituting globally
            if whole:
                out.append(text[pos:m.start()])
            out.append(_expand(template, m))
            pos = m.end()
            if not every:
                break
    except (_BadGroup, OutOfTime):
        return Error
    finally:
        over = budget.settle()
    if over:
        return Error
    if whole:
        out.append(text[pos:])
    # a match may end inside a multi-byte character: such bytes become U+FFFD
    return b"".join(out).decode("utf-8", errors="replace")


@TABLE.strict("regexps", 3, 4, needs_budget=True)
def regexps(budget: Budget, pattern: Value, target: Value, subst: Value,
            options: Value = "") -> Value:
    return _substitute(budget, pattern, target, subst, options, False, False)


@TABLE.strict("replace", 3, 4, needs_budget=True)
def replace(budget: Budget, pattern: Value, target: Value, subst: Value,
            options: Value = "") -> Value:
    return _substitute(budget, pattern, target, subst, options, True, False)


@TABLE.strict("replaceAll", 3, 4, needs_budget=True)
def replace_all(budget: Budget, pattern: Value, target: Value, subst: Value,
                options: Value = "") -> Value:
    return _substitute(budget, pattern, target, subst, options, True, True)


def compile_pattern(pattern: str, options: str = "") -> Any:
    """A compiled pattern for other modules (stringList_regexpMember); None if invalid.
    Match it with :func:`search`."""
    return _compile(pattern, options)

