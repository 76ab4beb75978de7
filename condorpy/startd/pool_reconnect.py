"""Pool jobs that outlive their shadow's connection, or the daemon itself (HTCondor's
shadow reconnect; ``docs/pool.md``, "Pool jobs across a daemon restart").

HTCondor's starter keeps a job running when the shadow's connection drops and waits
for the shadow to come back until the job lease (``JobLeaseDuration``, counted from
the shadow's last word) runs out (``jic_shadow.cpp``); the shadow finds the starter
through the startd (``CA_LOCATE_STARTER``) and takes the job back over a new
connection (``CA_RECONNECT_JOB``), on the claim's security session both times.
condorpy's starter side lives in the daemon, so the daemon does all of it:

- before a job of a pool claim starts, the claim (full claim id with its key, the
  schedd's address and alive interval, the request and job ads, the slot, the lease)
  is written to the job store (``pool_claims``, one row per claim), and it goes when
  the claim ends or the shadow has the job's exit; the row holds the claim's key, so
  the store is made readable by its owner only and the row is never logged;
- a stopping or killed daemon leaves such jobs running (the starters are separate
  processes); the next one re-adopts each starter as it does local jobs, re-creates
  its claim in the policy engine (the same request ad carves the same d-slot) and in
  the pool link (claim id, session, a job with no shadow connection), and binds the
  command port it had, which the claim ids name;
- a job whose shadow is away is killed once its lease has run out and its claim
  released; a job that ended meanwhile keeps its exit for the shadow (also across a
  restart), which hears it as soon as it reconnects.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from condorpy.classad import ClassAd
from condorpy.errors import ClassAdError, CondorpyError
from condorpy.pool import claims, reconnect
from condorpy.pool.cedar import Writer
from condorpy.pool.shadow import SessionInfo, get_sec_session_info
from condorpy.pool.security import Op, Send
from condorpy.pool.server import claim_session_key, parse_claim_id
from condorpy.queue.jobstore import JobStore

if TYPE_CHECKING:
    from condorpy.pool.connection import AsyncExchange
    from condorpy.startd import pool_transfer
    from condorpy.startd.pool_link import PoolJob, PoolLink

log = logging.getLogger("condorpy.startd.pool")

PORT_KEY = "pool_command_port"
CONTACT_WRITE_EVERY = 60.0     # most seconds between stored notes of the shadow's last word


@dataclass(frozen=True)
class StoredClaim:
    """What re-creating a pool claim with its running job needs."""

    claim_id: str              # the full claim id: a secret
    target: str                # the slot the claim was requested for (a p-slot, or static)
    slot: str                  # the slot the job ran in
    schedd: str
    alive_interval: int
    request_ad: str            # old ClassAd syntax
    job_ad: str
    shadow: str
    number: int                # the pool job's number: its JobId is (-number, 0)
    lease: int                 # JobLeaseDuration; 0: no reconnect
    last_contact: float        # wall time of the shadow's last word
    final: dict[str, Any] | None = None    # the job's end, not yet heard by its shadow
    # file transfer (pool_transfer.py): what the output transfer needs after a restart;
    # the session key and the TransferKey are secrets, as the claim id is
    scratch: str = ""                     # the job's scratch directory; "": no transfer
    executable: str = ""
    catalog: dict[str, list[int]] | None = None     # the input's files: (mtime, size)
    transfer_session: dict[str, str] | None = field(default=None, repr=False)
    transfer_socket: str = ""
    transfer_key: str = field(default="", repr=False)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "StoredClaim":
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        names = {f.name for f in dataclasses.fields(cls)}
        rec = cls(**{k: v for k, v in raw.items() if k in names})
        if not isinstance(rec.claim_id, str) or not isinstance(rec.number, int):
            raise ValueError("a claim id and a job number are needed")
        if not all(isinstance(v, str) for v in (rec.scratch, rec.executable,
                                                 rec.transfer_socket, rec.transfer_key)):
            raise ValueError("the file-transfer fields are not strings")
        if rec.scratch and not os.path.isabs(rec.scratch):
            raise ValueError("the scratch directory is not an absolute path")
        if rec.catalog is not None and not (isinstance(rec.catalog, dict) and all(
                isinstance(v, list) and len(v) == 2 and
                all(isinstance(n, int) for n in v) for v in rec.catalog.values())):
            raise ValueError("the input catalog is damaged")
        if rec.transfer_session is not None and not (
                isinstance(rec.transfer_session, dict) and
                set(rec.transfer_session) == {"sid", "info", "key"} and
                all(isinstance(v, str) for v in rec.transfer_session.values())):
            raise ValueError("the file-transfer session is damaged")
        return rec

    def files(self) -> "pool_transfer.Scratch | None":
        """The job's scratch as the output transfer needs it; None: its files do not
        travel (or the scratch is gone)."""
        if not self.scratch or not os.path.isdir(self.scratch):
            return None
        from condorpy.startd.pool_transfer import Scratch
        return Scratch(Path(self.scratch), self.executable,
                       {k: (v[0], v[1]) for k, v in (self.catalog or {}).items()})

    def session(self) -> "SessionInfo | None":
        t = self.transfer_session
        return None if t is None else SessionInfo(t["sid"], t["info"], t["key"])


def transfer_fields(job: "PoolJob") -> dict[str, Any]:
    """The stored-claim fields of ``job``'s file transfer (``StoredClaim``)."""
    out: dict[str, Any] = {}
    if job.files is not None:
        out.update(scratch=str(job.files.path), executable=job.files.executable,
                   catalog={k: list(v) for k, v in job.files.catalog.items()})
    if job.transfer_session is not None:
        t = job.transfer_session
        out["transfer_session"] = {"sid": t.sid, "info": t.info, "key": t.key}
    for attr, name in (("TransferSocket", "transfer_socket"),
                       ("TransferKey", "transfer_key")):
        v = job.ad.get(attr)
        if isinstance(v, str):
            out[name] = v
    return out


