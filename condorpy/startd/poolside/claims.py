"""The claims a pool's schedds hold on this daemon's slots: one record per claim (its
request, its job, its stored row, its keep-alive timers) in one table, whose
:meth:`ClaimTable.drop` is the only way a claim goes.

The table also keeps the claim ids this daemon publishes for its slots (the
negotiator hands one to the schedd matched with a slot) and the security session
each claim id opens: a published id until it is claimed or replaced, a claim's id
until the claim is dropped. A claimed slot publishes not its claim's id but a
preempting id of its own (HTCondor's startd's preempting claim): a schedd whose job
the slot's RANK prefers claims the busy slot with it, and that claim waits for the
current one to retire.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.pool import claims, collector
from condorpy.pool.connection import AsyncExchange
from condorpy.pool.server import claim_session_key, parse_claim_id
from condorpy.pool.shadow import SessionInfo
from condorpy.slots.ads import HTCONDOR_VERSION
from condorpy.startd.poolside.claimstore import StoredClaim, StoredRows
from condorpy.startd.poolside.transfer import Scratch

log = logging.getLogger("condorpy.startd.pool")


def short(claim_id: str) -> str:
    """A claim id fit for a log: its session part, never its key."""
    try:
        return parse_claim_id(claim_id).session_id
    except ValueError:
        return "<malformed>"


def engine_id(claim_id: str) -> str:
    """The policy engine's name for a pool claim: the claim id's public part (its
    session id), so that logs, the engine and the store never hold the key."""
    return short(claim_id)


def client_host(address: str) -> str:
    """The host of a schedd's address (a peer ``ip:port`` or a sinful string): the
    ClientMachine of its claims. HTCondor's startd looks the peer's name up in the
    DNS; a lookup would stall the daemon's loop, so the address stands (as HTCondor's
    own does when the lookup fails)."""
    text = address.strip().lstrip("<").split("?", 1)[0].rstrip(">")
    if text.startswith("["):
        return text[1:].partition("]")[0]
    return text.rpartition(":")[0] if ":" in text else text


def session_of(claim_id: str) -> str:
    """The session a claim id opens; "" for a malformed one."""
    try:
        return parse_claim_id(claim_id).session_id
    except ValueError:
        return ""


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
    files: Scratch | None = None                  # its scratch, when its files travel
    transfer_session: SessionInfo | None = None   # the shadow's filetrans session
    # reconnect (reconnect.py): the job lease, counted from the shadow's last word
    number: int = 0
    lease: int = 0
    last_contact: float = 0.0
    disconnected: float | None = None
    lease_expired: bool = False
    peer: str = ""
    # the engine hears of the job's end once its shadow has (HTCondor's starter stays,
    # and its slot Busy, until the shadow has taken the exit): told() calls this once
    on_told: Callable[[], None] | None = None
    told: bool = False

    def tell_exit(self) -> None:
        """The shadow has the job's exit, or never will: the engine may end the job."""
        if not self.ended or self.told:
            return
        self.told = True
        hear, self.on_told = self.on_told, None
        if hear is not None:
            hear()

    @property
    def name(self) -> str:
        """The pool's name of the job: ``cluster.proc``."""
        return f"{self.ad.get('ClusterId')}.{self.ad.get('ProcId')}"


@dataclass
class Claim:
    """One claim a pool's schedd holds here."""

    claim_id: str                          # the full claim id: a secret
    request: claims.RequestClaim           # whose schedd, how often it hears ALIVE
    job: PoolJob | None = None             # the job its shadow runs on it
    stored: StoredClaim | None = None      # its row in the job store, for a restart
    next_alive: float | None = None        # when its schedd next hears ALIVE
    next_refresh: float = 0.0              # when its running job next renews it
    # a preempting claim: the schedd's REQUEST_CLAIM connection, awaiting the answer
    # until the current claim has left the slot
    waiting: AsyncExchange | None = None

    @property
    def eid(self) -> str:
        return engine_id(self.claim_id)


