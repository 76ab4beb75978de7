"""The job store's broken-slot rows (``store.broken``): one per slot the daemon holds
broken, so that a restarted daemon breaks it again while its cause holds
(condorpy/startd/broken_keeper.py writes and reads the record, a JSON text)."""

from __future__ import annotations

from condorpy.queue.store_db import StoreDb

__all__ = ["BrokenSlotRows", "TABLE"]

# Added without a schema version change: an older condorpy ignores it.
TABLE = """
CREATE TABLE IF NOT EXISTS broken_slots (slot TEXT PRIMARY KEY, record TEXT NOT NULL)
"""


class BrokenSlotRows:
    def __init__(self, db: StoreDb) -> None:
        self.db = db

    def put(self, slot: str, record: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(TABLE)
            tx.execute("INSERT OR REPLACE INTO broken_slots VALUES (?, ?)", (slot, record))

    def forget(self, slot: str) -> None:
        with self.db.transaction() as tx:
            tx.execute(TABLE)
            tx.execute("DELETE FROM broken_slots WHERE slot=?", (slot,))

    def all(self) -> list[tuple[str, str]]:
        db = self.db.conn()
        if db.execute("SELECT 1 FROM sqlite_master WHERE name='broken_slots'").fetchone() \
                is None:
            return []         # a store made before the table, or read-only
        return [(s, r) for s, r in db.execute(
            "SELECT slot, record FROM broken_slots ORDER BY slot")]
