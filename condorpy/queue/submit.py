"""Submit descriptions (condor_submit's language) turned into job ads.

Pure: the only input besides the text is a small file-system interface, used for
``queue ... from FILE`` and ``queue ... matching PATTERN``. Every bad input raises
:class:`~condorpy.errors.SubmitError` naming the file and the line.

The attribute names, values and default ``Requirements`` clauses follow HTCondor
25.x's condor_submit for the vanilla universe (the only universe condorpy runs) and
its docker and container toppings (:mod:`condorpy.queue.submit_container`).
"""

from __future__ import annotations

import fnmatch
import glob as _glob
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from condorpy.classad import ClassAd, ast, parse_expr
from condorpy.classad.ast import Binary, Cond, Elvis
from condorpy.classad.compiler import NOCONST
from condorpy.classad.expr import Expr
from condorpy.classad.functions.envargs import (
    parse_env_v1, parse_env_v2, parse_v2_words, quote_v2_word, write_env,
)
from condorpy.classad.values import Error, Undefined
from condorpy.config.typed import boolean_value
from condorpy.errors import ClassAdError, SubmitError
from condorpy.queue.submit_container import (
    ContainerOptions, Topping, container_command, container_inputs, requirement_clause,
    set_container_keywords, set_images, set_topping,
)
from condorpy.starter import reserved

__all__ = ["SubmitFS", "LocalFS", "QueueItem", "parse_submit", "queue_items",
           "parse_size", "SubmitDescription", "read_description", "expand", "item_data",
           "statement_parts", "ContainerOptions"]

UNIVERSE_VANILLA = 5
# Universes HTCondor knows that condorpy does not run: refused with a clear message
# rather than "unknown". docker and container are toppings on vanilla (JobUniverse 5).
_OTHER_UNIVERSES = {"standard", "scheduler", "local", "grid", "java", "vm", "parallel",
                    "globus", "mpi", "pvm"}
_VANILLA_NAMES = ("vanilla", "5", "docker", "container")
_MACRO_DEPTH = 32
_NOTIFY = {"never": 0, "always": 1, "complete": 2, "error": 3}


class SubmitFS(Protocol):
    """What the queue statement may ask of the file system."""

    def read_bytes(self, path: str) -> bytes: ...

    def glob(self, pattern: str) -> list[str]: ...

    def is_dir(self, path: str) -> bool: ...


class LocalFS:
    """SubmitFS on the real file system."""

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def glob(self, pattern: str) -> list[str]:
        return _glob.glob(pattern)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def kind(self, path: str) -> str:
        """What an executable path is: 'missing', 'dir', 'empty', 'noexec' or 'ok'."""
        try:
            st = os.stat(path)
        except OSError:
            return "missing"
        if stat.S_ISDIR(st.st_mode):
            return "dir"
        if st.st_size == 0:
            return "empty"
        return "ok" if st.st_mode & 0o111 else "noexec"


# --- reading the text into statements ---------------------------------------------

@dataclass(frozen=True)
class _Assign:
    line: int
    key: str          # as written (``+Foo``, ``MY.Foo``, ``executable``)
    value: str


@dataclass(frozen=True)
class _Queue:
    line: int
    args: str                    # text after ``queue`` on its line
    block: tuple[str, ...] | None  # lines of a multi-line ``( ... )`` list


@dataclass(frozen=True)
class SubmitDescription:
    source: str
    statements: tuple[_Assign | _Queue, ...]


_ASSIGN_RE = re.compile(r"^([+]?[A-Za-z_][A-Za-z0-9_.]*)\s*=\s?(.*)$", re.S)


def _decode(text: str | bytes, source: str) -> str:
    if isinstance(text, str):
        return text
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = text[:exc.start].count(b"\n") + 1
        raise SubmitError("the submit description is not UTF-8 text", file=source,
                          line=line) from None


def read_description(text: str | bytes, source: str = "<submit>") -> SubmitDescription:
    """Split a submit description into assignments and queue statements."""
    lines = _decode(text, source).splitlines()
    out: list[_Assign | _Queue] = []
    i = 0
    while i < len(lines):
        start = i
        raw = lines[i]
        i += 1
        # A trailing backslash joins the next line, as in condor_config files.
        while raw.rstrip().endswith("\\") and i < len(lines):
            raw = raw.rstrip()[:-1] + lines[i].lstrip()
            i += 1
        if raw.rstrip().endswith("\\"):
            raw = raw.rstrip()[:-1]
        stmt = raw.strip()
        if not stmt or stmt.startswith("#"):
            continue
        word = stmt.split(None, 1)[0].lower()
        if word == "queue":
            args = stmt[5:].strip()
            block: tuple[str, ...] | None = None
            # A list opened on the queue line and not closed there runs to a line that
            # starts with ')'.
            if "(" in args and ")" not in args[args.index("("):]:
                body: list[str] = []
                closed = False
                while i < len(lines):
                    ln = lines[i]
                    i += 1
                    if ln.strip().startswith(")"):
                        closed = True
                        break
                    body.append(ln)
                if not closed:
                    raise SubmitError("the queue statement's list is not closed with ')'",
                                      file=source, line=start + 1)
                block = tuple(body)
            out.append(_Queue(start + 1, args, block))
            continue
        m = _ASSIGN_RE.match(stmt)
        if m is None:
            raise SubmitError(f"not a submit command: {stmt!r}", file=source,
                              line=start + 1)
        out.append(_Assign(start + 1, m.group(1), m.group(2).strip()))
    return SubmitDescription(source, tuple(out))


def statement_parts(desc: SubmitDescription
                    ) -> tuple[list[tuple[int, str, str]], list[str]]:
    """The assignments (line, key as written, value) and the text of each queue
    statement (its arguments and any multi-line list), in the order of the file."""
    assigns: list[tuple[int, str, str]] = []
    queues: list[str] = []
    for stmt in desc.statements:
        if isinstance(stmt, _Assign):
            assigns.append((stmt.line, stmt.key, stmt.value))
        else:
            queues.append("\n".join((stmt.args, *(stmt.block or ()))))
    return assigns, queues


# --- macros -------------------------------------------------------------------------

