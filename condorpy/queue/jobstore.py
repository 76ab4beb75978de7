"""The startd's persistent job store: local queue, history, claims and starters.

One SQLite database (standard library) under the SPOOL directory, so that a restarted
daemon finds every acknowledged submission, every job it had started and the starters
it can re-adopt. Every change that acknowledges a submission or starts a job is one
transaction: after a crash the database holds all of it or none of it.

Only one process writes: opening for writing takes an exclusive lock on a file beside
the database, and a second writer gets a QueueError instead of interleaving with the
first. Readers (``readonly=True``) take no lock and see committed states only (WAL).

A store is created only where none existed; a file that is there but empty, unreadable,
damaged or not condorpy's raises :class:`StoreUnusable` (``fresh=True``, the
administrator's ``-fresh-queue``, moves it aside first: :mod:`.store_check`).

The history is kept as HTCondor keeps its history file (MAX_HISTORY_LOG,
MAX_HISTORY_ROTATIONS): rows are appended in order (their rowid), the "live file" is the
rows after the last rotation, and once its ads would pass ``max_bytes`` it becomes a
rotation; rotations beyond ``rotations`` are deleted, oldest first.
"""

from __future__ import annotations

import enum
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from condorpy.classad import Budget, CallContext, ClassAd, Expr, parse_expr
from condorpy.errors import ClassAdError, QueueError
from condorpy.queue import history_rotation
from condorpy.queue.history_rotation import HistoryLimits
from condorpy.queue.store_check import StoreUnusable, inspect_files, set_aside

__all__ = ["JobStatus", "JobId", "JobRecord", "ClaimRecord", "StarterRecord", "JobStore",
           "HistoryLimits", "StoreUnusable", "SCHEMA_VERSION", "DB_NAME"]

SCHEMA_VERSION = 1
DB_NAME = "condorpy_queue.sqlite3"
_LOCK_NAME = DB_NAME + ".lock"


class JobStatus(enum.IntEnum):
    """HTCondor's JobStatus codes."""
    IDLE = 1
    RUNNING = 2
    REMOVED = 3
    COMPLETED = 4
    HELD = 5
    TRANSFERRING_OUTPUT = 6
    SUSPENDED = 7


# Statuses after which a job leaves the queue for the history.
_FINAL = (JobStatus.REMOVED, JobStatus.COMPLETED)


@dataclass(frozen=True, order=True)
class JobId:
    cluster: int
    proc: int

    def __str__(self) -> str:
        return f"{self.cluster}.{self.proc}"

    @classmethod
    def parse(cls, text: str) -> JobId:
        try:
            c, p = text.split(".")
            return cls(int(c), int(p))
        except ValueError:
            raise QueueError(f"{text!r} is not a job id (CLUSTER.PROC)") from None


@dataclass(frozen=True)
class JobRecord:
    """A job as stored: its id, status, when it entered that status, and its ad (a
    fresh copy; changing it changes nothing in the store)."""
    job_id: JobId
    status: JobStatus
    entered_status: int
    ad: ClassAd


@dataclass(frozen=True)
class ClaimRecord:
    claim_id: str
    slot: str
    state: str
    job_id: JobId | None
    updated: int


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
# One row per claim a pool's schedd holds with a job on it (condorpy/startd/
# poolside/claimstore.py); the record holds the claim id's key, so it is never logged.
_POOL_CLAIMS = """
CREATE TABLE IF NOT EXISTS pool_claims (claim TEXT PRIMARY KEY, record TEXT NOT NULL)
"""


# meta rows "reserved_by.<cluster>" = uid: who reserved a cluster id not yet submitted
_RESERVED_BY = "reserved_by."
_RESERVATIONS_KEPT = 10000
_HISTORY_CHUNK = 256                    # rows read at a time by history_iter


def _ad_text(ad: ClassAd) -> str:
    return ad.to_new()


