"""Projections: the attributes a command's output reads, so that the daemon sends only
those, as condor_q and condor_history ask the schedd for only what ``-af`` prints.

The client names what it reads (:func:`af_projection`); the daemon cuts each ad to
those names and every attribute they refer to in that ad, however deep
(:func:`project`), so that an expression printed or tested evaluates as it would in the
whole ad. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from condorpy.classad import ClassAd, parse_expr
from condorpy.classad.ast import Call
from condorpy.errors import ClassAdError
from condorpy.queue.query import Query

# What a query's own selection reads (ids, owners, -run, -hold, -idle).
SELECTION_ATTRS = ("ClusterId", "ProcId", "Owner", "JobStatus")
# Calls whose result depends on attributes they do not name (eval builds a name at run
# time; the others move the evaluation elsewhere): an ad whose needed expressions use
# one is sent whole.
DYNAMIC_CALLS = frozenset({"eval", "evalineachcontext", "countmatches", "unresolved"})


def af_projection(query: Query) -> list[str] | None:
    """The attributes ``-af`` output and the query's selection read, or None when the
    output needs whole ads (every other layout, or an argument that does not parse:
    the renderer then names it)."""
    if query.output != "af":
        return None
    names = {n.lower() for n in SELECTION_ATTRS}
    try:
        for text in query.attrs:
            names |= parse_expr(text).references()
    except ClassAdError:
        return None
    for constraint in query.constraints:
        names |= constraint.references()
    # a list longer than the daemon takes (control.MAX_NAMES) is no small answer
    return sorted(names) if len(names) <= 200 else None


def project(ad: ClassAd, names: Iterable[str]) -> ClassAd:
    """``ad`` cut to ``names`` (case-insensitive) and every attribute their
    expressions refer to in it; ``ad`` itself when one of those expressions makes a
    call that reads attributes it does not name."""
    stack = [n.lower() for n in names]
    keep: set[str] = set()
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        expr = ad.lookup(name)
        if expr is None:
            continue
        nodes = [expr.node]
        while nodes:
            node = nodes.pop()
            if type(node) is Call and node.name.lower() in DYNAMIC_CALLS:
                return ad
            nodes.extend(node.children())
        keep.add(name)
        stack.extend(expr.references())
    # in the ad's own order, as the whole ad would be written
    return ClassAd((name, expr) for name, expr in ad.items() if name.lower() in keep)
