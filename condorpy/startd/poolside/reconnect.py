"""Pool jobs that outlive their shadow's connection, or the daemon itself (HTCondor's
shadow reconnect; ``docs/pool.md``, "Pool jobs across a daemon restart").

HTCondor's starter keeps a job running when the shadow's connection drops and waits
for the shadow to come back until the job lease (``JobLeaseDuration``, counted from
the shadow's last word) runs out (``jic_shadow.cpp``); the shadow finds the starter
through the startd (``CA_LOCATE_STARTER``) and takes the job back over a new
connection (``CA_RECONNECT_JOB``), on the claim's security session both times.
condorpy's starter side lives in the daemon, so the daemon does all of it:

- before a job of a pool claim starts, its claim is stored (claimstore.py);
- a stopping or killed daemon leaves such jobs running (the starters are separate
  processes); the next one re-adopts them (adoption.py) and binds the command port it
  had, which the claim ids name;
- a job whose shadow is away is killed once its lease has run out and its claim
  dropped; a job that ended meanwhile keeps its exit for the shadow (also across a
  restart), which hears it as soon as it reconnects.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.errors import CondorpyError
from condorpy.pool import reconnect
from condorpy.pool.cedar import Writer
from condorpy.pool.connection import AsyncExchange
from condorpy.pool.security import Op, Send
from condorpy.pool.shadow import get_sec_session_info
from condorpy.startd.poolside.claims import ClaimTable, PoolJob
from condorpy.startd.poolside.exchanges import Exchanges
from condorpy.startd.poolside.claimstore import StoredClaim, lease_of, transfer_fields

if TYPE_CHECKING:
    from condorpy.startd.poolside.shadow import ShadowSide

log = logging.getLogger("condorpy.startd.pool")

CONTACT_WRITE_EVERY = 60.0     # most seconds between stored notes of the shadow's last word


class Leases:
    """The job leases of the jobs run for shadows, and their stored rows' news."""

    def __init__(self, table: ClaimTable, clock: Clock,
                 kill: Callable[[str, bool], None]) -> None:
        self.table = table
        self.clock = clock
        self.kill = kill

    def _put(self, eid: str, rec: StoredClaim, what: str) -> None:
        try:
            self.table.store(eid, rec)
        except CondorpyError as exc:
            log.warning("pool: cannot note %s for %s: %s", what, eid, exc)

    # ------------------------------------------------------------------ a job starts
    def persist(self, job: PoolJob, number: int) -> None:
        """Store ``job``'s claim before its starter is launched (atomically: one row)."""
        claim = self.table.get(job.eid)
        job.number = number
        job.lease = lease_of(job.ad)
        job.last_contact = self.clock.time()
        if claim is None or job.slot is None or job.lease == 0:
            job.lease = 0
            return
        req = claim.request
        target = job.slot.split("_")[0]
        rec = StoredClaim(claim.claim_id, target, job.slot, req.scheduler_addr,
                          req.alive_interval, req.ad.to_old(), job.ad.to_old(), job.peer,
                          number, job.lease, job.last_contact, **transfer_fields(job))
        try:
            self.table.store(job.eid, rec)
        except CondorpyError as exc:
            # the job runs all the same, only without a way back for its shadow
            log.error("pool: cannot store the claim of %s (its job will not survive a "
                      "restart): %s", job.eid, exc)
            job.lease = 0

    def contact(self, job: PoolJob) -> None:
        """The shadow has spoken: its job's lease runs from now."""
        now = self.clock.time()
        job.last_contact = now
        job.disconnected = None
        rec = self.table.row(job.eid)
        # a stale note would let a restarted daemon count the lease out early: a short
        # lease is noted more often
        if rec is not None and now - rec.last_contact >= min(CONTACT_WRITE_EVERY,
                                                             job.lease / 4):
            self._put(job.eid, dataclasses.replace(rec, last_contact=now),
                      "the shadow's contact")

    # ------------------------------------------------------------------ the shadow goes away
    def shadow_lost(self, job: PoolJob) -> bool:
        """The shadow's connection of ``job`` closed. True: the job waits for the shadow
        to reconnect (within its lease); False: the caller ends it (no reconnect)."""
        if not self.table.awaits_shadow(job):
            return False
        job.exchange = None
        if job.ended:
            self.job_ended(job)          # its exit waits for the shadow
        if job.disconnected is None:
            job.disconnected = self.clock.time()
            left = max(0.0, job.last_contact + job.lease - job.disconnected)
            log.warning("pool: the shadow of %s went away; its job %s waits %.0f s (job "
                        "lease) for the shadow to reconnect", job.eid, job.name, left)
        return True

    def job_ended(self, job: PoolJob) -> None:
        """``job`` ended: while its shadow is away its exit is kept (stored too), for the
        shadow to hear on reconnecting."""
        rec = self.table.row(job.eid)
        if job.exchange is not None or rec is None:
            return
        log.info("pool: job %s of %s ended while its shadow is away; its exit is kept for "
                 "the shadow", job.name, job.eid)
        self._put(job.eid, dataclasses.replace(rec, final=_plain(job.final or {})),
                  "the exit")

    def stopping(self) -> list[str]:
        """The daemon stops: jobs whose shadow can reconnect run on. Returns the claims
        whose jobs must be ended as before (no reconnect possible)."""
        now = self.clock.time()
        ended: list[str] = []
        for job in self.table.jobs():
            if job.ended:
                continue
            rec = self.table.row(job.eid)
            if rec is None or not self.table.awaits_shadow(job):
                ended.append(job.eid)
                continue
            if job.exchange is not None:
                job.last_contact = now      # connected until now
            self._put(job.eid, dataclasses.replace(rec, last_contact=job.last_contact),
                      "the shadow's contact")
            log.info("pool: stopping: job %s of %s runs on; its shadow may reconnect to "
                     "the next daemon", job.name, job.eid)
        return ended

    # ------------------------------------------------------------------ the loop
    def tick(self) -> None:
        """Jobs whose shadow stayed away past their lease: killed, then their claim
        dropped once they have ended."""
        now = self.clock.time()
        for job in self.table.jobs():
            if job.exchange is not None or not self.table.awaits_shadow(job):
                continue
            if now < job.last_contact + job.lease:
                continue
            if not job.ended:
                if not job.lease_expired:
                    job.lease_expired = True
                    job.killed = True
                    log.warning("pool: the job lease of %s (%d s) ran out with its shadow "
                                "away: the job is killed and its claim released",
                                job.eid, job.lease)
                    self.kill(job.eid, True)
                continue
            self.table.drop(job.eid, "its shadow did not come back within the job lease")

    def timeout(self) -> float:
        """Seconds until a waiting job's lease runs out."""
        wall = self.clock.time()
        due = float("inf")
        for job in self.table.jobs():
            if job.exchange is None and self.table.awaits_shadow(job):
                due = min(due, max(0.0, job.last_contact + job.lease - wall))
        return due


