"""Regular-expression functions: regexp, regexpMember, regexps, replace, replaceAll.

HTCondor uses PCRE2; patterns are translated to Python's ``re`` where the dialects
differ (POSIX classes, ``\\z``/``\\Z``, ``(?<name>``, ``\\h``). Option letters (lower
case only, as in HTCondor): ``i`` ignore case, ``m`` multi-line anchors, ``s`` dot
matches newline, ``x`` extended (whitespace and comments ignored), ``g`` every match and
``f`` keep the unmatched text (substitutions); other letters are ignored.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

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
def _compile(pattern: str, options: str) -> re.Pattern[bytes] | None:
    # HTCondor runs PCRE2 without UTF mode: patterns and subjects are bytes, "." is one
    # byte, \w and case folding are ASCII. Python's bytes patterns behave the same.
    flags = 0
    for low in options:
        if low == "i":
            flags |= re.IGNORECASE
        elif low == "m":
            flags |= re.MULTILINE
        elif low == "s":
            flags |= re.DOTALL
        elif low == "x":
            flags |= re.VERBOSE
    try:
        return re.compile(_translate(pattern).encode("utf-8"), flags)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None


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


@TABLE.strict("regexp", 2, 3)
def regexp(pattern: Value, target: Value, options: Value = "") -> Value:
    bad = _args(pattern, target, options)
    if bad is not None:
        return bad
    rx = _compile(pattern, options)  # type: ignore[arg-type]
    if rx is None:
        return Error
    return rx.search(target.encode("utf-8")) is not None  # type: ignore[union-attr]


@TABLE.strict("regexpMember", 2, 3)
def regexp_member(pattern: Value, lst: Value, options: Value = "") -> Value:
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
        if rx is not None and rx.search(e.encode("utf-8")) is not None:
            return True
    return Undefined if saw_undefined else False


class _BadGroup(Exception):
    pass


_SUBST = re.compile(rb"\\([0-9])")


def _expand(subst: bytes, m: re.Match[bytes]) -> bytes:
    # PCRE2 reports groups up to the highest one that took part in the match; a
    # reference beyond it is an error, an unset group below it is empty
    highest = max((i for i in range(1, m.re.groups + 1) if m.start(i) != -1), default=0)

    def group(g: re.Match[bytes]) -> bytes:
        n = int(g.group(1))
        if n > highest:
            raise _BadGroup
        return m.group(n) or b""
    return _SUBST.sub(group, subst)


def _substitute(pattern: Value, target: Value, subst: Value, options: Value,
                whole: bool, every: bool) -> Value:
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
        for m in rx.finditer(text):
            if every and m.start() == m.end():
                return Error  # HTCondor refuses empty matches when substituting globally
            if whole:
                out.append(text[pos:m.start()])
            out.append(_expand(template, m))
            pos = m.end()
            if not every:
                break
    except _BadGroup:
        return Error
    if whole:
        out.append(text[pos:])
    # a match may end inside a multi-byte character: such bytes become U+FFFD
    return b"".join(out).decode("utf-8", errors="replace")


@TABLE.strict("regexps", 3, 4)
def regexps(pattern: Value, target: Value, subst: Value, options: Value = "") -> Value:
    return _substitute(pattern, target, subst, options, False, False)


@TABLE.strict("replace", 3, 4)
def replace(pattern: Value, target: Value, subst: Value, options: Value = "") -> Value:
    return _substitute(pattern, target, subst, options, True, False)


@TABLE.strict("replaceAll", 3, 4)
def replace_all(pattern: Value, target: Value, subst: Value, options: Value = "") -> Value:
    return _substitute(pattern, target, subst, options, True, True)


def compile_pattern(pattern: str, options: str = "") -> Any:
    """A compiled pattern for other modules (stringList_regexpMember); None if invalid."""
    return _compile(pattern, options)
