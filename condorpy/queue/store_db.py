"""The job store's database: opening it, its schema, its checks and its transactions.

One SQLite database (standard library) under the SPOOL directory, shared by every part
of the store (:mod:`.jobstore` the queue, :mod:`.history_store`, :mod:`.starter_rows`,
:mod:`.claim_rows`): each part writes only inside :meth:`StoreDb.transaction`, so a
change that spans parts (a job's end drops its starter and frees its claim) is one
transaction, and after a crash the database holds all of it or none of it.

Only one process opens it: opening for writing takes an exclusive lock on a file beside
the database, and a second writer gets a QueueError instead of interleaving with the
first. The writer (the daemon) also holds SQLite's own lock for as long as it is open
(``locking_mode=EXCLUSIVE``), so SQLite keeps the write-ahead log's index in the
daemon's memory instead of a shared ``-shm`` file mapped into it: a ``-shm`` file
another process truncates or makes unwritable can no longer kill the daemon with
SIGBUS. Readers (``readonly=True``, for tools and tests while no daemon runs) are
refused while it does; everyone else asks the daemon over its control socket.

SQLite's errors leave the store as :mod:`.store_errors` says: a QueueError naming the
file and the cause (full, unwritable, damaged), never ``sqlite3.Error``.

A full file system must not cost what already runs: the end of a running job is
recorded even then. So the writer keeps a reserve file of RESERVE_BYTES beside the
store; a transaction that finds less than that free gives it up first, and a new
submission (:meth:`StoreDb.admit`) is refused until the reserve can be made again.

A store is created only where none existed; a file that is there but empty, unreadable,
damaged or not condorpy's raises :class:`StoreUnusable` (``fresh=True``, the
administrator's ``-fresh-queue``, moves it aside first: :mod:`.store_check`).

Group commit: the daemon runs each turn of its loop inside :meth:`StoreDb.group`, and
the writes that may wait for the turn's end (a job's start and end, its claim, its
usage) inside :meth:`StoreDb.deferred`. Those become savepoints of one transaction
committed when the turn ends, or sooner, with the first write that may not wait (a
submission, a command's change). Whatever acts on such a write outside this process (a
held starter let go, a finished job's result file removed) is handed to
:meth:`StoreDb.after_commit` and done only once the commit has returned; the daemon
also commits before it answers any command. A daemon killed (SIGKILL) at any instant
has let nothing out that depends on an uncommitted write, and the next one finds the
state of the last commit, which is all it was told of.

The line held: against the daemon's death (SIGKILL, a crash), every commit; against
power loss or a kernel crash, every acknowledgement. A commit that holds a write that
may not wait is on disk before it returns (FULL: the write-ahead log is synced). A
turn's deferred writes alone commit under NORMAL (into the log, which the kernel keeps
once written, without waiting for the disk): the daemon's own record of jobs starting
and ending, which a power loss can take back to the last sync (at the latest the next
acknowledgement or checkpoint). Such a loss costs a run, never a job: the machine's
jobs died with it, and a job whose start or end was lost is run again from the queue,
as every job that was running is.

The schema's version says how the rows are written. A store of an older version is
upgraded in place when the writer opens it (its rows read as they are); one of a newer
version raises :class:`StoreTooNew`: its rows may say things this condorpy would read
wrongly, and it is not damage (``-fresh-queue`` keeps it).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from condorpy.errors import QueueError
from condorpy.queue import history_rotation
from condorpy.queue.store_check import StoreUnusable, inspect_files, set_aside
from condorpy.queue.store_errors import (StoreBusy, StoreConnection, StoreDamaged,
                                         StoreFull, os_store_error, store_error)

__all__ = ["StoreDb", "StoreTooNew", "SCHEMA_VERSION", "DB_NAME"]

# 1: a job row is its ad in the new ClassAd format ([ ... ]).
# 2: a job row may be in the old format, and a proc's row the text of its cluster's first
#    ad followed by the lines in which it differs (a later line wins): a condorpy that
#    knows only 1 reads such a row as damage. Rows of version 1 still read.
SCHEMA_VERSION = 2
DB_NAME = "condorpy_queue.sqlite3"
_LOCK_NAME = DB_NAME + ".lock"
RESERVE_NAME = "condorpy_store.reserve"
RESERVE_BYTES = 256 * 1024     # a few dozen job ends' worth of write-ahead log frames

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE jobs (
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL,
    status INTEGER NOT NULL, entered INTEGER NOT NULL, ad TEXT NOT NULL,
    PRIMARY KEY (cluster, proc));
CREATE TABLE history (
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL,
    status INTEGER NOT NULL, entered INTEGER NOT NULL, ad TEXT NOT NULL,
    PRIMARY KEY (cluster, proc));
CREATE INDEX history_by_time ON history (entered);
CREATE TABLE claims (
    claim_id TEXT PRIMARY KEY, slot TEXT NOT NULL, state TEXT NOT NULL,
    cluster INTEGER, proc INTEGER, updated INTEGER NOT NULL);
CREATE TABLE starters (
    cluster INTEGER NOT NULL, proc INTEGER NOT NULL,
    pid INTEGER NOT NULL, boot_id TEXT NOT NULL, process_start INTEGER NOT NULL,
    socket_path TEXT NOT NULL, execute_dir TEXT NOT NULL, slot TEXT NOT NULL,
    started INTEGER NOT NULL,
    PRIMARY KEY (cluster, proc));
"""

