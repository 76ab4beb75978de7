"""The daemon's CCB listener (condorpy/startd/poolside/ccb.py) against a scripted broker
and requester on loopback: registration, reverse connections, heartbeats, a lost
broker and the registration again with the id it gave."""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from condorpy.clock import ManualClock
from condorpy.pool import ccb
from condorpy.pool.cedar import PacketDecoder, Reader, Writer, frame
from condorpy.pool.ccb import CcbSettings, Request
from condorpy.pool.security import ClientPolicy, Level
from condorpy.pool.sinful import Address
from condorpy.pool.wire_ad import get_classad, put_classad
from condorpy.classad import ClassAd
from condorpy.startd.poolside.ccb import CcbListener, Phase

T = TypeVar("T")
ME = "<10.0.0.5:9000?noUDP>"


class Side:
    """The far end of one connection, as a test scripts it (no crypto: the listener's
    policy never negotiates)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        sock.setblocking(False)
        self.decoder = PacketDecoder("test")

    def message(self) -> bytes | None:
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            data = None
        if data == b"":
            raise ConnectionError("closed")
        if data:
            self.decoder.feed(data)
        return self.decoder.next_message()

    def ad(self) -> ClassAd | None:
        payload = self.message()
        if payload is None:
            return None
        r = Reader(payload, "test")
        ad = get_classad(r)
        r.end()
        return ad

    def send_ad(self, ad: ClassAd) -> None:
        self.sock.setblocking(True)
        self.sock.sendall(frame(put_classad(Writer(), ad).payload()))
        self.sock.setblocking(False)


class Store:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def setting(self, key: str) -> int | None:
        return self.values.get(key)

    def set_setting(self, key: str, value: int) -> None:
        self.values[key] = value


class Rig:
    def __init__(self, store: Store | None = None, heartbeat: int = 30) -> None:
        self.broker = socket.socket()
        self.broker.bind(("127.0.0.1", 0))
        self.broker.listen(4)
        self.broker.setblocking(False)
        port = self.broker.getsockname()[1]
        self.name = f"127.0.0.1:{port}"
        self.sel = selectors.DefaultSelector()
        self.clock = ManualClock(1000.0)
        self.registered = 0
        self.reversed: list[tuple[socket.socket, str]] = []
        self.store = store if store is not None else Store()
        settings = CcbSettings(((self.name, Address("127.0.0.1", port)),),
                               heartbeat=heartbeat, private_network="ep1")
        self.listener = CcbListener(settings, lambda: ClientPolicy(negotiation=Level.NEVER),
                                    self.sel, self.clock, lambda: ME, self._registered,
                                    lambda s, p: self.reversed.append((s, p)), self.store)

    def _registered(self) -> None:
        self.registered += 1

    def pump(self, cond: Callable[[], T | None], limit: float = 10.0) -> T:
        end = time.monotonic() + limit
        while time.monotonic() < end:
            for key, mask in self.sel.select(0.01):
                self.listener.handle(key.data[1], mask)
            self.listener.tick(self.clock.monotonic())
            got = cond()
            if got is not None and got is not False:
                return got
        raise AssertionError("the listener did not get there")

    def accept(self) -> Side:
        def try_accept() -> Side | None:
            try:
                return Side(self.broker.accept()[0])
            except BlockingIOError:
                return None
        return self.pump(try_accept)

    def close(self) -> None:
        self.listener.stop()
        self.broker.close()
        for s, _ in self.reversed:
            s.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig()
    yield r
    r.close()


def _reply(contact: str, cookie: str) -> ClassAd:
    ad = ClassAd()
    ad["Command"] = ccb.CCB_REGISTER
    ad["CCBID"] = contact
    ad["ClaimId"] = cookie
    return ad


def _registered(rig: Rig, contact: str, cookie: str = "77") -> tuple[Side, ClassAd]:
    """The broker's side of a registration: what the listener sent, and the answer."""
    side = rig.accept()
    payload = rig.pump(side.message)
    r = Reader(payload, "test")
    assert r.get_int() == ccb.CCB_REGISTER     # a raw command: its number first
    first = get_classad(r)
    before = rig.registered
    side.send_ad(_reply(contact, cookie))
    rig.pump(lambda: rig.registered > before)
    return side, first