@dataclass
class _Macros:
    source: str
    table: dict[str, tuple[str, int]] = field(default_factory=dict)  # lc -> (raw, line)
    live: dict[str, str] = field(default_factory=dict)               # lc -> value
    names: dict[str, str] = field(default_factory=dict)              # lc -> as written
    defaults: dict[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    def raw(self, name: str) -> str | None:
        got = self.table.get(name.lower())
        return None if got is None else got[0]

    def line_of(self, name: str) -> int | None:
        got = self.table.get(name.lower())
        return None if got is None else got[1]

    def get(self, *names: str) -> str | None:
        """The expanded value of the first of ``names`` that is set."""
        for name in names:
            got = self.table.get(name.lower())
            if got is not None:
                return self.expand(got[0], got[1], (name.lower(),))
        return None

    def lookup(self, name: str, line: int, stack: tuple[str, ...]) -> str:
        lc = name.lower()
        if lc in stack:
            chain = " -> ".join(stack + (lc,))
            raise SubmitError(f"macro loop: {chain}", file=self.source, line=line)
        if len(stack) > _MACRO_DEPTH:
            raise SubmitError(f"macros nested more than {_MACRO_DEPTH} deep at $({name})",
                              file=self.source, line=line)
        if lc in self.live:
            return self.live[lc]
        got = self.table.get(lc)
        if got is not None:
            return self.expand(got[0], line, stack + (lc,))
        # An undefined macro expands to nothing, as in condor_submit.
        return self.defaults.get(lc, "")

    def expand(self, text: str, line: int, stack: tuple[str, ...] = ()) -> str:
        if "$" not in text:
            return text
        out: list[str] = []
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c != "$":
                out.append(c)
                i += 1
                continue
            if text.startswith("$$(", i):
                # match-time substitution: the startd fills it in from the slot ad
                end = _close_paren(text, i + 2)
                if end < 0:
                    raise SubmitError("unterminated $$( in value", file=self.source,
                                      line=line)
                out.append(text[i:end + 1])
                i = end + 1
                continue
            m = re.match(r"\$([A-Za-z]*)\(", text[i:])
            if m is None:
                out.append(c)
                i += 1
                continue
            func = m.group(1).upper()
            open_at = i + m.end() - 1
            end = _close_paren(text, open_at)
            if end < 0:
                raise SubmitError(f"unterminated macro reference {text[i:]!r}",
                                  file=self.source, line=line)
            inner = text[open_at + 1:end]
            out.append(self._function(func, inner, line, stack))
            i = end + 1
        return "".join(out)

    def _function(self, func: str, inner: str, line: int, stack: tuple[str, ...]) -> str:
        if func == "":
            name, colon, default = inner.partition(":")
            name = self.expand(name, line, stack).strip()
            if colon and name.lower() not in self.live and name.lower() not in self.table:
                return self.expand(default, line, stack)
            return self.lookup(name, line, stack)
        if func == "ENV":
            name, colon, default = inner.partition(":")
            return self.env.get(name.strip(), default if colon else "")
        if func.startswith("F") and set(func[1:]) <= set("PDNXQA"):
            return _path_parts(func[1:], self.expand(f"$({inner})", line, stack))
        if func in ("INT", "REAL"):
            name, _, _fmt = inner.partition(",")
            text = self.expand(f"$({name})", line, stack)
            value = _eval_number(text)
            if value is None:
                raise SubmitError(f"${func}({inner}): {text!r} is not a number",
                                  file=self.source, line=line)
            return str(int(value)) if func == "INT" else repr(float(value))
        raise SubmitError(f"macro function ${func}() is not supported", file=self.source,
                          line=line)


def _close_paren(text: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _path_parts(flags: str, path: str) -> str:
    """$F macros: pieces of a path (p directory, n name, x extension, d parent dir name,
    q quoted)."""
    if not flags or not set(flags) & set("PDNX"):
        return '"' + path + '"' if "Q" in flags else path
    head, tail = posixpath.split(path)
    name, ext = posixpath.splitext(tail)
    out = ""
    if "P" in flags and "D" not in flags:
        out += head + "/" if head else ""
    if "D" in flags:
        out += posixpath.basename(head) + "/" if head else ""
    if "N" in flags:
        out += name
    if "X" in flags:
        out += ext
    if "Q" in flags:
        out = '"' + out + '"'
    return out


def _eval_number(text: str) -> float | None:
    try:
        value = parse_expr(text).evaluate()
    except ClassAdError:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


# --- queue statements ---------------------------------------------------------------

@dataclass(frozen=True)
class QueueItem:
    """One job of a queue statement: its loop variables, row and step."""
    row: int
    step: int
    variables: tuple[tuple[str, str], ...]


_QUEUE_KW = re.compile(r"(?i)(?:^|\s)(in|from|matching)(?=\s|\(|$)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _split_in_items(text: str) -> list[str]:
    # ``in`` lists: items separated by commas or whitespace, blank items dropped
    out: list[str] = []
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        out.extend(tok for tok in re.split(r"[,\s]+", line.strip()) if tok)
    return out


def _split_row(line: str, nvars: int) -> list[str]:
    # ``from`` rows: a field ends at a comma (which takes the blanks after it) or at a
    # run of blanks (which does not take a comma after it: "x , y" gives "x" and
    # ", y", as condor_submit does); the last variable takes the rest of the line.
    fields: list[str] = []
    rest = line.strip()
    while len(fields) < nvars - 1 and rest:
        m = re.match(r"([^,\s]*)(?:,\s*|\s+)?", rest)
        assert m is not None
        fields.append(m.group(1))
        rest = rest[m.end():]
    fields.append(rest.strip())
    while len(fields) < nvars:
        fields.append("")
    return fields


def _paren_body(rest: str, block: tuple[str, ...] | None, source: str,
                line: int) -> str | None:
    """The text of a ``( ... )`` list, or None when ``rest`` is not a list."""
    rest = rest.strip()
    if not rest.startswith("("):
        return None
    if block is not None:
        first = rest[1:].strip()
        return "\n".join(([first] if first else []) + list(block))
    end = rest.rfind(")")
    if end < 0:
        raise SubmitError("the queue statement's list is not closed with ')'",
                          file=source, line=line)
    if rest[end + 1:].strip():
        raise SubmitError(f"unexpected text after the queue list: {rest[end + 1:]!r}",
                          file=source, line=line)
    return rest[1:end]


def queue_items(stmt: _Queue, macros: _Macros, *, submit_dir: str,
                fs: SubmitFS) -> list[QueueItem]:
    """The jobs one queue statement makes, in order."""
    src, line = macros.source, stmt.line
    args = stmt.args
    m = _QUEUE_KW.search(args)
    head = args[:m.start()] if m else args
    head = macros.expand(head, line).strip()
    count_text = head
    names: list[str] = ["Item"]
    if m is not None:
        toks = [t for t in re.split(r"[,\s]+", head) if t]
        if toks and not _NAME.match(toks[0]):
            count_text, toks = toks[0], toks[1:]
        else:
            count_text = ""
        if toks:
            names = toks
        for nm in names:
            if not _NAME.match(nm):
                raise SubmitError(f"bad queue variable name {nm!r}", file=src, line=line)
    count = 1
    if count_text:
        value = _eval_number(count_text)
        if value is None or value != int(value) or value < 0:
            raise SubmitError(f"queue count {count_text!r} is not a non-negative integer",
                              file=src, line=line)
        count = int(value)
    rows: list[list[str]]
    if m is None:
        rows = [[]]
        names = []
    else:
        kw = m.group(1).lower()
        rest = args[m.end():]
        body = _paren_body(rest, stmt.block, src, line)
        if kw == "in":
            if body is None:
                raise SubmitError("queue ... in needs a list in parentheses", file=src,
                                  line=line)
            rows = [[it] + [""] * (len(names) - 1)
                    for it in _split_in_items(macros.expand(body, line))]
        elif kw == "from":
            if body is None:
                path = macros.expand(rest, line).strip()
                if not path:
                    raise SubmitError("queue ... from needs a file name or a list",
                                      file=src, line=line)
                full = posixpath.join(submit_dir, path)
                try:
                    body = _decode(fs.read_bytes(full), full)
                except OSError as exc:
                    raise SubmitError(f"cannot read queue items from {full}: "
                                      f"{exc.strerror or exc}", file=src, line=line) from None
                # every line of an item file is data, '#' included
                rows = [_split_row(ln, len(names)) for ln in body.splitlines()
                        if ln.strip()]
            else:
                # an inline list is part of the description, where '#' starts a comment
                body = macros.expand(body, line)
                rows = [_split_row(ln, len(names)) for ln in body.splitlines()
                        if ln.strip() and not ln.strip().startswith("#")]
        else:
            rows = [[p] + [""] * (len(names) - 1)
                    for p in _matching(body if body is not None else rest, macros, line,
                                       submit_dir, fs)]
    items: list[QueueItem] = []
    for row_no, row in enumerate(rows):
        variables = tuple(zip(names, row))
        for step in range(count):
            items.append(QueueItem(row_no, step, variables))
    return items


def _matching(text: str, macros: _Macros, line: int, submit_dir: str,
              fs: SubmitFS) -> list[str]:
    words = macros.expand(text, line).split()
    want = "any"
    if words and words[0].lower() in ("files", "dirs"):
        want = words.pop(0).lower()
    if not words:
        raise SubmitError("queue ... matching needs a pattern", file=macros.source,
                          line=line)
    found: list[str] = []
    seen: set[str] = set()
    for pattern in words:
        base = submit_dir.rstrip("/") + "/"
        matches = []
        for full in fs.glob(posixpath.join(submit_dir, pattern)):
            rel = full[len(base):] if full.startswith(base) else full
            if not fnmatch.fnmatchcase(rel.rstrip("/"), pattern.rstrip("/")) \
                    and not posixpath.isabs(pattern):
                continue
            is_dir = fs.is_dir(full)
            if (want == "files" and is_dir) or (want == "dirs" and not is_dir):
                continue
            # condor_submit marks a directory with a trailing slash
            matches.append(rel.rstrip("/") + ("/" if is_dir else ""))
        for rel in sorted(matches):
            if rel not in seen:
                seen.add(rel)
                found.append(rel)
    return found


# --- units --------------------------------------------------------------------------

_SIZE_RE = re.compile(r"^\s*(\d+)(?:\.(\d*))?\s*(?:([KkMmGgTt])[Bb]?)?\s*$")


def parse_size(text: str, base: int) -> int | None:
    """A size with an optional K/M/G/T unit (a trailing B is allowed) in units of
    ``base`` bytes, rounded up; a bare number is already in ``base`` units. None when
    ``text`` is not of that form (it is then an expression)."""
    m = _SIZE_RE.match(text)
    if m is None:
        return None
    whole = int(m.group(1))
    # condor_submit keeps three digits of a fraction ("2.25G")
    frac_digits = (m.group(2) or "")[:3]
    unit = (m.group(3) or "").upper()
    mult = {"": base, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]
    if frac_digits:
        scaled = whole * mult + int(frac_digits) * mult // int(10 ** len(frac_digits))
    else:
        scaled = whole * mult
    return (scaled + base - 1) // base


# --- job ads ------------------------------------------------------------------------

def _bool_text(value: str, key: str, src: str, line: int) -> bool:
    # condor_submit reads its booleans with the configuration's rule (true/false/1/0,
    # else a ClassAd expression giving a boolean or number)
    got = boolean_value(value)
    if got is None:
        raise SubmitError(f"{key} = {value!r} is not a boolean", file=src, line=line)
    return got


_DEFAULT_LEASE = "2400"


class _AdBuilder:
    """The job ad of one proc, from the expanded submit keys."""

    def __init__(self, macros: _Macros, *, submit_dir: str, env: Mapping[str, str],
                 arch: str, opsys: str, queue_line: int,
                 container: ContainerOptions | None = None,
                 exists: Callable[[str], bool] | None = None) -> None:
        self.m = macros
        self.src = macros.source
        self.submit_dir = submit_dir
        self.env = env
        self.arch = arch
        self.opsys = opsys
        self.queue_line = queue_line
        self.container = container or ContainerOptions()
        self.exists = exists or (lambda _path: False)
        self.topping = Topping.NONE
        self.ad = ClassAd()

    def line(self, *keys: str) -> int:
        for k in keys:
            ln = self.m.line_of(k)
            if ln is not None:
                return ln
        return self.queue_line

    def fail(self, message: str, *keys: str) -> SubmitError:
        return SubmitError(message, file=self.src, line=self.line(*keys))

    def expr(self, attr: str, text: str, *keys: str) -> Expr:
        try:
            e = parse_expr(text)
        except ClassAdError as exc:
            raise self.fail(f"{attr} = {text!r} is not a ClassAd expression: "
                            f"{getattr(exc, 'reason', exc)}", *keys) from None
        self.ad[attr] = e
        return e

    def get(self, *keys: str) -> str | None:
        return self.m.get(*keys)


def _literal_number(e: Expr) -> float | None:
    c = e.const
    if c is NOCONST or isinstance(c, bool) or not isinstance(c, (int, float)):
        return None
    return float(c)


def _build_ad(b: _AdBuilder, *, cluster_id: int, proc_id: int, owner: str,
              user: str, qdate: int, filesystem_domain: str,
              attrs: Sequence[tuple[str, str, int]]) -> ClassAd:
    ad = b.ad
    universe = (b.get("universe") or "vanilla").strip()
    if universe.lower() not in _VANILLA_NAMES:
        if universe.lower() in _OTHER_UNIVERSES:
            raise b.fail(f"universe {universe} is not supported: condorpy runs only "
                         "vanilla universe jobs", "universe")
        raise b.fail(f"unknown universe {universe!r}", "universe")
    ad["MyType"] = "Job"
    ad["TargetType"] = "Machine"
    ad["ClusterId"] = cluster_id
    ad["ProcId"] = proc_id
    ad["QDate"] = qdate
    ad["Owner"] = owner
    ad["User"] = user
    ad["JobUniverse"] = UNIVERSE_VANILLA
    b.topping = set_topping(b, universe)
    set_images(b, b.topping)

    iwd_text = b.get("initialdir", "initial_dir", "iwd", "job_iwd")
    iwd = posixpath.normpath(posixpath.join(b.submit_dir, iwd_text or ""))
    ad["Iwd"] = iwd

    exe = b.get("executable")
    if b.topping is not Topping.NONE:
        # a container job may leave its program to the image's entrypoint
        ad["Cmd"] = container_command(b, b.topping, iwd, b.container)
    elif not exe or not exe.strip():
        raise b.fail("no executable: the submit description must set executable",
                     "executable")
    else:
        ad["Cmd"] = posixpath.normpath(posixpath.join(iwd, exe.strip()))
    set_container_keywords(b, b.topping, home=b.env.get("HOME"), exists=b.exists)

    _set_arguments(b)
    _set_environment(b)

    # Standard streams stay as written (relative to Iwd on the execute side); an
    # unset one is /dev/null and is not transferred.
    for keys, attr, xfer in ((("input", "stdin"), "In", "TransferIn"),
                             (("output", "stdout"), "Out", "TransferOut"),
                             (("error", "stderr"), "Err", "TransferErr")):
        val = b.get(*keys)
        path = val.strip() if val else ""
        ad[attr] = path or "/dev/null"
        if not path or path == "/dev/null":
            ad[xfer] = False
        elif attr != "In":
            # a real output file says whether it is streamed (stream_output/_error)
            key = "stream_output" if attr == "Out" else "stream_error"
            flag = b.get(key, f"Stream{attr}")
            ad[f"Stream{attr}"] = flag is not None and _bool_text(flag, key, b.src,
                                                                  b.line(key))

    log = b.get("log", "UserLog")
    if log and log.strip():
        ad["UserLog"] = posixpath.normpath(posixpath.join(iwd, log.strip()))

    _set_status(b, qdate)

    prio = b.get("priority", "prio")
    ad["JobPrio"] = 0
    if prio is not None:
        b.expr("JobPrio", prio, "priority", "prio")
    notify = (b.get("notification") or "never").strip().lower()
    if notify not in _NOTIFY:
        raise b.fail(f"notification = {notify!r} must be Never, Always, Complete or "
                     "Error", "notification")
    ad["JobNotification"] = _NOTIFY[notify]
    nuser = b.get("notify_user")
    if nuser:
        ad["NotifyUser"] = nuser.strip()

    rank = b.get("rank", "preferences")
    b.expr("Rank", rank if rank and rank.strip() else "0.0", "rank", "preferences")

    exit_exprs: tuple[tuple[tuple[str, ...], str, str], ...] = (
            (("periodic_hold",), "PeriodicHold", "false"),
            (("periodic_release",), "PeriodicRelease", "false"),
            (("periodic_remove",), "PeriodicRemove", "false"),
            (("on_exit_hold",), "OnExitHold", "false"),
            (("on_exit_remove",), "OnExitRemove", "true"))
    for ekeys, attr, default in exit_exprs:
        val = b.get(*ekeys)
        b.expr(attr, val if val and val.strip() else default, *ekeys)
    for key, attr in (("periodic_hold_reason", "PeriodicHoldReason"),
                      ("periodic_hold_subcode", "PeriodicHoldSubCode"),
                      ("on_exit_hold_reason", "OnExitHoldReason"),
                      ("on_exit_hold_subcode", "OnExitHoldSubCode")):
        val = b.get(key)
        if val is not None:
            b.expr(attr, val, key)
    leave = b.get("leave_in_queue")
    b.expr("LeaveJobInQueue", leave if leave and leave.strip() else "false",
           "leave_in_queue")
    # A vanilla job can reconnect, so it gets a lease even when the file names none
    # (JOB_DEFAULT_LEASE_DURATION, 2400 s by default).
    lease = b.get("job_lease_duration", "JobLeaseDuration")
    lease = lease.strip() if lease and lease.strip() else _DEFAULT_LEASE
    if lease.isdigit():
        ad["JobLeaseDuration"] = int(lease)
    else:
        b.expr("JobLeaseDuration", lease, "job_lease_duration")

    vacate = b.get("job_max_vacate_time", "JobMaxVacateTime")
    if vacate and vacate.strip():
        b.expr("JobMaxVacateTime", vacate, "job_max_vacate_time")

    kill_sig = b.get("kill_sig")
    if kill_sig:
        ad["KillSig"] = kill_sig.strip()
    batch = b.get("batch_name")
    if batch:
        ad["JobBatchName"] = batch.strip()

    for attr, value in (("NumCkpts", 0), ("NumJobStarts", 0), ("NumJobCompletions", 0),
                        ("NumRestarts", 0), ("NumSystemHolds", 0), ("ExitStatus", 0),
                        ("CommittedTime", 0), ("CommittedSlotTime", 0),
                        ("CumulativeSlotTime", 0), ("TotalSuspensions", 0),
                        ("LastSuspensionTime", 0), ("CumulativeSuspensionTime", 0),
                        ("CommittedSuspensionTime", 0), ("OnExitBySignal", False),
                        ("RemoteWallClockTime", 0.0), ("RemoteUserCpu", 0.0),
                        ("RemoteSysCpu", 0.0), ("CumulativeRemoteUserCpu", 0.0),
                        ("CumulativeRemoteSysCpu", 0.0), ("MinHosts", 1), ("MaxHosts", 1),
                        ("CurrentHosts", 0), ("WantRemoteSyscalls", False),
                        ("WantCheckpoint", False)):
        ad[attr] = value

    _set_transfer(b)
    ad["FileSystemDomain"] = filesystem_domain
    _set_requests(b)

    # +Attr and MY.Attr last: like condor_submit they override what it computed.
    for name, raw, ln in attrs:
        text = b.m.expand(raw, ln)
        try:
            ad[name] = parse_expr(text)
        except ClassAdError as exc:
            raise SubmitError(f"{name} = {text!r} is not a ClassAd expression: "
                              f"{getattr(exc, 'reason', exc)}", file=b.src,
                              line=ln) from None

    _set_gpu_requirement(b)
    _check_sizes(b)
    _set_requirements(b, forced={n.lower() for n, _r, _l in attrs})
    return ad


# Job attributes a request may follow although the ad has none at submit time: the
# starter fills them in while the job runs.
_LATER = frozenset({"memoryusage", "diskusage", "diskusage_raw", "imagesize",
                    "imagesize_raw", "residentsetsize", "residentsetsize_raw",
                    "proportionalsetsizekb", "cpususage", "numjobstarts",
                    "transferinputsizemb"})


def _check_sizes(b: _AdBuilder) -> None:
    """A memory or disk request must be a size: a text value, a boolean or a lone word
    that names nothing the job will ever have (``request_memory = lots``) would leave
    the job idle with no reason given, so it is refused here."""
    for attr, key in (("RequestMemory", "request_memory"), ("RequestDisk", "request_disk")):
        e = b.ad.lookup(attr)
        if e is None:
            continue
        c = e.const
        wrong = c is not NOCONST and (isinstance(c, bool) or not isinstance(c, (int, float))) \
            and c is not Undefined
        node = e.node
        if isinstance(node, ast.AttrRef) and node.scope_kind in ("", "my"):
            wrong = node.name.lower() not in _LATER and node.name not in b.ad
        if wrong:
            raise b.fail(f"{key} = {e}: not a size (a number with an optional unit K, "
                         "M, G or T, or an expression that gives one)", key, attr)


def _v2_quoted(text: str) -> str | None:
    """The inside of a V2 double-quoted value (``""`` is one quote), or None."""
    t = text.strip()
    if len(t) >= 2 and t.startswith('"') and t.endswith('"'):
        return t[1:-1].replace('""', '"')
    return None


def _double_quote_trouble(text: str) -> str | None:
    """What is wrong with the double quotes of an arguments or environment value, as
    condor_submit refuses them: a V2 value must close its opening quote and end there
    (a quote inside is written twice); a V1 value has no bare double quote."""
    t = text.strip()
    if not t.startswith('"'):
        m = re.search(r'(?<!\\)"', t)
        if m is None:
            return None
        return f"a double quote that is not escaped (\\\") at {t[m.start():]!r}"
    i = 1
    while i < len(t):
        if t[i] == '"':
            if t.startswith('""', i) and i + 2 < len(t):
                i += 2
                continue
            if i == len(t) - 1:
                return None
            return (f"text after the closing double quote: {t[i:]!r} (write a double "
                    "quote inside as \"\")")
        i += 1
    return "the opening double quote is never closed"


def _set_arguments(b: _AdBuilder) -> None:
    raw = b.get("arguments", "args")
    raw2 = b.get("arguments2")
    if raw is not None and raw2 is not None:
        raise b.fail("both arguments and arguments2 are set; use one", "arguments2")
    if raw2 is not None:
        inner = _v2_quoted(raw2)
        words = parse_v2_words(inner if inner is not None else raw2)
        if words is None:
            raise b.fail("arguments2: unbalanced single quote", "arguments2")
        b.ad["Arguments"] = " ".join(quote_v2_word(w) for w in words)
        return
    if raw is None:
        b.ad["Args"] = ""
        return
    trouble = _double_quote_trouble(raw)
    if trouble is not None:
        raise b.fail(f"arguments = {raw.strip()}: {trouble}", "arguments", "args")
    inner = _v2_quoted(raw)
    if inner is None:
        # V1: words split at whitespace; the ad keeps them joined by single spaces, in
        # the raw form (the submit file's \" is a plain quote there), as condor_submit
        b.ad["Args"] = " ".join(raw.split()).replace('\\"', '"')
        return
    words = parse_v2_words(inner)
    if words is None:
        raise b.fail(f"arguments {raw.strip()}: unbalanced single quote",
                     "arguments", "args")
    b.ad["Arguments"] = " ".join(quote_v2_word(w) for w in words)


def _getenv_filter(spec: str) -> Callable[[str], bool] | None:
    """getenv: a boolean, or a list of name patterns (``!`` excludes). None: nothing."""
    if not spec.strip():
        return None
    flag = boolean_value(spec)
    if flag is not None:
        return (lambda name: True) if flag else None
    pats = [p for p in re.split(r"[,\s]+", spec.strip()) if p]
    neg = [p[1:] for p in pats if p.startswith("!")]
    pos = [p for p in pats if not p.startswith("!")]

    def keep(name: str) -> bool:
        if any(fnmatch.fnmatchcase(name.upper(), p.upper()) for p in neg):
            return False
        return any(fnmatch.fnmatchcase(name.upper(), p.upper()) for p in pos)
    return keep


def _set_environment(b: _AdBuilder) -> None:
    raw1 = b.get("environment", "env")
    raw2 = b.get("environment2")
    if raw1 is not None and raw2 is not None:
        raise b.fail("both environment and environment2 are set; use one",
                     "environment2")
    env: dict[str, str] = {}
    getenv = b.get("getenv")
    if getenv is not None:
        keep = _getenv_filter(getenv)
        if keep is not None:
            # Values that would not survive the V2 quoting HTCondor uses are kept
            # anyway: quote_v2_word can express any value.
            env.update({k: v for k, v in b.env.items() if keep(k)})
    prefer_v1 = False
    raw = raw2 if raw2 is not None else raw1
    if raw is not None and raw.strip().startswith('"'):
        trouble = _double_quote_trouble(raw)
        if trouble is not None:
            raise b.fail(f"environment = {raw.strip()}: {trouble}", "environment", "env",
                         "environment2")
    if raw is not None:
        inner = _v2_quoted(raw)
        if inner is not None or raw2 is not None:
            parsed = parse_env_v2(inner if inner is not None else raw)
        else:
            parsed = parse_env_v1(raw.strip())
            # ``env = A=1;B=2`` asks for the V1 attribute, ``environment`` for V2
            prefer_v1 = raw2 is None and b.m.raw("env") is not None \
                and b.m.raw("environment") is None
        if parsed is None:
            raise b.fail(f"environment {raw.strip()!r} is not a V1 (A=1;B=2) or V2 "
                         "(\"A=1 B=2\") environment", "environment", "env", "environment2")
        env.update(parsed)
    if not env and raw is None:
        return
    if prefer_v1 and all(";" not in v for v in env.values()):
        b.ad["Env"] = ";".join(f"{k}={env[k]}"
                               for k in sorted(env, key=lambda k: k.encode("utf-8")))
        b.ad["EnvDelim"] = ";"
    else:
        b.ad["Environment"] = write_env(env)


def _set_status(b: _AdBuilder, qdate: int) -> None:
    hold = b.get("hold")
    held = hold is not None and _bool_text(hold, "hold", b.src, b.line("hold"))
    if held:
        b.ad["JobStatus"] = 5
        b.ad["HoldReason"] = "submitted on hold at user's request"
        b.ad["HoldReasonCode"] = 15
        b.ad["HoldReasonSubCode"] = 0
    else:
        b.ad["JobStatus"] = 1
    b.ad["EnteredCurrentStatus"] = qdate


def _set_transfer(b: _AdBuilder) -> None:
    should = (b.get("should_transfer_files") or "IF_NEEDED").strip().upper()
    if should not in ("YES", "NO", "IF_NEEDED"):
        raise b.fail(f"should_transfer_files = {should} must be YES, NO or IF_NEEDED",
                     "should_transfer_files")
    when_raw = b.get("when_to_transfer_output")
    when = (when_raw or "ON_EXIT").strip().upper()
    if when not in ("ON_EXIT", "ON_EXIT_OR_EVICT", "ON_SUCCESS", "NEVER"):
        raise b.fail(f"when_to_transfer_output = {when} must be ON_EXIT, "
                     "ON_EXIT_OR_EVICT or ON_SUCCESS", "when_to_transfer_output")
    if should == "NO" and when_raw is None:
        when = "NEVER"
    b.ad["ShouldTransferFiles"] = should
    b.ad["WhenToTransferOutput"] = when
    for key, attr in (("transfer_input_files", "TransferInput"),
                      ("transfer_output_files", "TransferOutput"),
                      ("transfer_executable", None)):
        val = b.get(key)
        if val is None:
            continue
        if attr is None:
            b.ad["TransferExecutable"] = _bool_text(val, key, b.src, b.line(key))
        else:
            b.ad[attr] = ",".join(p.strip() for p in val.split(",") if p.strip())
    image = container_inputs(b, b.topping, b.container)
    if image and should == "NO":
        raise b.fail(f"container_image {image[0]} would be transferred with the job, but "
                     "should_transfer_files = NO (set transfer_container = false to use "
                     "it in place)", "should_transfer_files", "container_image")
    if image:
        listed = b.ad.evaluate("TransferInput")
        b.ad["TransferInput"] = ",".join(
            ([listed] if isinstance(listed, str) and listed else []) + image)
    remaps = b.get("transfer_output_remaps")
    if remaps is not None and remaps.strip():
        # a string, quoted or not (condor_submit strips the quotes)
        text = remaps.strip()
        b.ad["TransferOutputRemaps"] = text[1:-1] if len(text) >= 2 and \
            text[0] == text[-1] == '"' else text


def _set_requests(b: _AdBuilder) -> None:
    ad = b.ad
    cpus = b.get("request_cpus", "RequestCpus")
    if cpus is None or cpus.strip().lower() != "undefined":
        b.expr("RequestCpus", cpus.strip() if cpus and cpus.strip() else "1",
               "request_cpus", "RequestCpus")
    for keys, attr, base, default, word in (
            (("request_memory", "RequestMemory"), "RequestMemory", 1 << 20, "128",
             "megabytes"),
            (("request_disk", "RequestDisk"), "RequestDisk", 1 << 10,
             "MAX({1024, (TransferInputSizeMB+1) * 1.25}) * 1024", "kilobytes")):
        val = b.get(*keys)
        text = val.strip() if val and val.strip() else default
        if text.lower() == "undefined":
            continue
        size = parse_size(text, base)
        if size is not None:
            ad[attr] = size
            continue
        if re.match(r"^\s*\d", text):
            # a number followed by something that is not a unit: a typo, not an
            # expression
            raise b.fail(f"{keys[0]} = {text!r}: unknown unit (use K, M, G or T; a "
                         f"bare number is {word})", *keys)
        b.expr(attr, text, *keys)
    gpus = b.get("request_gpus", "RequestGPUs")
    if gpus is not None and gpus.strip() and gpus.strip().lower() != "undefined":
        b.expr("RequestGPUs", gpus.strip(), "request_gpus", "RequestGPUs")
    if "RequestGPUs" in ad:
        _set_gpu_constraints(b)
    # request_<name> for other resources becomes Request<name>
    # request_cpu and request_gpu are typos condor_submit names, not resources
    done = {"request_cpus", "request_memory", "request_disk", "request_gpus",
            "request_cpu", "request_gpu", "requestcpus", "requestmemory", "requestdisk",
            "requestgpus"}
    for lc, (raw, _ln) in list(b.m.table.items()):
        if not lc.startswith("request_") or lc in done:
            continue
        name = _original_key(b.m, lc)[len("request_"):]
        if len(name) < 2 or name.startswith("_") or name.lower().startswith("gpus_"):
            continue
        val = b.get(lc)
        if val is not None and val.strip():
            b.expr("Request" + name, val.strip(), lc)


# GPU property constraints: submit key, job attribute, and the clause of RequireGPUs it
# adds unless require_gpus already names that property
_GPU_LIMITS = (
    ("gpus_minimum_capability", "GPUsMinCapability", "Capability", "Capability >= GPUsMinCapability"),
    ("gpus_maximum_capability", "GPUsMaxCapability", "Capability", "Capability <= GPUsMaxCapability"),
    ("gpus_minimum_memory", "GPUsMinMemory", "GlobalMemoryMb", "GlobalMemoryMb >= GPUsMinMemory"),
    ("gpus_minimum_runtime", "GPUsMinRuntime", "MaxSupportedVersion",
     "MaxSupportedVersion >= GPUsMinRuntime"),
)
_RUNTIME_RE = re.compile(r"\s*\+?(\d+)(?:\.(\d*))?\s*")


def _set_gpu_constraints(b: _AdBuilder) -> None:
    """A job that requests GPUs: require_gpus becomes RequireGPUs and gpus_minimum_* /
    gpus_maximum_capability their GPUsMin*/GPUsMax* attributes, as condor_submit sets
    them (without request_gpus, condor_submit ignores them all)."""
    require = b.get("require_gpus", "RequireGPUs")
    if require is not None and require.strip():
        b.expr("RequireGPUs", require.strip(), "require_gpus", "RequireGPUs")
    for key, attr, _prop, _clause in _GPU_LIMITS:
        text = b.get(key, attr)
        if text is None or not text.strip():
            continue
        text = text.strip()
        if attr == "GPUsMinMemory":
            mb = parse_size(text, 1 << 20)     # a bare number is megabytes
            if mb is not None:
                b.ad[attr] = mb
                continue
        elif attr == "GPUsMinRuntime":
            m = _RUNTIME_RE.fullmatch(text)
            # "x.y" is version x.y (12.1 -> 12010); one number above 1000 is already
            # in that form (12010), a smaller one a major version (12 -> 12000)
            if m and (not m.group(2) or int(m.group(2)) < 100):
                major = int(m.group(1))
                minor = int(m.group(2)) if m.group(2) else -1
                b.ad[attr] = major if minor == -1 and major > 1000 \
                    else major * 1000 + max(minor, 0) * 10
                continue
        b.expr(attr, text, key, attr)


def _set_gpu_requirement(b: _AdBuilder) -> None:
    """RequireGPUs completed with the clauses of the GPU property constraints, as
    condor_submit does after the job's +attributes: each clause unless RequireGPUs
    already refers to that property (a low-precedence require_gpus is parenthesized)."""
    ad = b.ad
    if "RequestGPUs" not in ad:
        return
    require = ad.lookup("RequireGPUs")
    named: set[str] = set()
    if require is not None:
        refs = require.scoped_references()
        named = refs["unscoped"] | refs["my"]
    clauses = [clause for _key, attr, prop, clause in _GPU_LIMITS
               if attr in ad and prop.lower() not in named]
    if not clauses:
        return
    text = " && ".join(clauses)
    if require is not None:
        node = require.node
        low = isinstance(node, (Cond, Elvis)) or (isinstance(node, Binary) and node.op == "||")
        text = (f"({require})" if low else str(require)) + " && " + text
    b.expr("RequireGPUs", text, "require_gpus", "RequireGPUs")


def _original_key(m: _Macros, lc: str) -> str:
    return m.names.get(lc, lc)


def _set_requirements(b: _AdBuilder, forced: set[str]) -> None:
    ad = b.ad
    if "requirements" in forced:
        return   # +Requirements / MY.Requirements replace generation entirely
    user = b.get("requirements")
    refs: set[str] = set()
    parts: list[str] = []
    if user is not None and user.strip():
        e = b.expr("Requirements", user.strip(), "requirements")
        scoped = e.scoped_references()
        refs = scoped["target"] | scoped["unscoped"]
        parts.append(f"({user.strip()})")
    if "arch" not in refs:
        parts.append(f'(TARGET.Arch == "{b.arch}")')
    topping = requirement_clause(ad, b.topping)
    if topping is not None:
        parts.append(topping)   # no OpSys clause: the image brings its own
    elif not refs & {"opsys", "opsysandver", "opsyslongname", "opsysshortname",
                   "opsysname", "opsyslegacy"}:
        parts.append(f'(TARGET.OpSys == "{b.opsys}")')

    def literal_at_most(attr: str, limit: float) -> bool:
        e = ad.lookup(attr)
        if e is None:
            return False
        v = _literal_number(e)
        return v is not None and v <= limit

    if "disk" not in refs:
        if "RequestDisk" in ad:
            if not literal_at_most("RequestDisk", 0.0):
                parts.append('(versionGE(split(TARGET.CondorVersion)[1], "25.12.0") || '
                             "(TARGET.Disk >= RequestDisk))")
        else:
            parts.append("(TARGET.Disk >= DiskUsage)")
    if "RequestMemory" in ad and not literal_at_most("RequestMemory", 1.0):
        parts.append("(TARGET.Memory >= RequestMemory)")
    if "cpus" not in refs and "RequestCpus" in ad and not literal_at_most("RequestCpus", 1.0):
        parts.append("(TARGET.Cpus >= RequestCpus)")
    # custom resources: Request<tag> attributes, in case-insensitive name order
    tags = sorted((n for n in ad.keys() if n.lower().startswith("request")
                   and len(n) >= 9 and n[7] != "_"
                   and n.lower() not in ("requestcpus", "requestdisk", "requestmemory")),
                  key=str.lower)
    for attr in tags:
        tag = attr[7:]
        if tag.lower() in refs:
            continue
        value = ad.evaluate(attr)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) or value is Undefined:
            if isinstance(value, (int, float)) and value <= 0:
                continue
            if ("Require" + tag) in ad:
                parts.append(f"(countMatches(MY.Require{tag},TARGET.Available{tag}) >= "
                             f"{attr})")
            else:
                parts.append(f"(TARGET.{tag} >= {attr})")
        elif isinstance(value, str) and value:
            parts.append(f"regexp({attr}, TARGET.{tag})")
        elif value is Error:
            continue
    should = ad.evaluate("ShouldTransferFiles")
    if should == "NO":
        if "filesystemdomain" not in refs:
            parts.append("(TARGET.FileSystemDomain == MY.FileSystemDomain)")
    elif not refs & {"hasfiletransfer", "hasjobtransferplugins"}:
        inner = "TARGET.HasFileTransfer"
        if ad.evaluate("WhenToTransferOutput") == "ON_SUCCESS":
            inner += ' && versioncmp( split(TARGET.CondorVersion)[1], "8.9.7" ) >= 0'
        if should == "IF_NEEDED" and "filesystemdomain" not in refs:
            parts.append(f"((TARGET.FileSystemDomain == MY.FileSystemDomain) || ({inner}))")
        else:
            parts.append(f"({inner})")
    b.expr("Requirements", " && ".join(parts), "requirements")


def _statements_state(desc: SubmitDescription, *, cluster_id: int, env: Mapping[str, str],
                      arch: str, opsys: str) -> tuple[_Macros, _Queue | None]:
    macros = _Macros(source=desc.source, env=env)
    macros.defaults = {"arch": arch, "opsys": opsys, "islinux": "1", "iswindows": "0",
                       "submit_file": desc.source}
    macros.live = {"cluster": str(cluster_id), "clusterid": str(cluster_id),
                   "process": "0", "procid": "0", "step": "0", "row": "0",
                   "itemindex": "0", "node": ""}
    last: _Queue | None = None
    for stmt in desc.statements:
        if isinstance(stmt, _Assign):
            if not (stmt.key.startswith("+") or stmt.key.upper().startswith("MY.")):
                macros.table[stmt.key.lower()] = (stmt.value, stmt.line)
                macros.names[stmt.key.lower()] = stmt.key
        else:
            last = stmt
    return macros, last


def expand(text: str | bytes, key: str, source: str = "<submit>", *, cluster_id: int = 1,
           env: Mapping[str, str] | None = None, arch: str = "X86_64",
           opsys: str = "LINUX") -> str:
    """The value of ``key`` with its macros expanded as for the first job (Process 0),
    the way ``htcondor2.Submit.expand`` shows it."""
    macros, _last = _statements_state(read_description(text, source),
                                      cluster_id=cluster_id, env=dict(env or {}),
                                      arch=arch, opsys=opsys)
    return macros.get(key) or ""


def item_data(text: str | bytes, source: str = "<submit>", *, submit_dir: str,
              fs: SubmitFS | None = None, env: Mapping[str, str] | None = None
              ) -> list[dict[str, str]]:
    """The loop variables of each item of the last queue statement (one entry per item,
    not per step), like ``htcondor2.Submit.itemdata``."""
    macros, last = _statements_state(read_description(text, source), cluster_id=1,
                                     env=dict(env or {}), arch="X86_64", opsys="LINUX")
    if last is None:
        return []
    out: list[dict[str, str]] = []
    for item in queue_items(last, macros, submit_dir=submit_dir, fs=fs or LocalFS()):
        if item.step == 0 and item.variables:
            out.append(dict(item.variables))
    return out


# --- the whole description ----------------------------------------------------------

def parse_submit(text: str | bytes, source: str = "<submit>", *, cluster_id: int,
                 owner: str, submit_dir: str, qdate: int,
                 env: Mapping[str, str] | None = None, fs: SubmitFS | None = None,
                 uid_domain: str = "localhost", filesystem_domain: str | None = None,
                 arch: str = "X86_64", opsys: str = "LINUX",
                 container: ContainerOptions | None = None) -> list[ClassAd]:
    """Job ads for every job the description queues, ProcId counting from 0.

    ``submit_dir`` must be absolute: relative ``initialdir``, ``executable`` and
    ``log`` are resolved against it (the first) and against Iwd (the others)."""
    return list(submit_ads(text, source, cluster_id=cluster_id, owner=owner,
                           submit_dir=submit_dir, qdate=qdate, env=env, fs=fs,
                           uid_domain=uid_domain, filesystem_domain=filesystem_domain,
                           arch=arch, opsys=opsys, container=container))


def count_jobs(text: str | bytes, source: str = "<submit>", *, cluster_id: int,
               submit_dir: str, env: Mapping[str, str] | None = None,
               fs: SubmitFS | None = None) -> int:
    """How many jobs the description queues, found without building their ads."""
    macros = _Macros(source=source, env=dict(env or {}))
    macros.defaults = {"submit_file": source, "cluster": str(cluster_id),
                       "clusterid": str(cluster_id)}
    count = 0
    for stmt in read_description(text, source).statements:
        if isinstance(stmt, _Assign):
            if not (stmt.key.startswith("+") or stmt.key.upper().startswith("MY.")):
                macros.table[stmt.key.lower()] = (stmt.value, stmt.line)
                macros.names[stmt.key.lower()] = stmt.key
            continue
        macros.live = {"cluster": str(cluster_id), "clusterid": str(cluster_id),
                       "process": "0", "procid": "0", "step": "0", "row": "0",
                       "itemindex": "0", "node": ""}
        count += len(queue_items(stmt, macros, submit_dir=submit_dir, fs=fs or LocalFS()))
    return count


def submit_ads(text: str | bytes, source: str = "<submit>", *, cluster_id: int,
               owner: str, submit_dir: str, qdate: int,
               env: Mapping[str, str] | None = None, fs: SubmitFS | None = None,
               uid_domain: str = "localhost", filesystem_domain: str | None = None,
               arch: str = "X86_64", opsys: str = "LINUX",
               container: ContainerOptions | None = None) -> Iterator[ClassAd]:
    """:func:`parse_submit`'s ads one at a time, each made only when asked for (a
    large queue statement is never held whole)."""
    if not posixpath.isabs(submit_dir):
        raise SubmitError(f"submit directory {submit_dir!r} is not absolute", file=source)
    desc = read_description(text, source)
    env = dict(env or {})
    fs = fs or LocalFS()
    files = fs

    def exists(path: str) -> bool:
        return bool(files.glob(_glob.escape(path)))

    macros = _Macros(source=source, env=env)
    macros.defaults = {"arch": arch, "opsys": opsys, "islinux": "1", "iswindows": "0",
                       "submit_file": source, "cluster": str(cluster_id),
                       "clusterid": str(cluster_id)}
    attrs: dict[str, tuple[str, str, int]] = {}
    proc = 0
    queued_any = False
    for stmt in desc.statements:
        if isinstance(stmt, _Assign):
            key = stmt.key
            if key.startswith("+") or key.upper().startswith("MY."):
                name = key[1:] if key.startswith("+") else key[3:]
                if not _NAME.match(name):
                    raise SubmitError(f"bad attribute name {name!r}", file=source,
                                      line=stmt.line)
                if reserved.is_internal(name):
                    raise SubmitError(f"{key}: {name} is an attribute only condorpy sets; "
                                      "a submit description cannot set it", file=source,
                                      line=stmt.line)
                attrs[name.lower()] = (name, stmt.value, stmt.line)
            else:
                macros.table[key.lower()] = (stmt.value, stmt.line)
                macros.names[key.lower()] = key
            continue
        queued_any = True
        macros.live = {"cluster": str(cluster_id), "clusterid": str(cluster_id),
                       "process": "0", "procid": "0", "step": "0", "row": "0",
                       "itemindex": "0", "node": ""}
        items = queue_items(stmt, macros, submit_dir=submit_dir, fs=fs)
        for item in items:
            live = {"cluster": str(cluster_id), "clusterid": str(cluster_id),
                    "process": str(proc), "procid": str(proc), "step": str(item.step),
                    "row": str(item.row), "itemindex": str(item.row), "node": ""}
            for name, value in item.variables:
                live[name.lower()] = value
            macros.live = live
            builder = _AdBuilder(macros, submit_dir=submit_dir, env=env, arch=arch,
                                 opsys=opsys, queue_line=stmt.line, container=container,
                                 exists=exists)
            ad = _build_ad(builder, cluster_id=cluster_id, proc_id=proc, owner=owner,
                           user=f"{owner}@{uid_domain}", qdate=qdate,
                           filesystem_domain=filesystem_domain or uid_domain,
                           attrs=list(attrs.values()))
            refusal = reserved.submission_refusal(ad)
            if refusal is not None:
                # the daemon would refuse the job: say so here, at the line that did it
                attr, why = refusal
                given = attrs.get(attr.lower())
                raise SubmitError(f"{attr} cannot be set by a submit description: {why}",
                                  file=source, line=given[2] if given else stmt.line)
            yield ad
            proc += 1
    if not queued_any:
        raise SubmitError("no queue statement: nothing would be submitted", file=source)