class ClaimTable:
    """Every pool claim by its engine id, the claim ids published for the slots, and
    the jobs whose claim has gone but whose shadow is still being told of their end."""

    def __init__(self, address: str, birthdate: int, engine: PolicyEngine,
                 apply: Callable[[list[Output]], None], clock: Clock,
                 rows: StoredRows | None = None) -> None:
        self.address = address
        self.birthdate = birthdate
        self.engine = engine
        self.apply = apply
        self.clock = clock
        self.rows = rows if rows is not None else StoredRows()
        # called with a dropped claim whose schedd must hear that it ended
        self.tell_schedd: Callable[[Claim], None] = lambda claim: None
        self._claims: dict[str, Claim] = {}
        self._published: dict[str, str] = {}    # slot -> the claim id the collector has
        self._keys: dict[str, bytes] = {}       # session id -> AES key, of live ids
        self._preempting: dict[str, str] = {}   # claim -> the id its slot publishes
        self._ending: dict[str, PoolJob] = {}   # claim gone, its shadow still told
        self._seq = 0
        self._fresh = False

    # ------------------------------------------------------------------ claim ids
    def mint(self) -> str:
        """A new claim id of this daemon, its session open from now."""
        self._seq += 1
        cid = collector.new_claim_id(self.address, self.birthdate, self._seq,
                                     HTCONDOR_VERSION)
        self._keys[session_of(cid)] = claim_session_key(cid)
        return cid

    def published(self, slot: str) -> str:
        """The claim id the collector holds for ``slot``, minted on first asking."""
        cid = self._published.get(slot)
        if cid is None:
            self._seq += 1
            cid = self.mint()
            self._published[slot] = cid
        return cid

    def publish(self, slot: str, cid: str) -> None:
        self._published[slot] = cid

    def publish_claimed(self, slot: str, eid: str) -> str:
        """Claim ``eid`` holds ``slot``: the slot publishes a fresh preempting id (a
        better claim's way in), which goes with the claim unless a claim took it."""
        cid = self.mint()
        self._published[slot] = cid
        old = self._preempting.get(eid)
        self._preempting[eid] = cid
        if old is not None and engine_id(old) not in self._claims:
            self.spend(old)
        return cid

    def published_id(self, slot: str) -> str | None:
        return self._published.get(slot)

    def slot_published_as(self, cid: str) -> str | None:
        return next((s for s, c in self._published.items() if c == cid), None)

    def unpublish(self, slot: str) -> None:
        """``slot``'s ad is gone from the collector."""
        self._published.pop(slot, None)

    def spend(self, cid: str) -> None:
        """A minted or published id that will never be claimed: its session closes."""
        self._keys.pop(session_of(cid), None)

    def key(self, session_id: str) -> bytes | None:
        """The key of the session a live claim id opens (the command port's lookup)."""
        return self._keys.get(session_id)

    def changed(self) -> None:
        """The published ids changed: the collector should hear it soon."""
        self._fresh = True

    def take_changed(self) -> bool:
        fresh, self._fresh = self._fresh, False
        return fresh

    # ------------------------------------------------------------------ claims
    def grant(self, cid: str, request: claims.RequestClaim) -> Claim:
        """``cid`` is claimed (or re-created after a restart)."""
        claim = Claim(cid, request)
        self._claims[claim.eid] = claim
        self._keys[claim.eid] = claim_session_key(cid)
        return claim

    def get(self, eid: str) -> Claim | None:
        return self._claims.get(eid)

    def holding(self, eid: str) -> str | None:
        """The slot claim ``eid`` holds in the engine; None for a claim that waits (a
        preempting claim) or has gone."""
        return next((s.name for s in self.engine.slots.values()
                     if not s.deleted and s.claim is not None and s.claim.id == eid), None)

    def by_claim_id(self, cid: str) -> Claim | None:
        claim = self._claims.get(engine_id(cid))
        return claim if claim is not None and claim.claim_id == cid else None

    def __contains__(self, eid: object) -> bool:
        return eid in self._claims

    def __iter__(self) -> Iterator[Claim]:
        return iter(list(self._claims.values()))

    def __len__(self) -> int:
        return len(self._claims)

    def retarget(self, eid: str, schedd: str) -> None:
        """A restarted schedd has a new address: its ALIVEs go there now."""
        claim = self._claims[eid]
        r = claim.request
        claim.request = claims.RequestClaim(r.claim_id, r.ad, schedd, r.alive_interval,
                                            r.extra_claims)

    def drop(self, eid: str, why: str, tell_schedd: bool = False) -> Claim | None:
        """The claim ``eid`` ends here: its session and published id go, its stored row
        goes (and the job's scratch with it when nobody takes the outputs any more),
        the engine lets it go if it still holds it, and with ``tell_schedd`` its schedd
        hears so. A job whose shadow is still being told of its end stays (as an ending
        job) until that conversation is over."""
        claim = self._claims.pop(eid, None)
        if claim is None:
            return None
        log.info("pool: claim %s dropped: %s", eid, why)
        self._keys.pop(eid, None)
        pre = self._preempting.pop(eid, None)
        for slot in [s for s, c in self._published.items() if c in (claim.claim_id, pre)]:
            del self._published[slot]
        if pre is not None and engine_id(pre) not in self._claims:
            # (a preempting id a better claim took is that claim's now)
            self.spend(pre)
        self._fresh = True
        job = claim.job
        settled = job is None or (job.exchange is None and job.ended)
        if claim.stored is not None:
            self.rows.forget(eid)
            if settled:
                # nobody takes its outputs; a job with a shadow connected (an eviction
                # sending ON_EXIT_OR_EVICT output) or still running removes its own
                claim.stored.drop_scratch()
            claim.stored = None
        if job is not None and not settled:
            self._ending[eid] = job
        if job is not None:
            job.tell_exit()     # before the engine lets the claim go
        if self.engine.has_claim(eid):
            self.apply(self.engine.release(self.clock.time(), eid))
        if tell_schedd:
            self.tell_schedd(claim)
        return claim

    # ------------------------------------------------------------------ stored rows
    def store(self, eid: str, rec: StoredClaim) -> None:
        """Write claim ``eid``'s row (raises the store's error); no store: nothing is
        kept for a restart."""
        claim = self._claims.get(eid)
        if claim is None:
            return
        if self.rows.put(rec):
            claim.stored = rec

    def adopt_row(self, eid: str, rec: StoredClaim) -> None:
        """A row read back at a restart belongs to the re-created claim ``eid``."""
        claim = self._claims.get(eid)
        if claim is not None:
            claim.stored = rec

    def forget_row(self, eid: str) -> None:
        """The shadow has the job's exit: nothing of it needs to survive a restart."""
        claim = self._claims.get(eid)
        if claim is not None and claim.stored is not None:
            claim.stored = None
            self.rows.forget(eid)

    def row(self, eid: str) -> StoredClaim | None:
        claim = self._claims.get(eid)
        return None if claim is None else claim.stored

    def awaits_shadow(self, job: PoolJob) -> bool:
        """Whether ``job``'s shadow may still come back for it (a job lease and a stored
        claim): its exit and its files are kept for it until then."""
        return job.lease > 0 and self.row(job.eid) is not None

    # ------------------------------------------------------------------ jobs
    def job(self, eid: str) -> PoolJob | None:
        claim = self._claims.get(eid)
        if claim is not None and claim.job is not None:
            return claim.job
        return self._ending.get(eid)

    def jobs(self) -> list[PoolJob]:
        """Every job run for a shadow, the ending ones too."""
        out = [c.job for c in self._claims.values() if c.job is not None]
        return out + list(self._ending.values())

    def set_job(self, eid: str, job: PoolJob | None) -> None:
        claim = self._claims.get(eid)
        if claim is not None:
            claim.job = job

    def job_done(self, job: PoolJob) -> None:
        """``job``'s shadow has heard its end (or it never started): the claim may run
        another."""
        claim = self._claims.get(job.eid)
        if claim is not None and claim.job is job:
            claim.job = None
        if self._ending.get(job.eid) is job:
            del self._ending[job.eid]
