"""Macro expansion: ``$(NAME)``, ``$(NAME:default)`` and the ``$FUNC(...)`` functions.

Expansion happens when a knob is read (late binding), so a later definition of a
referenced macro changes every knob that uses it, as in HTCondor. ``$$(...)`` is left
for the daemon to expand against a job or machine ad.

What counts as a reference follows HTCondor 25.14.1's reader (checked against it by the
differential tests):

- ``$(`` starts a reference only when everything up to the first ``)`` is a name made
  of letters, digits, ``_``, ``.`` and ``/``, optionally followed by ``:`` and a default
  made of those characters, blanks, ``,``, ``\\``, ``:``, ``$`` and parenthesised text.
  Anything else (``$(Memory > 100)``, ``$(A B)``) is left as written; references inside
  it are still expanded.
- A function is ``$NAME(`` with NAME spelt exactly (``$INT(``, not ``$int(``), or
  ``$F`` followed by path flags; its argument text runs to the first ``)``.
- The leftmost reference is replaced first and the scan starts again from the
  beginning, so a name assembled by an inner reference (``$(A$(B))``) is looked up once
  the inner one is replaced. ``$(DOLLAR)`` becomes ``$`` only after everything else.
"""

from __future__ import annotations

import os
import random
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from condorpy.errors import ClassAdError, ConfigError

_ID_CHARS = frozenset(string.ascii_letters + string.digits + "_./")
_PREFIX_CHARS = frozenset(string.ascii_letters + string.digits + "_")
# besides name characters, what a $(NAME:default) default may hold without parentheses
_DEFAULT_EXTRA = frozenset("$ ,\\:")
_PATH_FLAGS = frozenset("pnxdqabfwu")
_FUNCS = frozenset({"ENV", "RANDOM_CHOICE", "RANDOM_INTEGER", "CHOICE", "SUBSTR", "INT",
                    "REAL", "STRING", "EVAL", "BASENAME", "DIRNAME"})
_RANDOM_FUNCS = frozenset({"RANDOM_CHOICE", "RANDOM_INTEGER"})
_MAX_DEPTH = 64
# a reference chain that keeps growing the text without repeating a name is still a loop
_MAX_STEPS = 20000
_MAX_LEN = 1 << 20
_PRINTF_BUF = 55  # HTCondor formats $INT/$REAL into a 56-byte buffer
_INT_MAX = 2**31 - 1
_INT_MIN = -2**31

Lookup = Callable[[str], str | None]
Where = Callable[[str], tuple[str, int] | None]


@dataclass(frozen=True)
class Ref:
    """One reference found in a text: ``text[start:end]`` is ``$FUNC(body)``."""

    func: str      # "" for $(NAME); the function name as written otherwise
    start: int     # index of the $
    body: int      # index just after the (
    close: int     # index of the closing )

    @property
    def end(self) -> int:
        return self.close + 1


def _prefix_kind(prefix: str) -> tuple[str, bool] | None:
    """(function name, body is name-like) for ``$prefix(``, or None if not a reference."""
    if prefix == "":
        return "", True
    if prefix[0] == "F" and all(ch.lower() in _PATH_FLAGS for ch in prefix[1:]):
        return prefix, False
    if prefix in _FUNCS:
        return prefix, prefix == "ENV"
    return None


def _name_body_end(text: str, body: int) -> int:
    """Index of the ``)`` closing a name-like body, or -1 if the body is not one."""
    i = body
    n = len(text)
    after_colon = False
    while i < n and text[i] != ")":
        c = text[i]
        i += 1
        if c == ":" and not after_colon:
            after_colon = True
            continue
        if after_colon:
            if c == "(":
                close = text.find(")", i)
                if close >= 0:
                    i = close + 1
                    continue
            elif c in _DEFAULT_EXTRA:
                continue
        if c not in _ID_CHARS:
            return -1
    return i if i < n else -1


