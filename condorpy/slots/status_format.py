"""condor_status-style renderings of slot ads: the table, ``-l``, ``-af`` and ``-json``."""

from __future__ import annotations

from typing import Any, Sequence

from condorpy.classad import (ClassAd, Error, Undefined, format_shown, format_value,
                              parse_expr)

_SUMMARY_COLUMNS = ("Total", "Owner", "Claimed", "Unclaimed", "Matched", "Preempting",
                    "Drain", "Backfill", "BkIdle")
_SUMMARY_WIDTHS = (5, 5, 7, 9, 7, 10, 6, 8, 6)


def _text(ad: ClassAd, attr: str, default: str = "") -> str:
    value = ad.evaluate(attr)
    if value is Undefined or value is Error:
        return default
    return value if isinstance(value, str) else format_value(value)


def _number(ad: ClassAd, attr: str) -> float | None:
    value = ad.evaluate(attr)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _duration(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 86400}+{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def render_table(ads: Sequence[ClassAd], now: float) -> str:
    """The default condor_status listing followed by its summary by Arch/OpSys."""
    rows = []
    for ad in ads:
        load = _number(ad, "LoadAvg")
        mem = _number(ad, "Memory")
        entered = _number(ad, "EnteredCurrentActivity")
        rows.append((_text(ad, "Name", "[???]"), _text(ad, "OpSys", "[???]"),
                     _text(ad, "Arch", "[???]"), _text(ad, "State", "[???]"),
                     _text(ad, "Activity", "[???]"),
                     f"{load:.3f}" if load is not None else "[???]",
                     str(int(mem)) if mem is not None else "[???]",
                     _duration(now - entered) if entered is not None else "[???]"))
    header = ("Name", "OpSys", "Arch", "State", "Activity", "LoadAv", "Mem", "ActvtyTime")
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(len(header))]
    widths[1], widths[2], widths[3], widths[4] = (max(widths[1], 10), max(widths[2], 6),
                                                  max(widths[3], 9), max(widths[4], 8))
    widths[5], widths[6], widths[7] = max(widths[5], 6), max(widths[6], 4), max(widths[7], 11)

    def line(cells: Sequence[str], right: set[int]) -> str:
        return " ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                        for i, c in enumerate(cells)).rstrip()

    # condor_status right-aligns the numbers but heads the Mem column from the left.
    out = [line(header, {5, 7}), ""]
    out.extend(line(r, {5, 6, 7}) for r in rows)
    out.append("")
    out.extend(_summary(ads))
    return "\n".join(out) + "\n"


def _summary(ads: Sequence[ClassAd]) -> list[str]:
    groups: dict[str, list[int]] = {}
    for ad in ads:
        label = f"{_text(ad, 'Arch', '?')}/{_text(ad, 'OpSys', '?')}"
        counts = groups.setdefault(label, [0] * len(_SUMMARY_COLUMNS))
        state, activity = _text(ad, "State"), _text(ad, "Activity")
        counts[0] += 1
        column = {"Owner": 1, "Claimed": 2, "Unclaimed": 3, "Matched": 4, "Preempting": 5,
                  "Drained": 6, "Backfill": 7}.get(state)
        if column is not None:
            counts[column] += 1
        if state == "Backfill" and activity == "Idle":
            counts[8] += 1
    totals = [sum(c[i] for c in groups.values()) for i in range(len(_SUMMARY_COLUMNS))]
    label_width = max([len("Total")] + [len(k) for k in groups]) + 2

    def row(label: str, cells: Sequence[Any]) -> str:
        return label.rjust(label_width) + "".join(
            " " + str(c).rjust(w) for c, w in zip(cells, _SUMMARY_WIDTHS))

    out = [row("", _SUMMARY_COLUMNS), ""]
    for label in sorted(groups):
        out.append(row(label, groups[label]))
    out += ["", row("Total", totals)]
    return out


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