# Added after schema version 1 without a version change: an older condorpy ignores it.
# One row per claim a pool's schedd holds with a job on it (condorpy/startd/poolside/
# claimstore.py); the record holds the claim id's key, so it is never logged.
_POOL_CLAIMS = """
CREATE TABLE IF NOT EXISTS pool_claims (claim TEXT PRIMARY KEY, record TEXT NOT NULL)
"""


class StoreTooNew(QueueError):
    """The store was written by a newer condorpy (its schema version is above
    :data:`SCHEMA_VERSION`): refused, and left as it is."""

    def __init__(self, version: int, *, path: str) -> None:
        self.version = version
        super().__init__(f"the job store {path} has schema version {version}, newer than "
                         f"this condorpy understands ({SCHEMA_VERSION}): it was written by "
                         "a newer condorpy; run that one, or move the file away to start "
                         "with an empty queue (it is left as it is)")
        self.path = path


class StoreDb:
    """The open database in ``spool``, with its lock (when writing); :meth:`close`."""

    def __init__(self, spool: str | os.PathLike[str], *, readonly: bool,
                 clock: Callable[[], float], fresh: bool) -> None:
        """``fresh``: a store that is there but unusable is moved aside
        (:attr:`set_aside` says where, :attr:`damage` why) and a new one begun."""
        self.spool = os.fspath(spool)
        self.path = os.path.join(self.spool, DB_NAME)
        self.readonly = readonly
        self.clock = clock
        self._lock_fd: int | None = None
        self._db: sqlite3.Connection | None = None
        self.set_aside: list[tuple[str, str]] = []
        self.damage: StoreUnusable | None = None
        self.cluster_floor_raised: tuple[int, int] | None = None
        self.upgraded_from: int | None = None     # the schema version found, if older
        self._groups = 0          # group() blocks open: deferred writes wait for the last
        self._deferring = 0       # deferred() blocks open
        self._open = False        # a transaction holds deferred writes, uncommitted
        self._durable = False     # ... and a write that may not wait, to be synced
        # what waits for the commit: (done, undone), run once it has (or has failed)
        self._waiting: list[tuple[Callable[[], None], Callable[[], None] | None]] = []
        # how many turns' transactions were lost uncommitted: the daemon compares it
        # before and after a turn to learn that its memory ran ahead of the store
        self.rollbacks = 0
        try:
            if readonly:
                if not os.path.exists(self.path):
                    raise QueueError("no job store here", path=self.path)
                # not mode=ro: SQLite cannot read a database in WAL mode whose -wal
                # file is absent without creating it; query_only keeps it unwritten
                self._db = self._connect(self.path)
                self._db.execute("PRAGMA query_only=ON")
                try:
                    self._setup(existed=True)
                except StoreBusy:
                    raise QueueError("the job store is in use by the daemon: ask it "
                                     "(condorpy q, condorpy history)",
                                     path=self.path) from None
                return
            os.makedirs(self.spool, exist_ok=True)
            self._lock()
            try:
                self._open_checked()
            except StoreUnusable as exc:
                if not fresh:
                    raise
                self._close_db()
                self.damage = exc
                self.set_aside = set_aside(self.path, self.clock())
                self._open_checked()
            self._make_reserve()
        except OSError as exc:
            self.close()
            raise os_store_error(exc, self.path) from None
        except sqlite3.Error as exc:
            self.close()
            raise store_error(exc, self.path) from None
        except QueueError:
            self.close()
            raise

    def _open_checked(self) -> None:
        """Open for writing: create where no store existed, else check before writing
        anything (a zero-byte file would otherwise be filled with a new schema)."""
        existed, problem = inspect_files(self.path)
        if problem is not None:
            raise problem
        self._db = db = self._connect(self.path)
        try:
            if existed:
                # quick_check reads every page once (20,000 jobs: see
                # benchmarks/store_bench.py) but no index against its table.
                (first, *_rest) = [r[0] for r in db.execute("PRAGMA quick_check")]
                if first != "ok":
                    said = [ln for ln in str(first).splitlines()
                            if ln.strip() and not ln.startswith("***")]
                    raise StoreUnusable(f"is damaged (quick_check: "
                                        f"{said[0] if said else first})", path=self.path)
            self._setup(existed=existed)
        except StoreDamaged as exc:
            # locked, no permission, out of space are not the file's fault: they pass
            raise StoreUnusable(f"is corrupt or not a database ({exc.cause})",
                                path=self.path) from None

    def _connect(self, target: str) -> StoreConnection:
        db = sqlite3.connect(target, isolation_level=None, factory=StoreConnection)
        db.path = self.path
        # before the first read: SQLite then never maps a -shm file (see the module's
        # docstring); it also makes this connection the store's only one
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        return db

    # --- opening ------------------------------------------------------------------

    def _lock(self) -> None:
        self._lock_fd = self.hold_lock(self.spool)

    @staticmethod
    def hold_lock(spool: str) -> int:
        """Take the writer's lock of the store in ``spool`` (a descriptor: closing it
        lets go); a QueueError while another process holds it."""
        fd = os.open(os.path.join(spool, _LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise QueueError("the job store is in use by another process (a running "
                             "daemon?)", path=os.path.join(spool, DB_NAME)) from None
        return fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)   # closing releases the flock
            self._lock_fd = None

    def _setup(self, existed: bool) -> None:
        db = self.conn()
        tables = {r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        if existed and "schema_version" not in tables:
            # never created here: a file with no schema is not an empty queue
            raise StoreUnusable("has no condorpy schema (empty, or not a condorpy job "
                                "store)" if not tables else
                                "has no schema version: not a condorpy job store",
                                path=self.path)
        if not self.readonly:
            db.execute("PRAGMA journal_mode=WAL")
            # FULL, not NORMAL: in WAL mode NORMAL survives a crash of this process but
            # can lose the last commits on power loss or a kernel crash, and a commit
            # here acknowledges a submission or a command. (A group of deferred writes
            # alone commits under NORMAL: see "Group commit" above.)
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA busy_timeout=5000")
        if "schema_version" not in tables:
            if tables:
                raise StoreUnusable("has no schema version: not a condorpy job store",
                                    path=self.path)
            if self.readonly:
                raise QueueError("the job store is empty", path=self.path)
            self._create()
            return
        row = db.execute("SELECT version FROM schema_version").fetchone()
        if row is None:
            raise StoreUnusable("has no schema version", path=self.path)
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreTooNew(version, path=self.path)
        if version < 1:
            raise QueueError(f"the job store has an invalid schema version {version}",
                             path=self.path)
        if db.execute("SELECT 1 FROM meta WHERE key='next_cluster'").fetchone() is None:
            raise StoreUnusable("has lost its next cluster id", path=self.path)
        if self.readonly:
            return
        with self.transaction() as tx:
            if "pool_claims" not in tables:
                tx.execute(_POOL_CLAIMS)
            if "history_rotations" not in tables:
                tx.execute(history_rotation.TABLE)
            self._floor_cluster(tx)
            history_rotation.count_live(tx)
            if version < SCHEMA_VERSION:
                # 1 -> 2 changes how rows are written, not the tables: the rows stay as
                # they are (both formats read), and only the version says rows of the
                # new kind may follow. In the same transaction as the rest, so a crash
                # leaves the old version and its rows.
                tx.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION,))
                self.upgraded_from = version

    def _floor_cluster(self, db: sqlite3.Connection) -> None:
        """Never hand out a cluster id at or below one the store holds (a next id that
        went backwards would let a new cluster share ids with finished ones)."""
        (cid,) = db.execute("SELECT value FROM meta WHERE key='next_cluster'").fetchone()
        (top,) = db.execute("SELECT max(coalesce((SELECT max(cluster) FROM jobs), 0), "
                            "coalesce((SELECT max(cluster) FROM history), 0))").fetchone()
        if int(top) >= int(cid):
            db.execute("UPDATE meta SET value=? WHERE key='next_cluster'", (int(top) + 1,))
            self.cluster_floor_raised = (int(cid), int(top) + 1)

    def _create(self) -> None:
        with self.transaction() as db:
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            db.execute(_POOL_CLAIMS)
            db.execute(history_rotation.TABLE)
            db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            db.execute("INSERT INTO meta VALUES ('next_cluster', 1)")
            history_rotation.count_live(db)

    def _close_db(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def close(self) -> None:
        try:
            if self._db is not None:
                self.flush()
        finally:
            self._close_db()
            self._unlock()

    # --- for the parts --------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; every part of the store writes only inside one."""
        if self._db is None:
            raise QueueError("the job store is closed", path=self.path)
        if self.readonly:
            raise QueueError("the job store was opened read-only", path=self.path)
        db = self._db
        self._spend_reserve_if_short()   # a write joining the turn's needs room as well
        if self._open:
            # inside the turn's transaction: a savepoint, undone alone on failure
            db.execute("SAVEPOINT part")
            try:
                yield db
                db.execute("RELEASE part")
            except BaseException:
                self._undo_part(db)
                raise
            if not self._deferring:
                self._durable = True
                self.flush()        # a write that may not wait commits the turn's too
            return
        grouped = bool(self._deferring and self._groups)
        if grouped:
            # the level is the transaction's from its start: see "Group commit"
            db.execute("PRAGMA synchronous=NORMAL")
        # IMMEDIATE: take the write lock at the start, so a transaction never fails
        # half-way for want of it.
        db.execute("BEGIN IMMEDIATE")
        if grouped:
            self._open = True
            try:
                yield db
            except BaseException:
                self._roll_back(db)
                self._undone(db)
                raise
            return
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            self._roll_back(db)
            raise

    def _undo_part(self, db: sqlite3.Connection) -> None:
        """Undo a failed savepoint. Where SQLite has undone the whole transaction (a
        full disk, an I/O error), the turn's earlier writes went with it: what waited
        for them is told so."""
        if db.in_transaction:
            try:
                db.execute("ROLLBACK TO part")
                db.execute("RELEASE part")
                return
            except QueueError:
                self._roll_back(db)
        self._undone(db)

    def _undone(self, db: sqlite3.Connection) -> None:
        """The turn's transaction is gone uncommitted: back to FULL, and what waited
        for it is told."""
        self._open = self._durable = False
        self.rollbacks += 1
        with suppress(QueueError):
            db.execute("PRAGMA synchronous=FULL")
        self._settle(False)

    # --- group commit -----------------------------------------------------------------

    @contextmanager
    def group(self) -> Iterator[None]:
        """A turn of the daemon's loop: deferred writes made in it are committed
        together when it ends (or sooner, :meth:`flush`)."""
        self._groups += 1
        try:
            yield
        finally:
            self._groups -= 1
            if not self._groups:
                self.flush()

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """The transactions opened in the block may wait for the end of the group (in
        a group; outside one they commit at once, as any other)."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1

    def after_commit(self, done: Callable[[], None],
                     undone: Callable[[], None] | None = None) -> None:
        """Run ``done`` once the writes made so far are committed (at once when none
        waits), or ``undone`` if their commit fails."""
        if self._open:
            self._waiting.append((done, undone))
        else:
            done()

    def flush(self) -> None:
        """Commit the deferred writes now, then run what waited for them."""
        if not self._open:
            return
        durable = self._durable
        db = self.conn()
        try:
            db.execute("COMMIT")
        except BaseException:
            self._roll_back(db)
            self._undone(db)
            raise
        self._open = self._durable = False
        try:
            db.execute("PRAGMA synchronous=FULL")
            if durable:
                self._sync_log()
        finally:
            self._settle(True)

    def _sync_log(self) -> None:
        """What FULL would have done at the commit: the write-ahead log on disk (an
        fsync through any descriptor of a file writes all of it)."""
        try:
            fd = os.open(self.path + "-wal", os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise os_store_error(exc, self.path) from None

    def _settle(self, committed: bool) -> None:
        waiting, self._waiting = self._waiting, []
        first: BaseException | None = None
        for done, undone in waiting:
            step = done if committed else undone
            if step is None:
                continue
            try:
                step()
            except Exception as exc:     # the rest must still hear; the first is raised
                first = first or exc
        if first is not None:
            raise first

    def _roll_back(self, db: sqlite3.Connection) -> None:
        """Undo what is left of a failed transaction. SQLite has already undone it
        where the failure was a full disk or an I/O error (a ROLLBACK then fails for
        want of a transaction), and the first error is the one worth reporting."""
        if db.in_transaction:
            try:
                db.execute("ROLLBACK")
            except QueueError:
                pass

    # --- the reserve ----------------------------------------------------------------

    def _reserve_path(self) -> str:
        return os.path.join(self.spool, RESERVE_NAME)

    def _make_reserve(self) -> bool:
        """Make the reserve file where it is missing; whether it is there now."""
        path = self._reserve_path()
        if os.path.exists(path):
            return True
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            return True
        try:
            try:
                block = b"\0" * 65536          # written, not sparse: the space is taken
                for _ in range(RESERVE_BYTES // len(block)):
                    os.write(fd, block)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            os.unlink(path)
            return False
        return True

    def _free(self) -> int | None:
        try:
            st = os.statvfs(self.spool)
        except OSError:
            return None
        return st.f_bavail * st.f_frsize

    def _spend_reserve_if_short(self) -> None:
        free = self._free()
        if free is not None and free < RESERVE_BYTES:
            try:
                os.unlink(self._reserve_path())
            except OSError:
                pass      # spent already: the write meets what it meets

    def admit(self) -> None:
        """Before new work is stored: a StoreFull unless the reserve is there and as
        much again is free (so the jobs already queued can still be started and ended,
        and a submission never spends the reserve)."""
        if self.readonly:
            return
        made = self._make_reserve()
        free = self._free()
        if not made or (free is not None and free < RESERVE_BYTES):
            raise StoreFull(f"the job store's file system is full: less than "
                            f"{RESERVE_BYTES // 1024} KiB free beyond the reserve kept "
                            f"for recording the jobs already queued ({RESERVE_NAME}); new "
                            "work is refused until there is room", path=self.path,
                            cause="reserve")

    def conn(self) -> sqlite3.Connection:
        """The connection, for reading (committed states only)."""
        if self._db is None:
            raise QueueError("the job store is closed", path=self.path)
        return self._db

    def now(self) -> int:
        return int(self.clock())
