"""The daemon's link to an HTCondor pool (``docs/pool.md``): one object the daemon
holds and calls, composed of the parts of this package.

With ``COLLECTOR_HOST`` set, the advertiser keeps the collector's view of the slots
current; the command port (``STARTD_PORT``, else an ephemeral port, on
``NETWORK_INTERFACE`` or the address that routes to the collector) is what the ads
name as ``MyAddress``. With ``CONDORPY_POOL_ACCEPT_CLAIMS`` it takes claims there
(server.py, into the claim table of claims.py), and a job activated by a shadow runs
under the daemon's own starter while shadow.py answers the shadow as HTCondor's
starter would.
"""

from __future__ import annotations

import logging
import selectors
import socket
from collections.abc import Callable
from dataclasses import replace

from condorpy.clock import Clock
from condorpy.config import Config
from condorpy.errors import PoolError
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.pool.connection import AsyncExchange
from condorpy.pool.sinful import own_address
from condorpy.queue.claim_rows import PoolClaimRows
from condorpy.startd.poolside.adoption import Adopter, PoolAdoption
from condorpy.startd.poolside.advertiser import SHUTDOWN_TIMEOUT, Advertiser
from condorpy.startd.poolside.claims import Claim, ClaimTable
from condorpy.startd.poolside.exchanges import Exchanges, unregister
from condorpy.startd.poolside.reconnect import Leases, ReconnectServer
from condorpy.startd.poolside.schedd import ScheddLine
from condorpy.startd.poolside.server import CommandServer
from condorpy.startd.poolside.settings import PoolSettings, local_ip, pool_settings
from condorpy.startd.poolside.shadow import JobHost, ShadowSide
from condorpy.startd.poolside.claimstore import StoredRows, set_port
from condorpy.startd.poolside.transfer import Transfer

log = logging.getLogger("condorpy.startd.pool")


