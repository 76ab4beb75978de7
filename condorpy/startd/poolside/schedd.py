"""What this daemon says to the schedds that hold its claims: ALIVE while a claim is
idle, RELEASE_CLAIM when a claim ends here, each on the claim's own session."""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator

from condorpy.clock import Clock
from condorpy.errors import CondorpyError
from condorpy.pool.connection import AsyncExchange, Connection
from condorpy.pool.security import Op
from condorpy.pool.server import alive, release_claim
from condorpy.pool.sinful import parse_address
from condorpy.slots.ads import CONDOR_VERSION
from condorpy.startd.poolside.advertiser import SHUTDOWN_TIMEOUT
from condorpy.startd.poolside.claims import Claim, ClaimTable, short
from condorpy.startd.poolside.exchanges import EXCHANGE_TIMEOUT, Exchanges

log = logging.getLogger("condorpy.startd.pool")

Protocol = Callable[[str, str, str], Generator[Op, bytes | None, object]]


class ScheddLine:
    def __init__(self, table: ClaimTable, inbound: Exchanges, outbound: Exchanges,
                 clock: Clock) -> None:
        self.table = table
        self.inbound = inbound
        self.outbound = outbound
        self.clock = clock
        self.engine = table.engine

    def alives(self, now: float) -> None:
        """A claim stays alive while its schedd says so: an idle claim sends ALIVE to
        the schedd every alive interval (``claim.cpp``); a claim whose job runs is kept
        alive by its shadow's connection (HTCondor's "starter handles alives"), and one
        whose job waits for its shadow to reconnect by the job lease: a schedd that has
        just restarted does not know the claim until its new shadow reconnects, and an
        ALIVE then would release the claim under the running job."""
        wall = self.clock.time()
        for claim in self.table:
            if claim.waiting is not None:
                continue        # a preempting claim its schedd does not hold yet
            job = claim.job
            # (an ended job's claim too, until its shadow has taken the exit)
            connected = job is not None and job.exchange in self.inbound and not job.told
            waiting = job is not None and job.exchange is None and \
                self.table.awaits_shadow(job)
            if connected or waiting:
                if now >= claim.next_refresh:
                    claim.next_refresh = now + 5
                    self.table.apply(self.engine.alive(wall, claim.eid))
                continue
            every = max(5, claim.request.alive_interval or 300)
            if claim.next_alive is None:
                claim.next_alive = now + every
            if now < claim.next_alive:
                continue
            claim.next_alive = now + every
            self.send_alive(claim)

    def due(self) -> float:
        return min((c.next_alive for c in self.table if c.next_alive is not None),
                   default=float("inf"))

    def send_alive(self, claim: Claim) -> None:
        eid = claim.eid

        def done(ex: AsyncExchange) -> None:
            if ex.error is not None:
                log.warning("pool: ALIVE for %s: %s", eid, ex.error)
            elif ex.result == -1:
                log.info("pool: the schedd no longer knows %s: releasing it", eid)
                self.table.drop(eid, "its schedd no longer knows it")
            elif self.engine.has_claim(eid):
                self.table.apply(self.engine.alive(self.clock.time(), eid))
        self._to_schedd(claim, alive, "ALIVE", done)

    def send_release(self, claim: Claim) -> None:
        def done(ex: AsyncExchange) -> None:
            if ex.error is not None:
                log.warning("pool: RELEASE_CLAIM for %s: %s", claim.eid, ex.error)
            else:
                log.info("pool: claim %s ended here; its schedd %s was told",
                         short(claim.claim_id), claim.request.scheduler_addr)
        self._to_schedd(claim, release_claim, "RELEASE_CLAIM", done)

    def _to_schedd(self, claim: Claim, protocol: Protocol, label: str,
                   done: Callable[[AsyncExchange], None]) -> None:
        """Start ``protocol`` (ALIVE, RELEASE_CLAIM) on ``claim``'s session with the
        schedd that holds it; ``done`` sees the exchange once it is over."""
        try:
            addr = parse_address(claim.request.scheduler_addr,
                                 source="the schedd's address")
            ex = AsyncExchange.connect(addr, protocol(claim.claim_id, addr.hostport(),
                                                      CONDOR_VERSION),
                                       self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                       f"{label} for {claim.eid}")
        except CondorpyError as exc:
            log.warning("pool: cannot send %s for %s: %s", label, claim.eid, exc)
            return
        self.outbound.add(ex, done)

    def release_now(self, claim: Claim) -> None:
        """RELEASE_CLAIM while the daemon stops: waiting a few seconds at most."""
        try:
            addr = parse_address(claim.request.scheduler_addr,
                                 source="the schedd's address")
            with Connection.connect(addr, SHUTDOWN_TIMEOUT) as c:
                c.run(release_claim(claim.claim_id, addr.hostport(), CONDOR_VERSION))
        except CondorpyError as exc:
            log.warning("pool: stopping: cannot tell the schedd that %s ended: %s",
                        claim.eid, exc)
            return
        log.info("pool: stopping: claim %s released; its schedd %s was told",
                 short(claim.claim_id), claim.request.scheduler_addr)
