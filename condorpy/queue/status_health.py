"""``condorpy status -health``: condor_status -healthy's layout (HTCondor 25.11) for
this machine: one row per machine (HOST_NAME, HEALTH as int(HealthFactor*100) with a
percent sign, FAILED_HEALTH_CHECKS: the checks of HealthExprs that are false, or
``error`` for one that is an error), then the totals of healthy, unhealthy, broken
and unknown machines. Without ``:verbose``, rows of healthy, unbroken machines (and
of unbroken machines without health checks) are left out, as condor_status does.
"""

from __future__ import annotations

from typing import Any, Sequence

from condorpy.classad import ClassAd, Error, Undefined, parse_expr
from condorpy.classad.ast import ListExpr, unparse

HEADER = ("HOST_NAME", "HEALTH", "FAILED_HEALTH_CHECKS")
TOTALS = ("Healthy", "Unhealthy", "Broken", "Unknown")


def _bool_equiv(value: Any) -> bool | None:
    """The value as a boolean where ClassAds take it for one (booleans, numbers)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return None


def _broken(ad: ClassAd) -> bool:
    return "BrokenReasons" in ad or "SlotBrokenReason" in ad


def failed_checks(ad: ClassAd) -> str | None:
    """FAILED_HEALTH_CHECKS of one ad; None where there is nothing to show ('?')."""
    expr = ad.lookup("HealthExprs")
    node = getattr(expr, "node", None) if expr is not None else None
    if not isinstance(node, ListExpr):
        reason = ad.evaluate("SlotBrokenReason") if "SlotBrokenReason" in ad else None
        if isinstance(reason, str):
            return reason
        reasons = ad.evaluate("BrokenReasons") if "BrokenReasons" in ad else None
        if isinstance(reasons, list):
            seen: list[str] = []
            for r in reasons:
                if isinstance(r, str) and r not in seen:
                    seen.append(r)
            return ", ".join(seen)
        return None
    out = ""
    for item in node.items:
        text = unparse(item)
        value = parse_expr(text).evaluate(my=ad)
        if _bool_equiv(value) is False:
            out += (", " if out else "") + text
        elif value is Error:
            out += ("," if out else "") + "error"
    return out


def _health(ad: ClassAd) -> str:
    factor = ad.evaluate("HealthFactor") if "HealthFactor" in ad else Undefined
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        return f"{int(factor * 100):5d}%"
    return "?"


def _machines(ads: Sequence[ClassAd]) -> list[ClassAd]:
    """One ad per machine (its health is machine-wide): the first slot that is not a
    dynamic slot, else the first."""
    chosen: dict[str, ClassAd] = {}
    for ad in ads:
        host = ad.evaluate("Machine") if "Machine" in ad else None
        key = host if isinstance(host, str) else str(ad.evaluate("Name"))
        dynamic = ad.evaluate("DynamicSlot") is True if "DynamicSlot" in ad else False
        if key not in chosen or (not dynamic and chosen[key].evaluate("DynamicSlot") is True):
            chosen[key] = ad
    return [chosen[k] for k in chosen]


def render_health(ads: Sequence[ClassAd], verbose: bool = False) -> str:
    machines = _machines(ads)
    if not machines:
        return ""
    rows: list[tuple[str, str, str]] = []
    counts = [0, 0, 0, 0]
    for ad in machines:
        broken = _broken(ad)
        healthy = _bool_equiv(ad.evaluate("Healthy")) if "Healthy" in ad else None
        if broken:
            counts[2] += 1
        elif healthy is None:
            counts[3] += 1
        else:
            counts[0 if healthy else 1] += 1
        if not verbose and not broken and (healthy is True or
                                           (healthy is None and "HealthExprs" not in ad)):
            continue
        host = ad.evaluate("Machine") if "Machine" in ad else ad.evaluate("Name")
        failed = failed_checks(ad)
        rows.append((str(host), _health(ad), "?" if failed is None else failed))
    out: list[str] = []
    if rows:
        widths = [max([len(HEADER[i])] + [len(r[i]) for r in rows]) for i in range(3)]
        out.append(" ".join(h.ljust(w) for h, w in zip(HEADER, widths)).rstrip())
        out += [" ".join((r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2])).rstrip()
                for r in rows]
        out.append("")
    width = len("Total") + 2
    out.append(" " * width + "".join(" " + h.rjust(9) for h in TOTALS))
    out.append("")
    out.append("Total".rjust(width) + "".join(" " + str(c).rjust(9) for c in counts))
    return "\n".join(out) + "\n"
