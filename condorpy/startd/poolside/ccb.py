"""The daemon's CCB listener (``docs/pool.md``, "Behind NAT: CCB"): with ``CCB_ADDRESS``
set, this daemon keeps a registration open with each broker named there, and when a
schedd, shadow or tool asks a broker for a connection to it, it connects out to that
peer and serves the connection as one accepted on its command port. The messages and
the timing decisions are :mod:`condorpy.pool.ccb`'s; this module holds the sockets.

One :class:`BrokerLink` per broker moves through :class:`Phase`: WAITING (a try is
due), REGISTERING (the handshake and the registration on a new connection),
REGISTERED (the connection open: heartbeats out, requests in). A lost connection goes
back to WAITING and is tried again after one second, doubling up to
CCB_RECONNECT_TIME, with the id and cookie it had, so that the broker gives the same
id back and the addresses peers hold stay good; a broker that gives another id makes
the daemon advertise its new address at once.
"""

from __future__ import annotations

import logging
import selectors
import socket
from collections.abc import Callable, Generator
from enum import Enum
from typing import Protocol

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.errors import CondorpyError, PoolError, WireError
from condorpy.pool import ccb
from condorpy.pool.ccb import CcbSettings, Registration, Request
from condorpy.pool.connection import AsyncExchange, Channel, receive_some, send_some
from condorpy.pool.security import ClientPolicy, Op, Send
from condorpy.pool.sinful import Address, parse_address
from condorpy.startd.poolside.exchanges import EXCHANGE_TIMEOUT, unregister

log = logging.getLogger("condorpy.startd.pool")

# the first registrations hold the first advertisement back (its addresses would lack
# the brokers' ids) until each has ended one way or the other, or this long
FIRST_TRY_HOLD = EXCHANGE_TIMEOUT
# reverse connections under way at once: far above what a pool's schedds and shadows
# ask for; a broker asking for more is refused each extra one
MAX_REVERSING = 256


class CcbMoveError(PoolError):
    """A broker link was asked to make a move its transition table does not list."""


class Phase(Enum):
    WAITING = "waiting"
    REGISTERING = "registering"
    REGISTERED = "registered"
    STOPPED = "stopped"


_MOVES: dict[Phase, frozenset[Phase]] = {
    Phase.WAITING: frozenset({Phase.REGISTERING, Phase.STOPPED}),
    Phase.REGISTERING: frozenset({Phase.REGISTERED, Phase.WAITING, Phase.STOPPED}),
    Phase.REGISTERED: frozenset({Phase.WAITING, Phase.STOPPED}),
    Phase.STOPPED: frozenset(),
}


class Settings(Protocol):
    """Where the registrations outlive the daemon (the job store's small settings):
    a restarted daemon asks for the ids its running jobs' shadows know it by."""

    def setting(self, key: str) -> int | None: ...

    def set_setting(self, key: str, value: int) -> None: ...


def stored_registration(store: Settings | None, broker: str) -> Registration | None:
    if store is None:
        return None
    return ccb.resumed(broker, store.setting(f"ccb_id {broker}"),
                       store.setting(f"ccb_cookie {broker}"))


def store_registration(store: Settings | None, broker: str, reg: Registration) -> None:
    ccbid = reg.ccbid
    if store is None or ccbid is None or not reg.cookie.isdigit() or \
            max(ccbid, int(reg.cookie)) >= 1 << 63:
        return       # not a C++ broker's numbers: kept for this daemon's life only
    store.set_setting(f"ccb_id {broker}", ccbid)
    store.set_setting(f"ccb_cookie {broker}", int(reg.cookie))


def _reverse(req: Request) -> Generator[Op, bytes | None, None]:
    yield Send(ccb.reverse_connect(req))


