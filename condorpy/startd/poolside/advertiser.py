"""The collector's view of this daemon's slots (``docs/pool.md``): each slot's public
and private ads (``UPDATE_STARTD_AD``) at start, every ``UPDATE_INTERVAL`` (the policy
engine's setting) and whenever a slot changes state or activity or appears, the
daemon ad first; a slot that goes away (a d-slot returned to its partitionable slot)
and every slot at shutdown is invalidated (``INVALIDATE_STARTD_ADS``). Each update is
one CEDAR connection driven by the event loop without blocking it; only the
invalidations at shutdown wait, a few seconds at most."""

from __future__ import annotations

import logging
import selectors
from collections.abc import Callable

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.errors import CondorpyError
from condorpy.policy.engine import PolicyEngine
from condorpy.pool import collector, daemon_ad
from condorpy.pool.connection import AsyncExchange, Connection
from condorpy.pool.security import Session
from condorpy.startd.poolside.claims import ClaimTable
from condorpy.startd.poolside.exchanges import EXCHANGE_TIMEOUT, moved_on, unregister
from condorpy.startd.poolside.settings import PoolSettings

log = logging.getLogger("condorpy.startd.pool")

RETRY_FIRST = 5.0            # a failed round is tried again this soon, then twice as late
SHUTDOWN_TIMEOUT = 3.0

Maker = Callable[[], AsyncExchange]


