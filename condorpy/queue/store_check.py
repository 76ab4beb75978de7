"""Telling a job store that never existed from one that is there but cannot be used.

A zero-byte, unreadable or foreign file where the queue should be is not an empty
queue: taking it for one loses every job it held and hands out cluster ids again from
1. So the daemon starts on a new store only where there was none; anything else that is
not a sound condorpy store is refused, and the administrator either repairs it or says
to start afresh (``condorpy startd -fresh-queue``), which moves the file aside under a
``.bad-<time>`` name and never deletes it.

What SQLite itself does with damage, and so what is checked here before it is asked:
a zero-byte file is a valid empty database to SQLite (it would be filled with a new
schema); a write-ahead log whose header is garbage is ignored whole, silently dropping
every commit since the last checkpoint; a log damaged in a frame is cut at that frame,
as after a torn write, which cannot be told from a crash and is left to SQLite; a
damaged page in the database shows in ``PRAGMA quick_check`` or as "malformed".
"""

from __future__ import annotations

import os
import stat
import struct
import time

from condorpy.errors import QueueError

__all__ = ["StoreUnusable", "inspect_files", "set_aside", "FRESH_HINT"]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_WAL_MAGIC = (0x377F0682, 0x377F0683)
_WAL_HEADER = 32
FRESH_HINT = ("restore it from a backup, or copy the jobs that still read into a new "
              "store with `condorpy store salvage` (see its -h), or start the daemon once "
              "with `condorpy startd -fresh-queue` to move it aside and begin a new, "
              "empty queue")


class StoreUnusable(QueueError):
    """The job store's file is there but is not a usable condorpy store (empty,
    unreadable, damaged, foreign). Never taken for an empty queue."""

    def __init__(self, problem: str, *, path: str) -> None:
        self.problem = problem
        super().__init__(f"the job store {path} {problem}; it is not taken for an empty "
                         f"queue: {FRESH_HINT}")
        self.path = path


def inspect_files(path: str) -> tuple[bool, StoreUnusable | None]:
    """``(exists, problem)`` for the store at ``path`` from its files alone, without
    SQLite and without changing anything: ``(False, None)`` where there never was one."""
    wal = path + "-wal"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if _size(wal):
            return False, StoreUnusable("is missing but its write-ahead log "
                                        f"{wal} is there", path=path)
        return False, None
    except OSError as exc:
        return True, StoreUnusable(f"cannot be examined ({exc.strerror})", path=path)
    if not stat.S_ISREG(st.st_mode):
        return True, StoreUnusable("is not a regular file", path=path)
    if st.st_size == 0:
        return True, StoreUnusable("is empty (0 bytes)", path=path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            head = os.read(fd, len(_SQLITE_MAGIC))
        finally:
            os.close(fd)
    except OSError as exc:
        return True, StoreUnusable(f"cannot be read ({exc.strerror})", path=path)
    if head != _SQLITE_MAGIC:
        return True, StoreUnusable("is not an SQLite database", path=path)
    bad_wal = _wal_problem(wal)
    if bad_wal:
        return True, StoreUnusable(f"has a damaged write-ahead log {wal} ({bad_wal})",
                                   path=path)
    return True, None


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _wal_problem(wal: str) -> str | None:
    """Why the write-ahead log's header is not SQLite's, or None. A log shorter than its
    header never held a commit (a crash while it was being started)."""
    try:
        fd = os.open(wal, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        head = os.read(fd, _WAL_HEADER)
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    finally:
        os.close(fd)
    if len(head) < _WAL_HEADER:
        return None
    magic = struct.unpack(">I", head[:4])[0]
    if magic not in _WAL_MAGIC:
        return "bad magic number"
    words = struct.unpack((">" if magic & 1 else "<") + "6I", head[:24])
    if _wal_checksum(words) != struct.unpack(">2I", head[24:32]):
        return "bad header checksum"
    return None


def _wal_checksum(words: tuple[int, ...]) -> tuple[int, int]:
    # SQLite's WAL checksum (its file format document): pairs of 32-bit words.
    s0 = s1 = 0
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def set_aside(path: str, now: float | None = None) -> list[tuple[str, str]]:
    """Move the store at ``path`` and its -wal and -shm files aside as
    ``<name>.bad-<UTC time>`` (a free name: never over an earlier one). Returns the
    (from, to) pairs moved; nothing is deleted."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    base = f"{path}.bad-{stamp}"
    n = 0
    while any(os.path.lexists(base + s) for s in ("", "-wal", "-shm")):
        n += 1
        base = f"{path}.bad-{stamp}.{n}"
    moved = []
    for suffix in ("", "-wal", "-shm"):
        if os.path.lexists(path + suffix):
            os.rename(path + suffix, base + suffix)
            moved.append((path + suffix, base + suffix))
    return moved
