"""Submissions that arrive in parts: the rows of a reserved cluster set down apart from
the queue until the last part comes, then moved into it in one transaction
(:meth:`condorpy.queue.jobstore.JobStore.submit_staged`). A submission of 100,000 jobs
is then many bounded requests rather than one, each written as it comes (neither the
client nor the daemon holds it whole), and still queues all of its jobs or none.

The table is made on first use (an older condorpy ignores it). Its rows never outlive
the submission that sent them (:class:`OpenSubmissions`): a submission is tied to the
control connection of its first part, as HTCondor's schedd ties a submission's
transaction to condor_submit's connection, so a client that dies or closes it before
the last part, or sends nothing more for a while, leaves nothing staged. A restart
drops whatever a stopped daemon left (:meth:`StagedJobs.clear`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from condorpy.errors import QueueError
from condorpy.queue.records import JobRow
from condorpy.queue.store_db import StoreDb
from condorpy.queue.store_errors import StoreConstraint

__all__ = ["StagedJobs", "OpenSubmissions", "SUBMIT_PART_TIMEOUT"]

log = logging.getLogger("condorpy.startd")

# Seconds a submission in parts may go without a part before what it staged is dropped
# (CONDORPY_SUBMIT_PART_TIMEOUT): a client sends its parts back to back, so this is
# only ever reached by one that is stopped or stuck; as long as HTCondor's tools wait
# on a queue-management connection (SHADOW_QMGMT_TIMEOUT).
SUBMIT_PART_TIMEOUT = 300.0

_TABLE = """
CREATE TABLE IF NOT EXISTS staged_jobs (
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL,
    status INTEGER NOT NULL, entered INTEGER NOT NULL, ad TEXT NOT NULL,
    PRIMARY KEY (cluster, proc))
"""


class StagedJobs:
    """The staged rows, a part of the job store sharing its database."""

    def __init__(self, db: StoreDb) -> None:
        self.db = db
        self._made = False

    def _make(self, tx: sqlite3.Connection) -> None:
        if not self._made:
            tx.execute(_TABLE)
            self._made = True

    def clear(self, cluster: int | None = None) -> None:
        """Drop what is staged (for ``cluster``, or every cluster)."""
        with self.db.transaction() as tx:
            self._make(tx)
            if cluster is None:
                tx.execute("DELETE FROM staged_jobs")
            else:
                tx.execute("DELETE FROM staged_jobs WHERE cluster=?", (cluster,))

    def add(self, tx: sqlite3.Connection, cluster: int, rows: Iterable[JobRow]) -> int:
        """Stage ``rows`` of ``cluster`` in the caller's transaction; the number staged
        for it now."""
        self._make(tx)
        try:
            tx.executemany("INSERT INTO staged_jobs VALUES (?, ?, ?, ?, ?)",
                           (r for r in rows if r[0] == cluster))
        except (sqlite3.IntegrityError, StoreConstraint):
            raise QueueError(f"a job of cluster {cluster} was given twice",
                             path=self.db.path) from None
        return self.count(cluster, tx)

    def count(self, cluster: int, tx: sqlite3.Connection | None = None) -> int:
        try:
            (n,) = (tx or self.db.conn()).execute(
                "SELECT count(*) FROM staged_jobs WHERE cluster=?", (cluster,)).fetchone()
        except sqlite3.OperationalError:
            return 0            # never made: nothing staged
        return int(n)

    def move(self, tx: sqlite3.Connection, cluster: int) -> int:
        """Move ``cluster``'s staged rows into the queue in the caller's transaction;
        how many."""
        self._make(tx)
        cur = tx.execute("INSERT INTO jobs SELECT cluster, proc, status, entered, ad "
                         "FROM staged_jobs WHERE cluster=? ORDER BY proc", (cluster,))
        moved = cur.rowcount
        tx.execute("DELETE FROM staged_jobs WHERE cluster=?", (cluster,))
        return int(moved)

    def owner_count(self, owner: str) -> int:
        """Jobs in the queue whose Owner is ``owner``: found in the stored text (an
        attribute's name is case-blind, a string's quote and newline are escaped
        inside another string), so the queue's ads are not parsed to count them."""
        needle = f'owner = "{owner}"'.lower()
        # a line of the old format (the store's), or an item of the new format (rows
        # written before it)
        (n,) = self.db.conn().execute(
            "SELECT count(*) FROM jobs WHERE instr(lower(char(10) || ad), ?) "
            "OR instr(lower(ad), ?) OR instr(lower(ad), ?)",
            ("\n" + needle + "\n", "; " + needle, "[ " + needle)).fetchone()
        return int(n)


@dataclass
class _Open:
    holder: object        # the connection's identity (compared with ==)
    who: str              # for the log
    last: float           # monotonic time of its last part


class OpenSubmissions:
    """The submissions in parts under way: each cluster's is tied to the connection
    that sent its first part. :meth:`closed` (that connection ended) and :meth:`tick`
    (no part for ``timeout()`` seconds) drop what it staged and log why; a later part
    of a dropped submission is refused (:meth:`part`). Holds one small record per
    submission under way; the clock comes in."""

    def __init__(self, staged: StagedJobs, timeout: Callable[[], float]) -> None:
        self.staged = staged
        self.timeout = timeout
        self._open: dict[int, _Open] = {}

    def began(self, cluster: int, holder: object, who: str, now: float) -> None:
        """The first part of ``cluster`` came on ``holder``'s connection."""
        self._open[cluster] = _Open(holder, who, now)

    def part(self, cluster: int, holder: object, now: float) -> str | None:
        """A later part came on ``holder``'s connection: None, or why it is refused
        (its submission is not under way on that connection)."""
        sub = self._open.get(cluster)
        if sub is None:
            return (f"cluster {cluster} has no submission under way (its earlier parts "
                    "were dropped when their connection closed or went silent, or never "
                    "came); nothing was submitted")
        if sub.holder != holder:
            return (f"cluster {cluster}'s submission is under way on another connection: "
                    "its parts must all come on the connection of the first; nothing "
                    "was submitted")
        sub.last = now
        return None

    def ended(self, cluster: int) -> None:
        """``cluster``'s submission was queued, refused or aborted: nothing to drop."""
        self._open.pop(cluster, None)

    def under_way(self) -> list[int]:
        return sorted(self._open)

    def closed(self, holder: object) -> None:
        """``holder``'s connection ended: drop what its unfinished submissions staged."""
        gone = [c for c, sub in self._open.items() if sub.holder == holder]
        for cluster in gone:
            self._drop(cluster, "its connection closed before the last part")

    def next_due(self) -> float | None:
        """When :meth:`tick` has something to do (monotonic seconds), if ever."""
        if not self._open:
            return None
        return min(sub.last for sub in self._open.values()) + self.timeout()

    def tick(self, now: float) -> None:
        """Drop the submissions that sent no part for ``timeout()`` seconds."""
        limit = self.timeout()
        gone = [c for c, sub in self._open.items() if now - sub.last >= limit]
        for cluster in gone:
            self._drop(cluster, f"no part came for {limit:g} s "
                                "(CONDORPY_SUBMIT_PART_TIMEOUT)")

    def _drop(self, cluster: int, why: str) -> None:
        sub = self._open.pop(cluster)
        staged = self.staged.count(cluster)
        self.staged.clear(cluster)
        log.warning("submission of cluster %d by %s abandoned: %s; its %d staged job(s) "
                    "dropped, nothing was queued", cluster, sub.who, why, staged)
