"""Reading untrusted input: files and streams as UTF-8 text, and JSON of bounded depth.

Every layer that reads what a user wrote goes through here, so that a stray Latin-1
byte or a JSON document nested a million deep is a one-line error naming its source,
never a ``UnicodeDecodeError`` or ``RecursionError`` escaping as an internal error.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from condorpy.errors import CondorpyError

# Deeper than any real ad or timeline, and shallow enough that the recursive code
# which walks the parsed value (ClassAd conversion, json.dumps) has stack to spare;
# it matches the ClassAd parser's own nesting limit.
MAX_JSON_DEPTH = 200


class NotTextError(CondorpyError):
    """A file or stream that must be UTF-8 text is not; names it and the first bad byte."""

    def __init__(self, source: str, data: bytes, exc: UnicodeDecodeError) -> None:
        line = data.count(b"\n", 0, exc.start) + 1
        super().__init__(f"{source} is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                         f"offset {exc.start}, line {line})")
        self.source = source
        self.offset = exc.start


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as text, or :class:`NotTextError` naming ``source``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(source, data, exc) from None


def read_text(path: str, source: str | None = None, *,
              on_os_error: Callable[[str], CondorpyError] | None = None) -> str:
    """The UTF-8 text of ``path`` (``-``: standard input). An unreadable file raises
    ``on_os_error(reason)`` when given (so each command keeps its own wording), else a
    :class:`CondorpyError` naming the file."""
    name = source or ("<stdin>" if path == "-" else path)
    if path == "-":
        return read_stdin(name)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if on_os_error is not None:
            raise on_os_error(reason) from None
        raise CondorpyError(f"cannot read {name}: {reason}") from None
    return decode_utf8(data, name)


def read_stdin(source: str = "<stdin>") -> str:
    """Standard input as UTF-8 text, whatever the locale's error handler would do."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:   # a text stream put in its place (tests, embedding): already text
        return sys.stdin.read()
    return decode_utf8(buffer.read(), source)


def loads_json(text: str) -> Any:
    """``json.loads`` that turns nesting deeper than :data:`MAX_JSON_DEPTH` (including the
    decoder's own RecursionError) into ``json.JSONDecodeError``, so callers' existing
    handlers name the file and line."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than {MAX_JSON_DEPTH} levels", text,
                                   _deep_position(text)) from None
    if _depth_exceeds(value, MAX_JSON_DEPTH):
        raise json.JSONDecodeError(f"nested deeper than {MAX_JSON_DEPTH} levels", text,
                                   _deep_position(text))
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    # Iterative, so that the check itself cannot overflow the stack.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children)
    return False


def _deep_position(text: str) -> int:
    """Where the nesting first goes past the limit (brackets inside strings are rare
    enough in such documents that a plain count is good enough to point at the line)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return i
        elif ch in "]}":
            depth -= 1
    return 0


def shorten(text: str, limit: int = 200) -> str:
    """A user's expression as a message shows it: at most ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + "..."