def find_ref(text: str, pos: int = 0, *, keep_dollar: bool = True,
             accept: Callable[[Ref], bool] | None = None) -> Ref | None:
    """The first reference at or after ``pos`` (``$(DOLLAR)`` skipped if ``keep_dollar``).

    ``accept`` narrows the search: a reference it refuses is stepped over whole.
    """
    n = len(text)
    i = pos
    while True:
        d = text.find("$", i)
        if d < 0:
            return None
        p = d + 1
        double = p < n and text[p] == "$"
        if double:
            p += 1
        q = p
        while q < n and text[q] in _PREFIX_CHARS:
            q += 1
        if q >= n or text[q] != "(" or double:
            i = q if q > d else d + 1
            continue
        kind = _prefix_kind(text[d + 1:q])
        if kind is None:
            i = q
            continue
        func, name_like = kind
        body = q + 1
        close = _name_body_end(text, body) if name_like else text.find(")", body)
        if close < 0:
            i = body  # not a reference: look for one inside
            continue
        ref = Ref(func, d, body, close)
        if keep_dollar and func == "" and text[body:close].upper() == "DOLLAR":
            i = close
            continue
        if accept is not None and not accept(ref):
            i = close
            continue
        return ref


def _replace_dollars(text: str) -> str:
    out: list[str] = []
    i = 0
    while True:
        ref = find_ref(text, i, keep_dollar=False,
                       accept=lambda r: r.func == "" and text[r.body:r.close].upper() == "DOLLAR")
        if ref is None:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:ref.start])
        out.append("$")
        i = ref.end


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
    """Split a template's argument text on commas, trimming each argument.

    HTCondor splits ``use`` arguments on every comma, whatever brackets or quotes
    surround it.
    """
    return [a.strip() for a in text.split(",")]


def _nth_item(text: str, index: int) -> tuple[int, int] | None:
    """(start, end) of the trimmed ``index``-th comma-separated item, or None."""
    start = 0
    for _ in range(index):
        comma = text.find(",", start)
        if comma < 0:
            return None
        start = comma + 1
    comma = text.find(",", start)
    end = len(text) if comma < 0 else comma
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _item(text: str, index: int) -> str | None:
    span = _nth_item(text, index)
    return None if span is None else text[span[0]:span[1]]


def _c_int(text: str) -> int | None:
    """strtol over the whole text (surrounding blanks allowed), else None."""
    m = re.fullmatch(r"\s*([-+]?\d+)\s*", text)
    return int(m.group(1)) if m else None


def _classad_value(text: str) -> object:
    """``text`` parsed and evaluated as a ClassAd expression with no ad; None if unparsable."""
    from condorpy.classad import parse_expr  # (only a macro that evaluates loads it)
    try:
        return parse_expr(text).evaluate()
    except ClassAdError:  # not an expression: the callers treat it as literal text
        return None


def _as_int(text: str) -> int | None:
    """HTCondor's string_is_long_param: a literal integer, else an expression's value."""
    direct = _c_int(text)
    if direct is not None:
        return direct
    value = _classad_value(text)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 2**63:
        return int(value)
    return None


def _as_float(text: str) -> float | None:
    """HTCondor's string_is_double_param: a literal number, else an expression's value."""
    try:
        if text.strip() and text == text.lstrip():
            return float(text)
    except ValueError:
        pass
    value = _classad_value(text)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


_PRINTF_RE = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?(hh|h|ll|l|L|q|j|z|t)?([diouxXeEfFgGaAcspn%*])")


def _printf_kind(fmt: str) -> str | None:
    """The kind of the single conversion in ``fmt`` ('int', 'char', 'float', 'str'), or
    None when HTCondor would refuse the format (none, several, or an unsafe one)."""
    kinds = []
    for m in _PRINTF_RE.finditer(fmt):
        conv = m.group(5)
        if conv == "%":
            continue
        if conv in "n*" or "*" in (m.group(2) or ""):
            return None
        kinds.append("int" if conv in "diouxX" else "char" if conv == "c"
                     else "float" if conv in "eEfFgGaA" else "str" if conv == "s" else "ptr")
    return kinds[0] if len(kinds) == 1 else None