class JobStore:
    """The job store in ``spool``. Use as a context manager or call :meth:`close`."""

    def __init__(self, spool: str | os.PathLike[str], *, readonly: bool = False,
                 clock: Callable[[], float] = time.time, fresh: bool = False,
                 history: HistoryLimits = HistoryLimits()) -> None:
        """``fresh``: a store that is there but unusable is moved aside
        (:attr:`set_aside` says where, :attr:`damage` why) and a new one begun."""
        self.spool = os.fspath(spool)
        self.path = os.path.join(self.spool, DB_NAME)
        self.readonly = readonly
        self._clock = clock
        self._lock_fd: int | None = None
        self._db: sqlite3.Connection = None  # type: ignore[assignment]
        self._history_limits = history
        self.set_aside: list[tuple[str, str]] = []
        self.damage: StoreUnusable | None = None
        self.cluster_floor_raised: tuple[int, int] | None = None
        try:
            if readonly:
                if not os.path.exists(self.path):
                    raise QueueError("no job store here", path=self.path)
                self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                           isolation_level=None)
                self._setup(existed=True)
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
                self.set_aside = set_aside(self.path, self._clock())
                self._open_checked()
        except OSError as exc:
            self.close()
            raise QueueError(f"cannot open the job store: {exc.strerror or exc}",
                             path=self.path) from None
        except sqlite3.Error as exc:
            self.close()
            raise QueueError(f"cannot open the job store: {exc}", path=self.path) from None
        except QueueError:
            self.close()
            raise

    def _open_checked(self) -> None:
        """Open for writing: create where no store existed, else check before writing
        anything (a zero-byte file would otherwise be filled with a new schema)."""
        existed, problem = inspect_files(self.path)
        if problem is not None:
            raise problem
        self._db = sqlite3.connect(self.path, isolation_level=None)
        try:
            if existed:
                # quick_check reads every page once (20,000 jobs: see
                # benchmarks/store_bench.py) but no index against its table.
                (first, *_rest) = [r[0] for r in self._db.execute("PRAGMA quick_check")]
                if first != "ok":
                    said = [ln for ln in str(first).splitlines()
                            if ln.strip() and not ln.startswith("***")]
                    raise StoreUnusable(f"is damaged (quick_check: "
                                        f"{said[0] if said else first})", path=self.path)
            self._setup(existed=existed)
        except sqlite3.OperationalError:
            raise        # locked, no permission, out of space: not the file's fault
        except sqlite3.DatabaseError as exc:
            raise StoreUnusable(f"is corrupt or not a database ({exc})",
                                path=self.path) from None

    # --- opening ------------------------------------------------------------------

    def _lock(self) -> None:
        fd = os.open(os.path.join(self.spool, _LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise QueueError("the job store is in use by another process",
                             path=self.path) from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)   # closing releases the flock
            self._lock_fd = None

    def _setup(self, existed: bool) -> None:
        db = self._conn()
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
            # here acknowledges a submission or records a started job; one fsync per
            # transaction is cheap next to starting a job.
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
            raise QueueError(f"the job store has schema version {version}, newer than "
                             f"this condorpy understands ({SCHEMA_VERSION}); upgrade "
                             "condorpy or move the file away", path=self.path)
        if version < 1:
            raise QueueError(f"the job store has an invalid schema version {version}",
                             path=self.path)
        if db.execute("SELECT 1 FROM meta WHERE key='next_cluster'").fetchone() is None:
            raise StoreUnusable("has lost its next cluster id", path=self.path)
        if self.readonly:
            return
        with self._transaction() as tx:
            if "pool_claims" not in tables:
                tx.execute(_POOL_CLAIMS)
            if "history_rotations" not in tables:
                tx.execute(history_rotation.TABLE)
            self._floor_cluster(tx)
            history_rotation.count_live(tx)

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
        with self._transaction() as db:
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)
            db.execute(_POOL_CLAIMS)
            db.execute(history_rotation.TABLE)
            db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            db.execute("INSERT INTO meta VALUES ('next_cluster', 1)")
            history_rotation.count_live(db)

    def _close_db(self) -> None:
        db = getattr(self, "_db", None)
        if db is not None:
            db.close()
            self._db = None  # type: ignore[assignment]

    def close(self) -> None:
        self._close_db()
        self._unlock()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions -------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        if self._db is None:
            raise QueueError("the job store is closed", path=self.path)
        if self.readonly:
            raise QueueError("the job store was opened read-only", path=self.path)
        db = self._db
        # IMMEDIATE: take the write lock at the start, so a transaction never fails
        # half-way for want of it.
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        else:
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                db.execute("ROLLBACK")
                raise QueueError(f"could not commit: {exc}", path=self.path) from None

    def _now(self) -> int:
        return int(self._clock())

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise QueueError("the job store is closed", path=self.path)
        return self._db

    # --- clusters and submission --------------------------------------------------

    def new_cluster_id(self, owner_uid: int | None = None) -> int:
        """Reserve a cluster id (persisted: never handed out twice, even after a
        crash). A reserved id that is never submitted is simply skipped. With
        ``owner_uid`` only that uid may submit into it (:meth:`submit`)."""
        with self._transaction() as db:
            cid = self._take_cluster(db)
            if owner_uid is not None:
                # kept in meta (no schema change); a reservation left unused this many
                # ids back is dropped, so abandoned ones do not pile up
                db.execute("DELETE FROM meta WHERE key LIKE ? AND "
                           "CAST(substr(key, ?) AS INTEGER) < ?",
                           (_RESERVED_BY + "%", len(_RESERVED_BY) + 1,
                            cid - _RESERVATIONS_KEPT))
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                           (f"{_RESERVED_BY}{cid}", owner_uid))
            return cid

    @staticmethod
    def _take_cluster(db: sqlite3.Connection) -> int:
        (cid,) = db.execute("SELECT value FROM meta WHERE key='next_cluster'").fetchone()
        db.execute("UPDATE meta SET value=? WHERE key='next_cluster'", (cid + 1,))
        return int(cid)

    def next_cluster_id(self) -> int:
        """The id the next :meth:`new_cluster_id` would return."""
        (cid,) = self._conn().execute(
            "SELECT value FROM meta WHERE key='next_cluster'").fetchone()
        return int(cid)

    def submit(self, ads: Sequence[ClassAd], cluster_id: int | None = None, *,
               owner_uid: int | None = None) -> int:
        """Store the jobs of one cluster in one transaction and return the cluster id.

        With ``cluster_id`` None a new id is taken in the same transaction and each
        ad gets ClusterId and ProcId (its index). Otherwise the id must come from
        :meth:`new_cluster_id` and not hold jobs yet; ads keep their ProcId. With
        ``owner_uid`` the id must have been reserved by that uid."""
        if not ads:
            raise QueueError("nothing to submit: no job ads", path=self.path)
        now = self._now()
        with self._transaction() as db:
            if cluster_id is None:
                cluster_id = self._take_cluster(db)
            else:
                if cluster_id >= self.next_cluster_id() or cluster_id < 1:
                    raise QueueError(f"cluster {cluster_id} was not reserved",
                                     path=self.path)
                used = db.execute("SELECT 1 FROM jobs WHERE cluster=? UNION ALL "
                                  "SELECT 1 FROM history WHERE cluster=? LIMIT 1",
                                  (cluster_id, cluster_id)).fetchone()
                if used:
                    raise QueueError(f"cluster {cluster_id} already has jobs",
                                     path=self.path)
                if owner_uid is not None:
                    row = db.execute("SELECT value FROM meta WHERE key=?",
                                     (f"{_RESERVED_BY}{cluster_id}",)).fetchone()
                    if row is None or int(row[0]) != owner_uid:
                        whose = "no one" if row is None else "another user"
                        raise QueueError(f"cluster {cluster_id} is reserved for {whose}, "
                                         f"not for uid {owner_uid}", path=self.path)
                db.execute("DELETE FROM meta WHERE key=?", (f"{_RESERVED_BY}{cluster_id}",))
            rows = []
            seen: set[int] = set()
            for index, src in enumerate(ads):
                ad = src.copy()
                proc = ad.get("ProcId")
                if not isinstance(proc, int) or isinstance(proc, bool):
                    proc = index
                if proc in seen:
                    raise QueueError(f"job {cluster_id}.{proc} given twice", path=self.path)
                seen.add(proc)
                ad["ClusterId"] = cluster_id
                ad["ProcId"] = proc
                status = _status_of(ad.get("JobStatus"), JobStatus.IDLE)
                ad["JobStatus"] = int(status)
                entered = ad.get("EnteredCurrentStatus")
                if not isinstance(entered, int) or isinstance(entered, bool):
                    entered = now
                    ad["EnteredCurrentStatus"] = now
                rows.append((cluster_id, proc, int(status), entered, _ad_text(ad)))
            db.executemany("INSERT INTO jobs VALUES (?, ?, ?, ?, ?)", rows)
        return cluster_id

    # --- reading ------------------------------------------------------------------

    def job(self, job_id: JobId) -> JobRecord | None:
        row = self._conn().execute(
            "SELECT cluster, proc, status, entered, ad FROM jobs "
            "WHERE cluster=? AND proc=?", (job_id.cluster, job_id.proc)).fetchone()
        return None if row is None else self._record(row)

    def jobs(self, constraint: str | Expr | None = None,
             limit: int | None = None) -> list[JobRecord]:
        """Jobs in the queue, in id order, whose ad makes ``constraint`` true; the first
        ``limit`` of them."""
        if limit is not None and limit <= 0:
            return []
        rows = self._conn().execute(
            "SELECT cluster, proc, status, entered, ad FROM jobs ORDER BY cluster, proc")
        return self._filter(rows, constraint, limit)

    def history(self, constraint: str | Expr | None = None,
                limit: int | None = None) -> list[JobRecord]:
        """Finished jobs, the most recently finished first."""
        return list(self.history_iter(constraint, limit=limit))

    def history_iter(self, constraint: str | Expr | None = None, *,
                     limit: int | None = None,
                     newest_first: bool = True) -> Iterator[JobRecord]:
        """Finished jobs in the order they left the queue (newest first, as
        condor_history reads its file backwards), those whose ad makes ``constraint``
        true, stopping after ``limit``."""
        for chunk in self.history_chunks(constraint, limit=limit, newest_first=newest_first):
            yield from chunk

    def history_chunks(self, constraint: str | Expr | None = None, *,
                       limit: int | None = None,
                       newest_first: bool = True) -> Iterator[list[JobRecord]]:
        """:meth:`history_iter` a chunk of rows at a time: each list holds the matches
        among the next rows read, and may be empty, so that a caller serving others
        between chunks (the daemon's loop) is never held by a constraint that matches
        little in a long history. Rows are read only as far as needed, and no statement
        stays open between chunks, so a caller may write to the store meanwhile."""
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
            chunk = _HISTORY_CHUNK
            if expr is None and left is not None:
                chunk = min(chunk, left)    # every row counts: read no more than needed
            rows = self._conn().execute(
                "SELECT rowid, cluster, proc, status, entered, ad FROM history "
                f"{where}ORDER BY rowid {order} LIMIT {chunk}").fetchall()
            if not rows:
                return
            last = int(rows[-1][0])
            found = self._filter([r[1:] for r in rows], expr, left, budget=budget)
            if left is not None:
                left -= len(found)          # _filter stopped at the limit
            yield found
            if (left is not None and left <= 0) or len(rows) < chunk:
                return

    def _filter(self, rows: Any, constraint: str | Expr | None,
                limit: int | None = None, *, budget: Budget | None = None
                ) -> list[JobRecord]:
        expr = parse_constraint(constraint)
        # A constraint is a user's: all the ads it is tried on share one budget (timed
        # on the monotonic clock: the store's is the wall clock of QDate); running out is an error naming it, not "no job matched".
        if budget is None:
            budget = Budget.for_user()
        ctx = CallContext(now=self._clock, budget=budget)
        out: list[JobRecord] = []
        for row in rows:
            rec = self._record(row)
            if expr is not None:
                ok = rec.ad.eval_expr(expr, None, ctx) is True
                if budget.exceeded:
                    raise QueueError(f"constraint {shorten(str(expr))!r}: evaluation "
                                     f"exceeded its budget ({budget.describe()})")
                if not ok:
                    continue
            out.append(rec)
            if limit is not None and len(out) >= limit:
                break
        return out

    def _record(self, row: tuple[int, int, int, int, str]) -> JobRecord:
        cluster, proc, status, entered, text = row
        try:
            ad = ClassAd.parse_new(text, source=f"{self.path} job {cluster}.{proc}")
        except ClassAdError as exc:
            raise QueueError(f"job {cluster}.{proc} has an unreadable ad: {exc}",
                             path=self.path) from None
        return JobRecord(JobId(cluster, proc), JobStatus(status), entered, ad)

    def counts(self) -> dict[JobStatus, int]:
        return {JobStatus(s): n for s, n in self._conn().execute(
            "SELECT status, count(*) FROM jobs GROUP BY status")}

    # --- changing jobs ------------------------------------------------------------

    def _load(self, db: sqlite3.Connection, job_id: JobId) -> JobRecord:
        row = db.execute("SELECT cluster, proc, status, entered, ad FROM jobs "
                         "WHERE cluster=? AND proc=?", (job_id.cluster, job_id.proc)
                         ).fetchone()
        if row is None:
            raise QueueError(f"no job {job_id} in the queue", path=self.path)
        return self._record(row)

    def _store(self, db: sqlite3.Connection, job_id: JobId, ad: ClassAd) -> None:
        status = _status_of(ad.get("JobStatus"), JobStatus.IDLE)
        entered = ad.get("EnteredCurrentStatus")
        if not isinstance(entered, int):
            entered = self._now()
        if status in _FINAL and not self._left_in_queue(ad):
            db.execute("DELETE FROM jobs WHERE cluster=? AND proc=?",
                       (job_id.cluster, job_id.proc))
            db.execute("DELETE FROM starters WHERE cluster=? AND proc=?",
                       (job_id.cluster, job_id.proc))
            self._add_history(db, job_id, int(status), entered, _ad_text(ad))
        else:
            db.execute("UPDATE jobs SET status=?, entered=?, ad=? "
                       "WHERE cluster=? AND proc=?",
                       (int(status), entered, _ad_text(ad), job_id.cluster, job_id.proc))

    def _left_in_queue(self, ad: ClassAd) -> bool:
        """A finished job stays in the queue while its LeaveJobInQueue is true."""
        if ad.lookup("LeaveJobInQueue") is None:
            return False
        return ad.evaluate("LeaveJobInQueue", None,
                           CallContext(now=self._clock)) is True

    def to_history(self, job_id: JobId) -> bool:
        """Move a finished job still in the queue to the history: its LeaveJobInQueue
        turned false, or it was removed by command. False when it is not finished."""
        with self._transaction() as db:
            rec = self._load(db, job_id)
            if rec.status not in _FINAL:
                return False
            db.execute("DELETE FROM jobs WHERE cluster=? AND proc=?",
                       (job_id.cluster, job_id.proc))
            self._add_history(db, job_id, int(rec.status), rec.entered_status,
                              _ad_text(rec.ad))
            return True

    # --- history size (HTCondor's MAX_HISTORY_LOG and MAX_HISTORY_ROTATIONS) ----------

    def _add_history(self, db: sqlite3.Connection, job_id: JobId, status: int,
                     entered: int, text: str) -> None:
        history_rotation.append(db, self._history_limits, self._now(), job_id.cluster,
                                job_id.proc, status, entered, text)

    def set_history_limits(self, limits: HistoryLimits) -> None:
        """New MAX_HISTORY_LOG / MAX_HISTORY_ROTATIONS (a reconfig): fewer rotations
        apply at once; a smaller size at the next job that enters the history."""
        self._history_limits = limits
        with self._transaction() as db:
            history_rotation.trim(db, limits.rotations)

    def history_size(self) -> tuple[int, list[int]]:
        """The ad bytes of the live history and of each rotation, newest first."""
        db = self._conn()
        return (history_rotation.live_bytes(db) or 0,
                [int(b) for (b,) in db.execute(
                    "SELECT bytes FROM history_rotations ORDER BY last_rowid DESC")])

    def left_in_queue(self, rec: JobRecord) -> bool:
        return self._left_in_queue(rec.ad)

    def update(self, job_id: JobId, attrs: Mapping[str, Any]) -> None:
        """Set attributes of a job's ad (values, or Expr for expressions). JobStatus
        changes go through :meth:`set_status`."""
        if any(k.lower() in ("jobstatus", "clusterid", "procid") for k in attrs):
            raise QueueError("JobStatus, ClusterId and ProcId are not changed by update()")
        with self._transaction() as db:
            ad = self._load(db, job_id).ad
            try:
                for name, value in attrs.items():
                    ad[name] = value
            except ClassAdError as exc:
                raise QueueError(f"job {job_id}: {exc}", path=self.path) from None
            self._store(db, job_id, ad)

    def update_many(self, changes: Mapping[JobId, Mapping[str, Any]]) -> None:
        """:meth:`update` for several jobs in one transaction."""
        with self._transaction() as db:
            for job_id, attrs in changes.items():
                ad = self._load(db, job_id).ad
                for name, value in attrs.items():
                    ad[name] = value
                self._store(db, job_id, ad)

    def set_status(self, job_id: JobId, status: JobStatus, *, reason: str | None = None,
                   code: int | None = None, subcode: int | None = None) -> JobRecord:
        """Move a job to ``status`` as the schedd does: LastJobStatus and
        EnteredCurrentStatus follow; holding records HoldReason[Code/SubCode],
        releasing clears them; removing records RemoveReason; a completed or removed
        job moves to the history with its final ad. Returns the new record."""
        now = self._now()
        with self._transaction() as db:
            return self._change_status(db, job_id, self._load(db, job_id), status, reason,
                                       code, subcode, now)

    def _change_status(self, db: sqlite3.Connection, job_id: JobId, rec: JobRecord,
                       status: JobStatus, reason: str | None, code: int | None,
                       subcode: int | None, now: int) -> JobRecord:
        ad = rec.ad
        if rec.status != status:
            ad["LastJobStatus"] = int(rec.status)
            ad["EnteredCurrentStatus"] = now
        ad["JobStatus"] = int(status)
        if status == JobStatus.HELD:
            ad["HoldReason"] = reason or "held"
            ad["HoldReasonCode"] = code if code is not None else 0
            ad["HoldReasonSubCode"] = subcode if subcode is not None else 0
            ad["NumHolds"] = _int(ad.get("NumHolds")) + 1
        elif rec.status == JobStatus.HELD:
            for name in ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"):
                if name in ad:
                    del ad[name]
            if reason:
                ad["ReleaseReason"] = reason
        if status == JobStatus.REMOVED:
            ad["RemoveReason"] = reason or "removed"
        if status == JobStatus.COMPLETED:
            ad["CompletionDate"] = now
        if status in _FINAL:
            db.execute("UPDATE claims SET cluster=NULL, proc=NULL, state='idle', "
                       "updated=? WHERE cluster=? AND proc=?",
                       (now, job_id.cluster, job_id.proc))
        self._store(db, job_id, ad)
        return JobRecord(job_id, status, _int(ad.get("EnteredCurrentStatus")), ad)

    def end_job(self, job_id: JobId, attrs: Mapping[str, Any], status: JobStatus, *,
                reason: str | None = None, code: int | None = None,
                subcode: int | None = None, claim_id: str | None = None) -> JobRecord:
        """Everything a job's end changes, in one transaction: what its starter reported,
        its new status, its starter record and its claim dropped. A daemon restarted
        at any moment therefore sees the end recorded exactly once or not at all."""
        if any(k.lower() in ("jobstatus", "clusterid", "procid") for k in attrs):
            raise QueueError("JobStatus, ClusterId and ProcId are not changed by end_job()")
        now = self._now()
        with self._transaction() as db:
            rec = self._load(db, job_id)
            for name, value in attrs.items():
                rec.ad[name] = value
            out = self._change_status(db, job_id, rec, status, reason, code, subcode, now)
            db.execute("DELETE FROM starters WHERE cluster=? AND proc=?",
                       (job_id.cluster, job_id.proc))
            if claim_id is not None:
                db.execute("DELETE FROM claims WHERE claim_id=?", (claim_id,))
            return out

    def start_job(self, job_id: JobId, starter: StarterRecord, *, claim_id: str | None = None,
                  remote_host: str | None = None) -> JobRecord:
        """Everything starting a job changes, in one transaction: the job becomes
        running (NumJobStarts, JobCurrentStartDate, JobStartDate, RemoteHost), its
        claim becomes busy with it, and its starter is recorded for re-adoption."""
        now = self._now()
        if starter.job_id != job_id:
            raise QueueError(f"starter record is for {starter.job_id}, not {job_id}")
        with self._transaction() as db:
            rec = self._load(db, job_id)
            if rec.status not in (JobStatus.IDLE, JobStatus.RUNNING):
                raise QueueError(f"job {job_id} is {rec.status.name.lower()}, not idle",
                                 path=self.path)
            ad = rec.ad
            ad["LastJobStatus"] = int(rec.status)
            ad["JobStatus"] = int(JobStatus.RUNNING)
            ad["EnteredCurrentStatus"] = now
            ad["NumJobStarts"] = _int(ad.get("NumJobStarts")) + 1
            ad["JobRunCount"] = _int(ad.get("JobRunCount")) + 1
            ad["JobCurrentStartDate"] = now
            if "JobStartDate" not in ad:
                ad["JobStartDate"] = now
            if remote_host:
                ad["RemoteHost"] = remote_host
            if claim_id is not None:
                cur = db.execute("UPDATE claims SET state='busy', cluster=?, proc=?, "
                                 "updated=? WHERE claim_id=?",
                                 (job_id.cluster, job_id.proc, now, claim_id))
                if cur.rowcount != 1:
                    raise QueueError(f"no claim {claim_id!r}", path=self.path)
            self._store(db, job_id, ad)
            self._put_starter(db, starter)
            return JobRecord(job_id, JobStatus.RUNNING, now, ad)

    # --- starters -----------------------------------------------------------------

    @staticmethod
    def _put_starter(db: sqlite3.Connection, s: StarterRecord) -> None:
        db.execute("INSERT OR REPLACE INTO starters VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (s.job_id.cluster, s.job_id.proc, s.pid, s.boot_id, s.process_start,
                    s.socket_path, s.execute_dir, s.slot, s.started))

    def record_starter(self, starter: StarterRecord) -> None:
        with self._transaction() as db:
            self._put_starter(db, starter)

    def forget_starter(self, job_id: JobId) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM starters WHERE cluster=? AND proc=?",
                       (job_id.cluster, job_id.proc))

    def starters(self) -> list[StarterRecord]:
        return [StarterRecord(JobId(c, p), pid, boot, pstart, sock, exe, slot, started)
                for c, p, pid, boot, pstart, sock, exe, slot, started
                in self._conn().execute("SELECT * FROM starters ORDER BY cluster, proc")]

    # --- claims -------------------------------------------------------------------

    def record_claim(self, claim_id: str, slot: str, state: str = "claimed",
                     job_id: JobId | None = None) -> ClaimRecord:
        now = self._now()
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?)",
                       (claim_id, slot, state, job_id.cluster if job_id else None,
                        job_id.proc if job_id else None, now))
        return ClaimRecord(claim_id, slot, state, job_id, now)

    def set_claim_state(self, claim_id: str, state: str,
                        job_id: JobId | None = None) -> None:
        with self._transaction() as db:
            cur = db.execute("UPDATE claims SET state=?, cluster=?, proc=?, updated=? "
                             "WHERE claim_id=?",
                             (state, job_id.cluster if job_id else None,
                              job_id.proc if job_id else None, self._now(), claim_id))
            if cur.rowcount != 1:
                raise QueueError(f"no claim {claim_id!r}", path=self.path)

    def release_claim(self, claim_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM claims WHERE claim_id=?", (claim_id,))

    def claims(self) -> list[ClaimRecord]:
        return [ClaimRecord(cid, slot, state,
                            JobId(c, p) if c is not None and p is not None else None, upd)
                for cid, slot, state, c, p, upd in self._conn().execute(
                    "SELECT claim_id, slot, state, cluster, proc, updated FROM claims "
                    "ORDER BY claim_id")]


    # --- pool claims and small settings (condorpy/startd/poolside/claimstore.py) ----------

    def put_pool_claim(self, claim: str, record: str) -> None:
        """Store (or replace) the record of pool claim ``claim`` (its public id)."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO pool_claims VALUES (?, ?)", (claim, record))

    def forget_pool_claim(self, claim: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM pool_claims WHERE claim=?", (claim,))

    def pool_claims(self) -> list[tuple[str, str]]:
        db = self._conn()
        if db.execute("SELECT 1 FROM sqlite_master WHERE name='pool_claims'").fetchone() \
                is None:
            return []         # a read-only view of a store made before the table
        return [(c, r) for c, r in db.execute(
            "SELECT claim, record FROM pool_claims ORDER BY claim")]

    def get_meta(self, key: str) -> int | None:
        row = self._conn().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def set_meta(self, key: str, value: int) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def shorten(text: str, limit: int = 200) -> str:
    """A user's expression as a message shows it: at most ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + "..."


def parse_constraint(constraint: str | Expr | None) -> Expr | None:
    """A query's constraint, parsed once (for the look-up and every re-read)."""
    if constraint is None or isinstance(constraint, Expr):
        return constraint
    try:
        return parse_expr(constraint)
    except ClassAdError as exc:
        raise QueueError(f"bad constraint {shorten(constraint)!r}: {exc}") from None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _status_of(value: object, default: JobStatus) -> JobStatus:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return JobStatus(value)
        except ValueError:
            raise QueueError(f"JobStatus {value} is not one of HTCondor's codes") from None
    return default
