"""The job store's records and the reading of its job rows, shared by the queue
(:mod:`.jobstore`) and the history (:mod:`.history_store`): a row is parsed into a
:class:`JobRecord` and tried against a user's constraint the same way in both."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from condorpy.classad import Budget, CallContext, ClassAd, Expr, parse_expr
from condorpy.errors import ClassAdError, QueueError
from condorpy.inputs import shorten
from condorpy.queue.store_faults import SALVAGE_HINT, StoreDamaged

__all__ = ["JobStatus", "JobId", "JobRecord", "FINAL", "JobRow", "shorten",
           "parse_constraint", "record_of", "select", "ad_text", "ad_of_text", "int_of",
           "status_of", "Differ"]


class JobStatus(enum.IntEnum):
    """HTCondor's JobStatus codes."""
    IDLE = 1
    RUNNING = 2
    REMOVED = 3
    COMPLETED = 4
    HELD = 5
    TRANSFERRING_OUTPUT = 6
    SUSPENDED = 7


# Statuses after which a job leaves the queue for the history.
FINAL = (JobStatus.REMOVED, JobStatus.COMPLETED)


@dataclass(frozen=True, order=True)
class JobId:
    cluster: int
    proc: int

    def __str__(self) -> str:
        return f"{self.cluster}.{self.proc}"

    @classmethod
    def parse(cls, text: str) -> JobId:
        try:
            c, p = text.split(".")
            return cls(int(c), int(p))
        except ValueError:
            raise QueueError(f"{text!r} is not a job id (CLUSTER.PROC)") from None


@dataclass(frozen=True)
class JobRecord:
    """A job as stored: its id, status, when it entered that status, and its ad (a
    fresh copy; changing it changes nothing in the store)."""
    job_id: JobId
    status: JobStatus
    entered_status: int
    ad: ClassAd


# (cluster, proc, status, entered, ad text): a row of the jobs or the history table
JobRow = tuple[int, int, int, int, str]


def parse_constraint(constraint: str | Expr | None) -> Expr | None:
    """A query's constraint, parsed once (for the look-up and every re-read)."""
    if constraint is None or isinstance(constraint, Expr):
        return constraint
    try:
        return parse_expr(constraint)
    except ClassAdError as exc:
        raise QueueError(f"bad constraint {shorten(constraint)!r}: {exc}") from None


def record_of(row: JobRow, path: str) -> JobRecord:
    cluster, proc, status, entered, text = row
    try:
        ad = ad_of_text(text, f"{path} job {cluster}.{proc}")
    except ClassAdError as exc:
        # only this store wrote the row: a row it cannot read back is damage
        said = exc.message.splitlines()[0]
        raise StoreDamaged(f"job {cluster}.{proc} has an unreadable ad ({said}); the "
                           f"store is damaged: {SALVAGE_HINT}", path=path,
                           cause=said) from None
    return JobRecord(JobId(cluster, proc), JobStatus(status), entered, ad)


def select(rows: Iterable[JobRow], constraint: str | Expr | None, *, path: str,
           clock: Callable[[], float], limit: int | None = None,
           budget: Budget | None = None) -> list[JobRecord]:
    """The records of ``rows`` whose ad makes ``constraint`` true; the first ``limit``."""
    expr = parse_constraint(constraint)
    # A constraint is a user's: all the ads it is tried on share one budget (timed on
    # the monotonic clock: the store's is the wall clock of QDate); running out is an
    # error naming it, not "no job matched".
    if budget is None:
        budget = Budget.for_user()
    ctx = CallContext(now=clock, budget=budget)
    out: list[JobRecord] = []
    for row in rows:
        rec = record_of(row, path)
        if expr is not None:
            ok = rec.ad.eval_expr(expr, None, ctx) is True
            if budget.exceeded:
                raise QueueError(f"constraint {shorten(str(expr))!r}: evaluation "
                                 f"exceeded its budget ({budget.describe()})")
            if not ok:
                continue
        out.append(rec)
        if limit is not None and len(out) >= limit:
            break
    return out


def ad_text(ad: ClassAd) -> str:
    """A job's ad as the store keeps it: the old ClassAd format, which is read several
    times faster than the new one (its literals and repeated expressions are shared
    between ads: reading 20,000 jobs for ``q`` or a restart takes seconds, not half a
    minute). The old format reads a backslash in a string its own way (``\\n`` is not
    a newline there), so an ad whose text has one is kept in the new format: either
    way it reads back exactly as it was."""
    text = ad.to_old()
    return ad.to_new() if "\\" in text else text


class Differ:
    """The attributes in which ads differ from one reference ad (a cluster's first
    job): an attribute is the same when it is the same expression object, an equal
    constant of the same type, or an expression of the same text."""

    def __init__(self, ref: ClassAd) -> None:
        self.ref = ref
        self._texts: dict[str, str] = {}

    def _same(self, name: str, expr: Expr) -> bool:
        was = self.ref.lookup(name)
        if was is None:
            return False
        if was is expr:
            return True
        if expr.is_constant or was.is_constant:
            return expr.is_constant and was.is_constant and \
                type(expr.const) is type(was.const) and expr.const == was.const
        lc = name.lower()
        if lc not in self._texts:
            self._texts[lc] = str(was)
        return self._texts[lc] == str(expr)

    def of(self, ad: ClassAd) -> ClassAd | None:
        """``ad``'s differences from the reference, as an ad; None when ``ad`` lacks
        one of the reference's attributes (differences cannot say so)."""
        if any(name not in ad for name in self.ref):
            return None
        out = ClassAd()
        for name, expr in ad.items():
            if not self._same(name, expr):
                out[name] = expr
        return out


def ad_of_text(text: str, source: str | None = None) -> ClassAd:
    """An ad as the store keeps it: the old format, or the new one (``[ ... ]``) that
    rows written before condorpy changed to the old are in."""
    if text.startswith("["):
        return ClassAd.parse_new(text, source=source)
    return ClassAd.parse_old(text, source=source)


def int_of(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def number_of(value: object, default: float = 0.0) -> float:
    """A job attribute's value as a number: ``default`` for anything not an int or a
    float (a boolean included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value)


def status_of(value: object, default: JobStatus) -> JobStatus:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return JobStatus(value)
        except ValueError:
            raise QueueError(f"JobStatus {value} is not one of HTCondor's codes") from None
    return default
