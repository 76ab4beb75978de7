"""The result a starter leaves in its execute directory (``final.ad``): read by the
daemon when a starter ends and by the pool side when it re-adopts a pool job that
ended while the daemon was away."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from condorpy.classad import ClassAd, Error, Undefined
from condorpy.errors import ClassAdError


def read_result(path: Path) -> dict[str, Any] | None:
    """The attributes of the result ad at ``path`` that evaluate to a value; None when
    there is none, or it is unreadable."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        ad = ClassAd.parse_old(text, source=str(path))
    except ClassAdError:
        return None
    out = {}
    for name in ad.keys():
        v = ad.evaluate(name)
        if v is not Undefined and v is not Error:
            out[name] = v
    return out
