"""Projections: the attributes a command's output reads, so that the daemon sends only
those, as condor_q and condor_history ask the schedd for only what ``-af`` prints.

The client names what it reads (:func:`af_projection`); the daemon cuts each ad to
those names and every attribute they refer to in that ad, however deep
(:func:`project`), so that an expression printed or tested evaluates as it would in the
whole ad. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from condorpy.classad import Budget, CallContext, ClassAd, Expr, parse_expr
from condorpy.errors import ClassAdError, QueueError
from condorpy.inputs import shorten
from condorpy.queue.formats import layout_attrs
from condorpy.queue.query import Query
from condorpy.queue.records import JobRow, ad_of_text, record_of

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


def q_projection(query: Query) -> list[str] | None:
    """What ``condorpy q``'s output and selection read, for any layout that does not
    print whole ads (-long, -json and -analyze do): the daemon then sends a few lines
    of each ad instead of all of them, and neither end parses the rest."""
    if query.output in ("long", "json", "analyze", "better-analyze"):
        return None
    if query.output == "af":
        return af_projection(query)
    names = {n.lower() for n in SELECTION_ATTRS}
    try:
        if query.output == "format":
            for item in query.formats:
                names |= item.expr.references()
        else:
            names |= {n.lower() for n in layout_attrs(query.output)}
    except ClassAdError:
        return None
    for constraint in query.constraints:
        names |= constraint.references()
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
        if expr.calls_any(DYNAMIC_CALLS):
            return ad
        keep.add(name)
        stack.extend(expr.references())
    # in the ad's own order, as the whole ad would be written
    return ClassAd((name, expr) for name, expr in ad.items() if name.lower() in keep)


# An old-format line: NAME = EXPR. The store writes every ad this way (a backslash in
# it, and the row is in the new format instead), one attribute a line, a later line
# for a name overriding an earlier one (a proc's differences from its cluster's ad).
_LITERAL = re.compile(r'-?[0-9][0-9.eE+-]*|"[^"\\]*"|true|false|undefined|error',
                      re.IGNORECASE)


_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_NONE: frozenset[str] = frozenset()
_EXPRS_KEPT = 4096       # distinct expressions a projector remembers (a queue has few)


class TextProjector:
    """:func:`project` on an ad's stored text, without parsing the ad: the lines of the
    wanted names are picked out, and only their expressions that are not literals are
    parsed (once per distinct text, across every ad the projector sees) for the names
    they refer to. A queue of 100,000 jobs is cut this way in a fraction of the time
    parsing it would take, and what comes out parses to :func:`project`'s ad."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(n.lower() for n in names)
        # a name the old format writes quoted ('a b' = ...) is found by parsing
        self._plain = all(_NAME.fullmatch(n) for n in self.names)
        self._patterns: dict[frozenset[str], re.Pattern[str]] = {}
        # an expression's text -> the names it refers to, or None: it names some at
        # run time (DYNAMIC_CALLS), and the ad is sent whole
        self._refs: dict[str, frozenset[str] | None] = {}

    def _pattern(self, names: frozenset[str]) -> re.Pattern[str]:
        pat = self._patterns.get(names)
        if pat is None:
            alts = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
            pat = re.compile(rf"^({alts}) = (.*)$", re.MULTILINE | re.IGNORECASE)
            if len(self._patterns) > 64:
                self._patterns.clear()
            self._patterns[names] = pat
        return pat

    def _references(self, text: str) -> frozenset[str] | None:
        if _LITERAL.fullmatch(text):
            return _NONE          # most of a job's values: not kept, never parsed
        if text in self._refs:
            return self._refs[text]
        refs: frozenset[str] | None
        try:
            expr = parse_expr(text)
        except ClassAdError:
            expr = None
        refs = None if expr is None or expr.calls_any(DYNAMIC_CALLS) \
            else frozenset(expr.references())
        if len(self._refs) >= _EXPRS_KEPT:
            self._refs.clear()
        self._refs[text] = refs
        return refs

    def project(self, text: str) -> str:
        """``text`` (a stored row's ad) cut to the names and what they refer to, in the
        old format; the whole text where :func:`project` would send the whole ad."""
        if text.startswith("[") or not self._plain:
            ad = ad_of_text(text)
            cut = project(ad, self.names)
            return text if cut is ad else cut.to_old()
        # A proc's row is its cluster's first ad followed by the lines that differ:
        # the lines of that first ad are found (and checked) once, and only the rest
        # is searched.
        base = self._base
        if base is not None and text.startswith(base[0]):
            lines = base[1]
            extra = self._find(text[len(base[0]):], self.names, {})
            if not extra:
                return base[2]
            if all(self._within(expr) for _, expr in extra.values()):
                lines = dict(lines)
                for lc, (name, expr) in extra.items():
                    was = lines.get(lc)
                    lines[lc] = (was[0] if was is not None else name, expr)
                return "".join(f"{name} = {expr}\n" for name, expr in lines.values())
        found = self._find(text, self.names, {})
        out = self._closed(text, found)
        if out is None:
            return text
        if text.endswith("\n") and all(self._within(e) for _, e in found.values()):
            self._base = (text, found, out)
        return out

    # the last row read whole: its text, the lines found in it and its projection
    _base: tuple[str, dict[str, tuple[str, str]], str] | None = None

    def _within(self, expr: str) -> bool:
        """Whether ``expr`` refers to nothing but the projector's names."""
        refs = self._references(expr)
        return refs is not None and refs <= self.names

    def _find(self, text: str, want: frozenset[str], found: dict[str, tuple[str, str]]
              ) -> dict[str, tuple[str, str]]:
        """``found`` with the lines of ``text`` for the names in ``want``: by name in
        lower case, the first line's spelling (and place) and the last line's
        expression, as the ad read from ``text`` holds them."""
        for name, expr in self._pattern(want).findall(text):
            lc = name.lower()
            was = found.get(lc)
            found[lc] = (name if was is None else was[0], expr)
        return found

    def _closed(self, text: str, found: dict[str, tuple[str, str]]) -> str | None:
        """The lines ``found``, with those their expressions refer to (in ``text``),
        however deep; None when one names attributes at run time."""
        want = self.names
        while True:
            more: set[str] = set()
            for _, expr in found.values():
                refs = self._references(expr)
                if refs is None:
                    return None
                more |= refs
            if more <= want:
                return "".join(f"{name} = {expr}\n" for name, expr in found.values())
            if not all(_NAME.fullmatch(n) for n in more):
                return None
            want = want | more
            found = self._find(text, want, {})