def drop_scratch(rec: StoredClaim) -> None:
    """The claim has ended for good: nobody takes the job's outputs any more."""
    if rec.scratch and os.path.isdir(rec.scratch):
        from condorpy.startd.pool_transfer import remove_scratch
        remove_scratch(Path(rec.scratch))


def lease_of(ad: ClassAd) -> int:
    """The job lease a shadow reconnects within: HTCondor's shadow tries only for a job
    with a ``GlobalJobId`` and a positive ``JobLeaseDuration``
    (``RemoteResource::supportsReconnect``)."""
    lease = ad.get("JobLeaseDuration")
    if not isinstance(ad.get("GlobalJobId"), str) or isinstance(lease, bool) or \
            not isinstance(lease, (int, float)) or lease <= 0:
        return 0
    return int(lease)


def _engine_id(claim_id: str) -> str:
    return parse_claim_id(claim_id).session_id


def _full_claim(link: "PoolLink", eid: str) -> str | None:
    return next((c for c in link.pool_claims if _engine_id(c) == eid), None)


def _store(link: "PoolLink") -> JobStore | None:
    return getattr(link.host, "store", None)


def _protect(store: JobStore) -> None:
    """The rows hold claim keys: the database and its journal are the owner's only."""
    for suffix in ("", "-wal", "-shm"):
        try:
            os.chmod(store.path + suffix, 0o600)
        except OSError:
            pass


def _put(link: "PoolLink", rec: StoredClaim) -> None:
    store = _store(link)
    if store is None:
        return
    _protect(store)
    eid = _engine_id(rec.claim_id)
    store.put_pool_claim(eid, rec.to_json())
    link.stored[eid] = rec


def _forget(link: "PoolLink", eid: str) -> None:
    if link.stored.pop(eid, None) is None:
        return
    store = _store(link)
    if store is not None:
        try:
            store.forget_pool_claim(eid)
        except CondorpyError as exc:
            log.error("pool: cannot forget the stored claim %s: %s", eid, exc)


# ------------------------------------------------------------------ the command port
def previous_port(store: JobStore) -> int:
    """The command port an earlier daemon had: the claim ids its shadows hold name it."""
    return store.get_meta(PORT_KEY) or 0


def remember_port(store: JobStore, link: "PoolLink | None") -> None:
    if link is not None:
        store.set_meta(PORT_KEY, int(link.listener.getsockname()[1]))


