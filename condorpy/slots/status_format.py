"""condor_status-style renderings of slot ads: ``-l``, ``-af``, ``-json`` and ``-broken``
(the other tables are condorpy.queue.status_layouts')."""

from __future__ import annotations

from typing import Sequence

from condorpy.classad import ClassAd, format_shown, parse_expr


def render_long(ads: Sequence[ClassAd]) -> str:
    """Whole ads in the old format, attributes sorted as condor_status -l sorts them,
    each ad followed by an empty line."""
    blocks = []
    for ad in ads:
        lines = [f"{name} = {expr}"
                 for name, expr in sorted(ad.items(), key=lambda item: item[0].lower())]
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


def render_autoformat(ads: Sequence[ClassAd], attrs: Sequence[str]) -> str:
    """``-af``: one line per ad, values separated by a space, strings unquoted. Each
    argument is an expression, as for condor_status (``-af 'Memory / 1024'``); one
    that does not parse is a ClassAdSyntaxError naming it, even when no ad matches.
    Reals are shown as HTCondor's tools show them (16 significant digits)."""
    exprs = [parse_expr(text, source=f"-af argument {n} {text!r}")
             for n, text in enumerate(attrs, 1)]
    lines = []
    for ad in ads:
        cells = []
        for expr in exprs:
            value = expr.evaluate(my=ad)
            cells.append(value if isinstance(value, str) else format_shown(value))
        lines.append(" ".join(cells))
    return "".join(line + "\n" for line in lines)


def sorted_ad(ad: ClassAd) -> ClassAd:
    ordered = ClassAd()
    for name, expr in sorted(ad.items(), key=lambda item: item[0].lower()):
        ordered[name] = expr
    return ordered


def render_json(ads: Sequence[ClassAd]) -> str:
    """HTCondor's ``-json``: a list of ads, attributes sorted, ``}\n,\n{`` between ads."""
    if not ads:
        return "[\n]\n"
    return "[\n" + "\n,\n".join(sorted_ad(ad).to_json() for ad in ads) + "\n]\n"


def render_broken(ads: Sequence[ClassAd]) -> str:
    """``-broken``: the broken slots (those with a ``SlotBrokenReason``), one line each:
    name, ``SlotBrokenCode`` and the reason, as condor_status lays out its slot mode."""
    rows = []
    for ad in ads:
        reason = ad.evaluate("SlotBrokenReason")
        if not isinstance(reason, str) or not reason:
            continue
        code = ad.evaluate("SlotBrokenCode")
        shown = f"{code:4d}" if isinstance(code, int) and not isinstance(code, bool) \
            else " " * 4
        rows.append((str(ad.evaluate("Name")), shown, reason))
    if not rows:
        return ""
    width = max(len("Name"), *(len(r[0]) for r in rows))
    lines = [f"{'Name':<{width}} Code Reason"]
    lines += [f"{name:<{width}} {code} {reason}" for name, code, reason in rows]
    return "\n".join(lines) + "\n"
