"""Reading condor_config text: assignments, ``@=`` blocks, include, use, if, error.

The reader turns files into a table of raw (unexpanded) definitions with their file
and line. Only three things are expanded while reading, as in HTCondor: a knob's
reference to its own previous value, the conditions of ``if``/``elif``, and the file or
command named by ``include``; every other ``$(X)`` stays raw until the knob is read.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from condorpy.config.macros import Expander, find_close, split_args
from condorpy.config.templates import TEMPLATES, template_names
from condorpy.errors import ConfigError
from condorpy.inputs import NotTextError, decode_utf8

CONDOR_VERSION = (25, 14, 1)

_ASSIGN_RE = re.compile(r"^([A-Za-z0-9_.$()\-]+?)\s*(\+?=)\s*(.*)$", re.S)
_BLOCK_RE = re.compile(r"^([A-Za-z0-9_.]+)\s*@=\s*(\S+)\s*$")
_DIRECTIVES = ("include", "use", "error", "warning")
_ARG_RE = re.compile(r"^(\d+)(\+)?([?#])?(?::(.*))?$", re.S)
_RANDOM_RE = re.compile(r"\$RANDOM_(?:CHOICE|INTEGER)\(", re.I)
_COMMAND_TIMEOUT = 60.0


@dataclass(frozen=True)
class Entry:
    """One knob's raw definition and where it came from."""

    name: str
    value: str
    file: str
    line: int


@dataclass
class _Cond:
    active: bool      # this branch is being read
    taken: bool       # some branch of this if has been read
    outer: bool       # the enclosing block is being read
    line: int
    seen_else: bool = False