# ------------------------------------------------------------------ a job starts
def persist(link: "PoolLink", job: "PoolJob", number: int) -> None:
    """Store ``job``'s claim before its starter is launched (atomically: one row)."""
    cid = _full_claim(link, job.eid)
    job.number = number
    job.lease = lease_of(job.ad)
    job.last_contact = link.clock.time()
    if cid is None or job.slot is None or job.lease == 0:
        job.lease = 0
        return
    req = link.pool_claims[cid]
    target = job.slot.split("_")[0]
    rec = StoredClaim(cid, target, job.slot, req.scheduler_addr, req.alive_interval,
                      req.ad.to_old(), job.ad.to_old(), job.peer, number, job.lease,
                      job.last_contact, **transfer_fields(job))
    try:
        _put(link, rec)
    except CondorpyError as exc:
        # the job runs all the same, only without a way back for its shadow
        log.error("pool: cannot store the claim of %s (its job will not survive a "
                  "restart): %s", job.eid, exc)
        job.lease = 0


def contact(link: "PoolLink", job: "PoolJob") -> None:
    """The shadow has spoken: its job's lease runs from now."""
    now = link.clock.time()
    job.last_contact = now
    job.disconnected = None
    rec = link.stored.get(job.eid)
    # a stale note would let a restarted daemon count the lease out early: a short
    # lease is noted more often
    if rec is not None and now - rec.last_contact >= min(CONTACT_WRITE_EVERY,
                                                         job.lease / 4):
        try:
            _put(link, dataclasses.replace(rec, last_contact=now))
        except CondorpyError as exc:
            log.warning("pool: cannot note the shadow's contact for %s: %s", job.eid, exc)


# ------------------------------------------------------------------ the shadow goes away
def shadow_lost(link: "PoolLink", job: "PoolJob") -> bool:
    """The shadow's connection of ``job`` closed. True: the job waits for the shadow
    to reconnect (within its lease); False: the caller ends it (no reconnect)."""
    if not awaits_shadow(link, job):
        return False
    job.exchange = None
    if job.ended:
        job_ended(link, job)          # its exit waits for the shadow
    if job.disconnected is None:
        job.disconnected = link.clock.time()
        left = max(0.0, job.last_contact + job.lease - job.disconnected)
        log.warning("pool: the shadow of %s went away; its job %s waits %.0f s (job "
                    "lease) for the shadow to reconnect", job.eid, _job_name(job), left)
    return True


def job_ended(link: "PoolLink", job: "PoolJob") -> None:
    """``job`` ended: while its shadow is away its exit is kept (stored too), for the
    shadow to hear on reconnecting."""
    rec = link.stored.get(job.eid)
    if job.exchange is not None or rec is None:
        return
    log.info("pool: job %s of %s ended while its shadow is away; its exit is kept for "
             "the shadow", _job_name(job), job.eid)
    try:
        _put(link, dataclasses.replace(rec, final=_plain(job.final or {})))
    except CondorpyError as exc:
        log.warning("pool: cannot store the exit of %s: %s", job.eid, exc)


def _plain(final: dict[str, object]) -> dict[str, Any]:
    return {k: v for k, v in final.items() if isinstance(v, (bool, int, float, str))}


def stopping(link: "PoolLink") -> list[str]:
    """The daemon stops: jobs whose shadow can reconnect run on. Returns the claims
    whose jobs must be ended as before (no reconnect possible)."""
    now = link.clock.time()
    ended: list[str] = []
    for eid, job in link.jobs.items():
        if job.ended:
            continue
        rec = link.stored.get(eid)
        if rec is None or not awaits_shadow(link, job):
            ended.append(eid)
            continue
        if job.exchange is not None:
            job.last_contact = now      # connected until now
        try:
            _put(link, dataclasses.replace(rec, last_contact=job.last_contact))
        except CondorpyError as exc:
            log.warning("pool: cannot note the shadow's contact for %s: %s", eid, exc)
        log.info("pool: stopping: job %s of %s runs on; its shadow may reconnect to "
                 "the next daemon", _job_name(job), eid)
    return ended


