"""``-format FMT EXPR``, as condor_q and condor_history print it: each job's values
through printf-style formats, the formats' texts run together with no separator and no
line end of their own (``\\n`` in FMT ends a line). Pure: ads in, text out.

What each conversion prints, as HTCondor's tools print it (checked against condor_history
23.9 on the same ads):

* ``%d %i %x %X %o %u %c``: an integer, a real cut to one, a boolean as 1 or 0.
* ``%f %e %E %g %G``: a number or a boolean as a real.
* ``%s``: a string as it is. For a plain attribute name whose value is not a string,
  the attribute's expression as written (``RequestMemory`` prints its formula,
  ``JobStatus`` its number).
* A value that does not suit its conversion (a string for ``%d``, an expression that
  is not a string for ``%s``, an undefined attribute for either) prints only the
  field's width in blanks (``%5d``: five), not even the format's other text.
* ``%v``: the value, strings unquoted; ``undefined`` when there is none.
  ``%V``: the same with strings quoted. ``%r``: the expression as written.
* A FMT without a conversion prints its text for every job. ``%%`` is a percent sign.

Flags, width and precision (``%-8s``, ``%5d``, ``%.2f``) apply as in C. Only the first
conversion of a FMT takes the value; a later one prints nothing (in C it would read
memory that was never passed). When ``-af`` is given as well, the items are separated by
a space and each job's line ends with a newline, as condor_q does then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from condorpy.classad import ClassAd, Error, Expr, Undefined, format_shown, format_value, \
    parse_expr

_CONVERSION = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?"
                         r"([diouxXeEfFgGcsvVr%])")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v"}


def collapse_escapes(text: str) -> str:
    """``\\n``, ``\\t`` and the like in a format as typed on a command line."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), text)


@dataclass(frozen=True)
class FormatItem:
    """One ``-format FMT EXPR`` (``fmt`` None: one ``-af EXPR`` column)."""

    fmt: str | None
    text: str

    @property
    def expr(self) -> Expr:
        return parse_expr(self.text, source=f"-format argument {self.text!r}")


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    return None


def _cell(spec: str, conv: str, ad: ClassAd, text: str, expr: Expr) -> str | None:
    """One conversion applied to ``expr`` in ``ad``; None when the value does not
    suit it (the whole format then prints nothing)."""
    value = expr.evaluate(my=ad)
    if conv in "diouxXc":
        n = _number(value)
        if n is None:
            return None
        return (spec + conv) % (int(n) if conv != "c" else int(n) % 256)
    if conv in "eEfFgG":
        n = _number(value)
        return None if n is None else (spec + conv) % float(n)
    if conv == "s":
        if isinstance(value, str):
            shown = value
        elif _NAME.match(text) and ad.lookup(text) is not None:
            shown = str(ad.lookup(text))
        else:
            return None
    elif conv == "v":
        shown = value if isinstance(value, str) else _shown(value)
    elif conv == "V":
        shown = format_value(value) if isinstance(value, str) else _shown(value)
    else:   # r: as written
        found = ad.lookup(text) if _NAME.match(text) else None
        shown = str(found if found is not None else expr)
    return (spec + "s") % shown


def _shown(value: Any) -> str:
    if value is Undefined:
        return "undefined"
    if value is Error:
        return "error"
    return format_shown(value)


def _format_one(fmt: str, ad: ClassAd, text: str, expr: Expr) -> str:
    out: list[str] = []
    pos = 0
    used = False
    for m in _CONVERSION.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group(4)
        if conv == "%":
            out.append("%")
            continue
        if used:
            continue
        used = True
        flags, width, precision = m.group(1), m.group(2), m.group(3)
        spec = "%" + flags + (width if width and width != "*" else "")
        if precision is not None and precision != "*":
            spec += "." + precision
        cell = _cell(spec, conv, ad, text, expr)
        if cell is None:
            # only the field's width in blanks
            return " " * int(width) if width and width.isdigit() else ""
        out.append(cell)
    out.append(fmt[pos:])
    return "".join(out)


def _af_cell(ad: ClassAd, expr: Expr) -> str:
    value = expr.evaluate(my=ad)
    return value if isinstance(value, str) else format_shown(value)


def render_format(ads: Sequence[ClassAd], items: Sequence[FormatItem]) -> str:
    """Every ad through ``items`` (``-format`` and ``-af`` in the order given)."""
    exprs = [item.expr for item in items]   # a bad expression fails before any output
    fmts = [collapse_escapes(item.fmt) if item.fmt is not None else None for item in items]
    with_af = any(f is None for f in fmts)
    sep, end = (" ", "\n") if with_af else ("", "")
    out: list[str] = []
    for ad in ads:
        cells = [_af_cell(ad, e) if f is None else _format_one(f, ad, item.text, e)
                 for f, item, e in zip(fmts, items, exprs)]
        out.append(sep.join(cells) + end)
    return "".join(out)
