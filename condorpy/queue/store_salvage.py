"""Copying what still reads out of a damaged job store into a new one.

SQLite keeps each table as a b-tree of pages; a damaged page makes the rows under it
unreadable and leaves the others as they were. The salvage reads every table in rowid
order and, where a read fails, gallops forward past the damaged range and goes on, so
every row that reads is kept. A job row is kept only when its ad parses. The jobs
lost are named where the table's index on (cluster, proc) still reads: it knows the
ids of rows whose pages are gone.

The damaged files are never written: they are copied aside first (SQLite would
otherwise replay and checkpoint their write-ahead log in place). The new store gets a
next cluster id above every id seen, so no id of a lost job is handed out again.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from condorpy.errors import ClassAdError, QueueError
from condorpy.queue.records import ad_of_text
from condorpy.queue.store_check import set_aside
from condorpy.queue.store_db import DB_NAME, StoreDb

__all__ = ["SalvageReport", "salvage"]

# every table of the store, the ones that name jobs first; meta and schema_version are
# made by the new store itself (the next cluster id is carried over below)
_TABLES = ("jobs", "history", "starters", "claims", "pool_claims", "history_rotations")
_JOB_TABLES = ("jobs", "history")
_MAX_ROWID = 2 ** 63 - 1


@dataclass(frozen=True)
class SalvageReport:
    """What a salvage kept and lost. ``lost_ids``: jobs known (from an index) to have
    been there and not kept; ``unreadable``: rows or ranges of rows that did not read,
    by table."""
    source: str
    target: str
    kept: dict[str, int]
    unreadable: dict[str, int]
    lost_ids: tuple[str, ...]
    next_cluster: int
    set_aside: tuple[tuple[str, str], ...]

    @property
    def jobs_kept(self) -> int:
        return self.kept.get("jobs", 0) + self.kept.get("history", 0)

    @property
    def damaged(self) -> bool:
        return bool(self.lost_ids) or any(self.unreadable.values())


class _Reader:
    """The damaged store's copy, read table by table, past whatever does not read."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.text_factory = bytes      # a row whose text is not UTF-8 still reads
        self.db.execute("PRAGMA query_only=ON")

    def tables(self) -> set[str]:
        return {r[0].decode() for r in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}

    def columns(self, table: str) -> list[str]:
        return [r[1].decode() for r in self.db.execute(f"PRAGMA table_info({table})")]

    def rows(self, table: str, columns: list[str], on_skip: Callable[[], None]
             ) -> Iterator[tuple[Any, ...]]:
        """``(rowid, *columns)`` of every row of ``table`` that reads, in rowid order;
        ``on_skip`` once per damaged stretch passed over."""
        cols = ", ".join(["rowid", *columns])
        last = 0
        while True:
            start = last
            try:
                for row in self.db.execute(f"SELECT {cols} FROM {table} WHERE rowid > ? "
                                           "ORDER BY rowid", (last,)):
                    last = int(row[0])
                    yield tuple(row)
                return
            except sqlite3.DatabaseError:
                on_skip()
                if last == start:
                    # not one row read since the restart: the row found there is itself
                    # unreadable (its overflow pages, say): pass it by
                    found = self._readable_from(table, start + 1)
                    if isinstance(found, int) and not isinstance(found, bool):
                        last = found
                nxt = self._next_readable(table, last)
                if nxt is None:
                    return
                last = nxt - 1

    def _readable_from(self, table: str, rowid: int) -> int | None | bool:
        """The first rowid >= ``rowid`` when the seek reads, None when there is none,
        False when the seek itself fails."""
        try:
            row = self.db.execute(f"SELECT rowid FROM {table} WHERE rowid >= ? "
                                  "ORDER BY rowid LIMIT 1", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            return False
        return None if row is None else int(row[0])

    def _next_readable(self, table: str, last: int) -> int | None:
        """The first rowid past ``last`` from which rows read again: gallop out of the
        damaged range, then halve back to its end (rows past a damaged page read)."""
        bad, step = last, 1
        while True:
            probe = min(bad + step, _MAX_ROWID)
            got = self._readable_from(table, probe)
            if got is not False:
                break
            bad = probe
            if probe == _MAX_ROWID:
                return None
            step *= 2
        good = probe
        while good - bad > 1:
            mid = (bad + good) // 2
            if self._readable_from(table, mid) is False:
                bad = mid
            else:
                good = mid
        found = self._readable_from(table, good)
        return found if isinstance(found, int) and not isinstance(found, bool) else None

    def indexed_ids(self, table: str) -> tuple[set[tuple[int, int]], bool]:
        """The (cluster, proc) keys of ``table``'s primary-key index, read without the
        table's own pages; and whether the whole index read."""
        ids: set[tuple[int, int]] = set()
        try:
            for c, p in self.db.execute(
                    f"SELECT cluster, proc FROM {table} INDEXED BY "
                    f"sqlite_autoindex_{table}_1 ORDER BY cluster, proc"):
                if isinstance(c, int) and isinstance(p, int):
                    ids.add((c, p))
        except sqlite3.Error:
            return ids, False
        return ids, True

    def next_cluster(self) -> int:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key='next_cluster'"
                                  ).fetchone()
        except sqlite3.Error:
            return 1
        return row[0] if row is not None and isinstance(row[0], int) else 1

    def close(self) -> None:
        self.db.close()