# ------------------------------------------------------------------ the loop
def tick(link: "PoolLink") -> None:
    """Jobs whose shadow stayed away past their lease; stored claims that ended."""
    now = link.clock.time()
    for eid, job in list(link.jobs.items()):
        if job.exchange is not None or not awaits_shadow(link, job):
            continue
        if now < job.last_contact + job.lease:
            continue
        if not job.ended:
            if not job.lease_expired:
                job.lease_expired = True
                job.killed = True
                log.warning("pool: the job lease of %s (%d s) ran out with its shadow "
                            "away: the job is killed and its claim released",
                            eid, job.lease)
                link._kill(eid, hard=True)
            continue
        _end_claim(link, eid, "its shadow did not come back within the job lease")
    for eid in [e for e, rec in link.stored.items() if rec.claim_id not in link.pool_claims]:
        gone = link.jobs.get(eid)
        rec = link.stored[eid]
        _forget(link, eid)
        if gone is None or (gone.exchange is None and gone.ended):
            # nobody takes its outputs; a job with a shadow connected (an eviction
            # sending ON_EXIT_OR_EVICT output) or still running removes its own
            drop_scratch(rec)
        if gone is not None and gone.exchange is None and gone.ended:
            del link.jobs[eid]


def _end_claim(link: "PoolLink", eid: str, why: str) -> None:
    cid = _full_claim(link, eid)
    log.info("pool: claim %s released: %s", eid, why)
    link.jobs.pop(eid, None)
    rec = link.stored.get(eid)
    if rec is not None:
        drop_scratch(rec)
    _forget(link, eid)
    if cid is not None:
        del link.pool_claims[cid]
        link.sessions.pop(parse_claim_id(cid).session_id, None)
        link.next_alive.pop(cid, None)
        link.next_refresh.pop(cid, None)
        for slot, c in list(link.claim_ids.items()):
            if c == cid:
                del link.claim_ids[slot]
    if link.engine.has_claim(eid):
        link.apply(link.engine.release(link.clock.time(), eid))


def reported(link: "PoolLink", job: "PoolJob") -> None:
    """The shadow has the job's exit: nothing of it needs to survive a restart."""
    _forget(link, job.eid)


def timeout(link: "PoolLink", now_mono: float) -> float:
    """Seconds until a waiting job's lease runs out."""
    wall = link.clock.time()
    due = float("inf")
    for job in link.jobs.values():
        if job.exchange is None and awaits_shadow(link, job):
            due = min(due, max(0.0, job.last_contact + job.lease - wall))
    return due


# ------------------------------------------------------------------ the shadow's commands
def serve(link: "PoolLink", req: reconnect.CaRequest, session_id: str, peer: str,
          exchange: "AsyncExchange") -> Generator[Op, bytes | None, None]:
    """``CA_LOCATE_STARTER`` or ``CA_RECONNECT_JOB`` on the claim session
    ``session_id``; a reconnected job's shadow conversation goes on on this very
    connection."""
    cid = next((c for c in link.pool_claims if _engine_id(c) == session_id), None)
    job = link.jobs.get(session_id) if cid is not None else None
    why = ""
    if req.command not in (reconnect.LOCATE_STARTER, reconnect.RECONNECT_JOB):
        why = f"unsupported CA command {req.command}"
    elif cid is None or job is None:
        why = "no job on this claim"
    elif req.claim_id is not None and req.claim_id != cid:
        why = "the ClaimId is not this session's claim"
    elif req.global_job_id is not None and req.global_job_id != job.ad.get("GlobalJobId"):
        why = f"GlobalJobId {req.global_job_id} is not the job on this claim"
    elif req.command == reconnect.LOCATE_STARTER and req.global_job_id is None:
        why = "the request names no GlobalJobId"
    elif job.lease <= 0:
        why = "this job cannot be reconnected"
    if why or cid is None or job is None:
        log.info("pool: %s from %s for %s refused: %s", req.command, peer, session_id,
                 why)
        yield Send(reconnect.failure(Writer(crypto=True), why).payload())
        return
    if req.command == reconnect.LOCATE_STARTER:
        schedd = req.ad.get("ScheddIpAddr")
        if isinstance(schedd, str) and schedd and \
                schedd != link.pool_claims[cid].scheduler_addr:
            # a restarted schedd has a new address: its ALIVEs go there now
            link.pool_claims[cid] = dataclasses.replace(link.pool_claims[cid],
                                                        scheduler_addr=schedd)
            rec = link.stored.get(session_id)
            if rec is not None:
                _put(link, dataclasses.replace(rec, schedd=schedd))
        log.info("pool: %s from %s: job %s of %s is here", req.command, peer,
                 _job_name(job), session_id)
        yield Send(reconnect.located(Writer(crypto=True), link.address,
                                     link._starter_info(job)).payload())
        return
    old = job.exchange
    job.exchange = exchange
    job.peer = peer
    shadow = req.ad.get("ShadowIpAddr")
    log.info("pool: the shadow %s reconnected to job %s of %s%s", peer, _job_name(job),
             session_id, " (its job has ended)" if job.ended else "")
    if old is not None and old is not exchange and old in link.inbound:
        link._close_inbound(old)       # the shadow has given up on that connection
    yield Send(reconnect.success(Writer(crypto=True), link._starter_info(job)).payload())
    contact(link, job)
    if job.files is not None:
        yield from _new_transfer_server(link, job, req.ad, peer)
    rec = link.stored.get(session_id)
    if rec is not None:
        changes = transfer_fields(job)
        if isinstance(shadow, str):
            changes["shadow"] = shadow
        if any(getattr(rec, k) != v for k, v in changes.items()):
            try:
                _put(link, dataclasses.replace(rec, **changes))
            except CondorpyError as exc:
                log.warning("pool: cannot note the new shadow of %s: %s", session_id, exc)
    if job.updates:
        # what happened while the shadow was away, as one update
        merged: dict[str, object] = {}
        for u in job.updates:
            merged.update(u)
        job.updates = [merged]
    yield from link._shadow_loop(peer, job)


