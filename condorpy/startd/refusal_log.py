"""The daemon log's analysis of a refused claim request (HTCondor 24.9.2 writes one to
its StartLog): which top-level clauses of the slot's START, or of the job's
Requirements, were false for the job that asked. It reuses the policy explainer
(`condorpy analyze`), keeps to one line per refusal, and is rate-limited, so a schedd
that floods the daemon with hopeless requests cannot fill the log."""

from __future__ import annotations

import logging
from collections.abc import Callable

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.explain import BAD_MARK, UNDEF_MARK, explain_tree

log = logging.getLogger("condorpy.startd")

# At most this many analyses per window; the rest are counted and the count logged
# with the next analysis written.
BURST = 10
WINDOW = 60.0         # seconds
MAX_CLAUSE = 120      # characters of one clause shown


def false_clauses(engine: PolicyEngine, slot_ad: ClassAd, job_ad: ClassAd) -> list[str]:
    """``START: <clause>`` and ``Requirements: <clause>`` for each clause that made the
    match fail (false, or undefined where its parent needed a value)."""
    out: list[str] = []
    for who, ad, target, name in (("START", slot_ad, job_ad, "START"),
                                  ("Requirements", job_ad, slot_ad, "Requirements")):
        lines = explain_tree(engine, ad, name, target)
        if not lines or lines[0].value is True:
            continue
        blamed = [ln for ln in lines[1:] if ln.depth == 1 and ln.mark in (BAD_MARK,
                                                                          UNDEF_MARK)]
        for ln in blamed or lines[:1]:
            text = " ".join(ln.text.split())
            if len(text) > MAX_CLAUSE:
                text = text[:MAX_CLAUSE - 3] + "..."
            state = "false" if ln.value is False else "undefined"
            out.append(f"{who}: ({text}) is {state}")
    return out


class RefusalLog:
    """Writes the analysis of refused claim requests to the daemon log, a few per
    minute at most."""

    def __init__(self, engine_of: Callable[[], PolicyEngine], clock: Clock) -> None:
        self._engine_of = engine_of       # a reconfig may replace the engine
        self._clock = clock
        self._window_start = float("-inf")
        self._written = 0
        self._skipped = 0

    def refused(self, slot: str, job_ad: ClassAd, reason: str, who: str) -> None:
        """A claim request from ``who`` for ``slot`` was refused for ``reason``."""
        if "START" not in reason and "Requirements" not in reason:
            return
        now = self._clock.monotonic()
        if now - self._window_start >= WINDOW:
            self._window_start, self._written = now, 0
        if self._written >= BURST:
            self._skipped += 1
            return
        self._written += 1
        engine = self._engine_of()
        s = engine.slots.get(slot)
        if s is None:
            return
        clauses = false_clauses(engine, s.ad, job_ad)
        job = f"{job_ad.evaluate('ClusterId')}.{job_ad.evaluate('ProcId')}"
        owner = job_ad.evaluate("Owner")
        more = f" ({self._skipped} more refusals not analysed)" if self._skipped else ""
        self._skipped = 0
        log.info("%s: claim request from %s for job %s (%s) refused: %s%s", slot, who, job,
                 owner if isinstance(owner, str) else "?",
                 "; ".join(clauses) or reason, more)