def _job_row_reads(row: tuple[Any, ...]) -> bool:
    """A job row is worth keeping only if its ids are numbers, its ad parses and the ad
    is that job's (damage can leave a row that reads but holds another's bytes)."""
    _rowid, cluster, proc, status, entered, text = row
    if not all(isinstance(v, int) for v in (cluster, proc, status, entered)):
        return False
    try:
        ad = ad_of_text(text.decode() if isinstance(text, bytes) else str(text))
    except (ClassAdError, UnicodeDecodeError, ValueError):
        return False
    return bool(ad.get("ClusterId") == cluster and ad.get("ProcId") == proc)


def _text(value: object) -> object:
    return value.decode() if isinstance(value, bytes) else value


def salvage(path: str, *, output: str | None = None,
            clock: Callable[[], float] = time.time) -> SalvageReport:
    """Copy every row of the store at ``path`` that reads into a new store: at
    ``output`` (a file that must not exist), or, without it, in place of the damaged
    one, which is moved aside as ``<name>.bad-<time>`` (with its -wal), never deleted.
    The store's lock is taken first: a running daemon makes this a QueueError."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise QueueError("no job store file here", path=path)
    if output is not None:
        output = os.path.abspath(output)
        if os.path.lexists(output):
            raise QueueError("the salvage's output is already there; name a new file",
                             path=output)
    lock = StoreDb.hold_lock(os.path.dirname(path))   # refuses while a daemon runs
    work = tempfile.mkdtemp(prefix=".salvage-", dir=os.path.dirname(output or path))
    try:
        copy = os.path.join(work, "damaged")
        shutil.copyfile(path, copy)
        if os.path.exists(path + "-wal"):
            shutil.copyfile(path + "-wal", copy + "-wal")
        kept: dict[str, int] = {}
        unreadable: dict[str, int] = {}
        lost: list[str] = []
        reader = _Reader(copy)
        fresh_dir = os.path.join(work, "new")
        try:
            try:
                present = reader.tables()
            except sqlite3.DatabaseError as exc:
                raise QueueError(f"nothing can be salvaged: its table of tables does not "
                                 f"read ({exc})", path=path) from None
            if not {"jobs", "meta"} <= present:
                raise QueueError("nothing to salvage: it holds no condorpy job store "
                                 "(empty, or another program's database)", path=path)
            top = reader.next_cluster()
            store = StoreDb(fresh_dir, readonly=False, clock=clock, fresh=False)
            try:
                for table in _TABLES:
                    if table not in present:
                        continue
                    wanted = _columns(store, table)
                    cols = [c for c in reader.columns(table) if c in wanted]
                    top = _copy_table(reader, store, table, cols, top, kept, unreadable,
                                      lost)
                with store.transaction() as tx:
                    tx.execute("UPDATE meta SET value=max(value, ?) WHERE "
                               "key='next_cluster'", (top,))
            finally:
                store.close()
        finally:
            reader.close()
        new_file = os.path.join(fresh_dir, DB_NAME)
        moved: list[tuple[str, str]] = []
        if output is None:
            moved = set_aside(path, clock())
            os.rename(new_file, path)
        else:
            os.rename(new_file, output)
        return SalvageReport(path, output or path, kept, unreadable, tuple(lost), top,
                             tuple(moved))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        os.close(lock)


def _copy_table(reader: _Reader, store: StoreDb, table: str, cols: list[str], top: int,
                kept: dict[str, int], unreadable: dict[str, int], lost: list[str]) -> int:
    """Copy ``table``'s rows that read; returns the next cluster id floor."""
    n = bad = 0
    seen: set[tuple[int, int]] = set()

    def skipped() -> None:
        unreadable[table] = unreadable.get(table, 0) + 1

    insert = (f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) "
              f"VALUES ({', '.join('?' * len(cols))})")
    with store.transaction() as tx:
        for row in reader.rows(table, cols, skipped):
            jobs = table in _JOB_TABLES
            if jobs and not _job_row_reads(row):
                bad += 1
                continue
            try:
                values = [_text(v) for v in row[1:]]
            except UnicodeDecodeError:
                bad += 1
                continue
            tx.execute(insert, values)
            n += 1
            if jobs:
                top = max(top, row[1] + 1)
                seen.add((row[1], row[2]))
    kept[table] = n
    if bad:
        unreadable[table] = unreadable.get(table, 0) + bad
    if table in _JOB_TABLES:
        ids, _whole = reader.indexed_ids(table)
        top = max([top, *(c + 1 for c, _p in ids)])
        lost.extend(f"{c}.{p}" for c, p in sorted(ids - seen))
    return top


def _columns(store: StoreDb, table: str) -> list[str]:
    return [r[1] for r in store.conn().execute(f"PRAGMA table_info({table})")]
