"""The command port: the pool's claims (REQUEST_CLAIM, ACTIVATE_CLAIM,
DEACTIVATE_CLAIM, RELEASE_CLAIM), a shadow's reconnect, condor_now's coalesce and the
pool's tools, each after the security handshake (:mod:`condorpy.pool.secserver`).
Every decision goes through the policy engine (``request_claim``, ``activate``,
``release``)."""

from __future__ import annotations

import errno
import logging
import os
import resource
import socket
from collections.abc import Callable, Generator

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.errors import SecurityError
from condorpy.policy import vacate_reasons
from condorpy.policy.records import ActivationRefused, ClaimRefused
from condorpy.pool import admin, claims, coalesce, collector, reconnect, secserver
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.connection import AsyncExchange
from condorpy.pool.security import Await, Op, Send
from condorpy.slots.ads import CONDOR_VERSION
from condorpy.startd.poolside import admin as tools
from condorpy.startd.poolside import now
from condorpy.startd.poolside.advertiser import Advertiser
from condorpy.startd.poolside.claims import (Claim, ClaimTable, PoolJob, client_host,
                                             engine_id, session_of)
from condorpy.startd.poolside.exchanges import EXCHANGE_TIMEOUT, Exchanges
from condorpy.startd.poolside.reconnect import ReconnectServer
from condorpy.startd.poolside.settings import PoolSettings
from condorpy.startd.poolside.shadow import JobHost, ShadowSide, pool_job_ad
from condorpy.startd.refusal_log import RefusalLog

log = logging.getLogger("condorpy.startd.pool")


# Unfinished inbound exchanges one host may hold at once: far above what a schedd's
# shadows need (each exchange lasts milliseconds), and at most a quarter of the
# daemon's descriptors (systemd's unit gives it 131072; a shell often 1024).
MAX_OPEN_PER_HOST = 256
LOG_EVERY = 60.0        # seconds between two log lines about one host's refusals


def _spare_fd() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _failure_ad(reason: str) -> ClassAd:
    """The activation failure ad a shadow asks for: HTCondor's ActivationRefused* code
    for the refusal, so the schedd's NumVacatesByReason counts it by name."""
    ad = ClassAd()
    ad["VacateReason"] = reason
    ad["VacateReasonCode"] = int(vacate_reasons.activation_refusal(reason))
    ad["VacateReasonSubCode"] = 0
    return ad