class Advertiser:
    def __init__(self, settings: PoolSettings, engine: PolicyEngine, table: ClaimTable,
                 sel: selectors.BaseSelector, clock: Clock) -> None:
        self.settings = settings
        self.engine = engine
        self.table = table
        self.sel = sel
        self.clock = clock
        self.address = table.address
        self.advertised: dict[str, str] = {}     # ad Name -> engine slot name
        self.daemon_name = ""                     # the daemon ad's Name, once sent
        self.queue: list[tuple[str, Maker]] = []
        self.current: AsyncExchange | None = None
        # what the current exchange was queued as, and whether it resumes self.session
        self.current_item: tuple[str, Maker, bool] | None = None
        self.next_update = 0.0
        self.signature: tuple[tuple[str, str, str], ...] = ()
        self.updates_sent = 0
        self.failures = 0
        self.session: Session | None = None       # the collector's, once negotiated
        self.round_failed = False
        self.last_report = ""
        self.retry = RETRY_FIRST
        # more of the daemon ad's attributes (CleanupCategoryCounts: volume_keeper.py)
        self.daemon_extra: Callable[[], dict[str, object]] = dict

    @property
    def peer(self) -> str:
        return self.settings.collector.hostport()

    @property
    def interval(self) -> float:
        return max(1.0, float(self.engine.settings.update_interval))

    def soon(self) -> None:
        """Send a round at the next tick (new knobs, new claim ids)."""
        self.next_update = 0.0

    def owns(self, obj: object) -> bool:
        return obj is not None and obj is self.current

    def ads(self) -> dict[str, ClassAd]:
        """Every live slot's ad by the engine's name for the slot (the ads' Name is
        that name at the host)."""
        live = [s.name for s in self.engine.slots.values() if not s.deleted]
        return dict(zip(live, self.engine.ads()))

    def public_ads(self) -> list[ClassAd]:
        """The slots' public ads as the collector has them (condor_status -direct)."""
        return [collector.slot_ads(ad, self.address, self.table.published(slot)).public
                for slot, ad in self.ads().items()]

    def slot_named(self, name: str) -> str | None:
        """The engine's slot of the advertised ad ``name``."""
        return self.advertised.get(name)

    # ------------------------------------------------------------------ the loop
    def due(self) -> float:
        due = self.next_update
        if self.current is not None:
            due = min(due, self.current.deadline)
        return due

    def tick(self, now: float) -> None:
        if self.current is not None and self.current.overdue(now):
            self._finish()
        if self.table.take_changed():
            self.next_update = 0.0
        sig = self._signature()
        if now >= self.next_update or sig != self.signature:
            self.signature = sig
            self.next_update = now + self.interval
            self.round_failed = False
            self._queue_round()
        self._start_next(now)
        if self.round_failed and self.current is None and not self.queue:
            # the collector is down or refused us: try again soon, not in UPDATE_INTERVAL
            self.round_failed = False
            self.next_update = min(self.next_update, now + self.retry)
            self.retry = min(self.retry * 2, self.interval)

    def handle(self, mask: int) -> None:
        ex = self.current
        if ex is None:
            return
        ex.handle(mask)
        if moved_on(self.sel, ex):
            return
        if ex.done:
            self._finish()
            self._start_next(self.clock.monotonic())
        else:
            self.sel.modify(ex.sock, ex.interest(), ("pool", ex))

    def _signature(self) -> tuple[tuple[str, str, str], ...]:
        return tuple((s.name, s.state.value, s.activity.value)
                     for s in self.engine.slots.values() if not s.deleted)

    def _queue_round(self) -> None:
        # one update per slot; anything queued from an older round is superseded
        self.queue = [q for q in self.queue if q[0] == "invalidate"]
        live = {}
        ads_now = self.ads()
        self._queue_daemon_ad(list(ads_now.values()))
        for slot, ad in ads_now.items():
            ads = collector.slot_ads(ad, self.address, self.table.published(slot))
            if not self.settings.accept_claims:
                # listed, never matched: a claim would only be refused
                ads.public["Requirements"] = False
            live[ads.name] = slot
            self.queue.append(("update", self._maker(ads)))
        for gone in sorted(set(self.advertised) - set(live)):
            self.queue.append(("invalidate", self._invalidator(gone)))
            self.table.unpublish(self.advertised[gone])
        self.advertised = live

    def _queue_daemon_ad(self, ads: list[ClassAd]) -> None:
        """The daemon ad goes first, as HTCondor's startd sends it (daemon_ad.py)."""
        ad = daemon_ad.startd_ad(ads, self.address, self.table.birthdate)
        if ad is None:
            return
        for name, value in self.engine.broken.daemon_attrs().items():
            ad[name] = value        # BrokenReasons, BrokenContextAds (slots.broken)
        for name, value in self.daemon_extra().items():
            ad[name] = value
        self.daemon_name = daemon_ad.name_of(ad)

        def make() -> AsyncExchange:
            return AsyncExchange.connect(self.settings.collector,
                                         daemon_ad.update(ad, self.settings.policy,
                                                          self.peer, self.session),
                                         self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                         f"update of the daemon ad {self.daemon_name}")
        self.queue.append(("update", make))

    def _maker(self, ads: collector.SlotAds) -> Maker:
        def make() -> AsyncExchange:
            return AsyncExchange.connect(self.settings.collector,
                                         collector.update(ads, self.settings.policy,
                                                          self.peer, self.session),
                                         self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                         f"update of {ads.name}")
        return make

    def _invalidator(self, name: str) -> Maker:
        def make() -> AsyncExchange:
            return AsyncExchange.connect(self.settings.collector,
                                         collector.invalidate(name, self.address,
                                                              self.settings.policy,
                                                              self.peer, self.session),
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

    def _finish(self) -> None:
        ex = self.current
        if ex is None:
            return
        self.current = None
        unregister(self.sel, ex.sock)
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

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Invalidate every advertised slot, then the daemon ad (ResMgr::final_update),
        waiting a few seconds at most."""
        if self.current is not None:
            self.current.close()
            self.current = None
        names = sorted(self.advertised)
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

    def _invalidate_now(self, name: str, daemon: bool = False) -> None:
        gone = daemon_ad.invalidate if daemon else collector.invalidate
        with Connection.connect(self.settings.collector, SHUTDOWN_TIMEOUT) as c:
            session, _ = c.run(gone(name, self.address, self.settings.policy, self.peer,
                                    self.session))
            if session.sid:
                self.session = session