@dataclass
class Reader:
    """Accumulates definitions from one or more sources into ``table``."""

    expander: Expander
    default_raw: Callable[[str], str | None]
    table: dict[str, Entry] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    _open_files: list[str] = field(default_factory=list)

    # --- sources ------------------------------------------------------------------
    def read_file(self, path: str, *, required: bool = True,
                  from_file: str | None = None, from_line: int | None = None) -> None:
        real = os.path.realpath(path)
        if real in self._open_files:
            raise ConfigError(f"include cycle: {path} includes itself",
                              file=from_file or path, line=from_line)
        try:
            # Strict: a byte that is not UTF-8 would otherwise turn silently into U+FFFD
            # inside a value (an Owner name in START, say) and change the policy.
            with open(path, "rb") as fh:
                text = decode_utf8(fh.read(), f"configuration file {path}")
        except FileNotFoundError:
            if required:
                raise ConfigError(f"configuration file {path} does not exist",
                                  file=from_file, line=from_line) from None
            return
        except OSError as exc:
            raise ConfigError(f"cannot read configuration file {path}: {exc.strerror}",
                              file=from_file, line=from_line) from None
        self._open_files.append(real)
        try:
            self.read_text(text, path)
        finally:
            self._open_files.pop()

    def read_command(self, command: str, *, source: str, line: int | None) -> str:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"cannot parse command {command!r}: {exc}",
                              file=source, line=line) from None
        if not argv:
            raise ConfigError("empty command", file=source, line=line)
        try:
            done = subprocess.run(argv, capture_output=True,
                                  timeout=_COMMAND_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"cannot run {command!r}: {exc}", file=source,
                              line=line) from None
        if done.returncode != 0:
            raise ConfigError(f"command {command!r} exited with status {done.returncode}",
                              file=source, line=line)
        try:
            return decode_utf8(done.stdout, f"the output of {command!r}")
        except NotTextError as exc:
            raise ConfigError(str(exc), file=source, line=line) from None

    def read_text(self, text: str, source: str, at: tuple[str, int] | None = None) -> None:
        """Read configuration text; ``at`` pins every location (template bodies)."""
        lines = text.splitlines()
        conds: list[_Cond] = []
        i = 0
        while i < len(lines):
            start = i + 1
            logical, i = _join_continuations(lines, i)
            here, line_no = at if at else (source, start)
            stripped = logical.strip()
            if not stripped or stripped.startswith("#"):
                continue
            active = all(c.active for c in conds)
            block = _BLOCK_RE.match(stripped)
            if block:
                body, i = _read_block(lines, i, block.group(2), here, line_no)
                if active:
                    self.assign(block.group(1), "=", body, here, line_no)
                continue
            word = re.split(r"[\s:!(=]", stripped, maxsplit=1)[0].lower()
            if word in ("if", "elif", "else", "endif"):
                self._conditional(word, stripped, conds, here, line_no)
                continue
            if not active:
                continue
            if word in _DIRECTIVES and self._is_directive(stripped):
                self._directive(word, stripped, here, line_no)
                continue
            m = _ASSIGN_RE.match(stripped)
            if not m:
                raise ConfigError(f"not a valid configuration line: {stripped!r}",
                                  file=here, line=line_no)
            self.assign(m.group(1), m.group(2), m.group(3), here, line_no)
        if conds:
            where = at if at else (source, conds[-1].line)
            raise ConfigError("if without a matching endif", file=where[0], line=where[1])

    # --- assignments ----------------------------------------------------------------
    def prior(self, name: str) -> str:
        entry = self.table.get(name.upper())
        if entry is not None:
            return entry.value
        return self.default_raw(name) or ""

    def assign(self, name: str, op: str, value: str, source: str, line: int) -> None:
        value = value.strip()
        value = _replace_self(value, name, self.prior(name))
        if op == "+=":
            before = self.prior(name)
            value = f"{before} {value}" if before else value
        if _RANDOM_RE.search(value):
            # HTCondor picks a random value once, when the file is read
            value = self.expander.expand_random(value)
        key = name.upper()
        old = self.table.get(key)
        self.table[key] = Entry(old.name if old else name, value, source, line)

    # --- if / elif / else / endif ------------------------------------------------------
    def _conditional(self, word: str, line_text: str, conds: list[_Cond],
                     source: str, line: int) -> None:
        rest = line_text[len(word):].strip()
        if word == "if":
            outer = all(c.active for c in conds)
            value = self.condition(rest, source, line) if outer else False
            conds.append(_Cond(active=outer and value, taken=value, outer=outer, line=line))
            return
        if not conds:
            raise ConfigError(f"{word} without a matching if", file=source, line=line)
        top = conds[-1]
        if word == "endif":
            conds.pop()
            return
        if top.seen_else:
            raise ConfigError(f"{word} after else", file=source, line=line)
        if word == "else":
            top.seen_else = True
            top.active = top.outer and not top.taken
            top.taken = True
            return
        value = (top.outer and not top.taken) and self.condition(rest, source, line)
        top.active = value
        top.taken = top.taken or value

    def condition(self, text: str, source: str, line: int) -> bool:
        expanded = self.expander.expand(text).strip()
        negate = False
        while expanded.startswith("!"):
            negate = not negate
            expanded = expanded[1:].strip()
        low = expanded.lower()
        if low.startswith("defined ") or low == "defined":
            name = expanded[7:].strip()
            value = self.expander.lookup(name) if name else None
            result = bool(value)
        elif low.startswith("version"):
            result = _version_test(expanded[7:].strip(), source, line)
        elif low in ("true", "yes", "t", "y"):
            result = True
        elif low in ("false", "no", "f", "n", ""):
            result = False
        else:
            try:
                result = float(expanded) != 0
            except ValueError:
                raise ConfigError(f"{expanded} is not a valid if condition: only true/false, "
                                  "numbers, 'defined NAME' and 'version OP x.y.z' are supported",
                                  file=source, line=line) from None
        return result != negate

    # --- include / use / error / warning -------------------------------------------
    @staticmethod
    def _is_directive(text: str) -> bool:
        colon = text.find(":")
        eq = text.find("=")
        return colon > 0 and (eq < 0 or colon < eq)

    def _directive(self, word: str, text: str, source: str, line: int) -> None:
        head, _, rest = text.partition(":")
        options = head.split()[1:]
        rest = rest.strip()
        if word == "error":
            raise ConfigError(self.expander.expand(rest), file=source, line=line)
        if word == "warning":
            self.warnings.append(f"{source}:{line}: {self.expander.expand(rest)}")
            return
        if word == "use":
            if len(options) != 1:
                raise ConfigError("use needs a category: use CATEGORY : TEMPLATE",
                                  file=source, line=line)
            self.use(options[0], rest, source, line)
            return
        self._include(options, self.expander.expand(rest), source, line)

    def _include(self, options: list[str], target: str, source: str, line: int) -> None:
        words = [o.lower() for o in options]
        ifexist = "ifexist" in words
        if "command" in words:
            cache = None
            if "into" in words:
                idx = words.index("into")
                if idx + 1 >= len(options):
                    raise ConfigError("include command into needs a file name",
                                      file=source, line=line)
                cache = self.expander.expand(options[idx + 1])
            if cache and os.path.exists(cache):
                self.read_file(cache, from_file=source, from_line=line)
                return
            out = self.read_command(target, source=source, line=line)
            if cache:
                with open(cache, "w", encoding="utf-8") as fh:
                    fh.write(out)
            self.read_text(out, f"{target} |")
            return
        # like HTCondor, a relative path is relative to the working directory
        self.read_file(target, required=not ifexist, from_file=source, from_line=line)

    def use(self, category: str, spec: str, source: str, line: int) -> None:
        cat = category.upper()
        for name, args, raw_args in _template_calls(spec):
            body = TEMPLATES.get((cat, name.upper()))
            if body is None:
                known = ", ".join(template_names(cat)) or "none"
                raise ConfigError(f"unknown template {category}:{name} (known {cat} "
                                  f"templates: {known})", file=source, line=line)
            text = substitute_args(body, args, raw_args)
            self.read_text(text, f"use {cat}:{name}", at=(source, line))