def _new_transfer_server(link: "PoolLink", job: "PoolJob", ad: ClassAd, peer: str
                         ) -> Generator[Op, bytes | None, None]:
    """The reconnected shadow is a new process with its own transfer server: the
    output goes to its ``TransferSocket`` with its ``TransferKey`` (from the
    ``CA_RECONNECT_JOB`` request, as HTCondor's starter takes them in
    ``JICShadow::reconnect``), on its file-transfer session, asked for again on this
    connection (a shadow that re-creates the same session answers the same one)."""
    for attr in ("TransferSocket", "TransferKey"):
        v = ad.get(attr)
        if isinstance(v, str) and v:
            job.ad[attr] = v
    try:
        sessions = yield from get_sec_session_info(peer)
    except CondorpyError as exc:
        # the earlier session stays: a shadow that kept it can still take the output
        log.warning("pool: the reconnected shadow of %s gave no file-transfer session "
                    "(%s); the earlier one is used", job.eid, exc)
        return
    job.transfer_session = sessions[1]


# ------------------------------------------------------------------ a restart
def stored(store: JobStore) -> dict[int, StoredClaim]:
    """The stored claims by their job's number; a damaged row is dropped, logged."""
    out: dict[int, StoredClaim] = {}
    for eid, text in store.pool_claims():
        try:
            rec = StoredClaim.from_json(text)
            _engine_id(rec.claim_id)
        except (ValueError, TypeError) as exc:
            log.error("pool: the stored claim %s is damaged (%s); dropped", eid, exc)
            store.forget_pool_claim(eid)
            continue
        out[rec.number] = rec
    return out


@dataclass(frozen=True)
class PoolAdoption:
    """A pool job's starter found at start-up whose claim was re-created: ``final`` is
    the result the job left if it ended while the daemon was away; ``gone``: the job
    vanished and was forgotten (the daemon only forgets its starter row)."""

    eid: str
    slot: str
    job_name: str
    final: dict[str, Any] | None = None
    gone: bool = False


class StoredClaims:
    """TEMPORARY adapter (daemon-parts): the pool side's ``adopt_starter`` /
    ``adopt_rest`` over the stored claims, until the pool package offers them itself."""

    def __init__(self, link: "PoolLink | None", store: JobStore,
                 apply: "Callable[[list[Any]], None]") -> None:
        self.link = link
        self.store = store
        self.apply = apply
        self.stored = stored(store)

    def adopt_starter(self, number: int, execute_dir: str, alive: bool) -> PoolAdoption | None:
        """Re-create the claim of pool job ``number`` and its job as the earlier daemon
        had them. None: no stored claim (or it cannot be re-created)."""
        link = self.link
        if link is None:
            return None
        rec = self.stored.pop(number, None)
        if rec is None:
            return None
        result = Path(execute_dir) / "final.ad"
        eid = _engine_id(rec.claim_id)
        if not alive and not result.exists():
            log.warning("pool: job %s of %s vanished with no result while the daemon was "
                        "away; its shadow will hear it is gone", number, eid)
            drop_scratch(rec)
            self.store.forget_pool_claim(eid)
            return PoolAdoption(eid, rec.slot, "", None, gone=True)
        got = _recreate(self.apply, link, rec)
        if got is None:
            drop_scratch(rec)
            self.store.forget_pool_claim(eid)
            return None
        from condorpy.startd.job_end import read_result
        job = link.jobs[got]
        return PoolAdoption(got, job.slot or rec.slot, _job_name(job),
                            None if alive else read_result(result))

    def adopt_rest(self) -> None:
        """Stored claims with no starter left: a job whose exit its shadow has not heard
        is kept for it; the rest are dropped."""
        link = self.link
        for number, rec in sorted(self.stored.items()):
            eid = _engine_id(rec.claim_id)
            if link is not None and rec.final is not None:
                if _recreate(self.apply, link, rec) is not None:
                    job = link.jobs[eid]
                    job.ended = True
                    job.final = dict(rec.final)
                    link.apply(link.engine.job_exit(link.clock.time(), eid,
                                                    _exit_code(rec.final)))
                    log.info("pool: the exit of job %s of %s is kept for its shadow",
                             _job_name(job), eid)
                    continue
            drop_scratch(rec)
            self.store.forget_pool_claim(eid)
        self.stored = {}


