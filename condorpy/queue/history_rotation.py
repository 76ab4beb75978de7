"""The job history kept as HTCondor keeps its history file (MAX_HISTORY_LOG,
MAX_HISTORY_ROTATIONS), inside the job store's SQLite database.

HTCondor (src/condor_utils/classadHistory.cpp) appends each finished job's ad to the
history file; when the ad would take the file past MAX_HISTORY_LOG bytes, it first
deletes the oldest rotated files until fewer than MAX_HISTORY_ROTATIONS are left, then
renames the file to a rotation. Here the history rows are appended in order (their
rowid only grows), the rows after the last rotation are the live "file", a rotation is
named by its newest row, and the bytes counted are those of the stored ad text.
Every function runs inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from condorpy.config import KnobReader

__all__ = ["HistoryLimits", "TABLE", "append", "trim", "live_bytes", "count_live"]

# Added to the store without a schema version change (an older condorpy ignores it).
TABLE = """
CREATE TABLE IF NOT EXISTS history_rotations (
    last_rowid INTEGER PRIMARY KEY, bytes INTEGER NOT NULL, rotated INTEGER NOT NULL)
"""
_LIVE_BYTES = "history_live_bytes"      # meta: ad bytes after the last rotation


@dataclass(frozen=True)
class HistoryLimits:
    """HTCondor's MAX_HISTORY_LOG (``max_bytes``; None when ENABLE_HISTORY_ROTATION is
    false: the history grows without bound) and MAX_HISTORY_ROTATIONS."""
    max_bytes: int | None = 20 * 1024 * 1024
    rotations: int = 2

    @classmethod
    def from_config(cls, cfg: KnobReader) -> HistoryLimits:
        if not cfg.knob_bool("ENABLE_HISTORY_ROTATION"):
            return cls(None, cls.rotations)
        out = []
        for name in ("MAX_HISTORY_LOG", "MAX_HISTORY_ROTATIONS"):
            value = cfg.get_int(name)
            if value is None or value < 1:
                raise cfg.invalid(name, "a whole number of at least 1")
            out.append(value)
        return cls(out[0], out[1])


def append(db: sqlite3.Connection, limits: HistoryLimits, now: int, cluster: int,
           proc: int, status: int, entered: int, text: str) -> None:
    """Add a finished job to the history, rotating the live part first when the job
    would take it past ``limits.max_bytes`` (as HTCondor rotates before it writes)."""
    size = len(text.encode())
    live = live_bytes(db) or 0
    last = _last_rotation(db)
    old = db.execute("SELECT rowid, length(CAST(ad AS BLOB)) FROM history "
                     "WHERE cluster=? AND proc=?", (cluster, proc)).fetchone()
    if old is not None and old[0] > last:
        live = max(0, live - int(old[1]))     # replaced: its bytes leave the live part
    (newest,) = db.execute("SELECT max(rowid) FROM history").fetchone()
    newest = int(newest or 0)
    if limits.max_bytes is not None and live > 0 and live + size > limits.max_bytes:
        if newest > last:
            db.execute("INSERT INTO history_rotations VALUES (?, ?, ?)",
                       (newest, live, now))
            last = newest
            trim(db, limits.rotations)
        live = 0
    # above every row and every rotation's last row, even if those rows are gone
    rowid = max(newest, last) + 1
    db.execute("INSERT OR REPLACE INTO history (rowid, cluster, proc, status, entered, "
               "ad) VALUES (?, ?, ?, ?, ?, ?)", (rowid, cluster, proc, status, entered, text))
    db.execute("UPDATE meta SET value=? WHERE key=?", (live + size, _LIVE_BYTES))


def trim(db: sqlite3.Connection, keep: int) -> None:
    """Delete the rotations beyond the newest ``keep``, oldest first, with their rows."""
    row = db.execute("SELECT last_rowid FROM history_rotations ORDER BY last_rowid DESC "
                     "LIMIT 1 OFFSET ?", (keep,)).fetchone()
    if row is not None:
        db.execute("DELETE FROM history WHERE rowid <= ?", (row[0],))
        db.execute("DELETE FROM history_rotations WHERE last_rowid <= ?", (row[0],))


def live_bytes(db: sqlite3.Connection) -> int | None:
    row = db.execute("SELECT value FROM meta WHERE key=?", (_LIVE_BYTES,)).fetchone()
    return None if row is None else int(row[0])


def count_live(db: sqlite3.Connection) -> None:
    """Record the live part's size where the store has none yet (a new store, or one
    written by a condorpy that did not count)."""
    if live_bytes(db) is None:
        (live,) = db.execute("SELECT coalesce(sum(length(CAST(ad AS BLOB))), 0) "
                             "FROM history WHERE rowid > ?", (_last_rotation(db),)).fetchone()
        db.execute("INSERT INTO meta VALUES (?, ?)", (_LIVE_BYTES, int(live)))


def _last_rotation(db: sqlite3.Connection) -> int:
    (last,) = db.execute("SELECT max(last_rowid) FROM history_rotations").fetchone()
    return int(last or 0)