def _join_continuations(lines: list[str], i: int) -> tuple[str, int]:
    parts: list[str] = []
    while i < len(lines):
        # a continued line loses its indentation, as in HTCondor
        cur = lines[i].rstrip() if not parts else lines[i].strip()
        i += 1
        if cur.endswith("\\"):
            parts.append(cur[:-1])
            continue
        parts.append(cur)
        break
    return "".join(parts), i


def _read_block(lines: list[str], i: int, tag: str, source: str, start: int
                ) -> tuple[str, int]:
    body: list[str] = []
    end = "@" + tag
    while i < len(lines):
        cur = lines[i].strip()
        i += 1
        if cur.startswith(end):
            return "\n".join(body), i
        body.append(cur)
    raise ConfigError(f"@={tag} block is not closed by @{tag}", file=source, line=start)


def _replace_self(value: str, name: str, prior: str) -> str:
    """Put the previous value in place of ``$(NAME)`` / ``$(NAME:default)``."""
    if "$(" not in value:
        return value
    key = name.upper()
    out: list[str] = []
    i = 0
    while True:
        j = value.find("$(", i)
        if j < 0:
            out.append(value[i:])
            break
        if j > 0 and value[j - 1] == "$":
            out.append(value[i:j + 2])
            i = j + 2
            continue
        close = find_close(value, j + 1)
        if close < 0:
            out.append(value[i:])
            break
        body = value[j + 2:close]
        ref, sep, default = body.partition(":")
        if ref.strip().upper() == key:
            out.append(value[i:j])
            out.append(prior if prior else (default if sep else ""))
        else:
            out.append(value[i:close + 1])
        i = close + 1
    return "".join(out)


def _template_calls(spec: str) -> list[tuple[str, list[str], str]]:
    """``A, B`` or ``A(x, y)``: names with their argument lists and raw argument text."""
    spec = spec.strip()
    paren = spec.find("(")
    if paren > 0:
        close = find_close(spec, paren)
        raw = spec[paren + 1:close if close > 0 else len(spec)]
        return [(spec[:paren].strip(), split_args(raw) if raw.strip() else [], raw.strip())]
    return [(n.strip(), [], "") for n in spec.split(",") if n.strip()]


def substitute_args(body: str, args: list[str], raw_args: str) -> str:
    """Replace ``$(N)``, ``$(N:def)``, ``$(N?)``, ``$(N+)``, ``$(0)``, ``$(0#)``."""
    out: list[str] = []
    i = 0
    while True:
        j = body.find("$(", i)
        if j < 0:
            out.append(body[i:])
            return "".join(out)
        out.append(body[i:j])
        close = find_close(body, j + 1)
        if close < 0:
            out.append(body[j:])
            return "".join(out)
        inner = body[j + 2:close]
        m = _ARG_RE.match(inner)
        if not m:
            out.append("$(" + substitute_args(inner, args, raw_args) + ")")
        else:
            out.append(_arg_value(m, args, raw_args))
        i = close + 1


def _arg_value(m: re.Match[str], args: list[str], raw_args: str) -> str:
    idx, plus, flag, default = int(m.group(1)), m.group(2), m.group(3), m.group(4)
    if idx == 0:
        value = raw_args
    elif plus:
        value = _raw_tail(raw_args, idx - 1)
    else:
        value = args[idx - 1] if idx <= len(args) else ""
    if flag == "?":
        return "1" if value else "0"
    if flag == "#":
        return str(len(args) if idx == 0 else (1 if value else 0))
    if not value and default is not None:
        return substitute_args(default, args, raw_args)
    return value


def _raw_tail(raw: str, start: int) -> str:
    """The raw argument text from argument ``start`` (0-based) to the end."""
    depth = 0
    count = 0
    for pos, c in enumerate(raw):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            count += 1
            if count == start:
                return raw[pos + 1:].strip()
    return raw.strip() if start == 0 else ""


_VERSION_RE = re.compile(r"^(==|!=|>=|<=|>|<)?\s*(\d+\.\d+(?:\.\d+)?)$")


def _version_test(text: str, source: str, line: int) -> bool:
    m = _VERSION_RE.match(text)
    if not m:
        raise ConfigError(f"version {text} is not a valid version test (use version >= x.y.z)",
                          file=source, line=line)
    op = m.group(1) or "=="
    want = tuple(int(p) for p in m.group(2).split("."))
    have = CONDOR_VERSION[:len(want)] if op in ("==", "!=") else CONDOR_VERSION
    padded = want + (0,) * (len(have) - len(want))
    return {"==": have == padded, "!=": have != padded, ">=": have >= padded,
            "<=": have <= padded, ">": have > padded, "<": have < padded}[op]