def test_registers_serves_a_reverse_connection_and_answers_the_broker(rig: Rig) -> None:
    assert not rig.listener.settled()
    side, first = _registered(rig, f"{rig.name}#5")
    assert first["Command"] == 67 and first["Name"] == f"STARTD {ME}"
    assert "CCBID" not in first and "ClaimId" not in first
    assert rig.listener.settled() and rig.listener.contacts() == [f"{rig.name}#5"]
    # kept for a daemon that restarts with jobs running
    assert rig.store.values == {f"ccb_id {rig.name}": 5, f"ccb_cookie {rig.name}": 77}

    requester = socket.socket()
    requester.bind(("127.0.0.1", 0))
    requester.listen(1)
    where = f"<127.0.0.1:{requester.getsockname()[1]}?noUDP>"
    req = ClassAd()
    req["Command"] = ccb.CCB_REQUEST
    req["MyAddress"] = where
    req["ClaimId"] = "feedface"
    req["RequestID"] = "9"
    req["Name"] = "SCHEDD"
    side.send_ad(req)
    rig.pump(lambda: rig.reversed)
    conn, _ = requester.accept()
    with conn:
        hello = Side(conn)
        assert rig.pump(hello.message) == \
            ccb.reverse_connect(Request(where, "feedface", "9"))[:]
        # the connection handed over is the requester's: it now speaks first
        handed, peer = rig.reversed[0]
        assert peer.startswith("127.0.0.1:")
        conn.sendall(b"hello")
        handed.setblocking(True)
        handed.settimeout(5)
        assert handed.recv(5) == b"hello"
    requester.close()
    result = rig.pump(side.ad)
    assert (result["Result"], result["RequestID"], result["ClaimId"]) == (True, "9", "feedface")
    assert "ErrorString" not in result


def test_heartbeats_a_lost_broker_and_the_same_id_asked_for_again(rig: Rig) -> None:
    side, _ = _registered(rig, f"{rig.name}#5")
    # silence for the heartbeat interval: one heartbeat, which the broker answers
    rig.clock.advance(30)
    ad = rig.pump(side.ad)
    assert ad["Command"] == ccb.ALIVE and len(ad) == 1
    side.send_ad(ccb.heartbeat_ad())
    rig.clock.advance(29)
    rig.pump(lambda: True)
    assert rig.listener.links[0].phase is Phase.REGISTERED
    # the broker goes away: the listener registers again a second later, with the id
    # and cookie it had; its address keeps the id meanwhile
    side.sock.close()
    rig.pump(lambda: rig.listener.links[0].phase is Phase.WAITING)
    assert rig.listener.contacts() == [f"{rig.name}#5"]
    rig.clock.advance(1)
    again, first = _registered(rig, f"{rig.name}#6", "78")
    assert (first["CCBID"], first["ClaimId"]) == (f"{rig.name}#5", "77")
    # a broker that gives another id: the new one is advertised
    assert rig.listener.contacts() == [f"{rig.name}#6"]
    assert rig.store.values[f"ccb_id {rig.name}"] == 6
    again.sock.close()


def test_a_silent_broker_counts_as_gone_after_three_intervals(rig: Rig) -> None:
    side, _ = _registered(rig, f"{rig.name}#5")
    rig.clock.advance(30)
    assert rig.pump(side.ad)["Command"] == ccb.ALIVE
    rig.clock.advance(60)
    rig.pump(lambda: True)
    assert rig.listener.links[0].phase is Phase.REGISTERED
    rig.clock.advance(1)
    rig.pump(lambda: rig.listener.links[0].phase is Phase.WAITING)
    side.sock.close()


def test_a_restarted_daemon_asks_for_the_id_its_store_kept(rig: Rig) -> None:
    rig.listener.stop()
    rig.store.values.update({f"ccb_id {rig.name}": 5, f"ccb_cookie {rig.name}": 77})
    # the next daemon's listener, on the same store
    rig.listener = CcbListener(rig.listener.settings,
                               lambda: ClientPolicy(negotiation=Level.NEVER), rig.sel,
                               rig.clock, lambda: ME, lambda: None,
                               lambda s, p: None, rig.store)
    side, first = _registered_quietly(rig, f"{rig.name}#5")
    assert (first["CCBID"], first["ClaimId"]) == (f"{rig.name}#5", "77")
    assert rig.listener.contacts() == [f"{rig.name}#5"]
    side.sock.close()


def _registered_quietly(rig: Rig, contact: str) -> tuple[Side, ClassAd]:
    side = rig.accept()
    r = Reader(rig.pump(side.message), "test")
    assert r.get_int() == ccb.CCB_REGISTER
    first = get_classad(r)
    side.send_ad(_reply(contact, "77"))
    rig.pump(lambda: rig.listener.contacts())
    return side, first


