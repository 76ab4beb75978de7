"""What the parser takes: bounds on the text of one expression and of one ad.

Evaluation runs under a budget (:mod:`condorpy.classad.budget`), but reading text is
paid for before any budget applies: the daemon parses what users, hooks and pools send
(submitted ads, qedit values, constraints, hook replies, ads from the wire) on its one
loop, and compiles what it parsed on first use. Parsing and compiling cost about 15 us
a token, so an expression of a million tokens (``a+a+...+a``, a list of a million
items) would hold the loop for seconds. Nesting has its own limit (the parser's
``MAX_DEPTH``: evaluation recurses per level).

Each limit is checked before the work it bounds, at the cost of a scan of at most
:data:`MAX_EXPR_TOKENS` tokens, and is refused as a syntax error at the start of the
text (so the caller's message names the ad, the attribute and the line as for any other
syntax error). The limits sit far above what a job, a policy or a pool's ad holds (a
job ad has a few hundred attributes; a megabyte of arguments or environment is read).
"""

from __future__ import annotations

import itertools

from condorpy.classad.lexer import RAW_COMMENTS_RE, RAW_RE
from condorpy.errors import ClassAdSyntaxError

__all__ = ["MAX_EXPR_CHARS", "MAX_EXPR_TOKENS", "MAX_AD_LINES", "check_expr_text",
           "check_ad_text", "check_ad_lines"]

# One expression's text (an attribute's value, a constraint): 4 MiB, four times the
# megabyte of arguments or environment a job may carry.
MAX_EXPR_CHARS = 4 << 20
# One expression's tokens (names, literals, operators, brackets; a node is at least
# one): parsed and compiled in well under half a second (a START naming 3,000 owners
# is 12,000).
MAX_EXPR_TOKENS = 50_000
# One old-format ad's attribute lines. A stored job is its cluster's first ad followed
# by the lines in which it differs, so this is twice the attributes an ad may have.
MAX_AD_LINES = 20_000


def check_expr_text(text: str) -> None:
    """Refuse an expression's text over the size or token limits (a ClassAdSyntaxError
    at its start); the cheap case, a text too short to break either, costs a len()."""
    n = len(text)
    if n <= MAX_EXPR_TOKENS:     # every token is at least a character
        return
    if n > MAX_EXPR_CHARS:
        raise ClassAdSyntaxError(f"expression of {n} characters, more than the "
                                 f"{MAX_EXPR_CHARS} ({MAX_EXPR_CHARS >> 20} MiB) allowed",
                                 text=_head(text))
    pattern = RAW_COMMENTS_RE if "/*" in text else RAW_RE
    counted = sum(1 for _ in itertools.islice(pattern.finditer(text), MAX_EXPR_TOKENS + 1))
    if counted > MAX_EXPR_TOKENS:
        raise ClassAdSyntaxError(f"expression of more than {MAX_EXPR_TOKENS} tokens "
                                 "(names, literals, operators)", text=_head(text))


def check_ad_text(text: str, source: str | None) -> None:
    """Refuse, before its lines are read one by one, an old-format text whose lines
    could not all be blank or comments (more than four times the limit)."""
    n = text.count("\n")
    if n > 4 * MAX_AD_LINES:
        raise ClassAdSyntaxError(f"ad of {n} lines, more than an ad may have (at most "
                                 f"{MAX_AD_LINES} attribute lines)", text=_head(text),
                                 source=source)


def check_ad_lines(count: int, text: str, source: str | None) -> None:
    """Refuse an old-format ad of more than :data:`MAX_AD_LINES` attribute lines."""
    if count > MAX_AD_LINES:
        raise ClassAdSyntaxError(f"ad of {count} attribute lines, more than the "
                                 f"{MAX_AD_LINES} allowed", text=_head(text),
                                 source=source)


def _head(text: str) -> str:
    """The start of the text, for the error's excerpt (never all of a huge one)."""
    first = text[:80].split("\n", 1)[0]
    return first + ("..." if len(first) < len(text) else "")
