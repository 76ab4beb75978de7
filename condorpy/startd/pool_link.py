"""The daemon's link to an HTCondor pool: advertising its slots to the collector.

With ``COLLECTOR_HOST`` (by default ``$(CONDOR_HOST)``) set, the daemon sends each slot's
public and private ads (``UPDATE_STARTD_AD``) at start, every ``UPDATE_INTERVAL`` and
whenever a slot changes state or activity or appears; a slot that goes away (a
d-slot returned to its partitionable slot) and every slot at shutdown is invalidated
(``INVALIDATE_STARTD_ADS``). Each update is one CEDAR connection driven by the event
loop without blocking it (:class:`condorpy.pool.connection.AsyncExchange`); only the
invalidations at shutdown wait, a few seconds at most.

The command port (``STARTD_PORT``, else an ephemeral port, on ``NETWORK_INTERFACE``
or the address that routes to the collector) is what the ads name as ``MyAddress``.
"""

from __future__ import annotations

import logging
import selectors
import socket
from collections.abc import Callable
from dataclasses import dataclass

from condorpy.clock import Clock
from condorpy.config import Config
from condorpy.errors import CondorpyError, PoolError
from condorpy.policy.engine import PolicyEngine
from condorpy.pool import collector
from condorpy.pool.connection import AsyncExchange, Connection
from condorpy.pool.security import ClientPolicy, client_policy
from condorpy.pool.sinful import Address, parse_address
from condorpy.slots.ads import CONDOR_VERSION, HTCONDOR_VERSION

log = logging.getLogger("condorpy.startd.pool")

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
        port=cfg.get_int("STARTD_PORT", 0))


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
                 sel: selectors.BaseSelector, clock: Clock) -> None:
        self.settings = settings
        self.engine = engine
        self.sel = sel
        self.clock = clock
        self.birthdate = int(clock.time())
        self.listener = self._listen()
        host, port = self.listener.getsockname()[:2]
        self.address = Address(host, port, (("noUDP", ""),)).sinful()
        self.peer = settings.collector.hostport()
        self.claim_ids: dict[str, str] = {}
        self._seq = 0
        self.advertised: set[str] = set()
        self.queue: list[tuple[str, Callable[[], AsyncExchange]]] = []
        self.current: AsyncExchange | None = None
        self.next_update = 0.0
        self.signature: tuple[tuple[str, str, str], ...] = ()
        self.updates_sent = 0
        self.failures = 0
        self.round_failed = False
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
            s.bind((ip, self.settings.port))
        except OSError as exc:
            s.close()
            raise PoolError(f"cannot open the command port {ip}:{self.settings.port}: "
                            f"{exc.strerror or exc}") from None
        s.listen(64)
        s.setblocking(False)
        self.sel.register(s, selectors.EVENT_READ, ("pool", self))
        return s

    def reconfig(self, cfg: Config) -> None:
        settings = pool_settings(cfg)
        if settings is None:
            log.warning("reconfig: COLLECTOR_HOST is no longer set; the slots stay "
                        "advertised until the daemon restarts")
            return
        self.settings = PoolSettings(settings.collector, settings.update_interval,
                                     settings.policy, self.settings.interface,
                                     self.settings.port)
        self.peer = settings.collector.hostport()
        self.next_update = 0.0

    # ------------------------------------------------------------------ claim ids
    def claim_id(self, slot: str) -> str:
        """The claim id the collector holds for ``slot`` (the negotiator hands it to the
        schedd that is matched with the slot)."""
        cid = self.claim_ids.get(slot)
        if cid is None:
            self._seq += 1
            cid = collector.new_claim_id(self.address, self.birthdate, self._seq,
                                         HTCONDOR_VERSION)
            self.claim_ids[slot] = cid
        return cid

    # ------------------------------------------------------------------ the loop
    def timeout(self, now: float) -> float:
        """Seconds until the link has something to do."""
        due = self.next_update
        if self.current is not None:
            due = min(due, self.current.deadline)
        return max(0.0, due - now)

    def tick(self, now: float) -> None:
        if self.current is not None and self.current.overdue(now):
            self._finish()
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
        live = set()
        for ad in self.engine.ads():
            name = str(ad.get("Name") or "")
            if not name:
                continue
            live.add(name)
            ads = collector.slot_ads(ad, self.address, self.claim_id(name))
            self.queue.append(("update", self._maker(ads)))
        for gone in sorted(self.advertised - live):
            self.queue.append(("invalidate", self._invalidator(gone)))
            self.claim_ids.pop(gone, None)
        self.advertised = live

    def _maker(self, ads: collector.SlotAds) -> Callable[[], AsyncExchange]:
        def make() -> AsyncExchange:
            return AsyncExchange(self.settings.collector,
                                 collector.update(ads, self.settings.policy, self.peer),
                                 self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                 f"update of {ads.name}")
        return make

    def _invalidator(self, name: str) -> Callable[[], AsyncExchange]:
        def make() -> AsyncExchange:
            return AsyncExchange(self.settings.collector,
                                 collector.invalidate(name, self.address,
                                                      self.settings.policy, self.peer),
                                 self.clock.monotonic() + EXCHANGE_TIMEOUT,
                                 f"invalidation of {name}")
        return make

    def _start_next(self, now: float) -> None:
        while self.current is None and self.queue:
            _, make = self.queue.pop(0)
            try:
                ex = make()
            except CondorpyError as exc:
                self._report(exc)
                continue
            self.current = ex
            self.sel.register(ex.sock, ex.interest(), ("pool", ex))

    def handle(self, obj: object, mask: int) -> None:
        """The event loop's entry: the listener or an exchange is ready."""
        if obj is self:
            self._accept()
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
        if ex.error is not None:
            self._report(ex.error)
        else:
            self.updates_sent += 1
            self.retry = RETRY_FIRST
            log.debug("%s sent to %s", ex.label, self.peer)

    def _report(self, exc: Exception) -> None:
        self.failures += 1
        self.round_failed = True
        log.error("pool: %s", exc)

    def _accept(self) -> None:
        # Claims from the pool's schedds come in a later stage; until then a
        # connection is closed at once, so the peer learns at once.
        try:
            conn, peer = self.listener.accept()
        except OSError:
            return
        log.info("pool: closing a command connection from %s (claims are not "
                 "accepted yet)", peer[0])
        conn.close()

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Invalidate every advertised slot (waiting a few seconds at most) and close."""
        if self.current is not None:
            self.current.close()
            self.current = None
        names = sorted(self.advertised | set(self.claim_ids))
        for name in names:
            try:
                with Connection.connect(self.settings.collector, SHUTDOWN_TIMEOUT) as c:
                    c.run(collector.invalidate(name, self.address, self.settings.policy,
                                               self.peer))
            except CondorpyError as exc:
                log.warning("pool: could not invalidate %s: %s", name, exc)
                break
        if names:
            log.info("pool: invalidated %d slot ad(s) at %s", len(names), self.peer)
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()
