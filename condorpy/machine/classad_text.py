"""Reading the old-ClassAd text that inventory commands print (``Name = value`` lines).

Values are literals: integers, reals, strings, booleans, ``undefined``, lists
``{ ... }`` and nested records ``[ a = 1; b = "x"; ]``, which is everything
``condor_gpu_discovery`` and typical resource scripts print, or top-level constant
expressions (``4 * 1024``). Anything else is an error that names the source and line,
so a broken script is reported, not guessed at.
"""

from __future__ import annotations

import re
from typing import Any

from condorpy.classad import parse_expr
from condorpy.errors import ClassAdError, MachineError


class InventoryError(MachineError):
    """A machine-resource knob or its inventory command produced something unusable."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)")


class _Reader:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.pos = 0
        self.where = where

    def fail(self, what: str) -> InventoryError:
        return InventoryError(f"{self.where}: {what} in {self.text.strip()!r}")

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def peek(self) -> str:
        self.ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def eat(self, ch: str) -> bool:
        if self.peek() == ch:
            self.pos += 1
            return True
        return False

    def name(self) -> str:
        self.ws()
        m = _NAME.match(self.text, self.pos)
        if not m:
            raise self.fail("expected an attribute name")
        self.pos = m.end()
        return m.group(0)

    def value(self) -> Any:
        ch = self.peek()
        if ch == '"':
            return self.string()
        if ch == "[":
            self.pos += 1
            rec: dict[str, Any] = {}
            while not self.eat("]"):
                key = self.name()
                if not self.eat("="):
                    raise self.fail(f"expected '=' after {key}")
                rec[key] = self.value()
                if not self.eat(";") and self.peek() != "]":
                    raise self.fail("expected ';' or ']' in a record")
            return rec
        if ch == "{":
            self.pos += 1
            items: list[Any] = []
            if self.eat("}"):
                return items
            while True:
                items.append(self.value())
                if self.eat("}"):
                    return items
                if not self.eat(","):
                    raise self.fail("expected ',' or '}' in a list")
        m = _NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            tok = m.group(0)
            return float(tok) if any(c in tok for c in ".eE") else int(tok)
        m = _NAME.match(self.text, self.pos)
        if m:
            word = m.group(0).lower()
            if word in ("true", "false"):
                self.pos = m.end()
                return word == "true"
            if word == "undefined":
                self.pos = m.end()
                return None
        raise self.fail("expected a literal value (string, number, boolean, list or record)")

    def string(self) -> str:
        assert self.text[self.pos] == '"'
        self.pos += 1
        out = []
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "\\" and self.pos + 1 < len(self.text):
                nxt = self.text[self.pos + 1]
                out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
                self.pos += 2
                continue
            if c == '"':
                self.pos += 1
                return "".join(out)
            out.append(c)
            self.pos += 1
        raise self.fail("unterminated string")

    def end(self) -> None:
        self.ws()
        if self.pos != len(self.text):
            raise self.fail(f"unexpected text {self.text[self.pos:]!r}")


def parse_ad_lines(text: str, source: str) -> dict[str, Any]:
    """Parse ``Name = literal`` lines; '#' comment lines and blank lines are skipped."""
    ad: dict[str, Any] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        r = _Reader(line, f"{source}, line {lineno}")
        key = r.name()
        if not r.eat("="):
            raise r.fail(f"expected '=' after {key}")
        start = r.pos
        try:
            ad[key] = r.value()
            r.end()
        except InventoryError as literal_error:
            ad[key] = _constant(line[start:], literal_error)
    return ad


def _constant(text: str, literal_error: InventoryError) -> Any:
    """A value that is a constant ClassAd expression (``4 * 1024``); else the literal error."""
    try:
        value = parse_expr(text).evaluate()
    except ClassAdError:
        raise literal_error from None
    if type(value) in (int, float, str, bool):
        return value
    raise literal_error


def parse_literal(text: str, source: str) -> Any:
    r = _Reader(text, source)
    v = r.value()
    r.end()
    return v