def projected_chunks(chunks: Iterable[list[JobRow]], names: Iterable[str] | None,
                     constraint: Expr | None, *, path: str, clock: Callable[[], float],
                     limit: int | None = None) -> Iterator[list[str]]:
    """The ads of ``chunks`` (a store's rows, a chunk at a time) whose ad makes
    ``constraint`` true, each cut to ``names`` as :class:`TextProjector` cuts it (or
    whole, with ``names`` None), in the old format, a list per chunk (maybe empty);
    the first ``limit`` of them. The constraint is tried on the row cut to what it
    refers to as well, which it evaluates as on the whole ad; all its evaluations
    share a user's budget, as the store's own selection does
    (:func:`condorpy.queue.records.select`). A whole ad goes as the store keeps it
    (its cluster's first ad and the lines that differ read as the ad itself), not
    parsed and written again."""
    projector: TextProjector | None = None
    if names is not None:
        wanted = set(names)
        if constraint is not None:
            wanted |= constraint.references()
        projector = TextProjector(wanted)
    budget = Budget.for_user()
    ctx = CallContext(now=clock, budget=budget)
    left = limit
    if left is not None and left <= 0:
        return
    for rows in chunks:
        out: list[str] = []
        for cluster, proc, status, entered, text in rows:
            try:
                cut = projector.project(text) if projector is not None else text
            except ClassAdError:
                # only the store wrote the row: name it as damage, as a whole read does
                record_of((cluster, proc, status, entered, text), path)
                raise
            if constraint is not None:
                ad = record_of((cluster, proc, status, entered, cut), path).ad
                ok = ad.eval_expr(constraint, None, ctx) is True
                if budget.exceeded:
                    raise QueueError(f"constraint {shorten(str(constraint))!r}: evaluation "
                                     f"exceeded its budget ({budget.describe()})")
                if not ok:
                    continue
            if cut.startswith("["):         # a row in the new format
                cut = record_of((cluster, proc, status, entered, cut), path).ad.to_old()
            out.append(cut)
            if left is not None:
                left -= 1
                if left <= 0:
                    break
        yield out
        if left is not None and left <= 0:
            return