def _c_format(fmt: str, value: int | float | str) -> str:
    """C printf with one conversion, through Python's % (which has no length modifiers)."""
    py = _PRINTF_RE.sub(lambda m: m.group(0) if m.group(5) == "%" else
                        "%" + m.group(1) + m.group(2) + ("." + m.group(3) if m.group(3) is not None else "")
                        + ("d" if m.group(5) in "iu" else m.group(5)), fmt)
    try:
        if isinstance(value, int) and re.search(r"%[^%]*[eEfFgGaA]", py):
            return py % float(value)
        return py % value
    except (TypeError, ValueError, OverflowError):
        return fmt


def _g16(value: float) -> str:
    """printf's %.16G."""
    if value != value:
        return "NAN" if str(value)[0] != "-" else "-NAN"
    if value in (float("inf"), float("-inf")):
        return "INF" if value > 0 else "-INF"
    return "%.16G" % value


def _unparse(value: object) -> str:
    """A ClassAd value as HTCondor's unparser writes it (strings unquoted by the caller)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == 0.0:
            return "%.1f" % value
        if value != value:
            return 'real("NaN")'
        if value in (float("inf"), float("-inf")):
            return 'real("INF")' if value > 0 else 'real("-INF")'
        return "%1.15E" % value
    from condorpy.classad import format_value
    return format_value(value)


@dataclass
class Expander:
    """Expands macro references against a look-up function (prefix order applied)."""

    lookup: Lookup
    env: Mapping[str, str]
    rng: random.Random
    where: Where

    def expand(self, text: str, stack: tuple[str, ...] = ()) -> str:
        """Fully expanded text, ``$(DOLLAR)`` included."""
        if "$" not in text:
            return text
        return _replace_dollars(self._expand(text, stack))

    def value_of(self, name: str, stack: tuple[str, ...]) -> str:
        """Expanded value of macro ``name`` ('' if undefined)."""
        key = name.upper()
        if key in stack:
            self._recursion(stack + (key,))
        raw = self.lookup(name)
        if raw is None:
            return ""
        return self.expand(raw, stack + (key,))

    def expand_random(self, text: str) -> str:
        """Expand only the random functions, which HTCondor evaluates once at read time."""
        out: list[str] = []
        i = 0
        while True:
            ref = find_ref(text, i, accept=lambda r: r.func in _RANDOM_FUNCS)
            if ref is None:
                out.append(text[i:])
                return "".join(out)
            out.append(text[i:ref.start])
            out.append(self._function(ref.func, text[ref.body:ref.close], ()))
            i = ref.end

    # --- the expansion loop -------------------------------------------------------
    def _expand(self, text: str, stack: tuple[str, ...]) -> str:
        """Expand every reference but ``$(DOLLAR)``, leftmost first, rescanning each time."""
        if len(stack) > _MAX_DEPTH:
            self._recursion(stack)
        steps = 0
        while "$" in text:
            ref = find_ref(text)
            if ref is None:
                break
            body = text[ref.body:ref.close]
            if ref.func:
                value = self._function(ref.func, body, stack)
            else:
                value = self._reference(body, stack)
            text = text[:ref.start] + value + text[ref.end:]
            steps += 1
            if steps > _MAX_STEPS or len(text) > _MAX_LEN:
                self._recursion(stack + (body,))
        return text

    def _reference(self, body: str, stack: tuple[str, ...]) -> str:
        name, sep, default = body.partition(":")
        raw = self.lookup(name) if name else None
        if sep and not raw:
            # the default stands in for an undefined or empty definition; it is expanded
            # by the rescan like any other text
            return default
        if raw is None:
            return ""
        key = name.upper()
        if key in stack:
            self._recursion(stack + (key,))
        # expanding the value here rather than splicing it in raw gives the same text
        # (nothing in it can combine with what follows except by design) and lets a
        # loop be reported instead of running forever
        return self._expand(raw, stack + (key,))

    def _recursion(self, stack: tuple[str, ...]) -> None:
        first = stack[0] if stack else "?"
        loc = self.where(first)
        chain = " -> ".join(stack[-8:])
        raise ConfigError(f"macro {first} refers to itself through {chain}",
                          file=loc[0] if loc else None, line=loc[1] if loc else None,
                          name=first)

    def _lookup_or_text(self, text: str, stack: tuple[str, ...]) -> str:
        """A function argument that names a macro means its expanded value; other text
        is expanded as it stands."""
        raw = self.lookup(text) if text else None
        source = text if raw is None else raw
        return self.expand(source, stack) if "$" in source else source

    # --- $FUNC(...) ---------------------------------------------------------------
    def _function(self, func: str, body: str, stack: tuple[str, ...]) -> str:
        if func == "ENV":
            var, sep, default = body.partition(":")
            value = self.env.get(var)
            if value is None:
                return default if sep else "UNDEFINED"
            return value
        if func in ("INT", "REAL"):
            return self._number(func, body, stack)
        if func == "STRING":
            return self._string(body, stack)
        if func == "EVAL":
            return self._eval(body, stack)
        if func == "CHOICE":
            return self._choice(body, stack)
        if func == "RANDOM_CHOICE":
            return self._random_choice(body, stack)
        if func == "RANDOM_INTEGER":
            return self._random_integer(body)
        if func == "SUBSTR":
            return self._substr(body, stack)
        return self._path(func, body, stack)

    def _number(self, kind: str, body: str, stack: tuple[str, ...]) -> str:
        # the format is everything after the first comma, blanks included
        name, comma, fmt = body.partition(",")
        if comma:
            want = ("int", "char") if kind == "INT" else ("float",)
            if _printf_kind(fmt) not in want + ("ptr",):
                return fmt
        text = self._lookup_or_text(name, stack)
        if kind == "INT":
            iv = _as_int(text)
            if iv is None:
                return ""
            return _c_format(fmt, iv)[:_PRINTF_BUF] if comma else str(iv)
        fv = _as_float(text)
        if fv is None:
            return ""
        if not comma:
            return _g16(fv)
        out = _c_format(fmt, fv)[:_PRINTF_BUF]
        return out if "." in out else out + ".0"

    def _string(self, body: str, stack: tuple[str, ...]) -> str:
        name, comma, fmt = body.partition(",")
        if comma and _printf_kind(fmt) not in ("str", "ptr"):
            return fmt
        text = self._lookup_or_text(name, stack)
        value = _classad_value(text)
        if isinstance(value, str):
            text = value
        return _c_format(fmt, text) if comma else text

    def _eval(self, body: str, stack: tuple[str, ...]) -> str:
        raw = self.lookup(body) if body else None
        source = body if raw is None else raw
        expanded = "$" in source
        text = self.expand(source, stack) if expanded else source
        from condorpy.classad import parse_expr
        try:
            value = parse_expr(text).evaluate()
        except ClassAdError:  # not an expression: the expanded text, if there was any
            return text if expanded else ""
        return value if isinstance(value, str) else _unparse(value)

    def _arg_value(self, body: str, index: int, stack: tuple[str, ...]) -> str | None:
        item = _item(body, index)
        return None if item is None else self._lookup_or_text(item, stack)

    def _choice(self, body: str, stack: tuple[str, ...]) -> str:
        index_text = self._arg_value(body, 0, stack) or ""
        index = _as_int(index_text)
        if index is None or index < 0 or index >= _INT_MAX:
            index = 0  # HTCondor logs the bad index and takes the first item
        span = _nth_item(body, 1)
        if span is None:
            return ""
        items = body[span[0]:]
        if "," not in items:
            raw = self.lookup(body[span[0]:span[1]])
            if raw is None:
                return ""
            items = self.expand(raw, stack)
        return _item(items, index) or ""

    def _random_choice(self, body: str, stack: tuple[str, ...]) -> str:
        entries = [e.strip() for e in body.split(",") if e.strip()]
        if len(entries) == 1:
            raw = self.lookup(entries[0])
            if raw is not None:
                text = self.expand(raw, stack) if "$" in raw else raw
                entries = [e for e in re.split(r"[,\s]+", text) if e]
        return self.rng.choice(entries) if entries else ""

    def _random_integer(self, body: str) -> str:
        entries = [e.strip() for e in body.split(",") if e.strip()]
        lo = _c_int(entries[0]) if entries else None
        lo = 0 if lo is None else lo
        hi = _c_int(entries[1]) if len(entries) > 1 else None
        hi = lo if hi is None else hi
        step = _c_int(entries[2]) if len(entries) > 2 else 1
        if step is None or step < 1:
            step = 1
        if lo > hi:
            lo = hi
        return str(lo + self.rng.randrange((step + hi - lo) // step) * step)

    def _substr(self, body: str, stack: tuple[str, ...]) -> str:
        name, comma, rest = body.partition(",")
        if not comma:
            return ""
        start_text, comma2, len_text = rest.partition(",")
        start = _as_int(self._lookup_or_text(start_text, stack))
        if start is None or not _INT_MIN <= start < _INT_MAX:
            return ""
        length = _INT_MAX // 2
        if comma2:
            given = _as_int(self._lookup_or_text(len_text, stack))
            if given is None or not _INT_MIN <= given <= _INT_MAX:
                return ""
            length = given
        raw = self.lookup(name) if name else None
        if raw is None:
            return ""
        value = self.expand(raw, stack) if "$" in raw else raw
        cch = len(value)
        if start < 0:
            start = cch + start
        start = min(max(start, 0), cch)
        cch -= start
        if length < 0:
            length = cch + length
        length = min(max(length, 0), cch)
        return value[start:start + length]

    def _path(self, func: str, body: str, stack: tuple[str, ...]) -> str:
        suffix = None
        if func == "BASENAME":
            comma = body.rfind(",")
            if comma >= 0:
                suffix = body[comma + 1:].lstrip()
                body = body[:comma]
        path = self._lookup_or_text(body, stack)
        if func == "BASENAME":
            flags = "nx"
        elif func == "DIRNAME":
            flags = "p"
        else:
            flags = func[1:].lower()
        return _path_parts(flags, path, suffix)


def _path_parts(flags: str, path: str, suffix: str | None) -> str:
    """``$F[pnxdqabfwu](path)``, ``$BASENAME`` and ``$DIRNAME``: parts of a path."""
    parts = 0
    dirs = 0
    for ch in flags:
        if ch == "x":
            parts |= 1
        elif ch == "n":
            parts |= 2
        elif ch == "p":
            parts |= 4
        elif ch == "d":
            parts |= 8
            dirs += 1
    quote = ("'" if "a" in flags else '"') if "q" in flags else ""
    bare = "b" in flags
    to_sep = "\\" if "w" in flags else "/" if "u" in flags else ""
    for ch in reversed(flags):
        if ch in "wu":
            to_sep = "\\" if ch == "w" else "/"
            break
    # a value wholly in matching quotes is taken without them
    if len(path) > 1 and path[0] == path[-1] and path[0] in "\"'":
        path = path[1:-1]
    # and a leading double quote (or the requested quote) is dropped, with its partner
    if path and (path[0] == '"' or (quote and path[0] == quote)):
        qc = path[0]
        path = path[1:]
        if path and path[-1] == qc:
            path = path[:-1]
    if to_sep and (parts or to_sep or bare):
        path = path.replace("\\" if to_sep == "/" else "/", to_sep)
    ixend = len(path)
    ixn = path.rfind("/") + 1
    dot = path.rfind(".", ixn + 1)
    ixx = dot if dot > ixn else ixend
    if suffix is not None and ixend - len(suffix) >= ixn and \
            path[ixend - len(suffix):].lower() == suffix.lower():
        ixx = ixend - len(suffix)
        parts &= ~1
    if not ixn and parts & 3:
        parts &= ~(4 | 8)
    start = 0
    sel = parts & 0xF
    if sel == 1:
        start = ixx + (1 if bare and ixx < ixend else 0)
    elif sel == 3:
        start = ixn
    elif sel == 2:
        start, ixend = ixn, ixx
    elif sel in (0, 7, 5):
        start = 0
    elif sel == 4:
        ixend = ixn - 1 if bare and ixn > 0 else ixn
    elif sel == 6:
        ixend = ixx
    elif ixn > 0:
        seps = [i + 1 for i, c in enumerate(path) if c in "/\\"]
        keep = seps[:len(seps) - dirs] if dirs < len(seps) else []
        start = keep[-1] if keep else 0
        if parts & 3 == 2:
            ixend = ixx
        elif parts & 3 == 0:
            ixend = ixn - 1 if bare and ixn > 0 else ixn
    else:
        start = ixend = 0
    out = path[start:max(ixend, start)]
    return quote + out + quote if quote else out
