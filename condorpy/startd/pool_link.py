"""The daemon's link to an HTCondor pool: its slots advertised to the collector, claims
from the pool's schedds and jobs from their shadows (``docs/pool.md``).

With ``COLLECTOR_HOST`` (by default ``$(CONDOR_HOST)``) set, the daemon sends each slot's
public and private ads (``UPDATE_STARTD_AD``) at start, every ``UPDATE_INTERVAL`` and
whenever a slot changes state or activity or appears; a slot that goes away (a
d-slot returned to its partitionable slot) and every slot at shutdown is invalidated
(``INVALIDATE_STARTD_ADS``). Each update is one CEDAR connection driven by the event
loop without blocking it (:class:`condorpy.pool.connection.AsyncExchange`); only the
invalidations at shutdown wait, a few seconds at most.

The command port (``STARTD_PORT``, else an ephemeral port, on ``NETWORK_INTERFACE``
or the address that routes to the collector) is what the ads name as ``MyAddress``.
With ``CONDORPY_POOL_ACCEPT_CLAIMS`` it takes claims there: every decision goes
through the policy engine (``request_claim``, ``activate``, ``release``, ``alive``),
and a job activated by a shadow runs under the daemon's own starter while this module
answers the shadow as HTCondor's starter would (:mod:`condorpy.pool.shadow`).
"""

from __future__ import annotations

import logging
import selectors
import socket
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.config import Config
from condorpy.errors import CondorpyError, PoolError, SecurityError
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import ActivationRefused, ClaimRefused, Output
from condorpy.pool import (admin, claims, coalesce, collector, daemon_ad, reconnect,
                           secserver, shadow)
from condorpy.pool import filetransfer as ft
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.connection import AsyncExchange, Connection
from condorpy.pool.security import Await, ClientPolicy, Op, Send, Session, client_policy
from condorpy.pool.server import alive, claim_session_key, parse_claim_id, release_claim
from condorpy.pool.sinful import Address, parse_address
from condorpy.slots.ads import CONDOR_VERSION, HTCONDOR_VERSION
from condorpy.starter import reserved
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR
from condorpy.startd import pool_now, pool_reconnect, pool_transfer
from condorpy.queue.jobstore import JobStore
from condorpy.startd.paths import StatePaths

log = logging.getLogger("condorpy.startd.pool")


def pool_job_ad(ad: ClassAd, eid: str, peer: str, what: str) -> ClassAd:
    """A pool's job ad without the attributes only condorpy sets (condorpy/starter/
    reserved.py): a schedd's user could otherwise steer this daemon's starter."""
    clean, dropped = reserved.strip_internal(ad)
    if dropped:
        log.warning("pool: claim %s, job %s.%s: dropped %s from %s of %s (only condorpy "
                    "sets them)", eid, ad.get("ClusterId"), ad.get("ProcId"),
                    ", ".join(dropped), what, peer)
    return clean


class JobHost(Protocol):
    """What the daemon does for a job a shadow runs here."""

    paths: StatePaths

    @property
    def store(self) -> JobStore: ...

    def launch_pool_job(self, eid: str, slot: str, job_ad: ClassAd, number: int) -> None: ...

    def signal_pool_job(self, eid: str, command: str) -> None: ...

    def pool_command(self, command: str, args: dict[str, Any], user: str) -> Any: ...


@dataclass
class PoolJob:
    """A job a shadow runs on one of this daemon's claims."""

    eid: str
    ad: ClassAd
    slot: str | None = None
    exchange: AsyncExchange | None = None
    ended: bool = False
    killed: bool = False
    evicted: bool = False
    final: dict[str, object] | None = None
    updates: list[dict[str, object]] = field(default_factory=list)
    files: "pool_transfer.Scratch | None" = None   # its scratch, when its files travel
    transfer_session: "shadow.SessionInfo | None" = None   # the shadow's filetrans session
    # reconnect (pool_reconnect.py): the job lease, counted from the shadow's last word
    number: int = 0
    lease: int = 0
    last_contact: float = 0.0
    disconnected: float | None = None
    lease_expired: bool = False
    peer: str = ""

EXCHANGE_TIMEOUT = 20.0      # seconds for one collector exchange (SEC_TCP_SESSION_TIMEOUT)
RETRY_FIRST = 5.0            # a failed round is tried again this soon, then twice as late
SHUTDOWN_TIMEOUT = 3.0


@dataclass(frozen=True)
class PoolSettings:
    collector: Address
    update_interval: float
    policy: ClientPolicy
    interface: str
    port: int
    accept_claims: bool = False
    # who may run which command on the command port (ALLOW_*/DENY_*, SEC_<LEVEL>_*)
    server: secserver.ServerPolicy | None = None


def pool_settings(cfg: Config) -> PoolSettings | None:
    """The pool this configuration joins, or None when it names no collector."""
    text = (cfg.get("COLLECTOR_HOST") or "").strip()
    if not text:
        return None
    first = text.replace(",", " ").split()[0]
    addr = parse_address(first, source="COLLECTOR_HOST")
    if addr.port == 0:
        raise cfg.invalid("COLLECTOR_HOST", "a collector address with its port (port 0 "
                          "means a personal collector's random port)")
    iface = (cfg.get("NETWORK_INTERFACE") or "*").strip()
    return PoolSettings(
        collector=addr,
        update_interval=max(1.0, float(cfg.get_int("UPDATE_INTERVAL", 300))),
        policy=client_policy(cfg, CONDOR_VERSION),
        interface="" if iface == "*" else iface,
        port=cfg.get_int("STARTD_PORT", 0),
        # An execution point in a pool runs the pool's jobs, as HTCondor's startd does;
        # False advertises the slots (Requirements = false) without taking work.
        accept_claims=cfg.get_bool("CONDORPY_POOL_ACCEPT_CLAIMS", True),
        server=secserver.server_policy(cfg))


