"""Tokens of the ClassAd language, read the way HTCondor 25.x's lexer reads them.

One regular expression splits the text into (leading space, token) pairs in a single
call; the parser classifies a token by its first character. The odd forms follow the
reference library (``classad2``), which decides them: ``007`` is the decimal 7, an
integer with a leading zero and an 8 or 9 is rejected, ``0x1F`` reads as 0, an integer
literal outside the 64-bit range reads as 0, ``5.`` is rejected, a ``-`` written directly
before a number where an operand is expected is part of the number (so
``-9223372036854775808`` is representable), unknown string escapes drop the backslash,
octal escapes take up to three digits but never exceed 255, and a NUL is refused.
Comments are ``/* ... */``.
"""

from __future__ import annotations

import re

from condorpy.errors import ClassAdSyntaxError

INT_MIN = -(1 << 63)
INT_MAX = (1 << 63) - 1

KEYWORDS = frozenset({"true", "false", "undefined", "error", "is", "isnt"})

_WS = r"(\s*(?:/\*.*?\*/\s*)*)"
_TOKEN = (r"([A-Za-z_][A-Za-z0-9_]*"
          r"|[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
          r"|[0-9]+[eE][+-]?[0-9]+|0[xX][0-9a-fA-F]+|[0-9]+"
          # strings and quoted names unrolled: a run of plain characters is one step
          # of the matcher, not one alternation a character (a 4 MB string: 1 s)
          r'|"[^"\\]*(?:\\.[^"\\]*)*"'
          r"|'[^'\\]*(?:\\.[^'\\]*)*'"
          r"|=\?=|=!=|>>>|[=!<>]=|<<|>>|&&|\|\||[-+*/%<>!~&|^?:()\[\]{},;.=])")
# Each match is a token with the space (and comments) before it; findall returns plain
# strings, and str.lstrip over the list (in C) leaves the tokens. Without comments a
# plain \s* is much faster to match, so that is the common path.
_RAW_RE = re.compile(r"\s*(?:" + _TOKEN[1:], re.DOTALL)
_RAW_COMMENTS_RE = re.compile(r"(?:\s|/\*.*?\*/)*(?:" + _TOKEN[1:], re.DOTALL)
# (public: parser_limits counts tokens with them before anything is parsed)
RAW_RE, RAW_COMMENTS_RE = _RAW_RE, _RAW_COMMENTS_RE
_LEAD_RE = re.compile(r"(?:\s|/\*.*?\*/)*", re.DOTALL)
_ONE_RE = re.compile(_TOKEN, re.DOTALL)
_WS_RE = re.compile(_WS, re.DOTALL)


_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "r": "\r", "f": "\f", "v": "\v",
                   "a": "\a", "\\": "\\", '"': '"', "'": "'", "?": "?"}
_ESCAPE_RE = re.compile(r"\\([0-3][0-7]{0,2}|[4-7][0-7]?|.)", re.DOTALL)


def position(text: str, pos: int) -> tuple[int, int]:
    """(line, column), both from 1, of an offset."""
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def syntax_error(msg: str, text: str, pos: int) -> ClassAdSyntaxError:
    line, col = position(text, pos)
    return ClassAdSyntaxError(msg, text=text, line=line, column=col)


def tokenize(text: str) -> tuple[list[str], list[str]]:
    """(tokens, each token with the space before it). A "" token ends the list; its
    raw form is the trailing space."""
    if "/*" in text:
        raw = _RAW_COMMENTS_RE.findall(text)
        toks = [_LEAD_RE.sub("", r, count=1) for r in raw]
    else:
        raw = _RAW_RE.findall(text)
        toks = list(map(str.lstrip, raw))
    used = sum(map(len, raw))
    if used != len(text):
        tail = _WS_RE.match(text, used)
        if tail is None or tail.end() != len(text) or not _covers(text, raw):
            raise _lex_error(text)
        raw.append(tail.group())
    else:
        raw.append("")
    toks.append("")
    return toks, raw


# --- pieces ---------------------------------------------------------------------
# The quick path (quickparse.py) reads the pieces str.split() leaves; a piece holding
# several tokens ("x>=5", "f(a,b)") is opened up by split_piece.

# one number token, optionally with the '-' the parser joins to it
NUMBER_RE = re.compile(r"-?(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
                       r"|[0-9]+[eE][+-]?[0-9]+|0[xX][0-9a-fA-F]+|[0-9]+)")


def split_piece(piece: str) -> list[str] | None:
    """The tokens of a piece of text without spaces (None: it holds something that is
    not a token), with a '-' joined to the number right after it, as the parser reads them
    where an operand is expected."""
    parts: list[str] = _ONE_RE.findall(piece)
    if sum(map(len, parts)) != len(piece):
        return None
    if "-" in parts:
        # Only where an operand is expected: after an operand ("x-5") the '-' is an
        # operator, and leaving it apart here spares the parser splitting "-5" again
        # (which, inside one long piece, would copy the rest of the piece each time).
        out: list[str] = []
        glue = False
        prev = ""
        for p in parts:
            if glue and (p[0] in "0123456789" or (p[0] == "." and len(p) > 1)):
                out[-1] = "-" + p
            else:
                out.append(p)
            glue = p == "-" and not _ends_operand(prev)
            prev = p
        return out
    return parts


def _ends_operand(tok: str) -> bool:
    """A token after which an operator is expected (a name, a number, a closing
    bracket); False for "" (the start of a piece: the parser decides there)."""
    if not tok:
        return False
    c = tok[-1]
    if c in ")]}":
        return True
    if c.isalnum() or c == "_":
        return tok.lower() not in ("is", "isnt")
    return False


def _covers(text: str, raw: list[str]) -> bool:
    pos = 0
    for r in raw:
        if not text.startswith(r, pos):
            return False
        pos += len(r)
    return True


def _lex_error(text: str) -> ClassAdSyntaxError:
    pos = 0
    n = len(text)
    while pos < n:
        m = _WS_RE.match(text, pos)
        assert m is not None
        pos = m.end()
        if pos >= n:
            break
        t = _ONE_RE.match(text, pos)
        if t is None:
            if text.startswith("/*", pos):
                return syntax_error("unterminated comment", text, pos)
            if text[pos] in "\"'":
                return syntax_error("unterminated string", text, pos)
            return syntax_error(f"unexpected character {text[pos]!r}", text, pos)
        pos = t.end()
    return syntax_error("unreadable text", text, 0)


def unescape(body: str) -> str | None:
    """Decode escapes; None where the result would hold a NUL (the reference rejects it)."""
    if "\\" not in body:
        return None if "\0" in body else body

    def repl(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "01234567":
            return chr(int(e, 8))
        return _SIMPLE_ESCAPES.get(e, e)

    out = _ESCAPE_RE.sub(repl, body)
    return None if "\0" in out else out


def unescape_old(body: str) -> str | None:
    """Old-format strings: a backslash escapes a quote and nothing else."""
    out = body.replace('\\"', '"')
    return None if "\0" in out else out


def number_value(tok: str, negative: bool) -> int | float | None:
    """The value of a number token (None: a malformed one)."""
    c = tok[-1]
    if "." in tok or (("e" in tok or "E" in tok) and not tok[:2].lower() == "0x"):
        v = float(tok)
        return -v if negative else v
    if tok[:2] in ("0x", "0X"):
        return 0
    if len(tok) > 1 and tok[0] == "0" and ("8" in tok or "9" in tok):
        return None
    del c
    iv = int(tok)
    if negative:
        iv = -iv
    return iv if INT_MIN <= iv <= INT_MAX else 0