class BrokerLink:
    """This daemon's registration with one broker."""

    def __init__(self, name: str, addr: Address, settings: CcbSettings,
                 policy_of: Callable[[], ClientPolicy], sel: selectors.BaseSelector,
                 clock: Clock, me: Callable[[], str],
                 registered: Callable[["BrokerLink"], None],
                 reversed_: Callable[[socket.socket, str], None],
                 previous: Registration | None = None) -> None:
        self.name = name
        self.addr = addr
        self.settings = settings
        self.policy_of = policy_of
        self.sel = sel
        self.clock = clock
        self.me = me
        self.registered = registered
        self.reversed = reversed_
        self.phase = Phase.WAITING
        self.previous = previous          # sent again when registering
        self.contact: str | None = None   # what this daemon advertises (kept when lost)
        self.failures = 0
        self.tried = False                # a first try has ended
        self.retry_at = clock.monotonic()
        self.exchange: AsyncExchange | None = None
        self.sock: socket.socket | None = None
        self.channel: Channel | None = None
        self.out = bytearray()
        self.last_heard = 0.0
        self.last_sent = 0.0
        self.reverse: dict[AsyncExchange, Request] = {}
        self.registrations = 0
        self.reversals = 0

    @property
    def peer(self) -> str:
        return self.addr.hostport()

    def _move(self, to: Phase) -> None:
        if to not in _MOVES[self.phase]:
            raise CcbMoveError(f"the CCB link cannot go from {self.phase.value} to "
                               f"{to.value}", peer=self.name)
        self.phase = to

    def owns(self, obj: object) -> bool:
        return obj is self or (obj is not None and obj is self.exchange) or \
            any(obj is ex for ex in self.reverse)

    # ------------------------------------------------------------------ the loop
    def due(self) -> float:
        due = min((ex.deadline for ex in self.reverse), default=float("inf"))
        if self.phase is Phase.WAITING:
            due = min(due, self.retry_at)
        elif self.phase is Phase.REGISTERING and self.exchange is not None:
            due = min(due, self.exchange.deadline)
        elif self.phase is Phase.REGISTERED:
            due = min(due, ccb.heartbeat_due(self.last_heard, self.last_sent,
                                             self.settings.heartbeat),
                      self.last_heard + ccb.DEAD_AFTER * self.settings.heartbeat + 1
                      if self.settings.heartbeat > 0 else float("inf"))
        return due

    def tick(self, now: float) -> None:
        for ex in [e for e in self.reverse if e.overdue(now)]:
            self._reversed(ex)
        if self.phase is Phase.REGISTERING and self.exchange is not None and \
                self.exchange.overdue(now):
            self._registering_done(self.exchange)
        if self.phase is Phase.REGISTERED:
            if ccb.silent_too_long(self.last_heard, now, self.settings.heartbeat):
                self._lost(f"no word from it in {now - self.last_heard:.0f}s")
            elif now >= ccb.heartbeat_due(self.last_heard, self.last_sent,
                                          self.settings.heartbeat):
                self.last_sent = now
                self._send(ccb.heartbeat_ad())
        if self.phase is Phase.WAITING and now >= self.retry_at:
            self._try(now)

    def handle(self, obj: object, mask: int) -> None:
        try:
            if obj is self:
                self._handle_connection(mask)
            elif obj is self.exchange and self.exchange is not None:
                ex = self.exchange
                ex.handle(mask)
                if ex.done:
                    self._registering_done(ex)
                else:
                    self.sel.modify(ex.sock, ex.interest(), ("pool", ex))
            elif isinstance(obj, AsyncExchange) and any(obj is e for e in self.reverse):
                obj.handle(mask)
                if obj.done:
                    self._reversed(obj)
                else:
                    self.sel.modify(obj.sock, obj.interest(), ("pool", obj))
        except CondorpyError as exc:
            self._lost(str(exc))

    # ------------------------------------------------------------------ registering
    def _try(self, now: float) -> None:
        self._move(Phase.REGISTERING)
        try:
            ex = AsyncExchange.connect(
                self.addr, ccb.register(self.policy_of(), self.peer, f"STARTD {self.me()}",
                                        self.previous),
                now + self.settings.timeout, f"CCB registration with {self.name}")
        except CondorpyError as exc:
            self._failed(now, str(exc))
            return
        self.exchange = ex
        self.sel.register(ex.sock, ex.interest(), ("pool", ex))

    def _registering_done(self, ex: AsyncExchange) -> None:
        self.exchange = None
        unregister(self.sel, ex.sock)
        now = self.clock.monotonic()
        result = ex.result
        if ex.error is not None or not isinstance(result, tuple):
            ex.close()
            self._failed(now, str(ex.error or "no answer"))
            return
        reg = result[1]
        assert isinstance(reg, Registration)
        self.sock, self.channel = ex.sock, ex.channel
        self.sel.register(self.sock, selectors.EVENT_READ, ("pool", self))
        self._move(Phase.REGISTERED)
        self.tried = True
        self.failures = 0
        self.last_heard = self.last_sent = now
        self._registered(reg)
        # a request the broker sent right behind its answer is already here
        self._drain()

    def _registered(self, reg: Registration) -> None:
        self.registrations += 1
        same = self.contact == reg.contact
        self.previous = reg
        self.contact = reg.contact
        log.info("pool: registered with the CCB broker %s as %s%s", self.name, reg.contact,
                 "" if same or self.registrations == 1 else " (a new id)")
        self.registered(self)

    def _failed(self, now: float, why: str) -> None:
        self.failures += 1
        self.tried = True
        delay = ccb.retry_delay(self.failures, self.settings.reconnect_time)
        self.retry_at = now + delay
        self._move(Phase.WAITING)
        log.warning("pool: cannot register with the CCB broker %s: %s; trying again in "
                    "%gs", self.name, why, delay)

    def _lost(self, why: str) -> None:
        if self.phase is not Phase.REGISTERED:
            if self.phase is Phase.REGISTERING and self.exchange is not None:
                ex, self.exchange = self.exchange, None
                unregister(self.sel, ex.sock)
                ex.close()
                self._failed(self.clock.monotonic(), why)
            return
        self._close_connection()
        self._move(Phase.WAITING)
        self.failures = 1
        self.retry_at = self.clock.monotonic() + ccb.retry_delay(
            1, self.settings.reconnect_time)
        log.warning("pool: lost the connection to the CCB broker %s (%s); registering "
                    "again", self.name, why)

    def _close_connection(self) -> None:
        if self.sock is not None:
            unregister(self.sel, self.sock)
            self.sock.close()
        self.sock, self.channel = None, None
        self.out.clear()

    # ------------------------------------------------------------------ registered
    def _handle_connection(self, mask: int) -> None:
        sock, channel = self.sock, self.channel
        if sock is None or channel is None:
            return
        if mask & selectors.EVENT_WRITE:
            self._flush()
        if mask & selectors.EVENT_READ:
            data = receive_some(sock, self.peer)
            if data is None:
                return
            if not data:
                raise WireError("the broker closed the connection", peer=self.peer)
            channel.decoder.feed(data)
            self._drain()

    def _drain(self) -> None:
        channel = self.channel
        while channel is not None and self.phase is Phase.REGISTERED:
            payload = channel.decoder.next_message()
            if payload is None:
                return
            self.last_heard = self.clock.monotonic()
            msg = ccb.parse(payload, self.peer, channel.crypto)
            if isinstance(msg, Request):
                self._reverse_connect(msg)
            elif isinstance(msg, Registration):
                self._registered(msg)
            channel = self.channel

    def _send(self, ad: ClassAd) -> None:
        if self.channel is None:
            return
        self.out += self.channel.encode(ccb.message(ad, self.channel.crypto))
        try:
            self._flush()
        except CondorpyError as exc:
            self._lost(str(exc))

    def _flush(self) -> None:
        if self.sock is None:
            return
        if self.out:
            send_some(self.sock, self.out, self.peer)
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.out else 0)
        self.sel.modify(self.sock, events, ("pool", self))

    # ------------------------------------------------------------------ reversing
    def _reverse_connect(self, req: Request) -> None:
        now = self.clock.monotonic()
        if len(self.reverse) >= MAX_REVERSING:
            self._send(ccb.result_ad(req, False, f"{MAX_REVERSING} reverse connections "
                                     "already under way"))
            return
        try:
            target = parse_address(req.address, source="a CCB request")
            ex = AsyncExchange.connect(target, _reverse(req), now + self.settings.timeout,
                                       f"reverse connection to {req.address}")
        except CondorpyError as exc:
            log.warning("pool: CCB request %s from %s: %s", req.request_id,
                        req.name or req.address, exc)
            self._send(ccb.result_ad(req, False, f"failed to connect: {exc}"))
            return
        self.reverse[ex] = req
        self.sel.register(ex.sock, ex.interest(), ("pool", ex))

    def _reversed(self, ex: AsyncExchange) -> None:
        req = self.reverse.pop(ex)
        unregister(self.sel, ex.sock)
        if ex.error is not None or not ex.done:
            ex.close()
            why = str(ex.error or "no connection in time")
            log.warning("pool: reverse connection to %s (CCB request %s) failed: %s",
                        req.address, req.request_id, why)
            self._send(ccb.result_ad(req, False, why))
            return
        try:
            host, port = ex.sock.getpeername()[:2]
            peer = f"{host}:{port}"
        except OSError:
            peer = ex.peer
        self.reversals += 1
        log.debug("pool: reverse connection to %s for CCB request %s", peer, req.request_id)
        self._send(ccb.result_ad(req, True))
        # the peer now speaks first, as on a connection it had made to the command port
        self.reversed(ex.sock, peer)

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        if self.phase is Phase.STOPPED:
            return
        for ex in list(self.reverse):
            unregister(self.sel, ex.sock)
            ex.close()
        self.reverse.clear()
        if self.exchange is not None:
            unregister(self.sel, self.exchange.sock)
            self.exchange.close()
            self.exchange = None
        self._close_connection()
        self._move(Phase.STOPPED)