def _plain(final: dict[str, object]) -> dict[str, Any]:
    return {k: v for k, v in final.items() if isinstance(v, (bool, int, float, str))}


class ReconnectServer:
    """``CA_LOCATE_STARTER`` and ``CA_RECONNECT_JOB`` from a shadow looking for its
    job."""

    def __init__(self, table: ClaimTable, leases: Leases, shadows: "ShadowSide",
                 inbound: Exchanges) -> None:
        self.table = table
        self.leases = leases
        self.shadows = shadows
        self.inbound = inbound
        self.reconnected = 0        # shadows that came back to a running job (metrics)

    def serve(self, req: reconnect.CaRequest, session_id: str, peer: str,
              exchange: AsyncExchange) -> Generator[Op, bytes | None, None]:
        """The answer to ``req``, on the claim session ``session_id``; a reconnected
        job's shadow conversation goes on on this very connection."""
        claim = self.table.get(session_id)
        job = self.table.job(session_id) if claim is not None else None
        why = ""
        if req.command not in (reconnect.LOCATE_STARTER, reconnect.RECONNECT_JOB):
            why = f"unsupported CA command {req.command}"
        elif claim is None or job is None:
            why = "no job on this claim"
        elif req.claim_id is not None and req.claim_id != claim.claim_id:
            why = "the ClaimId is not this session's claim"
        elif req.global_job_id is not None and \
                req.global_job_id != job.ad.get("GlobalJobId"):
            why = f"GlobalJobId {req.global_job_id} is not the job on this claim"
        elif req.command == reconnect.LOCATE_STARTER and req.global_job_id is None:
            why = "the request names no GlobalJobId"
        elif job.lease <= 0:
            why = "this job cannot be reconnected"
        if why or claim is None or job is None:
            log.info("pool: %s from %s for %s refused: %s", req.command, peer, session_id,
                     why)
            yield Send(reconnect.failure(Writer(crypto=True), why).payload())
            return
        if req.command == reconnect.LOCATE_STARTER:
            schedd = req.ad.get("ScheddIpAddr")
            if isinstance(schedd, str) and schedd and \
                    schedd != claim.request.scheduler_addr:
                # a restarted schedd has a new address: its ALIVEs go there now
                self.table.retarget(session_id, schedd)
                rec = self.table.row(session_id)
                if rec is not None:
                    self.table.store(session_id, dataclasses.replace(rec, schedd=schedd))
            log.info("pool: %s from %s: job %s of %s is here", req.command, peer,
                     job.name, session_id)
            yield Send(reconnect.located(Writer(crypto=True), self.table.address,
                                         self.shadows.starter_info(job)).payload())
            return
        old = job.exchange
        job.exchange = exchange
        job.peer = peer
        self.reconnected += 1
        shadow = req.ad.get("ShadowIpAddr")
        log.info("pool: the shadow %s reconnected to job %s of %s%s", peer, job.name,
                 session_id, " (its job has ended)" if job.ended else "")
        if old is not None and old is not exchange and old in self.inbound:
            self.inbound.close(old)       # the shadow has given up on that connection
        yield Send(reconnect.success(Writer(crypto=True),
                                     self.shadows.starter_info(job)).payload())
        self.leases.contact(job)
        if job.files is not None:
            yield from _new_transfer_server(job, req.ad, peer)
        rec = self.table.row(session_id)
        if rec is not None:
            changes = transfer_fields(job)
            if isinstance(shadow, str):
                changes["shadow"] = shadow
            if any(getattr(rec, k) != v for k, v in changes.items()):
                try:
                    self.table.store(session_id, dataclasses.replace(rec, **changes))
                except CondorpyError as exc:
                    log.warning("pool: cannot note the new shadow of %s: %s", session_id,
                                exc)
        if job.updates:
            # what happened while the shadow was away, as one update
            merged: dict[str, object] = {}
            for u in job.updates:
                merged.update(u)
            job.updates = [merged]
        yield from self.shadows.loop(peer, job)


def _new_transfer_server(job: PoolJob, ad: ClassAd, peer: str
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