def _local_ip(settings: PoolSettings) -> str:
    """The address peers reach this daemon at: NETWORK_INTERFACE, else the local end of
    a route to the collector (no packet is sent)."""
    if settings.interface:
        return settings.interface
    try:
        infos = socket.getaddrinfo(settings.collector.host, settings.collector.port,
                                   type=socket.SOCK_DGRAM)
        family, _, _, _, sockaddr = infos[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(sockaddr)
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


class PoolLink:
    """Keeps the collector's view of this daemon's slots current."""

    def __init__(self, settings: PoolSettings, engine: PolicyEngine,
                 sel: selectors.BaseSelector, clock: Clock,
                 apply: Callable[[list[Output]], None] = lambda outputs: None,
                 host: "JobHost | None" = None, previous_port: int = 0) -> None:
        self.settings = settings
        self.previous_port = previous_port
        self.apply = apply
        self.host = host
        self.engine = engine
        self.sel = sel
        self.clock = clock
        self.birthdate = int(clock.time())
        self.listener = self._listen()
        ip, port = self.listener.getsockname()[:2]
        self.address = Address(ip, port, (("noUDP", ""),)).sinful()
        self.peer = settings.collector.hostport()
        self.claim_ids: dict[str, str] = {}       # slot -> the claim id the collector has
        self.sessions: dict[str, bytes] = {}      # claim session id -> AES key
        self.negotiated = secserver.SessionCache()  # sessions the pool's tools opened
        self.pool_claims: dict[str, claims.RequestClaim] = {}   # granted claims
        self.inbound: set[AsyncExchange] = set()
        self.jobs: dict[str, PoolJob] = {}        # engine claim id -> job run for a shadow
        self.outbound: dict[AsyncExchange, Callable[[AsyncExchange], None]] = {}
        self.transfers: dict[pool_transfer.Transfer, PoolJob] = {}   # on their threads
        self.stopping = False
        self.next_alive: dict[str, float] = {}    # claim id -> when to send its ALIVE
        self.next_refresh: dict[str, float] = {}  # claim id -> when its job renews its lease
        # engine claim id -> its claim as stored for a restart (pool_reconnect.py)
        self.stored: dict[str, pool_reconnect.StoredClaim] = {}
        self._job_seq = 0
        self._seq = 0
        self._fresh_claim_ids = False
        self.advertised: dict[str, str] = {}     # ad Name -> engine slot name
        self.daemon_name = ""                     # the daemon ad's Name, once sent
        self.queue: list[tuple[str, Callable[[], AsyncExchange]]] = []
        self.current: AsyncExchange | None = None
        self.next_update = 0.0
        self.signature: tuple[tuple[str, str, str], ...] = ()
        self.updates_sent = 0
        self.failures = 0
        self.session: Session | None = None       # the collector's, once negotiated
        # what the current exchange was queued as, and whether it resumes self.session
        self.current_item: tuple[str, Callable[[], AsyncExchange], bool] | None = None
        self.round_failed = False
        self.last_report = ""
        self.retry = RETRY_FIRST
        log.info("joining the pool at %s as %s", self.peer, self.address)

    @classmethod
    def from_config(cls, cfg: Config, engine: PolicyEngine, sel: selectors.BaseSelector,
                    clock: Clock) -> "PoolLink | None":
        settings = pool_settings(cfg)
        return None if settings is None else cls(settings, engine, sel, clock)

    def _listen(self) -> socket.socket:
        ip = _local_ip(self.settings)
        family = socket.AF_INET6 if ":" in ip else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            if not self.settings.port and self.previous_port:
                try:
                    # the claim ids running jobs' shadows hold name the earlier port
                    s.bind((ip, self.previous_port))
                except OSError:
                    s.bind((ip, 0))
            else:
                s.bind((ip, self.settings.port))
        except OSError as exc:
            s.close()
            raise PoolError(f"cannot open the command port {ip}:{self.settings.port}: "
                            f"{exc.strerror or exc}") from None
        s.listen(64)
        s.setblocking(False)
        self.sel.register(s, selectors.EVENT_READ, ("pool", self))
        return s

    def reconfig(self, settings: PoolSettings | None) -> None:
        """The pool knobs re-read; the command port and its address stay."""
        if settings is None:
            log.warning("reconfig: COLLECTOR_HOST is no longer set; the slots stay "
                        "advertised until the daemon restarts")
            return
        self.settings = PoolSettings(settings.collector, settings.update_interval,
                                     settings.policy, self.settings.interface,
                                     self.settings.port, settings.accept_claims,
                                     settings.server)
        self.peer = settings.collector.hostport()
        self.next_update = 0.0

    # ------------------------------------------------------------------ claim ids
    def claim_id(self, slot: str) -> str:
        """The claim id the collector holds for ``slot`` (the negotiator hands it to the
        schedd that is matched with the slot)."""
        cid = self.claim_ids.get(slot)
        if cid is None:
            self._seq += 1
            cid = self._mint()
            self.claim_ids[slot] = cid
        return cid

    def _mint(self) -> str:
        self._seq += 1
        cid = collector.new_claim_id(self.address, self.birthdate, self._seq,
                                     HTCONDOR_VERSION)
        self.sessions[parse_claim_id(cid).session_id] = claim_session_key(cid)
        return cid

    def owns(self, engine_claim: str) -> bool:
        """Whether the engine's claim ``engine_claim`` is one a pool's schedd holds."""
        return any(engine_id(c) == engine_claim for c in self.pool_claims)

    def job_name(self, engine_claim: str) -> str | None:
        """The pool's name (``cluster.proc``) of the job claim ``engine_claim`` runs."""
        job = self.jobs.get(engine_claim)
        return None if job is None else f"{job.ad.get('ClusterId')}.{job.ad.get('ProcId')}"

    # ------------------------------------------------------------------ the loop
    def timeout(self, now: float) -> float:
        """Seconds until the link has something to do."""
        due = self.next_update
        if self.current is not None:
            due = min(due, self.current.deadline)
        for ex in (*self.inbound, *self.outbound):
            due = min(due, ex.deadline)
        for when in self.next_alive.values():
            due = min(due, when)
        due = min(due, now + pool_reconnect.timeout(self, now))
        return max(0.0, due - now)

    def tick(self, now: float) -> None:
        if self.current is not None and self.current.overdue(now):
            self._finish()
        for ex in [e for e in self.inbound if e.overdue(now)]:
            self._close_inbound(ex)
        for ex in [e for e in self.outbound if e.overdue(now)]:
            self._close_outbound(ex)
        self._alives(now)
        pool_reconnect.tick(self)
        for cid in [c for c in self.pool_claims if not self.engine.has_claim(engine_id(c))]:
            # the engine ended the claim (lease, preemption, vacate): tell its schedd,
            # and forget its session
            self._send_release(cid, self.pool_claims[cid])
            del self.pool_claims[cid]
            self.next_alive.pop(cid, None)
            self.next_refresh.pop(cid, None)
            self.sessions.pop(parse_claim_id(cid).session_id, None)
            for slot, c in list(self.claim_ids.items()):
                if c == cid:
                    del self.claim_ids[slot]
        sig = self._signature()
        if now >= self.next_update or sig != self.signature:
            self.signature = sig
            self.next_update = now + self.settings.update_interval
            self.round_failed = False
            self._queue_round()
        self._start_next(now)
        if self.round_failed and self.current is None and not self.queue:
            # the collector is down or refused us: try again soon, not in UPDATE_INTERVAL
            self.round_failed = False
            self.next_update = min(self.next_update, now + self.retry)
            self.retry = min(self.retry * 2, self.settings.update_interval)

    def _signature(self) -> tuple[tuple[str, str, str], ...]:
        return tuple((s.name, s.state.value, s.activity.value)
                     for s in self.engine.slots.values() if not s.deleted)

    def _queue_round(self) -> None:
        # one update per slot; anything queued from an older round is superseded
        self.queue = [q for q in self.queue if q[0] == "invalidate"]
        live = {}
        ads_now = self._ads()
        self._queue_daemon_ad(list(ads_now.values()))
        for slot, ad in ads_now.items():
            ads = collector.slot_ads(ad, self.address, self.claim_id(slot))
            if not self.settings.accept_claims:
                # listed, never matched: a claim would only be refused
                ads.public["Requirements"] = False
            live[ads.name] = slot
            self.queue.append(("update", self._maker(ads)))
        for gone in sorted(set(self.advertised) - set(live)):
            self.queue.append(("invalidate", self._invalidator(gone)))
            self.claim_ids.pop(self.advertised[gone], None)
        self.advertised = live

    def _queue_daemon_ad(self, ads: list[ClassAd]) -> None:
        """The daemon ad goes first, as HTCondor's startd sends it (daemon_ad.py)."""
        ad = daemon_ad.startd_ad(ads, self.address, self.birthdate)
        if ad is None:
            return
        self.daemon_name = daemon_ad.name_of(ad)

        def make() -> AsyncExchange:
            return AsyncExchange.connect(self.settings.collector,
                                         daemon_ad.update(ad, self.settings.policy,
                                                          self.peer, self.session),
                                         self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                         f"update of the daemon ad {self.daemon_name}")
        self.queue.append(("update", make))

    def _ads(self) -> dict[str, ClassAd]:
        """Every live slot's ad by the engine's name for the slot (the ads' Name is
        that name at the host)."""
        live = [s.name for s in self.engine.slots.values() if not s.deleted]
        return dict(zip(live, self.engine.ads()))

    def _maker(self, ads: collector.SlotAds) -> Callable[[], AsyncExchange]:
        def make() -> AsyncExchange:
            return AsyncExchange.connect(self.settings.collector,
                                 collector.update(ads, self.settings.policy, self.peer,
                                                  self.session),
                                 self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                 f"update of {ads.name}")
        return make

    def _invalidator(self, name: str) -> Callable[[], AsyncExchange]:
        def make() -> AsyncExchange:
            return AsyncExchange.connect(self.settings.collector,
                                 collector.invalidate(name, self.address,
                                                      self.settings.policy, self.peer,
                                                      self.session),
                                 self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                 f"invalidation of {name}")
        return make

    def _start_next(self, now: float) -> None:
        while self.current is None and self.queue:
            kind, make = self.queue.pop(0)
            try:
                ex = make()
            except CondorpyError as exc:
                self._report(exc)
                continue
            self.current = ex
            self.current_item = (kind, make, self.session is not None)
            self.sel.register(ex.sock, ex.interest(), ("pool", ex))

    def handle(self, obj: object, mask: int) -> None:
        """The event loop's entry: the listener or an exchange is ready."""
        if obj is self:
            self._accept()
            return
        if isinstance(obj, pool_transfer.Transfer):
            self._transfer_done(obj)
            return
        if isinstance(obj, AsyncExchange) and (obj in self.outbound or obj in self.inbound):
            obj.handle(mask)
            if not obj.done:
                self.sel.modify(obj.sock, obj.interest(), ("pool", obj))
            elif obj in self.outbound:
                self._close_outbound(obj)
            else:
                self._close_inbound(obj)
            return
        ex = self.current
        if ex is None or obj is not ex:
            return
        ex.handle(mask)
        if ex.done:
            self._finish()
            self._start_next(self.clock.monotonic())
        else:
            self.sel.modify(ex.sock, ex.interest(), ("pool", ex))

    def _finish(self) -> None:
        ex = self.current
        if ex is None:
            return
        self.current = None
        try:
            self.sel.unregister(ex.sock)
        except (KeyError, ValueError):
            pass
        ex.close()
        item, self.current_item = self.current_item, None
        if ex.error is not None and item is not None and item[2]:
            # the collector forgot the session (expired, restarted): negotiate anew, now
            log.info("pool: %s: %s; negotiating a new session", ex.label, ex.error)
            self.session = None
            self.queue.insert(0, (item[0], item[1]))
        elif ex.error is not None:
            self.session = None
            self._report(ex.error)
        else:
            self.updates_sent += 1
            self.retry = RETRY_FIRST
            if isinstance(ex.result, tuple) and isinstance(ex.result[0], Session):
                # later updates resume this session: no new key exchange each time
                new = ex.result[0] if ex.result[0].sid else None
                if new is not None and self.session is None:
                    log.info("pool: security session %s with %s negotiated (%s%s); later "
                             "updates resume it", new.sid, self.peer, new.method or "none",
                             ", AES" if new.encrypted else "")
                self.session = new
            log.debug("%s sent to %s", ex.label, self.peer)

    def _report(self, exc: Exception) -> None:
        self.failures += 1
        # one line per round: every slot's update fails alike when the pool refuses us
        if not (self.round_failed and str(exc) == self.last_report):
            log.error("pool: %s", exc)
        self.last_report = str(exc)
        self.round_failed = True

    # ------------------------------------------------------------------ commands
    def _accept(self) -> None:
        try:
            conn, addr = self.listener.accept()
        except OSError:
            return
        peer = f"{addr[0]}:{addr[1]}"
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
        self.inbound.add(ex)
        if ex.done:
            self._close_inbound(ex)
        else:
            self.sel.register(conn, ex.interest(), ("pool", ex))

    def _close_inbound(self, ex: AsyncExchange) -> None:
        self.inbound.discard(ex)
        try:
            self.sel.unregister(ex.sock)
        except (KeyError, ValueError):
            pass
        ex.close()
        waits = any([pool_reconnect.shadow_lost(self, job)   # every job, no short cut
                     for job in list(self.jobs.values()) if job.exchange is ex])
        if ex.error is not None:
            # a shadow that went away from a job it can come back to is no error
            (log.info if waits else log.error)("pool: %s", ex.error)
        for eid, job in list(self.jobs.items()):
            if job.exchange is ex and not job.ended:
                # the shadow is gone: its job must not run on unseen
                log.warning("pool: the shadow of %s went away; killing the job", eid)
                job.killed = True
                self._kill(eid, hard=True)

    def _serve(self, peer: str, holder: list[AsyncExchange],
               local: tuple[str, int] | None = None) -> Generator[Op, bytes | None, None]:
        policy = self.settings.server or secserver.ServerPolicy({}, {}, {})
        inbound = yield from secserver.serve(peer, peer.rpartition(":")[0].strip("[]"),
                                             policy, self.negotiated, self.sessions.get,
                                             admin.COMMANDS, self.clock.time,
                                             CONDOR_VERSION, local)
        if not inbound.claim_session:
            # the pool's tools: condor_status -direct, condor_vacate, condor_drain, ...
            r = Reader(inbound.payload, peer, crypto=inbound.crypto)
            reply = self._admin(admin.parse(inbound.command, r, inbound.asked), inbound,
                                peer)
            if reply is not None:
                yield Send(reply.payload())
            return
        r = Reader(inbound.payload, peer, crypto=True)
        if inbound.command == reconnect.CA_CMD:
            # a shadow looking for its job after losing it (pool_reconnect.py)
            req = reconnect.parse_request(r)
            yield from pool_reconnect.serve(self, req, inbound.session_id, peer, holder[0])
            return
        if inbound.command == coalesce.COALESCE_SLOTS:
            # condor_now: the schedd merges its claims into one for the now-job
            yield Send(pool_now.serve(self, coalesce.parse(r), inbound.session_id,
                                      peer).payload())
            return
        cmd = claims.parse(inbound.command, r)
        try:
            session = parse_claim_id(cmd.claim_id).session_id
        except ValueError:
            session = ""
        if session != inbound.session_id:
            raise SecurityError(f"command {inbound.command} names a claim other than "
                                "its session's", peer=peer)
        reply = self._decide(cmd, peer)
        if reply is not None:
            yield Send(reply.payload())
        if self._fresh_claim_ids:
            self._fresh_claim_ids = False
            self.next_update = 0.0
        eid = engine_id(cmd.claim_id)
        if isinstance(cmd, claims.ActivateClaim) and eid in self.jobs:
            # the connection is now the job's: the starter's calls to the shadow
            job = self.jobs[eid]
            job.exchange = holder[0]
            yield from self._run_for_shadow(peer, job)

    def _admin(self, cmd: admin.AdminCommand, inbound: secserver.Authorized, peer: str
               ) -> Writer | None:
        """An administration command, through the local CLI's own handler."""
        w = Writer(crypto=inbound.crypto)
        what = admin.NAMES.get(inbound.command, str(inbound.command))
        log.info("pool: %s from %s at %s", what, inbound.user, peer)
        if isinstance(cmd, (admin.Nop, admin.SecQuery)):
            # condor_ping: the handshake authorised it; nothing runs
            return admin.sec_query_reply(w) if isinstance(cmd, admin.SecQuery) else None
        if isinstance(cmd, admin.Query):
            ads = [collector.slot_ads(ad, self.address, self.claim_id(slot)).public
                   for slot, ad in self._ads().items()]
            return admin.query_reply(w, cmd.ad, ads)
        if self.host is None:
            raise PoolError(f"{what} from {peer}: this daemon takes no commands")
        if isinstance(cmd, admin.ConfigVal):
            out = self.host.pool_command("config_val", {"names": [cmd.name]},
                                         inbound.user)
            value = out.get(cmd.name, {}).get("value") if isinstance(out, dict) else None
            log.info("pool: %s %s from %s: %s", what, cmd.name, peer,
                     "defined" if isinstance(value, str) else "not defined")
            return admin.config_reply(w, value if isinstance(value, str) else None)
        try:
            if isinstance(cmd, admin.Vacate):
                slots: list[str] = []
                if cmd.slot is not None:
                    slot = self.advertised.get(cmd.slot)
                    if slot is None:
                        log.warning("pool: %s from %s: no slot %s here", what, peer,
                                    cmd.slot)
                        return None
                    slots = [slot]
                self.host.pool_command("vacate", {"slots": slots, "fast": cmd.fast},
                                       inbound.user)
                return None
            if isinstance(cmd, admin.Drain):
                if cmd.on_completion.startswith("unsupported"):
                    return admin.result_reply(w, False, error="condorpy drains with "
                                              "nothing, resume or exit on completion")
                out = self.host.pool_command("drain", {
                    "how": cmd.how, "on_completion": cmd.on_completion,
                    "reason": cmd.reason or f"by command (user {inbound.user})",
                    "check": cmd.check, "start": cmd.start}, inbound.user)
                rid = out.get("request_id") if isinstance(out, dict) else None
                return admin.result_reply(w, True, str(rid) if rid else None)
            self.host.pool_command("cancel_drain", {"request_id": cmd.request_id},
                                   inbound.user)
            return admin.result_reply(w, True)
        except (CondorpyError, ValueError, TypeError) as exc:
            log.warning("pool: %s from %s refused: %s", what, peer, exc)
            if isinstance(cmd, admin.Vacate):
                return None
            return admin.result_reply(w, False, error=str(exc))

    def _decide(self, cmd: claims.ClaimCommand, peer: str) -> Writer | None:
        now = self.clock.time()
        w = Writer(crypto=True)
        if isinstance(cmd, claims.RequestClaim):
            return self._request_claim(cmd, peer, now, w)
        if isinstance(cmd, claims.ActivateClaim):
            return self._activate(cmd, peer, now, w)
        if cmd.command in claims.DEACTIVATES:
            eid = engine_id(cmd.claim_id)
            log.info("pool: %s for %s from %s", {403: "DEACTIVATE_CLAIM",
                     404: "DEACTIVATE_CLAIM_FORCIBLY"}.get(cmd.command, str(cmd.command)),
                     eid, peer)
            job = self.jobs.get(eid)
            if job is not None and not job.ended:
                job.killed = True
                self._kill(eid, hard=cmd.command == claims.DEACTIVATE_CLAIM_FORCIBLY)
            return claims.deactivate_reply(w, cmd.claim_id in self.pool_claims)
        # RELEASE_CLAIM
        if cmd.claim_id in self.pool_claims:
            del self.pool_claims[cmd.claim_id]
            if self.engine.has_claim(engine_id(cmd.claim_id)):
                self.apply(self.engine.release(now, engine_id(cmd.claim_id)))
            self.sessions.pop(parse_claim_id(cmd.claim_id).session_id, None)
            for slot, cid in list(self.claim_ids.items()):
                if cid == cmd.claim_id:
                    # a claim id is good for one claim: the slot gets a new one
                    del self.claim_ids[slot]
            log.info("pool: claim %s released by %s", _short(cmd.claim_id), peer)
            self._fresh_claim_ids = True
        return None

    def _activate(self, cmd: claims.ActivateClaim, peer: str, now: float,
                  w: Writer) -> Writer:
        eid = engine_id(cmd.claim_id)
        refusal = ""
        if cmd.claim_id not in self.pool_claims or not self.engine.has_claim(eid):
            refusal = "no such claim"
        elif self.host is None:
            refusal = "this daemon cannot run jobs"
        else:
            ad = pool_job_ad(cmd.ad, eid, peer, "ACTIVATE_CLAIM")
            self.jobs[eid] = PoolJob(eid, ad)
            out = self.engine.activate(now, eid, ad)
            self.apply(out)
            if self.jobs[eid].slot is None:
                del self.jobs[eid]
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

    # ------------------------------------------------------------------ keep-alives
    def _alives(self, now: float) -> None:
        """A claim stays alive while its schedd says so: an idle claim sends ALIVE to
        the schedd every alive interval (``claim.cpp``); a claim whose job runs is kept
        alive by its shadow's connection (HTCondor's "starter handles alives"), and one
        whose job waits for its shadow to reconnect by the job lease: a schedd that has
        just restarted does not know the claim until its new shadow reconnects, and an
        ALIVE then would release the claim under the running job."""
        wall = self.clock.time()
        for cid, req in list(self.pool_claims.items()):
            eid = engine_id(cid)
            job = self.jobs.get(eid)
            connected = job is not None and job.exchange in self.inbound and not job.ended
            waiting = job is not None and job.exchange is None and \
                pool_reconnect.awaits_shadow(self, job)
            if connected or waiting:
                if now >= self.next_refresh.get(cid, 0.0):
                    self.next_refresh[cid] = now + 5
                    self.apply(self.engine.alive(wall, eid))
                continue
            due = self.next_alive.setdefault(cid, now + max(5, req.alive_interval or 300))
            if now < due:
                continue
            self.next_alive[cid] = now + max(5, req.alive_interval or 300)
            self._send_alive(cid, req)

    def _send_alive(self, cid: str, req: claims.RequestClaim) -> None:
        def done(ex: AsyncExchange) -> None:
            eid = engine_id(cid)
            if ex.error is not None:
                log.warning("pool: ALIVE for %s: %s", eid, ex.error)
            elif ex.result == -1:
                log.info("pool: the schedd no longer knows %s: releasing it", eid)
                self.pool_claims.pop(cid, None)
                if self.engine.has_claim(eid):
                    self.apply(self.engine.release(self.clock.time(), eid))
            elif self.engine.has_claim(eid):
                self.apply(self.engine.alive(self.clock.time(), eid))
        self._to_schedd(cid, req, alive, "ALIVE", done)

    def _send_release(self, cid: str, req: claims.RequestClaim) -> None:
        def done(ex: AsyncExchange) -> None:
            if ex.error is not None:
                log.warning("pool: RELEASE_CLAIM for %s: %s", engine_id(cid), ex.error)
            else:
                log.info("pool: claim %s ended here; its schedd %s was told",
                         _short(cid), req.scheduler_addr)
        self._to_schedd(cid, req, release_claim, "RELEASE_CLAIM", done)

    def _to_schedd(self, cid: str, req: claims.RequestClaim,
                   protocol: Callable[[str, str, str], Generator[Op, bytes | None, object]],
                   label: str, done: Callable[[AsyncExchange], None]) -> None:
        """Start ``protocol`` (ALIVE, RELEASE_CLAIM) on claim ``cid``'s session with the
        schedd that holds it; ``done`` sees the exchange once it is over."""
        try:
            addr = parse_address(req.scheduler_addr, source="the schedd's address")
            ex = AsyncExchange.connect(addr, protocol(cid, addr.hostport(), CONDOR_VERSION),
                                       self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                       f"{label} for {engine_id(cid)}")
        except CondorpyError as exc:
            log.warning("pool: cannot send %s for %s: %s", label, engine_id(cid), exc)
            return
        self.outbound[ex] = done
        self.sel.register(ex.sock, ex.interest(), ("pool", ex))

    def _close_outbound(self, ex: AsyncExchange) -> None:
        done = self.outbound.pop(ex, None)
        try:
            self.sel.unregister(ex.sock)
        except (KeyError, ValueError):
            pass
        ex.close()
        if done is not None:
            done(ex)

    # ------------------------------------------------------------------ jobs
    def launch(self, host: "JobHost", eid: str, slot: str) -> None:
        """The engine started the job of pool claim ``eid`` (StartJob): the starter is
        launched once the shadow has been told (begin_execution)."""
        self.host = host
        job = self.jobs.get(eid)
        if job is None:
            log.error("pool: claim %s activated without a job", eid)
            return
        job.slot = slot

    def _run_for_shadow(self, peer: str, job: "PoolJob") -> Generator[Op, bytes | None, None]:
        ad = yield from shadow.get_job_info(peer)
        job.ad = pool_job_ad(ad, job.eid, peer, "the shadow's job ad")
        self._scratch_for(job)
        yield from shadow.register_starter_info(peer, self._starter_info(job))
        # the job's files (pool_transfer.py): its input before it runs
        if job.files is not None:
            session = yield from shadow.get_sec_session_info(peer)
            job.transfer_session = session[1]
            yield from self._input(job, session[1])
        if not job.ended:
            yield from shadow.begin_execution(peer)
            job.peer = peer
            self._start(job)
        yield from self._shadow_loop(peer, job)

    def _shadow_loop(self, peer: str, job: "PoolJob") -> Generator[Op, bytes | None, None]:
        """The running job's news and its exit for its shadow; a shadow that reconnects
        (pool_reconnect.py) picks the loop up on its new connection."""
        while True:
            while job.updates:
                update = ClassAd()
                for k, v in job.updates.pop(0).items():
                    update[k] = v
                yield from shadow.register_job_info(peer, update)
            pool_reconnect.contact(self, job)
            if job.ended:
                break
            yield Await(f"news of job {job.ad.get('ClusterId')}.{job.ad.get('ProcId')}")
        if job.files is not None and job.transfer_session is not None:
            yield from self._output(job, job.transfer_session)
        status, reason, final = shadow.exit_status(job.final or {}, job.killed, job.evicted)
        if reason == shadow.JOB_SHOULD_HOLD:
            try:
                yield from shadow.hold(peer, job.ad, str(final.get("HoldReason") or
                                                         "held by the starter"),
                                       _int(final.get("HoldReasonCode")),
                                       _int(final.get("HoldReasonSubCode")))
            except CondorpyError as exc:
                log.info("pool: telling the shadow of the hold: %s", exc)
        log.info("pool: job %s.%s of %s ended: reason %d, status %d",
                 job.ad.get("ClusterId"), job.ad.get("ProcId"), job.eid, reason, status)
        try:
            yield from shadow.job_exit(peer, status, reason, final)
        except CondorpyError as exc:
            if pool_reconnect.awaits_shadow(self, job):
                raise     # the exit is kept until the shadow reconnects or the lease ends
            # the shadow may hang up once it has the exit: nothing is lost then
            log.info("pool: after job_exit: %s", exc)
        pool_reconnect.reported(self, job)
        self.jobs.pop(job.eid, None)

    def _starter_info(self, job: "PoolJob") -> ClassAd:
        ads = self._ads()
        slot_ad = ads.get(job.slot or "", ClassAd())
        info = ClassAd()
        for attr in ("UidDomain", "FileSystemDomain", "Machine", "Arch", "OpSys", "Name"):
            if slot_ad.get(attr) is not None:
                info[attr] = slot_ad.get(attr)
        info["StarterIpAddr"] = self.address
        info["CondorVersion"] = CONDOR_VERSION
        info["HasReconnect"] = True     # pool_reconnect.py
        if job.files is not None:
            info["CondorScratchDir"] = str(job.files.path)
        elif self.host is not None:
            info["CondorScratchDir"] = str(self.host.paths.execute)
        return info

    # ------------------------------------------------------------------ job files
    def _scratch_for(self, job: "PoolJob") -> None:
        """A scratch directory for a job whose files travel (pool_transfer.py)."""
        slot_ad = self._ads().get(job.slot or "", ClassAd())
        domain = slot_ad.get("FileSystemDomain")
        if self.host is None or not pool_transfer.wants_transfer(
                job.ad, domain if isinstance(domain, str) else ""):
            return None
        self._job_seq += 1
        job.files = pool_transfer.new_scratch(job.ad, self.host.paths.execute, self._job_seq)

    def _transfer(self, job: "PoolJob", t: pool_transfer.Transfer
                  ) -> Generator[Op, bytes | None, ft.Failure | None]:
        """Run one transfer on its thread; the shadow's exchange waits meanwhile."""
        log.info("pool: %s of %s with %s", t.label, job.eid, t.addr.hostport())
        t.start()
        self.transfers[t] = job
        self.sel.register(t.fileno(), selectors.EVENT_READ, ("pool", t))
        while not t.done:
            yield Await(f"the {t.label} of job {job.eid}")
        failure = t.failure()
        out = t.outcome
        log.info("pool: %s of %s: %s", t.label, job.eid,
                 f"failed: {failure.reason}" if failure is not None else
                 f"{len(out.files) if out else 0} file(s), {len(out.dirs) if out else 0} "
                 f"director(ies), {out.bytes if out else 0} bytes")
        return failure

    def _transfer_done(self, t: pool_transfer.Transfer) -> None:
        if not t.collect():
            return
        try:
            self.sel.unregister(t.fileno())
        except (KeyError, ValueError):
            pass
        job = self.transfers.pop(t, None)
        if job is None:
            return
        if job.exchange in self.inbound:
            self._wake(job)
        elif job.files is not None and not pool_reconnect.awaits_shadow(self, job):
            pool_transfer.remove_scratch(job.files.path)    # its shadow went away

    def _input(self, job: "PoolJob", session: shadow.SessionInfo
               ) -> Generator[Op, bytes | None, None]:
        assert job.files is not None
        try:
            t = pool_transfer.input_transfer(job.ad, session, job.files, CONDOR_VERSION)
        except (CondorpyError, OSError) as exc:
            failure: ft.Failure | None = ft.Failure(str(exc), ft.DOWNLOAD_FILE_ERROR)
        else:
            failure = yield from self._transfer(job, t)
        if failure is None:
            job.files.catalog = pool_transfer.catalog(job.files.path)
            job.ad = pool_transfer.job_ad_in_scratch(job.ad, job.files.path)
            return
        job.ended = True
        job.evicted = failure.try_again
        job.final = {} if failure.try_again else {
            "HoldReason": f"Failed to transfer files: {failure.reason}",
            "HoldReasonCode": failure.code, "HoldReasonSubCode": failure.subcode}

    def _output(self, job: "PoolJob", session: shadow.SessionInfo
                ) -> Generator[Op, bytes | None, None]:
        """The outputs go back when the job ended by itself, or, for
        ``when_to_transfer_output = ON_EXIT_OR_EVICT``, when this execution point
        evicted it (into the shadow's spool: the next run gets them back as input),
        as ``JICShadow::transferOutput`` does; a job its shadow stopped sends none."""
        assert job.files is not None
        keep = False     # the outputs wait for a shadow that may reconnect (pool_reconnect)
        try:
            started = job.final is not None and job.ad.lookup(
                PREPARED_SCRATCH_ATTR) is not None
            final = not job.evicted
            when = job.ad.evaluate("WhenToTransferOutput")
            at_evict = isinstance(when, str) and when.upper() == "ON_EXIT_OR_EVICT"
            if self.stopping and pool_reconnect.awaits_shadow(self, job):
                keep = True
                return
            if not started or job.killed or self.stopping or (job.evicted and not at_evict):
                return
            if job.evicted and job.ad.evaluate("SpoolOnEvict") is False:
                final = True
            refusal = pool_transfer.url_refusal(job.ad)
            failure = None
            t: pool_transfer.Transfer | None = None
            if refusal is None:
                try:
                    t = pool_transfer.output_transfer(job.ad, session, job.files, final,
                                                      CONDOR_VERSION)
                except (CondorpyError, OSError) as exc:
                    refusal = str(exc)
            if t is not None:
                failure = yield from self._transfer(job, t)
                if failure is None and not final and t.outcome is not None:
                    # what the shadow spooled comes back as input and goes to the
                    # submitter at the final transfer (SpooledOutputFiles)
                    job.final = dict(job.final or {})
                    job.final["SpooledOutputFiles"] = pool_transfer.spooled(t.outcome)
                where = f"STARTER at {parse_address(self.address).host} failed to send " \
                    f"file(s) to {t.addr.sinful()}: "
            else:
                failure = ft.Failure(refusal or "no output transfer", ft.UPLOAD_FILE_ERROR)
                where = ""
            if failure is not None and "HoldReasonCode" not in (job.final or {}):
                if failure.try_again:
                    job.evicted = True
                else:
                    job.final = dict(job.final or {})
                    job.final.update({
                        # ExitDoUpload's words
                        "HoldReason": f"{where}{failure.reason}",
                        "HoldReasonCode": failure.code,
                        "HoldReasonSubCode": failure.subcode})
        except GeneratorExit:
            # the shadow's connection closed mid-transfer (or the daemon stops)
            keep = pool_reconnect.awaits_shadow(self, job)
            raise
        finally:
            if not keep:
                pool_transfer.remove_scratch(job.files.path)

    def skip_numbers(self, last: int) -> None:
        """Pool jobs of an earlier daemon still hold numbers up to ``last``."""
        self._job_seq = max(self._job_seq, last)

    def _start(self, job: "PoolJob") -> None:
        host = self.host
        if host is None or job.slot is None:
            job.ended, job.final = True, {"HoldReason": "no slot", "HoldReasonCode": 6}
            return
        self._job_seq += 1
        pool_reconnect.persist(self, job, self._job_seq)   # before the job can start
        try:
            host.launch_pool_job(job.eid, job.slot, job.ad, -self._job_seq)
        except CondorpyError as exc:
            log.error("pool: cannot start the job of %s: %s", job.eid, exc)
            job.ended = True
            job.final = {"HoldReason": str(exc), "HoldReasonCode": 6}

    def job_ended(self, eid: str, final: dict[str, object] | None, evicted: bool) -> None:
        """The daemon saw the starter of pool claim ``eid`` end (``evicted``: by its
        policy)."""
        job = self.jobs.get(eid)
        if job is None or job.ended:
            return
        job.ended = True
        job.evicted = evicted
        job.final = dict(final or {})
        pool_reconnect.job_ended(self, job)
        if job.files is not None and job.exchange not in self.inbound and \
                not pool_reconnect.awaits_shadow(self, job):
            # its shadow is gone for good: nobody takes the outputs (pool_transfer.py)
            pool_transfer.remove_scratch(job.files.path)
        self._wake(job)

    def job_update(self, eid: str, attrs: dict[str, object]) -> None:
        """News of a running pool job (state, usage) for its shadow."""
        job = self.jobs.get(eid)
        if job is None or job.ended:
            return
        job.updates.append(dict(attrs))
        self._wake(job)

    def _wake(self, job: "PoolJob") -> None:
        ex = job.exchange
        if ex is not None and ex in self.inbound and ex.awaiting is not None:
            ex.resume(self.clock.monotonic() + EXCHANGE_TIMEOUT)
            if ex.done:
                self._close_inbound(ex)
            else:
                self.sel.modify(ex.sock, ex.interest(), ("pool", ex))

    def _kill(self, eid: str, hard: bool) -> None:
        if self.host is not None:
            self.host.signal_pool_job(eid, "hard_kill" if hard else "soft_kill")

    def _request_claim(self, req: claims.RequestClaim, peer: str, now: float,
                       w: Writer) -> Writer:
        slot = next((s for s, c in self.claim_ids.items() if c == req.claim_id), None)
        if slot is None or slot not in self.engine.slots or not self.settings.accept_claims:
            why = "not a current claim id of this daemon" \
                if slot is None or slot not in self.engine.slots \
                else "claims are not accepted (CONDORPY_POOL_ACCEPT_CLAIMS)"
            log.info("pool: REQUEST_CLAIM from %s refused: %s", peer, why)
            return claims.request_claim_reply(w, [], ok=False)
        partitionable = self.engine.slots[slot].kind == "partitionable"
        # a d-slot gets a claim id of its own; a static slot's is the one published
        cid = self._mint() if partitionable else req.claim_id
        eid = engine_id(cid)
        out = self.engine.request_claim(now, eid, req.ad, slot)
        self.apply(out)
        if not self.engine.has_claim(eid):
            reason = next((o.reason for o in out if isinstance(o, ClaimRefused)), "refused")
            log.info("pool: REQUEST_CLAIM from %s for %s refused: %s", peer, slot, reason)
            if partitionable:
                self.sessions.pop(parse_claim_id(cid).session_id, None)
            return claims.request_claim_reply(w, [], ok=False)
        self.pool_claims[cid] = req
        claimed = next(s for s in self.engine.slots.values()
                       if s.claim is not None and s.claim.id == eid)
        self.claim_ids[claimed.name] = cid
        ads = {name: collector.slot_ads(a, self.address, self.claim_ids.get(name, cid)).public
               for name, a in self._ads().items()}
        send_ad = req.ad.get("_condor_SEND_CLAIMED_AD") is True
        granted = [claims.ClaimGranted(cid, ads[claimed.name])] if send_ad else []
        log.info("pool: %s claimed by %s (%s)", claimed.name, req.scheduler_addr,
                 req.ad.get("User") or req.ad.get("Owner") or "unknown user")
        leftovers = None
        if partitionable:
            # the published id is spent; the p-slot gets a new one for its leftovers
            self.sessions.pop(parse_claim_id(req.claim_id).session_id, None)
            self.claim_ids[slot] = self._mint()
            if req.ad.get("_condor_SEND_LEFTOVERS") is True:
                leftovers = claims.ClaimGranted(self.claim_ids[slot], ads[slot])
        self._fresh_claim_ids = True
        return claims.request_claim_reply(w, granted, ok=True, leftovers=leftovers)

    def _invalidate_now(self, name: str, daemon: bool = False) -> None:
        gone = daemon_ad.invalidate if daemon else collector.invalidate
        with Connection.connect(self.settings.collector, SHUTDOWN_TIMEOUT) as c:
            session, _ = c.run(gone(name, self.address, self.settings.policy, self.peer,
                                    self.session))
            if session.sid:
                self.session = session

    def _release_now(self, cid: str, req: claims.RequestClaim) -> None:
        try:
            addr = parse_address(req.scheduler_addr, source="the schedd's address")
            with Connection.connect(addr, SHUTDOWN_TIMEOUT) as c:
                c.run(release_claim(cid, addr.hostport(), CONDOR_VERSION))
        except CondorpyError as exc:
            log.warning("pool: stopping: cannot tell the schedd that %s ended: %s",
                        engine_id(cid), exc)
            return
        log.info("pool: stopping: claim %s released; its schedd %s was told",
                 _short(cid), req.scheduler_addr)

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Leave the jobs run for shadows running for a shadow to reconnect to (those
        that cannot be are ended), invalidate every advertised slot (waiting a few
        seconds at most) and close."""
        self.stopping = True        # no output transfer now: the shadow hears at once
        for eid in pool_reconnect.stopping(self):
            job = self.jobs[eid]
            # A job whose shadow cannot reconnect (no job lease) must not run on
            # unseen: end it now and tell the shadow so (job_exit, "requeue").
            log.info("pool: stopping: the job of %s is killed and goes back to its "
                     "schedd's queue", eid)
            self._kill(eid, hard=True)
            job.ended, job.evicted = True, True
            job.final = {"ExitBySignal": True, "ExitSignal": 9}
            ex = job.exchange
            if ex is not None and ex in self.inbound and ex.awaiting is not None:
                ex.resume(self.clock.monotonic() + SHUTDOWN_TIMEOUT)
                try:
                    ex.sock.settimeout(SHUTDOWN_TIMEOUT)
                    ex.sock.sendall(bytes(ex.out))
                    ex.out.clear()
                except OSError as exc:
                    log.warning("pool: could not tell the shadow of %s: %s", eid, exc)
        # every claim but those kept for a reconnecting shadow ends with the daemon:
        # its schedd hears so now, not when it next tries to run a job on it
        kept = {eid for eid, job in self.jobs.items() if pool_reconnect.awaits_shadow(self, job)}
        for cid, req in list(self.pool_claims.items()):
            if engine_id(cid) not in kept:
                self._release_now(cid, req)
        if self.current is not None:
            self.current.close()
            self.current = None
        for ex in list(self.inbound):
            self._close_inbound(ex)
        for ex in list(self.outbound):
            self.outbound.pop(ex)
            ex.close()
        names = sorted(self.advertised)
        # the slots, then the daemon ad (ResMgr::final_update)
        items = [(n, False) for n in names] + ([(self.daemon_name, True)]
                                               if self.daemon_name else [])
        for name, daemon in items:
            try:
                self._invalidate_now(name, daemon)
            except CondorpyError as exc:
                if self.session is None:
                    log.warning("pool: could not invalidate %s: %s", name, exc)
                    break
                self.session = None      # a stale session: once more, negotiating
                try:
                    self._invalidate_now(name, daemon)
                except CondorpyError as exc2:
                    log.warning("pool: could not invalidate %s: %s", name, exc2)
                    break
        if names:
            log.info("pool: invalidated %d slot ad(s) at %s", len(names), self.peer)
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _failure_ad(reason: str) -> ClassAd:
    ad = ClassAd()
    ad["VacateReason"] = reason
    ad["VacateReasonCode"] = 0
    return ad


def _short(claim_id: str) -> str:
    """A claim id fit for a log: its session part, never its key."""
    try:
        return parse_claim_id(claim_id).session_id
    except ValueError:
        return "<malformed>"


def engine_id(claim_id: str) -> str:
    """The policy engine's name for a pool claim: the claim id's public part (its
    session id), so that logs, the engine and the store never hold the key."""
    return _short(claim_id)