def _exit_code(final: dict[str, Any]) -> int | None:
    code = final.get("ExitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _recreate(apply: "Callable[[list[Any]], None]", link: "PoolLink", rec: StoredClaim) -> str | None:
    """The claim in the engine (carving its d-slot again) and in the link."""
    from condorpy.policy.records import StartJob
    from condorpy.startd.pool_link import PoolJob
    eid = _engine_id(rec.claim_id)
    try:
        request = ClassAd.parse_old(rec.request_ad, source=f"the stored claim {eid}")
        job_ad = ClassAd.parse_old(rec.job_ad, source=f"the stored claim {eid}")
    except ClassAdError as exc:
        log.error("pool: the stored claim %s is damaged: %s", eid, exc)
        return None
    engine = link.engine
    if rec.target not in engine.slots:
        log.error("pool: the stored claim %s names slot %s, which this configuration "
                  "lacks", eid, rec.target)
        return None
    apply([o for o in engine.request_claim(link.clock.time(), eid, request,
                                                   rec.target)
                   if not isinstance(o, StartJob)])
    if not engine.has_claim(eid):
        log.error("pool: the claim %s could not be re-created in %s", eid, rec.target)
        return None
    apply([o for o in engine.activate(link.clock.time(), eid, job_ad)
                   if not isinstance(o, StartJob)])
    slot = next((s.name for s in engine.slots.values()
                 if s.claim is not None and s.claim.id == eid), rec.slot)
    link.pool_claims[rec.claim_id] = claims.RequestClaim(
        rec.claim_id, request, rec.schedd, rec.alive_interval)
    link.sessions[eid] = claim_session_key(rec.claim_id)
    link.claim_ids[slot] = rec.claim_id
    job = PoolJob(eid, job_ad, slot=slot)
    job.number, job.lease, job.last_contact = rec.number, rec.lease, rec.last_contact
    job.files, job.transfer_session = rec.files(), rec.session()
    for attr, v in (("TransferSocket", rec.transfer_socket),
                    ("TransferKey", rec.transfer_key)):
        if v:
            job.ad[attr] = v
    if rec.scratch and job.files is None:
        log.warning("pool: the scratch directory of %s is gone: its outputs are lost",
                    eid)
    job.peer = rec.shadow
    link.jobs[eid] = job
    link.stored[eid] = dataclasses.replace(rec, slot=slot)
    link.skip_numbers(rec.number)
    log.info("pool: claim %s of %s re-created in %s (job %s)", eid, rec.schedd, slot,
             _job_name(job))
    return eid


def _job_name(job: "PoolJob") -> str:
    return f"{job.ad.get('ClusterId')}.{job.ad.get('ProcId')}"


__all__ = ["StoredClaim", "lease_of", "persist", "contact", "shadow_lost", "job_ended",
           "stopping", "tick", "reported", "timeout", "serve", "stored", "adopt",
           "adopt_rest", "previous_port", "remember_port"]


def awaits_shadow(link: "PoolLink", job: "PoolJob") -> bool:
    """Whether ``job``'s shadow may still come back for it (a job lease and a stored
    claim): its exit and its files are kept for it until then."""
    return job.lease > 0 and job.eid in link.stored
