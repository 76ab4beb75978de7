"""The job store's starter rows: what a restarted daemon needs to re-adopt the starters
that kept running (``store.starters``)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from condorpy.queue.records import JobId
from condorpy.queue.store_db import StoreDb

__all__ = ["StarterRecord", "StarterRows"]


@dataclass(frozen=True)
class StarterRecord:
    """What re-adopting a starter needs: a pid alone can be reused, so the boot id and
    the process's start time (from /proc/PID/stat) identify it."""
    job_id: JobId
    pid: int
    boot_id: str
    process_start: int
    socket_path: str
    execute_dir: str
    slot: str
    started: int


class StarterRows:
    """``store.starters``: one row per starter, keyed by its job's id. ``write`` and
    ``delete`` run inside a caller's transaction (a job's start or end records its
    starter in the same one); the others take one of their own."""

    def __init__(self, db: StoreDb) -> None:
        self.db = db

    @staticmethod
    def write(tx: sqlite3.Connection, s: StarterRecord) -> None:
        tx.execute("INSERT OR REPLACE INTO starters VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (s.job_id.cluster, s.job_id.proc, s.pid, s.boot_id, s.process_start,
                    s.socket_path, s.execute_dir, s.slot, s.started))

    @staticmethod
    def delete(tx: sqlite3.Connection, job_id: JobId) -> None:
        tx.execute("DELETE FROM starters WHERE cluster=? AND proc=?",
                   (job_id.cluster, job_id.proc))

    def record(self, starter: StarterRecord) -> None:
        with self.db.transaction() as tx:
            self.write(tx, starter)

    def forget(self, job_id: JobId) -> None:
        with self.db.transaction() as tx:
            self.delete(tx, job_id)

    def all(self) -> list[StarterRecord]:
        return [StarterRecord(JobId(c, p), pid, boot, pstart, sock, exe, slot, started)
                for c, p, pid, boot, pstart, sock, exe, slot, started
                in self.db.conn().execute("SELECT * FROM starters ORDER BY cluster, proc")]