class CcbListener:
    """The daemon's registrations, one per broker in CCB_ADDRESS (HTCondor's
    CCBListeners): the contacts it advertises, space-separated, in its address."""

    def __init__(self, settings: CcbSettings, policy_of: Callable[[], ClientPolicy],
                 sel: selectors.BaseSelector, clock: Clock, me: Callable[[], str],
                 registered: Callable[[], None],
                 reversed_: Callable[[socket.socket, str], None],
                 store: Settings | None = None) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.started = clock.monotonic()
        self.on_registered = registered
        self.links = [BrokerLink(name, addr, settings, policy_of, sel, clock, me,
                                 self._registered, reversed_,
                                 stored_registration(store, name))
                      for name, addr in settings.brokers]

    def _registered(self, link: BrokerLink) -> None:
        if link.previous is not None:
            try:
                store_registration(self.store, link.name, link.previous)
            except CondorpyError as exc:
                log.warning("pool: cannot note the CCB id from %s: %s", link.name, exc)
        self.on_registered()

    def contacts(self) -> list[str]:
        return [link.contact for link in self.links if link.contact]

    def settled(self) -> bool:
        """Whether the first advertisement may go: every broker has answered or
        failed once, or the wait has been long enough."""
        return all(link.tried for link in self.links) or \
            self.clock.monotonic() - self.started >= FIRST_TRY_HOLD

    def owns(self, obj: object) -> bool:
        return any(link.owns(obj) for link in self.links)

    def handle(self, obj: object, mask: int) -> None:
        for link in self.links:
            if link.owns(obj):
                link.handle(obj, mask)
                return

    def due(self) -> float:
        due = min(link.due() for link in self.links)
        if not self.settled():
            due = min(due, self.started + FIRST_TRY_HOLD)
        return due

    def tick(self, now: float) -> None:
        for link in self.links:
            link.tick(now)

    def stop(self) -> None:
        for link in self.links:
            link.stop()
