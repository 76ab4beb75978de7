"""Reading condor_config text: assignments, ``@=`` blocks, include, use, if, error.

The reader turns files into a table of raw (unexpanded) definitions with their file
and line. Only three things are expanded while reading, as in HTCondor: a knob's
reference to its own previous value, the conditions of ``if``/``elif``, and the file or
command named by ``include``; every other ``$(X)`` stays raw until the knob is read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from condorpy.config.macros import Expander, Ref, find_close, find_ref
from condorpy.config.templates import TEMPLATES, template_names
from condorpy.errors import ConfigError
from condorpy.inputs import NotTextError, decode_utf8

CONDOR_VERSION = (25, 14, 1)

_ASSIGN_RE = re.compile(r"^([A-Za-z0-9_.$()\-]+?)\s*(\+?=)\s*(.*)$", re.S)
_BLOCK_RE = re.compile(r"^([A-Za-z0-9_.]+)\s*@=\s*(\S+)\s*$")
_DIRECTIVES = ("include", "use", "error", "warning")
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
    sources: list[str] = field(default_factory=list)   # in the order first read
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
        import shlex  # (here: few configurations run a command, and every client reads one)
        import subprocess
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
        if at is None and source not in self.sources:
            self.sources.append(source)
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
        for name, raw_args in _template_calls(spec, source, line):
            body = TEMPLATES.get((cat, name.upper()))
            if body is None:
                known = ", ".join(template_names(cat)) or "none"
                raise ConfigError(f"unknown template {category}:{name} (known {cat} "
                                  f"templates: {known})", file=source, line=line)
            text = substitute_args(body, raw_args)
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
    """Put the previous value in place of ``$(NAME)`` / ``$(NAME:default)``.

    Only what HTCondor recognises as a reference to NAME is replaced (the same rules as
    expansion), so ``$(NAME + 1)`` stays as written.
    """
    if "$(" not in value:
        return value
    key = name.upper()
    # STARTD.X = $(X) more: the prefixed knob's own name is X
    short = key.rpartition(".")[2]

    def is_self(ref: Ref) -> bool:
        ref_name = value[ref.body:ref.close].partition(":")[0].upper()
        return ref.func == "" and ref_name in (key, short)

    out: list[str] = []
    i = 0
    while True:
        ref = find_ref(value, i, accept=is_self)
        if ref is None:
            out.append(value[i:])
            return "".join(out)
        _, sep, default = value[ref.body:ref.close].partition(":")
        out.append(value[i:ref.start])
        out.append(prior if prior else (default if sep else ""))
        i = ref.end


def _template_calls(spec: str, source: str, line: int) -> list[tuple[str, str | None]]:
    """``A, B`` or ``A(args)``: template names with their raw argument text (None: none)."""
    spec = spec.strip()
    paren = spec.find("(")
    if paren > 0:
        close = spec.rfind(")")
        if close < paren:
            raise ConfigError(f"use {spec}: the argument list is not closed by )",
                              file=source, line=line)
        if spec[close + 1:].strip():
            raise ConfigError(f"use {spec}: unexpected text after the argument list: "
                              f"{spec[close + 1:].strip()!r}", file=source, line=line)
        return [(spec[:paren].strip(), spec[paren + 1:close])]
    return [(n.strip(), None) for n in spec.split(",") if n.strip()]


def _arg_tokens(raw: str) -> list[tuple[str, int]]:
    """The non-empty comma-separated arguments, trimmed, with the index just past each."""
    out = []
    pos = 0
    for piece in raw.split(","):
        end = pos + len(piece)
        if piece.strip():
            out.append((piece.strip(), end))
        pos = end + 1
    return out


def _meta_ref(text: str, pos: int) -> tuple[int, int, str] | None:
    """(start, end, body) of the first ``$(N...)`` template-argument reference."""
    n = len(text)
    i = pos
    while True:
        d = text.find("$(", i)
        if d < 0:
            return None
        if d > 0 and text[d - 1] == "$" and (d < 2 or text[d - 2] != "$"):
            i = d + 1
            continue
        j = d + 2
        if j >= n or not text[j].isdigit():
            i = j
            continue
        after_colon = False
        ok = True
        while j < n and text[j] != ")":
            c = text[j]
            j += 1
            if c == ":" and not after_colon:
                after_colon = True
                continue
            if after_colon:
                if c == "(":
                    close = text.find(")", j)
                    if close >= 0:
                        j = close + 1
                continue
            if not (c.isdigit() or c in "?#+"):
                ok = False
                break
        if ok and j < n:
            return d, j + 1, text[d + 2:j]
        i = d + 2


def substitute_args(body: str, raw_args: str | None) -> str:
    """Replace ``$(N)``, ``$(N:def)``, ``$(N?)``, ``$(N+)``, ``$(0)``, ``$(0#)``.

    As in HTCondor: arguments are split on every comma and trimmed, empty ones are
    dropped; ``$(0)`` and ``$(N+)`` take the raw text; a default applies only to a
    missing argument; the first reference is replaced and the scan starts again.
    """
    args = raw_args or ""
    tokens = _arg_tokens(args)
    while True:
        found = _meta_ref(body, 0)
        if found is None:
            return body
        start, end, inner = found
        m = re.match(r"(\d+)([?#+])?(:)?", inner)
        assert m is not None
        index, flag, colon = int(m.group(1)), m.group(2), m.group(3)
        default = inner[m.end():] if colon else None
        value = ""
        if index <= 0:
            value = str(len(tokens)) if flag in ("#", "+") else args
        elif flag in ("#", "+"):
            rest = args if index == 1 else (args[tokens[index - 2][1]:]
                                            if index - 2 < len(tokens) else "")
            value = rest[1:] if rest.startswith(",") else rest
            if default is not None and not value.strip():
                value = default
        elif index <= len(tokens):
            value = tokens[index - 1][0]
        elif default is not None:
            value = default
        value = value.strip()
        if flag == "?":
            value = "1" if value else "0"
        body = body[:start] + value + body[end:]


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
