"""The startd's persistent job store: the local queue, with its history, starter rows
and claim rows as parts over one database.

``JobStore`` is the queue proper (cluster ids, submission, jobs and their status
changes); its parts share its database (:mod:`.store_db`: opening, schema, checks and
the one transaction discipline) and are reached as ``store.history``
(:mod:`.history_store`), ``store.starters`` (:mod:`.starter_rows`), ``store.claims`` and
``store.pool`` (:mod:`.claim_rows`). Every change that acknowledges a submission or
starts or ends a job is one transaction across them: after a crash the database holds
all of it or none of it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ContextManager

from condorpy.classad import Budget, CallContext, ClassAd, Expr
from condorpy.errors import ClassAdError, QueueError
from condorpy.queue.claim_rows import ClaimRecord, LocalClaimRows, PoolClaimRows
from condorpy.queue.broken_rows import BrokenSlotRows
from condorpy.queue.history_rotation import HistoryLimits
from condorpy.queue.history_store import HistoryStore
from condorpy.queue.records import (FINAL, Differ, JobId, JobRecord, JobRow, JobStatus,
                                    ad_text,
                                    int_of,
                                    parse_constraint, record_of, select, shorten,
                                    status_of)
from condorpy.queue.staging import StagedJobs
from condorpy.queue.starter_rows import StarterRecord, StarterRows
from condorpy.queue.store_check import StoreUnusable
from condorpy.queue.store_db import DB_NAME, SCHEMA_VERSION, StoreDb, StoreTooNew

__all__ = ["JobStatus", "JobId", "JobRecord", "ClaimRecord", "StarterRecord", "JobStore",
           "HistoryLimits", "StoreUnusable", "StoreTooNew", "SCHEMA_VERSION", "DB_NAME", "shorten",
           "parse_constraint"]

# meta rows "reserved_by.<cluster>" = uid: who reserved a cluster id not yet submitted
# statuses of a job that no longer occupies a slot
_OFF_SLOT = (JobStatus.IDLE, JobStatus.HELD, JobStatus.REMOVED, JobStatus.COMPLETED)
_RESERVED_BY = "reserved_by."
_RESERVATIONS_KEPT = 10000
_CHUNK = 500       # rows read at a time by chunks()
_CHUNK_BYTES = 256 * 1024     # ...or fewer, when their ads hold this much text
_ADS_KEPT = 32     # ads read lately, kept parsed (_record)


class JobStore:
    """The job store in ``spool``. Use as a context manager or call :meth:`close`."""

    def __init__(self, spool: str | os.PathLike[str], *, readonly: bool = False,
                 clock: Callable[[], float] = time.time, fresh: bool = False,
                 history: HistoryLimits = HistoryLimits()) -> None:
        """``fresh``: a store that is there but unusable is moved aside
        (:attr:`set_aside` says where, :attr:`damage` why) and a new one begun."""
        self.db = StoreDb(spool, readonly=readonly, clock=clock, fresh=fresh)
        self.spool = self.db.spool
        self.path = self.db.path
        self.readonly = readonly
        self.set_aside = self.db.set_aside
        self.damage = self.db.damage
        self.cluster_floor_raised = self.db.cluster_floor_raised
        self.upgraded_from = self.db.upgraded_from
        self.history = HistoryStore(self.db, history)
        self.starters = StarterRows(self.db)
        self.claims = LocalClaimRows(self.db)
        self.pool = PoolClaimRows(self.db)
        self.broken = BrokenSlotRows(self.db)
        self.staged = StagedJobs(self.db)
        # row text -> its ad as read (copies go out: callers change theirs)
        self._read: OrderedDict[str, ClassAd] = OrderedDict()

    def close(self) -> None:
        self.db.close()

    # --- group commit (:mod:`.store_db`) -----------------------------------------------

    def group(self) -> ContextManager[None]:
        """A turn of the daemon's loop: its deferred writes are committed together."""
        return self.db.group()

    def deferred(self) -> ContextManager[None]:
        """Writes in the block may wait for the group's commit."""
        return self.db.deferred()

    def after_commit(self, done: Callable[[], None],
                     undone: Callable[[], None] | None = None) -> None:
        """``done`` once what was written so far is committed; ``undone`` if that fails."""
        self.db.after_commit(done, undone)

    def flush(self) -> None:
        """Commit the deferred writes now."""
        self.db.flush()

    @property
    def rollbacks(self) -> int:
        """How many groups' deferred writes were lost uncommitted so far (a full or
        unwritable spool): what was decided on them in memory is no longer true."""
        return self.db.rollbacks

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- clusters and submission --------------------------------------------------

    def new_cluster_id(self, owner_uid: int | None = None) -> int:
        """Reserve a cluster id (persisted: never handed out twice, even after a
        crash). A reserved id that is never submitted is simply skipped. With
        ``owner_uid`` only that uid may submit into it (:meth:`submit`)."""
        self.db.admit()
        with self.db.transaction() as db:
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
        (cid,) = self.db.conn().execute(
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
        self.db.admit()
        now = self.db.now()
        with self.db.transaction() as db:
            if cluster_id is None:
                cluster_id = self._take_cluster(db)
            else:
                self._claim_reserved(db, cluster_id, owner_uid)
            rows = []
            seen: set[int] = set()
            for index, src in enumerate(ads):
                row = self.row_of(src, cluster_id, index, now)
                if row[1] in seen:
                    raise QueueError(f"job {cluster_id}.{row[1]} given twice",
                                     path=self.path)
                seen.add(row[1])
                rows.append(row)
            db.executemany("INSERT INTO jobs VALUES (?, ?, ?, ?, ?)", rows)
        return cluster_id

    def _claim_reserved(self, db: sqlite3.Connection, cluster_id: int,
                        owner_uid: int | None) -> None:
        """Check that ``cluster_id`` was reserved (by ``owner_uid``, if given) and holds
        no jobs yet, and use up its reservation (in the caller's transaction)."""
        self._check_reserved(db, cluster_id, owner_uid)
        db.execute("DELETE FROM meta WHERE key=?", (f"{_RESERVED_BY}{cluster_id}",))

    def _check_reserved(self, db: sqlite3.Connection, cluster_id: int,
                        owner_uid: int | None) -> None:
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

    @staticmethod
    def prepared(src: ClassAd, cluster_id: int, index: int, now: int) -> ClassAd:
        """A submitted ad as its row holds it: ClusterId, its ProcId (else ``index``),
        JobStatus (else idle) and EnteredCurrentStatus (else ``now``) set in a copy."""
        ad = src.copy()
        proc = ad.get("ProcId")
        if not isinstance(proc, int) or isinstance(proc, bool):
            proc = index
        ad["ClusterId"] = cluster_id
        ad["ProcId"] = proc
        status = status_of(ad.get("JobStatus"), JobStatus.IDLE)
        ad["JobStatus"] = int(status)
        entered = ad.get("EnteredCurrentStatus")
        if not isinstance(entered, int) or isinstance(entered, bool):
            ad["EnteredCurrentStatus"] = now
        return ad

    @classmethod
    def row_of(cls, src: ClassAd, cluster_id: int, index: int, now: int,
               like: tuple[Differ, str] | None = None) -> JobRow:
        """The jobs row of a submitted ad (:meth:`prepared`). ``like``: a prepared ad
        of the same submission (as a Differ) and its stored text; the row is then that
        text followed by the lines that differ (a later line wins), as HTCondor keeps
        a proc's ad as its differences from the cluster's, rather than every
        attribute written out again."""
        ad = cls.prepared(src, cluster_id, index, now)
        text = None
        if like is not None:
            diff = like[0].of(ad)
            if diff is not None:
                extra = diff.to_old()
                if "\\" not in extra:
                    text = like[1] + extra
        return (cluster_id, int(ad.get("ProcId")), int(ad.get("JobStatus")),
                int(ad.get("EnteredCurrentStatus")), text or ad_text(ad))

    def stage(self, cluster_id: int, rows: Iterable[JobRow], *,
              owner_uid: int | None = None) -> int:
        """Set down a part of a reserved cluster's submission (:mod:`.staging`): not in
        the queue until :meth:`submit_staged`. The number staged for it so far."""
        with self.db.transaction() as db:
            self._check_reserved(db, cluster_id, owner_uid)
            return self.staged.add(db, cluster_id, rows)

    def submit_staged(self, cluster_id: int, *, owner_uid: int | None = None) -> int:
        """Queue the jobs staged for a reserved cluster (:mod:`.staging`) in one
        transaction, as :meth:`submit` does; their number."""
        with self.db.transaction() as db:
            self._claim_reserved(db, cluster_id, owner_uid)
            count = self.staged.move(db, cluster_id)
            if not count:
                raise QueueError("nothing to submit: no job ads", path=self.path)
            return count

    def queued_by(self, owner: str) -> int:
        """How many jobs in the queue have ``owner`` as their Owner."""
        return self.staged.owner_count(owner)

    # --- reading ------------------------------------------------------------------

    def job(self, job_id: JobId) -> JobRecord | None:
        row = self.db.conn().execute(
            "SELECT cluster, proc, status, entered, ad FROM jobs "
            "WHERE cluster=? AND proc=?", (job_id.cluster, job_id.proc)).fetchone()
        return None if row is None else self._record(row)

    def jobs(self, constraint: str | Expr | None = None,
             limit: int | None = None) -> list[JobRecord]:
        """Jobs in the queue, in id order, whose ad makes ``constraint`` true; the first
        ``limit`` of them."""
        if limit is not None and limit <= 0:
            return []
        rows = self.db.conn().execute(
            "SELECT cluster, proc, status, entered, ad FROM jobs ORDER BY cluster, proc")
        return select(rows, constraint, path=self.path, clock=self.db.clock, limit=limit)

    def chunks(self, constraint: str | Expr | None = None, *, limit: int | None = None,
               cluster: int | None = None) -> Iterator[list[JobRecord]]:
        """:meth:`jobs` a chunk of rows at a time (of one ``cluster``, if given): each
        list holds the matches among the next rows read and may be empty, so that a
        caller serving others between chunks is never held by a long queue, and
        never holds it all. No statement stays open between chunks: the store may be
        written meanwhile (a job changed since is read as it is then)."""
        expr = parse_constraint(constraint)
        left = limit
        if left is not None and left <= 0:
            return
        budget = Budget.for_user()      # one for the whole walk, as history's
        size = _CHUNK if expr is not None or left is None else min(_CHUNK, left)
        for rows in self.row_chunks(cluster=cluster, size=size):
            found = select(rows, expr, path=self.path, clock=self.db.clock, limit=left,
                           budget=budget)
            if left is not None:
                left -= len(found)
            yield found
            if left is not None and left <= 0:
                return

    def row_chunks(self, *, cluster: int | None = None, size: int = _CHUNK
                   ) -> Iterator[list[JobRow]]:
        """The queue's rows as stored, unparsed, in id order (of one ``cluster``, if
        given), ``size`` rows at a time or fewer when their ads hold
        :data:`_CHUNK_BYTES` of text: a reply to a reader that stalls holds one chunk.
        No statement stays open between chunks: the store may be written meanwhile
        (a job changed since is read as it is then)."""
        last = (0, -1) if cluster is None else (cluster, -1)
        where = "" if cluster is None else f"cluster = {int(cluster)} AND "
        chunk = size
        while True:
            cur = self.db.conn().execute(
                "SELECT cluster, proc, status, entered, ad FROM jobs "
                f"WHERE {where}(cluster, proc) > (?, ?) ORDER BY cluster, proc "
                f"LIMIT {chunk}", last)
            rows, held = [], 0
            for row in cur:
                rows.append(row)
                held += len(row[4])
                if held >= _CHUNK_BYTES:
                    break
            cur.close()
            if not rows:
                return
            last = (rows[-1][0], rows[-1][1])
            if held >= _CHUNK_BYTES and len(rows) < chunk:
                chunk = len(rows)       # cut short by size, not the end of the queue
            yield rows
            if len(rows) < chunk:
                return

    def cluster(self, cluster_id: int) -> Iterator[JobRecord]:
        """The jobs of one cluster, in proc order, read a chunk at a time."""
        for row in self.cluster_rows(cluster_id):
            yield record_of(row, self.path)

    def rows_with_status(self, *statuses: JobStatus) -> Iterator[JobRow]:
        """The rows of the jobs in one of ``statuses``, in id order, unparsed, read a
        chunk at a time (no statement open between chunks)."""
        marks = ", ".join("?" * len(statuses))
        last = (0, -1)
        while True:
            rows = self.db.conn().execute(
                "SELECT cluster, proc, status, entered, ad FROM jobs WHERE status IN "
                f"({marks}) AND (cluster, proc) > (?, ?) ORDER BY cluster, proc "
                f"LIMIT {_CHUNK}", (*(int(s) for s in statuses), *last)).fetchall()
            yield from rows
            if len(rows) < _CHUNK:
                return
            last = (rows[-1][0], rows[-1][1])

    def jobs_with_status(self, *statuses: JobStatus) -> Iterator[JobRecord]:
        """:meth:`rows_with_status`, read into records."""
        for row in self.rows_with_status(*statuses):
            yield record_of(row, self.path)

    def cluster_rows(self, cluster_id: int) -> Iterator[JobRow]:
        """:meth:`cluster`'s rows as stored, unparsed (for a caller that reads an ad
        only when its text says it must)."""
        last = -1
        while True:
            rows = self.db.conn().execute(
                "SELECT cluster, proc, status, entered, ad FROM jobs WHERE cluster=? "
                f"AND proc > ? ORDER BY proc LIMIT {_CHUNK}", (cluster_id, last)).fetchall()
            yield from rows
            if len(rows) < _CHUNK:
                return
            last = rows[-1][1]

    def counts(self) -> dict[JobStatus, int]:
        return {JobStatus(s): n for s, n in self.db.conn().execute(
            "SELECT status, count(*) FROM jobs GROUP BY status")}

    # --- changing jobs ------------------------------------------------------------

    def _load(self, db: sqlite3.Connection, job_id: JobId) -> JobRecord:
        row = db.execute("SELECT cluster, proc, status, entered, ad FROM jobs "
                         "WHERE cluster=? AND proc=?", (job_id.cluster, job_id.proc)
                         ).fetchone()
        if row is None:
            raise QueueError(f"no job {job_id} in the queue", path=self.path)
        return self._record(row)

    def _record(self, row: JobRow) -> JobRecord:
        """:func:`record_of`, through a few ads read lately: a job being started or
        ended is read several times in a row (matched, launched, recorded), its row
        unchanged between, and a parse costs far more than a copy."""
        text = row[4]
        ad = self._read.get(text)
        if ad is None:
            rec = record_of(row, self.path)
            self._read[text] = rec.ad.copy()
            while len(self._read) > _ADS_KEPT:
                self._read.popitem(last=False)
            return rec
        self._read.move_to_end(text)
        return JobRecord(JobId(row[0], row[1]), JobStatus(row[2]), row[3], ad.copy())

    def _store(self, db: sqlite3.Connection, job_id: JobId, ad: ClassAd) -> None:
        status = status_of(ad.get("JobStatus"), JobStatus.IDLE)
        entered = ad.get("EnteredCurrentStatus")
        if not isinstance(entered, int):
            entered = self.db.now()
        if status in FINAL and not self._left_in_queue(ad):
            db.execute("DELETE FROM jobs WHERE cluster=? AND proc=?",
                       (job_id.cluster, job_id.proc))
            self.starters.delete(db, job_id)
            self.history.append(db, job_id, int(status), entered, ad_text(ad))
        else:
            db.execute("UPDATE jobs SET status=?, entered=?, ad=? "
                       "WHERE cluster=? AND proc=?",
                       (int(status), entered, ad_text(ad), job_id.cluster, job_id.proc))

    def _left_in_queue(self, ad: ClassAd) -> bool:
        """A finished job stays in the queue while its LeaveJobInQueue is true."""
        if ad.lookup("LeaveJobInQueue") is None:
            return False
        return ad.evaluate("LeaveJobInQueue", None,
                           CallContext(now=self.db.clock)) is True

    def to_history(self, job_id: JobId) -> bool:
        """Move a finished job still in the queue to the history: its LeaveJobInQueue
        turned false, or it was removed by command. False when it is not finished."""
        with self.db.transaction() as db:
            rec = self._load(db, job_id)
            if rec.status not in FINAL:
                return False
            db.execute("DELETE FROM jobs WHERE cluster=? AND proc=?",
                       (job_id.cluster, job_id.proc))
            self.history.append(db, job_id, int(rec.status), rec.entered_status,
                                ad_text(rec.ad))
            return True

    def left_in_queue(self, rec: JobRecord) -> bool:
        return self._left_in_queue(rec.ad)

    def update(self, job_id: JobId, attrs: Mapping[str, Any]) -> None:
        """Set attributes of a job's ad (values, or Expr for expressions). JobStatus
        changes go through :meth:`set_status`."""
        if any(k.lower() in ("jobstatus", "clusterid", "procid") for k in attrs):
            raise QueueError("JobStatus, ClusterId and ProcId are not changed by update()")
        with self.db.transaction() as db:
            ad = self._load(db, job_id).ad
            try:
                for name, value in attrs.items():
                    ad[name] = value
            except ClassAdError as exc:
                raise QueueError(f"job {job_id}: {exc}", path=self.path) from None
            self._store(db, job_id, ad)

    def update_many(self, changes: Mapping[JobId, Mapping[str, Any]]) -> None:
        """:meth:`update` for several jobs in one transaction."""
        with self.db.transaction() as db:
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
        now = self.db.now()
        with self.db.transaction() as db:
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
            ad["NumHolds"] = int_of(ad.get("NumHolds")) + 1
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
        if status in FINAL:
            self.claims.free_job(db, job_id, now)
        if status in _OFF_SLOT and "RemoteHost" in ad:
            # where it ran is where it last ran now, as a schedd records it when the
            # job's shadow goes
            ad["LastRemoteHost"] = ad["RemoteHost"]
            del ad["RemoteHost"]
        self._store(db, job_id, ad)
        return JobRecord(job_id, status, int_of(ad.get("EnteredCurrentStatus")), ad)

    def end_job(self, job_id: JobId, attrs: Mapping[str, Any], status: JobStatus, *,
                reason: str | None = None, code: int | None = None,
                subcode: int | None = None, claim_id: str | None = None) -> JobRecord:
        """Everything a job's end changes, in one transaction: what its starter reported,
        its new status, its starter record and its claim dropped. A daemon restarted
        at any moment therefore sees the end recorded exactly once or not at all."""
        if any(k.lower() in ("jobstatus", "clusterid", "procid") for k in attrs):
            raise QueueError("JobStatus, ClusterId and ProcId are not changed by end_job()")
        now = self.db.now()
        with self.db.transaction() as db:
            rec = self._load(db, job_id)
            for name, value in attrs.items():
                rec.ad[name] = value
            out = self._change_status(db, job_id, rec, status, reason, code, subcode, now)
            self.starters.delete(db, job_id)
            if claim_id is not None:
                self.claims.delete(db, claim_id)
            return out

    def start_job(self, job_id: JobId, starter: StarterRecord, *, claim_id: str | None = None,
                  remote_host: str | None = None) -> JobRecord:
        """Everything starting a job changes, in one transaction: the job becomes
        running (NumJobStarts, JobCurrentStartDate, JobStartDate, and RemoteHost, the
        name of the slot it runs in, ``slot1_2@host``, as a schedd sets it), its
        claim becomes busy with it, and its starter is recorded for re-adoption."""
        now = self.db.now()
        if starter.job_id != job_id:
            raise QueueError(f"starter record is for {starter.job_id}, not {job_id}")
        with self.db.transaction() as db:
            rec = self._load(db, job_id)
            if rec.status not in (JobStatus.IDLE, JobStatus.RUNNING):
                raise QueueError(f"job {job_id} is {rec.status.name.lower()}, not idle",
                                 path=self.path)
            ad = rec.ad
            ad["LastJobStatus"] = int(rec.status)
            ad["JobStatus"] = int(JobStatus.RUNNING)
            ad["EnteredCurrentStatus"] = now
            ad["NumJobStarts"] = int_of(ad.get("NumJobStarts")) + 1
            ad["JobRunCount"] = int_of(ad.get("JobRunCount")) + 1
            ad["JobCurrentStartDate"] = now
            if "JobStartDate" not in ad:
                ad["JobStartDate"] = now
            if remote_host:
                ad["RemoteHost"] = remote_host
            if claim_id is not None:
                self.claims.occupy(db, claim_id, job_id, now)
            self._store(db, job_id, ad)
            self.starters.write(db, starter)
            return JobRecord(job_id, JobStatus.RUNNING, now, ad)
