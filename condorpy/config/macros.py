"""Macro expansion: ``$(NAME)``, ``$(NAME:default)`` and the ``$FUNC(...)`` functions.

Expansion happens when a knob is read (late binding), so a later definition of a
referenced macro changes every knob that uses it, as in HTCondor. ``$$(...)`` is left
for the daemon to expand against a job or machine ad.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from condorpy.config.arith import ArithError, eval_arith
from condorpy.errors import ConfigError

_FUNC_RE = re.compile(r"\$([A-Za-z_][A-Za-z_]*)\(")
_RANDOM_RE = re.compile(r"\$(RANDOM_CHOICE|RANDOM_INTEGER)\(", re.I)
_ATTR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_MAX_DEPTH = 64

Lookup = Callable[[str], str | None]
Where = Callable[[str], tuple[str, int] | None]


def find_close(text: str, open_idx: int) -> int:
    """Index of the ``)`` matching the ``(`` at ``open_idx``, or -1."""
    depth = 0
    for i in range(open_idx, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def split_args(text: str) -> list[str]:
    """Split a function's argument text on top-level commas."""
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    quote = ""
    for c in text:
        if quote:
            cur.append(c)
            if c == quote:
                quote = ""
            continue
        if c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    out.append("".join(cur).strip())
    return out


@dataclass
class Expander:
    """Expands macro references against a look-up function (prefix order applied)."""

    lookup: Lookup
    env: Mapping[str, str]
    rng: random.Random
    where: Where

    def expand(self, text: str, stack: tuple[str, ...] = ()) -> str:
        if "$" not in text:
            return text
        if len(stack) > _MAX_DEPTH:
            self._recursion(stack)
        out: list[str] = []
        i = 0
        n = len(text)
        while i < n:
            c = text[i]
            if c != "$":
                j = text.find("$", i)
                j = n if j < 0 else j
                out.append(text[i:j])
                i = j
                continue
            nxt = text[i + 1] if i + 1 < n else ""
            if nxt == "$":
                # $$(...) is for the daemon; keep it whole, unexpanded
                if i + 2 < n and text[i + 2] == "(":
                    close = find_close(text, i + 2)
                    if close > 0:
                        out.append(text[i:close + 1])
                        i = close + 1
                        continue
                out.append("$$")
                i += 2
                continue
            if nxt == "(":
                close = find_close(text, i + 1)
                if close < 0:
                    out.append(text[i:])
                    break
                out.append(self._macro(text[i + 2:close], stack))
                i = close + 1
                continue
            m = _FUNC_RE.match(text, i)
            if m and self._is_function(m.group(1)):
                close = find_close(text, m.end() - 1)
                if close > 0:
                    out.append(self._function(m.group(1), text[m.end():close], stack))
                    i = close + 1
                    continue
            out.append("$")
            i += 1
        return "".join(out)

    def expand_random(self, text: str) -> str:
        """Expand only the random functions, which HTCondor evaluates once at read time."""
        out: list[str] = []
        i = 0
        for m in _RANDOM_RE.finditer(text):
            if m.start() < i:
                continue
            close = find_close(text, m.end() - 1)
            if close < 0:
                break
            out.append(text[i:m.start()])
            out.append(self._function(m.group(1), text[m.end():close], ()))
            i = close + 1
        out.append(text[i:])
        return "".join(out)

    # --- $(NAME) ------------------------------------------------------------------
    def _macro(self, body: str, stack: tuple[str, ...]) -> str:
        if body.endswith("?") or body.endswith("#"):
            # only meaningful for template arguments; HTCondor leaves it as written
            return "$(" + body + ")"
        body = self.expand(body, stack)
        name, sep, default = body.partition(":")
        name = name.strip()
        if name.upper() == "DOLLAR":
            return "$"
        # the default stands in for an undefined or empty definition, not for a
        # definition that happens to expand to nothing
        if self.lookup(name):
            return self.value_of(name, stack)
        return default if sep else ""

    def value_of(self, name: str, stack: tuple[str, ...]) -> str:
        """Expanded value of macro ``name`` ('' if undefined)."""
        key = name.upper()
        if key in stack:
            self._recursion(stack + (key,))
        raw = self.lookup(name)
        if raw is None:
            return ""
        return self.expand(raw, stack + (key,))

    def _recursion(self, stack: tuple[str, ...]) -> None:
        first = stack[0] if stack else "?"
        loc = self.where(first)
        chain = " -> ".join(stack[-8:])
        raise ConfigError(f"macro {first} refers to itself through {chain}",
                          file=loc[0] if loc else None, line=loc[1] if loc else None,
                          name=first)

    # --- $FUNC(...) ---------------------------------------------------------------
    @staticmethod
    def _is_function(name: str) -> bool:
        u = name.upper()
        return u in _FUNCS or (name[0] == "F" and all(ch in "fpduwnxbqa" for ch in name[1:]))

    def _name_or_text(self, arg: str, stack: tuple[str, ...]) -> str:
        """A function argument that names a defined macro means its value."""
        if _NAME_RE.match(arg) and self.lookup(arg) is not None:
            return self.value_of(arg, stack)
        return arg

    def _function(self, fname: str, body: str, stack: tuple[str, ...]) -> str:
        body = self.expand(body, stack)
        u = fname.upper()
        if u == "ENV":
            var, sep, default = body.partition(":")
            return self.env.get(var.strip(), default if sep else "")
        args = split_args(body)
        if u in ("INT", "REAL"):
            return self._number(u, args, stack)
        if u == "STRING":
            return self._name_or_text(args[0], stack)
        if u == "EVAL":
            return _eval_text(self._name_or_text(args[0], stack))
        if u == "CHOICE":
            try:
                idx = int(eval_arith(self._name_or_text(args[0], stack)))
            except ArithError:
                return ""
            items = args[1:]
            return items[idx] if 0 <= idx < len(items) else ""
        if u == "RANDOM_CHOICE":
            return self.rng.choice(args) if args else ""
        if u == "RANDOM_INTEGER":
            return self._random_integer(args, stack)
        if u == "SUBSTR":
            return self._substr(args, stack)
        if u == "BASENAME":
            return os.path.basename(self._name_or_text(args[0], stack))
        if u == "DIRNAME":
            path = self._name_or_text(args[0], stack)
            d = path[:path.rfind("/") + 1] if "/" in path else ""
            return d
        return _path_flags(fname[1:], self._name_or_text(body.strip(), stack))

    def _number(self, kind: str, args: list[str], stack: tuple[str, ...]) -> str:
        text = self._name_or_text(args[0], stack)
        try:
            value = eval_arith(text)
        except ArithError:
            return ""
        fmt = args[1] if len(args) > 1 else ""
        if kind == "INT":
            iv = int(value)
            return _fmt(fmt, iv) if fmt else str(iv)
        return _fmt(fmt, float(value)) if fmt else f"{float(value):.16g}"

    def _random_integer(self, args: list[str], stack: tuple[str, ...]) -> str:
        try:
            lo = int(eval_arith(self._name_or_text(args[0], stack)))
            hi = int(eval_arith(self._name_or_text(args[1], stack)))
            step = int(eval_arith(args[2])) if len(args) > 2 and args[2] else 1
        except (ArithError, IndexError):
            return ""
        if step <= 0 or hi < lo:
            return str(lo)
        return str(self.rng.randrange(lo, hi + 1, step))

    def _substr(self, args: list[str], stack: tuple[str, ...]) -> str:
        # the first argument is always a macro name, never literal text
        value = self.value_of(args[0], stack) if args and args[0] else ""
        try:
            start = int(eval_arith(args[1])) if len(args) > 1 else 0
            length = int(eval_arith(args[2])) if len(args) > 2 and args[2] else None
        except ArithError:
            return ""
        if start < 0:
            start = max(len(value) + start, 0)
        if start >= len(value):
            return ""
        rest = value[start:]
        if length is None:
            return rest
        if length < 0:
            return rest[:max(len(rest) + length, 0)]
        return rest[:length]


_FUNCS = frozenset({"ENV", "INT", "REAL", "STRING", "EVAL", "CHOICE", "RANDOM_CHOICE",
                    "RANDOM_INTEGER", "SUBSTR", "BASENAME", "DIRNAME"})


def _fmt(fmt: str, value: int | float) -> str:
    try:
        return fmt % value
    except (TypeError, ValueError):
        return str(value)


def _path_flags(flags: str, path: str) -> str:
    """``$F[fpduwnxbqa](path)``: pick parts of a path and quote or convert it."""
    parts = set(flags)
    want_dirs = flags.count("d")
    head, _, tail = path.rpartition("/")
    directory = head + "/" if "/" in path else ""
    stem, dot, ext = tail.rpartition(".")
    if not dot:
        stem, ext = tail, ""
    ext = "." + ext if dot else ""
    if parts & {"p", "d", "n", "x", "f"}:
        out = ""
        if "f" in parts:
            out = path
        else:
            if "p" in parts:
                out += directory
            elif want_dirs:
                comps = [c for c in head.split("/") if c]
                out += "".join(c + "/" for c in comps[-want_dirs:])
            if "n" in parts:
                out += stem
            if "x" in parts:
                out += ext
    else:
        out = path
    if "w" in parts:
        out = out.replace("/", "\\")
    elif "u" in parts:
        out = out.replace("\\", "/")
    if "q" in parts:
        # 'a' alone does nothing: it picks the quote character for 'q'
        quote = "'" if "a" in parts else '"'
        out = quote + out + quote
    return out


def _eval_text(text: str) -> str:
    """``$EVAL``: evaluate text as a ClassAd expression, print the result unquoted."""
    text = text.strip()
    if not text:
        return ""
    try:
        return _fmt_result(eval_arith(text))
    except ArithError:
        pass
    low = text.lower()
    if low in ("true", "false", "undefined"):
        return low
    if _ATTR_RE.match(text):
        return "undefined"  # an attribute reference with no ad to look in
    if len(text) >= 2 and text[0] == text[-1] == '"' and '"' not in text[1:-1]:
        return text[1:-1]
    try:
        from condorpy.classad import parse_expr  # lazily: the ClassAd layer is optional here
        value = parse_expr(text).evaluate()
    except Exception:  # a value that is not an expression expands to nothing, as in HTCondor
        return ""
    return _fmt_classad(value)


def _fmt_result(value: int | float) -> str:
    if isinstance(value, float):
        return f"{value:.16g}"
    return str(value)


def _fmt_classad(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return _fmt_result(value)
    if isinstance(value, str):
        return value
    name = type(value).__name__.lower()
    if "undefined" in name or repr(value).lower() == "undefined":
        return "undefined"
    if "error" in name:
        return ""
    return str(value)