def test_an_unreachable_broker_is_tried_again_later_and_a_failed_reversal_is_reported(
        rig: Rig) -> None:
    rig.broker.close()            # nothing listens: the first try fails at once
    rig.pump(rig.listener.settled)
    link = rig.listener.links[0]
    assert link.phase is Phase.WAITING and link.failures == 1
    assert link.retry_at == rig.clock.monotonic() + 1
    assert rig.listener.contacts() == []
    rig.clock.advance(1)
    rig.pump(lambda: link.failures == 2)
    assert link.retry_at == rig.clock.monotonic() + 2


def test_a_reverse_connection_that_cannot_be_made_is_reported_to_the_broker(rig: Rig) -> None:
    side, _ = _registered(rig, f"{rig.name}#5")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()                 # nothing listens there
    req = ClassAd()
    req["Command"] = ccb.CCB_REQUEST
    req["MyAddress"] = f"<127.0.0.1:{port}>"
    req["ClaimId"] = "feedface"
    req["RequestID"] = "4"
    side.send_ad(req)
    result = rig.pump(side.ad)
    assert (result["Result"], result["RequestID"]) == (False, "4")
    assert "refused" in result["ErrorString"].lower()
    assert rig.reversed == []
    assert rig.listener.links[0].phase is Phase.REGISTERED


def test_a_broker_asking_for_too_many_reverse_connections_at_once_is_refused(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    from condorpy.startd.poolside import ccb as listener_module
    monkeypatch.setattr(listener_module, "MAX_REVERSING", 0)
    side, _ = _registered(rig, f"{rig.name}#5")
    req = ClassAd()
    req["Command"] = ccb.CCB_REQUEST
    req["MyAddress"] = "<127.0.0.1:9>"
    req["ClaimId"] = "feedface"
    req["RequestID"] = "4"
    side.send_ad(req)
    result = rig.pump(side.ad)
    assert (result["Result"], result["RequestID"]) == (False, "4")
    assert "already under way" in result["ErrorString"]


def test_a_stopped_listener_never_registers_again(rig: Rig) -> None:
    link = rig.listener.links[0]
    rig.listener.stop()
    rig.clock.advance(3600)
    rig.listener.tick(rig.clock.monotonic())
    assert link.phase is Phase.STOPPED and link.exchange is None
    with pytest.raises(BlockingIOError):
        rig.broker.accept()


def test_the_links_addresses_carry_the_brokers_id_and_the_first_ads_wait_for_it() -> None:
    from condorpy.startd.poolside.link import PoolLink
    from condorpy.startd.poolside.settings import pool_settings
    from condorpy.config import Config
    from tests.policy.engines import engine_from_text

    broker = socket.socket()
    broker.bind(("127.0.0.1", 0))
    broker.listen(4)
    broker.setblocking(False)
    name = f"127.0.0.1:{broker.getsockname()[1]}"
    text = (f"COLLECTOR_HOST = {name}\nCCB_ADDRESS = $(COLLECTOR_HOST)\n"
            "NETWORK_INTERFACE = 127.0.0.1\nFULL_HOSTNAME = ep1.example\n"
            "SEC_CLIENT_NEGOTIATION = NEVER\nNUM_CPUS = 1\nMEMORY = 1024\n")
    settings = pool_settings(Config.from_text(text))
    assert settings is not None and settings.ccb is not None
    clock = ManualClock(1000.0)
    sel = selectors.DefaultSelector()
    link = PoolLink(settings, engine_from_text(text, clock), sel, clock)
    base = link.address
    assert "CCBID" not in base

    def pump(cond: Callable[[], T | None]) -> T:
        end = time.monotonic() + 10
        while time.monotonic() < end:
            for key, mask in sel.select(0.01):
                link.handle(key.data[1], mask)
            link.tick(clock.monotonic())
            got = cond()
            if got is not None and got is not False:
                return got
        raise AssertionError("the link did not get there")

    def accept() -> Side | None:
        try:
            return Side(broker.accept()[0])
        except BlockingIOError:
            return None
    try:
        side = pump(accept)
        r = Reader(pump(side.message), "test")
        # the first connection is the registration: no update before the broker answers
        assert r.get_int() == ccb.CCB_REGISTER
        assert link.advertiser.updates_sent == 0 and link.advertiser.current is None
        side.send_ad(_reply(f"{name}#9", "1"))
        pump(lambda: "CCBID" in link.address)
        assert link.address.startswith(base[:-1].split("?")[0] + "?CCBID=127.0.0.1:")
        assert "#9&PrivNet=ep1.example&" in link.address
        assert link.table.address == link.advertiser.address == link.shadows.address \
            == link.address
        # the slots' ads go out now, with the new address (the collector is the broker
        # here: the update's connection follows)
        update = pump(accept)
        assert update is not None
        assert link.table.mint().startswith(link.address + "#")
        update.sock.close()
        side.sock.close()
    finally:
        link.stop()
        broker.close()
