"""The job store's history: finished jobs, read newest first as condor_history reads
its file, and kept bounded as HTCondor keeps its history file (MAX_HISTORY_LOG,
MAX_HISTORY_ROTATIONS).

Rows are appended in order (their rowid), the "live file" is the rows after the last
rotation, and once its ads would pass ``max_bytes`` it becomes a rotation; rotations
beyond ``rotations`` are deleted, oldest first (:mod:`.history_rotation`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from condorpy.classad import Budget, Expr
from condorpy.queue import history_rotation
from condorpy.queue.history_rotation import HistoryLimits
from condorpy.queue.records import JobId, JobRecord, parse_constraint, select
from condorpy.queue.store_db import StoreDb

__all__ = ["HistoryStore"]

_CHUNK = 256                    # rows read at a time by iter


class HistoryStore:
    """``store.history``: the finished jobs of the store over ``db``."""

    def __init__(self, db: StoreDb, limits: HistoryLimits) -> None:
        self.db = db
        self.limits = limits

    def append(self, tx: sqlite3.Connection, job_id: JobId, status: int, entered: int,
               text: str) -> None:
        """Add a finished job inside the caller's transaction ``tx`` (rotating first
        where the limits say so)."""
        history_rotation.append(tx, self.limits, self.db.now(), job_id.cluster,
                                job_id.proc, status, entered, text)

    def set_limits(self, limits: HistoryLimits) -> None:
        """New MAX_HISTORY_LOG / MAX_HISTORY_ROTATIONS (a reconfig): fewer rotations
        apply at once; a smaller size at the next job that enters the history."""
        self.limits = limits
        with self.db.transaction() as tx:
            history_rotation.trim(tx, limits.rotations)

    def size(self) -> tuple[int, list[int]]:
        """The ad bytes of the live history and of each rotation, newest first."""
        db = self.db.conn()
        return (history_rotation.live_bytes(db) or 0,
                [int(b) for (b,) in db.execute(
                    "SELECT bytes FROM history_rotations ORDER BY last_rowid DESC")])

    def find(self, constraint: str | Expr | None = None,
             limit: int | None = None) -> list[JobRecord]:
        """Finished jobs, the most recently finished first."""
        return list(self.iter(constraint, limit=limit))

    def iter(self, constraint: str | Expr | None = None, *, limit: int | None = None,
             newest_first: bool = True) -> Iterator[JobRecord]:
        """Finished jobs in the order they left the queue (newest first, as
        condor_history reads its file backwards), those whose ad makes ``constraint``
        true, stopping after ``limit``."""
        for chunk in self.chunks(constraint, limit=limit, newest_first=newest_first):
            yield from chunk

    def chunks(self, constraint: str | Expr | None = None, *, limit: int | None = None,
               newest_first: bool = True) -> Iterator[list[JobRecord]]:
        """:meth:`iter` a chunk of rows at a time: each list holds the matches among
        the next rows read, and may be empty, so that a caller serving others between
        chunks (the daemon's loop) is never held by a constraint that matches little in
        a long history. Rows are read only as far as needed, and no statement stays
        open between chunks, so a caller may write to the store meanwhile."""
        expr = parse_constraint(constraint)
        left = limit
        if left is not None and left <= 0:
            return
        order, after = ("DESC", "<") if newest_first else ("ASC", ">")
        # one budget for the whole walk: a costly constraint that matches nothing must
        # not get a fresh allowance with every chunk of a long history
        budget = Budget.for_user()
        last: int | None = None
        while True:
            where = "" if last is None else f"WHERE rowid {after} {last} "
            chunk = _CHUNK
            if expr is None and left is not None:
                chunk = min(chunk, left)    # every row counts: read no more than needed
            rows = self.db.conn().execute(
                "SELECT rowid, cluster, proc, status, entered, ad FROM history "
                f"{where}ORDER BY rowid {order} LIMIT {chunk}").fetchall()
            if not rows:
                return
            last = int(rows[-1][0])
            found = select([r[1:] for r in rows], expr, path=self.db.path,
                           clock=self.db.clock, limit=left, budget=budget)
            if left is not None:
                left -= len(found)          # select stopped at the limit
            yield found
            if (left is not None and left <= 0) or len(rows) < chunk:
                return
