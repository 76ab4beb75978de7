"""SQLite's errors, met at the job store's boundary and told in the project's words.

Every connection the store opens is a :class:`StoreConnection`: whatever SQLite raises
while a statement runs or a row is read (a full file system, an I/O error, a damaged
page, a row that is not text) leaves it as a :class:`~condorpy.errors.QueueError`
naming the store's file and the cause, never as ``sqlite3.Error``. The daemon answers
those as refusals of the one request, and keeps serving.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterable
from typing import Any

from condorpy.queue.store_faults import SALVAGE_HINT as SALVAGE_HINT
from condorpy.queue.store_faults import StoreBusy as StoreBusy
from condorpy.queue.store_faults import StoreConstraint as StoreConstraint
from condorpy.queue.store_faults import StoreDamaged as StoreDamaged
from condorpy.queue.store_faults import StoreFault as StoreFault
from condorpy.queue.store_faults import StoreFull as StoreFull
from condorpy.queue.store_faults import StoreIOError as StoreIOError

__all__ = ["StoreFault", "StoreFull", "StoreIOError", "StoreDamaged", "StoreBusy", "StoreConnection",
           "store_error", "os_store_error", "SALVAGE_HINT"]

def _space(path: str) -> str:
    try:
        st = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return ""
    return f"; {st.f_bavail * st.f_frsize // 1024} KiB free there"


def _unwritable(path: str) -> str:
    """Which of the store's files this process may not write (access(2) says so for
    an immutable or read-only file even to root), as a clause; the -shm file is not
    used (locking_mode=EXCLUSIVE)."""
    bad = [os.path.basename(p) for p in (path, path + "-wal")
           if os.path.exists(p) and not os.access(p, os.W_OK)]
    return f"; not writable: {', '.join(bad)}" if bad else ""


def store_error(exc: sqlite3.Error, path: str) -> StoreFault:
    """``exc`` as the project's error, naming the store at ``path``."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    said = str(exc)
    if primary == sqlite3.SQLITE_FULL:
        return StoreFull(f"the job store cannot grow: its file system is full ({said}"
                         f"{_space(path)}); nothing was changed, and it works again once "
                         "there is room", path=path, cause=said)
    if primary in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
                   sqlite3.SQLITE_PERM):
        return StoreIOError(f"the job store cannot be written or read ({said}"
                            f"{_unwritable(path)}); nothing was changed: check the file "
                            "system and the permissions and attributes (lsattr) of the "
                            "file and its -wal log", path=path, cause=said)
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or \
            "decode" in said.lower():
        return StoreDamaged(f"the job store is damaged ({said}): {SALVAGE_HINT}",
                            path=path, cause=said)
    if primary == sqlite3.SQLITE_CONSTRAINT:
        return StoreConstraint(f"the job store refused a row ({said})", path=path,
                               cause=said)
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreBusy(f"the job store is held by another process ({said})", path=path,
                         cause=said)
    return StoreFault(f"the job store failed: {said}", path=path, cause=said)


def os_store_error(exc: OSError, path: str) -> StoreFault:
    """An ``OSError`` met beside SQLite (the lock file, the directory) likewise."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreFull(f"the job store cannot grow: {exc.strerror}{_space(path)}",
                         path=path, cause=str(exc.strerror))
    return StoreIOError(f"the job store cannot be used: {exc.strerror or exc}", path=path,
                        cause=str(exc.strerror or exc))


class StoreCursor(sqlite3.Cursor):
    """A cursor whose every step maps SQLite's errors (rows are read lazily, so a
    damaged page may show only while iterating)."""

    def _failed(self, exc: sqlite3.Error) -> StoreFault:
        conn = self.connection
        # closed at once: an exception's traceback keeps this cursor alive, and its
        # unfinished statement would keep the store's lock after the store is closed
        self.close()
        return store_error(exc, conn.path if isinstance(conn, StoreConnection) else "?")

    def execute(self, sql: str, parameters: Any = (), /) -> StoreCursor:
        try:
            super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> StoreCursor:
        try:
            super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size)
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None


class StoreConnection(sqlite3.Connection):
    """The store's connection (``sqlite3.connect(..., factory=StoreConnection)``);
    ``path`` names the file in every error."""

    path = "?"

    def execute(self, sql: str, parameters: Any = (), /) -> StoreCursor:
        return self.cursor(StoreCursor).execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> StoreCursor:
        return self.cursor(StoreCursor).executemany(sql, parameters)
