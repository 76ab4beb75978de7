"""The job store's claim rows: the local queue's claims (``store.claims``), and the
pool claims with the pool side's small settings (``store.pool``,
condorpy/startd/poolside/claimstore.py)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from condorpy.errors import QueueError
from condorpy.queue.records import JobId
from condorpy.queue.store_db import StoreDb

__all__ = ["ClaimRecord", "LocalClaimRows", "PoolClaimRows"]


@dataclass(frozen=True)
class ClaimRecord:
    claim_id: str
    slot: str
    state: str
    job_id: JobId | None
    updated: int


def _ids(job_id: JobId | None) -> tuple[int | None, int | None]:
    return (job_id.cluster, job_id.proc) if job_id else (None, None)


class LocalClaimRows:
    """``store.claims``: the claims of the local matchmaker and of fetched work.
    ``occupy``, ``free_job`` and ``delete`` run inside a caller's transaction (a job's
    start or end changes its claim in the same one); the others take one of their own."""

    def __init__(self, db: StoreDb) -> None:
        self.db = db

    def occupy(self, tx: sqlite3.Connection, claim_id: str, job_id: JobId, now: int) -> None:
        """Claim ``claim_id`` becomes busy with ``job_id``; QueueError: no such claim."""
        cur = tx.execute("UPDATE claims SET state='busy', cluster=?, proc=?, updated=? "
                         "WHERE claim_id=?", (job_id.cluster, job_id.proc, now, claim_id))
        if cur.rowcount != 1:
            raise QueueError(f"no claim {claim_id!r}", path=self.db.path)

    @staticmethod
    def free_job(tx: sqlite3.Connection, job_id: JobId, now: int) -> None:
        """The claims running ``job_id`` become idle (the job finished)."""
        tx.execute("UPDATE claims SET cluster=NULL, proc=NULL, state='idle', updated=? "
                   "WHERE cluster=? AND proc=?", (now, job_id.cluster, job_id.proc))

    @staticmethod
    def delete(tx: sqlite3.Connection, claim_id: str) -> None:
        tx.execute("DELETE FROM claims WHERE claim_id=?", (claim_id,))

    def record(self, claim_id: str, slot: str, state: str = "claimed",
               job_id: JobId | None = None) -> ClaimRecord:
        now = self.db.now()
        with self.db.transaction() as tx:
            tx.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?)",
                       (claim_id, slot, state, *_ids(job_id), now))
        return ClaimRecord(claim_id, slot, state, job_id, now)

    def set_state(self, claim_id: str, state: str, job_id: JobId | None = None) -> None:
        with self.db.transaction() as tx:
            cur = tx.execute("UPDATE claims SET state=?, cluster=?, proc=?, updated=? "
                             "WHERE claim_id=?",
                             (state, *_ids(job_id), self.db.now(), claim_id))
            if cur.rowcount != 1:
                raise QueueError(f"no claim {claim_id!r}", path=self.db.path)

    def release(self, claim_id: str) -> None:
        with self.db.transaction() as tx:
            self.delete(tx, claim_id)

    def all(self) -> list[ClaimRecord]:
        return [ClaimRecord(cid, slot, state,
                            JobId(c, p) if c is not None and p is not None else None, upd)
                for cid, slot, state, c, p, upd in self.db.conn().execute(
                    "SELECT claim_id, slot, state, cluster, proc, updated FROM claims "
                    "ORDER BY claim_id")]


class PoolClaimRows:
    """``store.pool``: one row per claim a pool's schedd holds with a job on it (the
    record is the pool side's, and holds the claim's key: never logged), and the pool
    side's small integer settings (kept in the store's ``meta`` rows)."""

    def __init__(self, db: StoreDb) -> None:
        self.db = db
        self.path = db.path          # the pool side makes the file its owner's only

    def put(self, claim: str, record: str) -> None:
        """Store (or replace) the record of pool claim ``claim`` (its public id)."""
        with self.db.transaction() as tx:
            tx.execute("INSERT OR REPLACE INTO pool_claims VALUES (?, ?)", (claim, record))

    def forget(self, claim: str) -> None:
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM pool_claims WHERE claim=?", (claim,))

    def all(self) -> list[tuple[str, str]]:
        db = self.db.conn()
        if db.execute("SELECT 1 FROM sqlite_master WHERE name='pool_claims'").fetchone() \
                is None:
            return []         # a read-only view of a store made before the table
        return [(c, r) for c, r in db.execute(
            "SELECT claim, record FROM pool_claims ORDER BY claim")]

    def setting(self, key: str) -> int | None:
        row = self.db.conn().execute("SELECT value FROM meta WHERE key=?",
                                     (key,)).fetchone()
        return None if row is None else int(row[0])

    def set_setting(self, key: str, value: int) -> None:
        with self.db.transaction() as tx:
            tx.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