class CommandServer:
    def __init__(self, settings_of: Callable[[], PoolSettings], table: ClaimTable,
                 inbound: Exchanges, shadows: ShadowSide, reconnects: ReconnectServer,
                 advertiser: Advertiser, host_of: Callable[[], JobHost | None],
                 clock: Clock) -> None:
        self.settings_of = settings_of
        self.table = table
        self.engine = table.engine
        self.inbound = inbound
        self.shadows = shadows
        self.reconnects = reconnects
        self.advertiser = advertiser
        self.host_of = host_of
        self.clock = clock
        self.negotiated = secserver.SessionCache()  # sessions the pool's tools opened
        self._refused_logged: dict[str, float] = {}   # host ("": any) -> when logged
        self.refusals = RefusalLog(lambda: self.engine, clock)
        self._spare = _spare_fd()
        self._per_host = min(MAX_OPEN_PER_HOST,
                             max(1, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4))

    def accept(self, listener: socket.socket) -> None:
        try:
            conn, addr = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                self._shed(listener, exc)
            return
        self.serve(conn, f"{addr[0]}:{addr[1]}")

    def serve(self, conn: socket.socket, peer: str) -> None:
        """Serve a command connection: one accepted here, or one this daemon made to a
        peer that asked for it through a CCB broker (ccb.py); the peer speaks first."""
        if not self._room_for(peer.rpartition(":")[0]):
            conn.close()
            return
        holder: list[AsyncExchange] = []
        # pool25: FS authentication (25.x) binds to this end of the connection
        try:
            here = conn.getsockname()
            local: tuple[str, int] | None = (str(here[0]), int(here[1]))
        except OSError:
            local = None
        ex = AsyncExchange.accepted(conn, peer, self._serve(peer, holder, local),
                                    self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                    f"command from {peer}")
        holder.append(ex)
        self.inbound.add(ex, self.shadows.connection_closed)

    def _room_for(self, host: str) -> bool:
        """Whether ``host`` may open one more exchange: a peer that opens connections
        and never finishes its message (slowloris) would otherwise take every
        descriptor, the control socket's too, for an exchange's timeout."""
        held = sum(1 for ex in self.inbound if ex.peer.rpartition(":")[0] == host)
        if held < self._per_host:
            return True
        now_ = self.clock.monotonic()
        if now_ - self._refused_logged.get(host, -LOG_EVERY) >= LOG_EVERY:
            self._refused_logged[host] = now_
            log.warning("pool: %s already holds %d unfinished commands; its new "
                        "connections are closed until they end", host, held)
        return False

    def _shed(self, listener: socket.socket, exc: OSError) -> None:
        """Out of descriptors: accept the waiting connection on the one kept spare and
        close it at once, rather than leave it pending (the listener would stay ready
        and the loop spin on it)."""
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None
        try:
            conn, addr = listener.accept()
            conn.close()
            what = f"closed the connection from {addr[0]}:{addr[1]}"
        except OSError:
            what = "cannot accept"
        finally:
            self._spare = _spare_fd()
        now_ = self.clock.monotonic()
        if now_ - self._refused_logged.get("", -LOG_EVERY) >= LOG_EVERY:
            self._refused_logged[""] = now_
            log.warning("pool: command port out of descriptors (%s): %s", exc.strerror,
                        what)

    def _serve(self, peer: str, holder: list[AsyncExchange],
               local: tuple[str, int] | None = None) -> Generator[Op, bytes | None, None]:
        policy = self.settings_of().server or secserver.ServerPolicy({}, {}, {})
        inbound = yield from secserver.serve(peer, peer.rpartition(":")[0].strip("[]"),
                                             policy, self.negotiated, self.table.key,
                                             admin.COMMANDS, self.clock.time,
                                             CONDOR_VERSION, local)
        if not inbound.claim_session:
            # the pool's tools: condor_status -direct, condor_vacate, condor_drain, ...
            r = Reader(inbound.payload, peer, crypto=inbound.crypto)
            reply = tools.answer(admin.parse(inbound.command, r, inbound.asked), inbound,
                                 peer, self.host_of(), self.advertiser.public_ads,
                                 self.advertiser.slot_named)
            if reply is not None:
                yield Send(reply.payload())
            return
        r = Reader(inbound.payload, peer, crypto=True)
        if inbound.command == reconnect.CA_CMD:
            # a shadow looking for its job after losing it (reconnect.py)
            req = reconnect.parse_request(r)
            yield from self.reconnects.serve(req, inbound.session_id, peer, holder[0])
            return
        if inbound.command == coalesce.COALESCE_SLOTS:
            # condor_now: the schedd merges its claims into one for the now-job
            yield Send(now.serve(self.table, self.advertiser.ads, coalesce.parse(r),
                                 inbound.session_id, peer).payload())
            return
        cmd = claims.parse(inbound.command, r)
        if session_of(cmd.claim_id) != inbound.session_id:
            raise SecurityError(f"command {inbound.command} names a claim other than "
                                "its session's", peer=peer)
        decided = self._decide(cmd, peer)
        if isinstance(decided, Claim):
            # a preempting claim: the schedd hears once the current claim has left the
            # slot (or the better claim was refused after all); PoolLink.tick wakes it
            waiting = decided
            waiting.waiting = holder[0]
            if self.table.take_changed():
                self.advertiser.soon()
            yield Await(f"the slot for the preempting claim {waiting.eid}")
            decided = self._preempting_answer(waiting, peer)
        if decided is not None:
            yield Send(decided.payload())
        if self.table.take_changed():
            self.advertiser.soon()
        claim = self.table.get(engine_id(cmd.claim_id))
        job = claim.job if claim is not None else None
        if isinstance(cmd, claims.ActivateClaim) and job is not None:
            # the connection is now the job's: the starter's calls to the shadow
            job.exchange = holder[0]
            yield from self.shadows.run(peer, job)

    def _decide(self, cmd: claims.ClaimCommand, peer: str) -> Writer | Claim | None:
        now_ = self.clock.time()
        w = Writer(crypto=True)
        if isinstance(cmd, claims.RequestClaim):
            return self._request_claim(cmd, peer, now_, w)
        if isinstance(cmd, claims.ActivateClaim):
            return self._activate(cmd, peer, now_, w)
        eid = engine_id(cmd.claim_id)
        if cmd.command in claims.DEACTIVATES:
            log.info("pool: %s for %s from %s", {403: "DEACTIVATE_CLAIM",
                     404: "DEACTIVATE_CLAIM_FORCIBLY"}.get(cmd.command, str(cmd.command)),
                     eid, peer)
            job = self.table.job(eid)
            if job is not None and not job.ended:
                job.killed = True
                self.shadows.kill(eid, hard=cmd.command == claims.DEACTIVATE_CLAIM_FORCIBLY)
            return claims.deactivate_reply(w, self.table.by_claim_id(cmd.claim_id)
                                           is not None)
        # RELEASE_CLAIM: a claim id is good for one claim; the slot gets a new one
        if self.table.by_claim_id(cmd.claim_id) is not None:
            self.table.drop(eid, f"released by {peer}")
        return None

    def _activate(self, cmd: claims.ActivateClaim, peer: str, now_: float,
                  w: Writer) -> Writer:
        eid = engine_id(cmd.claim_id)
        refusal = ""
        if self.table.by_claim_id(cmd.claim_id) is None or not self.engine.has_claim(eid):
            refusal = "no such claim"
        elif self.host_of() is None:
            refusal = "this daemon cannot run jobs"
        else:
            ad = pool_job_ad(cmd.ad, eid, peer, "ACTIVATE_CLAIM")
            job = PoolJob(eid, ad)
            self.table.set_job(eid, job)
            out = self.engine.activate(now_, eid, ad)
            self.table.apply(out)
            if job.slot is None:
                self.table.job_done(job)
                refusal = next((o.reason for o in out if isinstance(o, ActivationRefused)),
                               "the policy refused the activation")
        if refusal:
            log.info("pool: ACTIVATE_CLAIM for %s from %s refused: %s", eid, peer, refusal)
            failure = None
            if cmd.ad.get("_condor_send_activation_failure_ad") is True:
                failure = _failure_ad(refusal)
            return claims.activate_reply(w, claims.NOT_OK, failure)
        log.info("pool: %s activated by %s for job %s.%s", eid, peer,
                 cmd.ad.get("ClusterId"), cmd.ad.get("ProcId"))
        return claims.activate_reply(w, claims.OK)

    def _request_claim(self, req: claims.RequestClaim, peer: str, now_: float,
                       w: Writer) -> Writer | Claim:
        table, engine = self.table, self.engine
        slot = table.slot_published_as(req.claim_id)
        if slot is None or slot not in engine.slots or not self.settings_of().accept_claims:
            why = "not a current claim id of this daemon" \
                if slot is None or slot not in engine.slots \
                else "claims are not accepted (CONDORPY_POOL_ACCEPT_CLAIMS)"
            log.info("pool: REQUEST_CLAIM from %s refused: %s", peer, why)
            return claims.request_claim_reply(w, [], ok=False)
        partitionable = engine.slots[slot].kind == "partitionable"
        if not partitionable and engine.slots[slot].claim is not None:
            return self._preempting_claim(req, slot, peer, now_, w)
        # a d-slot gets a claim id of its own; a static slot's is the one published
        cid = table.mint() if partitionable else req.claim_id
        eid = engine_id(cid)
        out = engine.request_claim(now_, eid, req.ad, slot, client=client_host(peer))
        table.apply(out)
        if not engine.has_claim(eid):
            reason = next((o.reason for o in out if isinstance(o, ClaimRefused)), "refused")
            log.info("pool: REQUEST_CLAIM from %s for %s refused: %s", peer, slot, reason)
            self.refusals.refused(slot, req.ad, reason, peer)
            if partitionable:
                table.spend(cid)
            return claims.request_claim_reply(w, [], ok=False)
        table.grant(cid, req)
        claimed = next(s for s in engine.slots.values()
                       if s.claim is not None and s.claim.id == eid)
        table.publish_claimed(claimed.name, eid)
        address = table.address
        ads = {name: collector.slot_ads(a, address, table.published_id(name) or cid).public
               for name, a in self.advertiser.ads().items()}
        send_ad = req.ad.get("_condor_SEND_CLAIMED_AD") is True
        granted = [claims.ClaimGranted(cid, ads[claimed.name])] if send_ad else []
        log.info("pool: %s claimed by %s (%s)", claimed.name, req.scheduler_addr,
                 req.ad.get("User") or req.ad.get("Owner") or "unknown user")
        leftovers = None
        if partitionable:
            # the published id is spent; the p-slot gets a new one for its leftovers
            table.spend(req.claim_id)
            fresh = table.mint()
            table.publish(slot, fresh)
            if req.ad.get("_condor_SEND_LEFTOVERS") is True:
                leftovers = claims.ClaimGranted(fresh, ads[slot])
        table.changed()
        return claims.request_claim_reply(w, granted, ok=True, leftovers=leftovers)

    def _preempting_claim(self, req: claims.RequestClaim, slot: str, peer: str,
                          now_: float, w: Writer) -> Writer | Claim:
        """A claim on a claimed slot, with the preempting id it publishes: the engine
        accepts it when the slot's RANK prefers its job to the current claim's (the
        current claim then retires, and the better one waits for the slot); the
        schedd's answer waits too."""
        table, engine = self.table, self.engine
        cid, eid = req.claim_id, engine_id(req.claim_id)
        out = engine.request_claim(now_, eid, req.ad, slot, client=client_host(peer))
        table.apply(out)
        if not engine.has_claim(eid):
            reason = next((o.reason for o in out if isinstance(o, ClaimRefused)), "refused")
            log.info("pool: preempting REQUEST_CLAIM from %s for %s refused: %s", peer,
                     slot, reason)
            self.refusals.refused(slot, req.ad, reason, peer)
            return claims.request_claim_reply(w, [], ok=False)
        claim = table.grant(cid, req)
        # the slot publishes the next preempting id; this one is the waiting claim's
        table.publish_claimed(slot, eid)
        table.changed()
        log.info("pool: %s: the better claim %s of %s waits for the current one to "
                 "retire", slot, eid, req.scheduler_addr)
        return claim

    def _preempting_answer(self, claim: Claim, peer: str) -> Writer:
        """The answer to a preempting claim's schedd: the claim has the slot now (a plain
        OK, as HTCondor's startd sends then), or it was refused after all."""
        claim.waiting = None
        w = Writer(crypto=True)
        slot = self.table.holding(claim.eid)
        if slot is None or self.table.get(claim.eid) is not claim:
            log.info("pool: the preempting claim %s of %s is refused: the slot did not "
                     "pass to it", claim.eid, peer)
            self.table.drop(claim.eid, "the slot did not pass to it")
            return claims.request_claim_reply(w, [], ok=False)
        log.info("pool: %s claimed by %s (%s), preempting", slot,
                 claim.request.scheduler_addr,
                 claim.request.ad.get("User") or claim.request.ad.get("Owner") or "unknown user")
        self.table.changed()
        return claims.request_claim_reply(w, [], ok=True)
