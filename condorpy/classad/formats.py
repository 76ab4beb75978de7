"""The ClassAd formats with ``ClassAd`` as the class of the ads read: old, new, JSON.

The readers and writers themselves are in :mod:`condorpy.classad.adtext`, below the
container (whose ``parse_*`` / ``to_*`` methods use them); this module, above it, is
what code outside the package reads ads with when it has no ClassAd class in hand.
"""

from __future__ import annotations

from condorpy.classad import adtext
from condorpy.classad.ad import ClassAd
from condorpy.classad.adtext import format_shown, format_value, to_json, to_new, to_old
from condorpy.errors import ClassAdError

__all__ = ["format_shown", "format_value", "from_json", "from_json_many", "parse_new",
           "parse_old", "parse_old_many", "parse_old_nonempty", "to_json", "to_new",
           "to_old"]


def parse_old(text: str, source: str | None = None) -> ClassAd:
    return adtext.parse_old(ClassAd, text, source)


def parse_old_nonempty(text: str, source: str, what: str = "job ad") -> ClassAd:
    """An old-format ad that must say something: empty input (nothing, or only blank
    lines and comments) is refused, naming where it came from, rather than read as an
    ad with no attributes that every expression then finds Undefined."""
    ad = parse_old(text, source)
    if not any(True for _ in ad.keys()):
        raise ClassAdError(f"the {what} is empty: no attributes", source=source)
    return ad


def parse_old_many(text: str, source: str | None = None) -> list[ClassAd]:
    return adtext.parse_old_many(ClassAd, text, source)


def parse_new(text: str, source: str | None = None) -> ClassAd:
    return adtext.parse_new(ClassAd, text, source)


def from_json(text: str, source: str | None = None) -> ClassAd:
    return adtext.from_json(ClassAd, text, source)


def from_json_many(text: str, source: str | None = None) -> list[ClassAd]:
    return adtext.from_json_many(ClassAd, text, source)
