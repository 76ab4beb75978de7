"""A tiny arithmetic evaluator for ``$INT``, ``$REAL``, ``$CHOICE`` and ``if``.

Only numbers, ``+ - * / %``, unary signs and parentheses: enough for the constant
arithmetic configuration files compute, without depending on the ClassAd layer.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\s*(?:(\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)|(.))")


class ArithError(ValueError):
    """The text is not constant arithmetic."""


def eval_arith(text: str) -> int | float:
    tokens: list[str | int | float] = []
    for m in _TOKEN.finditer(text):
        num, op = m.group(1), m.group(2)
        if num is not None:
            is_float = any(ch in num for ch in ".eE")
            tokens.append(float(num) if is_float else int(num))
        elif op is not None:
            if op not in "+-*/%()":
                raise ArithError(f"not arithmetic: {text!r}")
            tokens.append(op)
    if not tokens:
        raise ArithError("empty")
    parser = _Parser(tokens)
    value = parser.expr()
    if parser.pos != len(tokens):
        raise ArithError(f"trailing text in {text!r}")
    return value


class _Parser:
    def __init__(self, tokens: list[str | int | float]) -> None:
        self.tokens = tokens
        self.pos = 0

    def _peek(self) -> str | int | float | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expr(self) -> int | float:
        value = self.term()
        while self._peek() in ("+", "-"):
            op = self.tokens[self.pos]
            self.pos += 1
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        return value

    def term(self) -> int | float:
        value = self.unary()
        while self._peek() in ("*", "/", "%"):
            op = self.tokens[self.pos]
            self.pos += 1
            rhs = self.unary()
            if op == "*":
                value = value * rhs
            elif rhs == 0:
                raise ArithError("division by zero")
            elif op == "/":
                if isinstance(value, int) and isinstance(rhs, int):
                    q = abs(value) // abs(rhs)
                    value = q if (value >= 0) == (rhs >= 0) else -q
                else:
                    value = value / rhs
            else:
                value = int(value) % int(rhs) if isinstance(value, int) else value % rhs
        return value

    def unary(self) -> int | float:
        tok = self._peek()
        if tok in ("+", "-"):
            self.pos += 1
            v = self.unary()
            return -v if tok == "-" else v
        if tok == "(":
            self.pos += 1
            v = self.expr()
            if self._peek() != ")":
                raise ArithError("missing )")
            self.pos += 1
            return v
        if isinstance(tok, (int, float)):
            self.pos += 1
            return tok
        raise ArithError("expected a number")
