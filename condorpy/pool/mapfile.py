"""The map file (``CERTIFICATE_MAPFILE``): how an authenticated name becomes a
canonical ``user@domain``, as HTCondor's ``MapFile`` reads it.

Each line is ``METHOD PRINCIPAL CANONICAL``: the method as the handshake names it
(``SSL``, ``FS``, ``CLAIMTOBE``, ``IDTOKENS``...), a regular expression matched anywhere
in the authenticated name (an SSL peer's subject as ``/C=US/O=Org/CN=host``), and the
canonical name, where ``\\1``..``\\9`` take the expression's groups (``\\0`` the whole
match). A field holding spaces is written in double quotes (``\\"`` inside). Lines whose
first field starts with ``#`` are comments; the first matching line of a method wins. A
canonical name without ``@`` gets ``UID_DOMAIN``. ``@include`` is not read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from condorpy.config import Config


@dataclass(frozen=True)
class Rule:
    method: str
    pattern: re.Pattern[str]
    canonical: str


@dataclass(frozen=True)
class MapFile:
    rules: tuple[Rule, ...] = ()
    source: str = ""

    def canonical(self, method: str, name: str) -> str | None:
        """The canonical name ``name`` maps to for ``method``, or None."""
        for rule in self.rules:
            if rule.method != method:
                continue
            m = rule.pattern.search(name)
            if m is not None:
                return substitute(rule.canonical, (m.group(0),) + m.groups(default=""))
        return None


def substitute(template: str, groups: tuple[str, ...]) -> str:
    out: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c == "\\" and i + 1 < len(template):
            n = template[i + 1]
            if n.isdigit() and int(n) < len(groups):
                out.append(groups[int(n)])
                i += 2
                continue
            out.append("\\")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _field(line: str, pos: int) -> tuple[str, int]:
    while pos < len(line) and line[pos] in " \t\n":
        pos += 1
    if pos < len(line) and line[pos] == '"':
        pos += 1
        out: list[str] = []
        while pos < len(line):
            c = line[pos]
            if c == '"':
                return "".join(out), pos + 1
            if c == "\\" and pos + 1 < len(line):
                pos += 1
                out.append(line[pos] if line[pos] in '"\\' else "\\" + line[pos])
            else:
                out.append(c)
            pos += 1
        return "".join(out), pos      # an unclosed quote runs to the line's end
    start = pos
    while pos < len(line) and line[pos] not in " \t\n":
        pos += 1
    return line[start:pos], pos


def parse(text: str, source: str = "the map file") -> MapFile:
    """The rules of a map file's text. A line that cannot be used is skipped, as
    HTCondor does; an expression that does not compile raises ValueError naming the
    line."""
    rules: list[Rule] = []
    for number, line in enumerate(text.splitlines(), 1):
        method, pos = _field(line, 0)
        if not method or method.startswith("#") or method == "@include":
            continue
        principal, pos = _field(line, pos)
        canonical, pos = _field(line, pos)
        if not principal or not canonical:
            continue
        try:
            pattern = re.compile(principal)
        except re.error as exc:
            raise ValueError(f"{source} line {number}: {principal!r} is not a regular "
                             f"expression ({exc})") from None
        rules.append(Rule(method.upper(), pattern, canonical))
    return MapFile(tuple(rules), source)


def load(cfg: Config) -> MapFile | None:
    """CERTIFICATE_MAPFILE's rules; None when the knob is unset."""
    path = cfg.get("CERTIFICATE_MAPFILE")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        return parse(text, path)
    except OSError as exc:
        raise cfg.invalid("CERTIFICATE_MAPFILE",
                          f"a readable map file ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise cfg.invalid("CERTIFICATE_MAPFILE", str(exc)) from None


def split_canonical(name: str, uid_domain: str) -> str:
    """``user@domain`` from a canonical name, as HTCondor splits at the last ``@``."""
    return name if "@" in name else f"{name}@{uid_domain}"