class PoolLink:
    """This daemon's side of a pool: its slots advertised, the claims its schedds hold,
    the jobs their shadows run here."""

    def __init__(self, settings: PoolSettings, engine: PolicyEngine,
                 sel: selectors.BaseSelector, clock: Clock,
                 apply: Callable[[list[Output]], None] = lambda outputs: None,
                 host: JobHost | None = None, previous_port: int = 0) -> None:
        self.settings = settings
        self.previous_port = previous_port
        self.host = host
        self.engine = engine
        self.sel = sel
        self.clock = clock
        self.listener = self._listen()
        ip, port = self.listener.getsockname()[:2]
        self.address = own_address(ip, port, settings.alias)
        self.table = ClaimTable(self.address, int(clock.time()), engine, apply, clock,
                                StoredRows(lambda: self._store()))
        self.inbound = Exchanges(sel, clock)
        self.outbound = Exchanges(sel, clock)
        self.advertiser = Advertiser(settings, engine, self.table, sel, clock)
        self.schedds = ScheddLine(self.table, self.inbound, self.outbound, clock)
        self.table.tell_schedd = self.schedds.send_release
        self.leases = Leases(self.table, clock, lambda eid, hard: self.shadows.kill(eid, hard))
        self.shadows = ShadowSide(self.table, self.leases, self.inbound, sel, clock,
                                  lambda: self.host, self.advertiser.ads,
                                  lambda: self.settings.upload_timeout)
        self.reconnects = ReconnectServer(self.table, self.leases, self.shadows,
                                          self.inbound)
        self.server = CommandServer(lambda: self.settings, self.table, self.inbound,
                                    self.shadows, self.reconnects, self.advertiser,
                                    lambda: self.host, clock)
        self.adopter = Adopter(self.table, self._store, self.skip_numbers)
        log.info("joining the pool at %s as %s", self.advertiser.peer, self.address)

    @classmethod
    def from_config(cls, cfg: Config, engine: PolicyEngine, sel: selectors.BaseSelector,
                    clock: Clock) -> "PoolLink | None":
        settings = pool_settings(cfg)
        return None if settings is None else cls(settings, engine, sel, clock)

    def _store(self) -> PoolClaimRows | None:
        return self.host.pool_rows if self.host is not None else None

    def _listen(self) -> socket.socket:
        ip = local_ip(self.settings)
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
            raise PoolError(f"cannot open the command port {ip}:{self.settings.port} "
                            f"(STARTD_PORT, NETWORK_INTERFACE): "
                            f"{exc.strerror or exc}") from None
        s.listen(64)
        s.setblocking(False)
        self.sel.register(s, selectors.EVENT_READ, ("pool", self))
        return s

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def reconfig(self, settings: PoolSettings | None) -> None:
        """The pool knobs re-read; the command port and its address stay."""
        if settings is None:
            log.warning("reconfig: COLLECTOR_HOST is no longer set; the slots stay "
                        "advertised until the daemon restarts")
            return
        # the address (its port, interface and alias) stays as advertised
        self.settings = replace(settings, interface=self.settings.interface,
                                port=self.settings.port, alias=self.settings.alias)
        self.advertiser.settings = self.settings
        self.advertiser.soon()

    # ------------------------------------------------------------------ claims
    def claim_id(self, slot: str) -> str:
        """The claim id the collector holds for ``slot`` (the negotiator hands it to the
        schedd that is matched with the slot)."""
        return self.table.published(slot)

    def owns(self, engine_claim: str) -> bool:
        """Whether the engine's claim ``engine_claim`` is one a pool's schedd holds."""
        return engine_claim in self.table

    def job_name(self, engine_claim: str) -> str | None:
        """The pool's name (``cluster.proc``) of the job claim ``engine_claim`` runs."""
        job = self.table.job(engine_claim)
        return None if job is None else job.name

    # ------------------------------------------------------------------ the loop
    def timeout(self, now: float) -> float:
        """Seconds until the link has something to do."""
        if any(c.waiting is not None and self._settled(c) for c in self.table):
            return 0.0      # a waiting schedd hears at once (its job starts the sooner)
        due = min(self.advertiser.due(), self.inbound.due(), self.outbound.due(),
                  self.schedds.due(), now + self.leases.timeout())
        return max(0.0, due - now)

    def _settled(self, claim: Claim) -> bool:
        """Whether preempting claim ``claim`` has the slot now or has been refused."""
        return not self.engine.has_claim(claim.eid) or self.table.holding(claim.eid) is not None

    def tick(self, now: float) -> None:
        self.inbound.tick(now)
        self.outbound.tick(now)
        self.schedds.alives(now)
        self.leases.tick()
        for claim in self.table:
            if claim.waiting is not None:
                self._preempting(claim)
                continue
            if not self.engine.has_claim(claim.eid):
                # the engine ended the claim (lease, preemption, vacate): its schedd
                # hears so
                self.table.drop(claim.eid, "the policy ended it", tell_schedd=True)
        self.advertiser.tick(now)

    def _preempting(self, claim: Claim) -> None:
        """A preempting claim whose schedd awaits the answer: told once the slot has
        passed to it or the engine has refused it; withdrawn if its schedd hung up
        (the current claim then runs on, unretired)."""
        if claim.waiting not in self.inbound:
            claim.waiting = None
            self.table.drop(claim.eid, "its schedd stopped waiting for the slot")
        elif self._settled(claim):
            self.inbound.wake(claim.waiting)

    def handle(self, obj: object, mask: int) -> None:
        """The event loop's entry: the listener, an exchange or a transfer is ready."""
        if obj is self:
            self.server.accept(self.listener)
        elif isinstance(obj, Transfer):
            self.shadows.transfer_done(obj)
        elif isinstance(obj, AsyncExchange) and obj in self.outbound:
            self.outbound.handle(obj, mask)
        elif isinstance(obj, AsyncExchange) and obj in self.inbound:
            self.inbound.handle(obj, mask)
        elif self.advertiser.owns(obj):
            self.advertiser.handle(mask)

    # ------------------------------------------------------------------ jobs
    def launch(self, host: JobHost, eid: str, slot: str) -> None:
        """The engine started the job of pool claim ``eid`` (StartJob): the starter is
        launched once the shadow has been told (begin_execution)."""
        self.host = host
        job = self.table.job(eid)
        if job is None:
            log.error("pool: claim %s activated without a job", eid)
            return
        job.slot = slot

    def skip_numbers(self, last: int) -> None:
        """Pool jobs of an earlier daemon still hold numbers up to ``last``."""
        self.shadows.job_seq = max(self.shadows.job_seq, last)

    def job_ended(self, eid: str, final: dict[str, object] | None, evicted: bool,
                  told: Callable[[], None]) -> None:
        """The daemon saw the starter of pool claim ``eid`` end (``evicted``: by its
        policy); ``told`` once the shadow has the exit."""
        self.shadows.job_ended(eid, final, evicted, told)

    def job_update(self, eid: str, attrs: dict[str, object]) -> None:
        """News of a running pool job (state, usage) for its shadow."""
        self.shadows.job_update(eid, attrs)

    # ------------------------------------------------------------------ a restart
    def adopt_starter(self, number: int, execute_dir: str, alive: bool
                      ) -> PoolAdoption | None:
        """What became of the claim of pool job ``number``, whose starter the daemon
        found (adoption.py). None: the daemon stops the job."""
        return self.adopter.adopt_starter(number, execute_dir, alive)

    def adopt_rest(self) -> None:
        """The stored claims no starter was found for (adoption.py)."""
        self.adopter.adopt_rest()

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Leave the jobs run for shadows running for a shadow to reconnect to (those
        that cannot be are ended), invalidate every advertised slot (waiting a few
        seconds at most) and close."""
        self.shadows.stopping = True     # no output transfer now: the shadow hears at once
        for eid in self.leases.stopping():
            job = self.table.job(eid)
            if job is None:
                continue
            # A job whose shadow cannot reconnect (no job lease) must not run on
            # unseen: end it now and tell the shadow so (job_exit, "requeue").
            log.info("pool: stopping: the job of %s is killed and goes back to its "
                     "schedd's queue", eid)
            self.shadows.kill(eid, hard=True)
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
        kept = {job.eid for job in self.table.jobs() if self.table.awaits_shadow(job)}
        for claim in self.table:
            if claim.eid not in kept:
                self.schedds.release_now(claim)
        for ex in self.inbound:
            self.inbound.close(ex)
        self.outbound.abandon()
        self.advertiser.stop()
        unregister(self.sel, self.listener)
        self.listener.close()


def remember_port(store: PoolClaimRows, link: PoolLink | None) -> None:
    """Note the command port, for the next daemon to bind again (claimstore.py)."""
    if link is not None:
        set_port(store, link.port)



