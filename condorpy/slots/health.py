"""STARTD_HEALTH_EXPRS (HTCondor 25.11): a list of ClassAd expressions, each true while
one aspect of the machine is healthy, made into three slot-ad attributes:

- ``HealthExprs``: the list itself, ``{e1, e2, ...}``;
- ``HealthFactor``: ``sum(HealthExprs) / N.0``, the share of checks that pass (an
  undefined check counts as failing here, as in HTCondor);
- ``Healthy``: ``min({e1, e2, ..., 1})``, false as soon as one check is false, true
  when all pass or are undefined; and ``Healthy`` joins the slot's Requirements, so an
  unhealthy machine matches no new work.

An empty list gives ``Healthy = true`` alone. The knob may be written with or without
its braces (``a < 1, b`` or ``{a < 1, b}``).
"""

from __future__ import annotations

from dataclasses import dataclass

from condorpy.classad.ast import ListExpr, unparse
from condorpy.classad.parser import parse_node
from condorpy.errors import CondorpyError


class HealthExprsError(CondorpyError):
    """STARTD_HEALTH_EXPRS is not a list of expressions."""


@dataclass(frozen=True)
class Health:
    """The checks of STARTD_HEALTH_EXPRS, each an expression's text."""

    checks: tuple[str, ...]

    def attrs(self) -> tuple[tuple[str, str], ...]:
        """(attribute, expression text) for every slot ad."""
        if not self.checks:
            return (("Healthy", "true"),)
        listed = "{" + ", ".join(self.checks) + "}"
        return (("HealthExprs", listed),
                ("HealthFactor", f"sum(HealthExprs) / {len(self.checks)}.0"),
                ("Healthy", "min({" + ", ".join(self.checks) + ", 1})"))


def parse_health(text: str) -> Health:
    """The checks of a STARTD_HEALTH_EXPRS value; HealthExprsError when it is not a list."""
    node = None
    # a value written with its braces is the list itself, not a list of one list
    for candidate in ((text, "{" + text + "}") if text.strip().startswith("{")
                      else ("{" + text + "}",)):
        try:
            node = parse_node(candidate)
        except CondorpyError:
            continue
        if isinstance(node, ListExpr):
            break
    if node is None:
        raise HealthExprsError("is not a list of ClassAd expressions")
    if not isinstance(node, ListExpr):
        raise HealthExprsError("is not a list")
    return Health(tuple(unparse(item) for item in node.items))
