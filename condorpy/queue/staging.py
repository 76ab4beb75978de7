"""Submissions that arrive in parts: the rows of a reserved cluster set down apart from
the queue until the last part comes, then moved into it in one transaction
(:meth:`condorpy.queue.jobstore.JobStore.submit_staged`). A submission of 100,000 jobs
is then many bounded requests rather than one, each written as it comes (neither the
client nor the daemon holds it whole), and still queues all of its jobs or none.

The table is made on first use (an older condorpy ignores it). Its rows never outlive
the daemon that took them: a client that stops half-way leaves rows that the next
start (:meth:`StagedJobs.clear`) or a new submission into the cluster drops.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from condorpy.errors import QueueError
from condorpy.queue.records import JobRow
from condorpy.queue.store_db import StoreDb
from condorpy.queue.store_errors import StoreConstraint

__all__ = ["StagedJobs"]

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
