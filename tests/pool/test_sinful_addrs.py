"""A sinful string's ``addrs`` alternatives: the address condorpy advertises in
HTCondor's form, and connecting to a peer through its addresses in turn (real sockets:
one port that refuses, then one that answers)."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Generator, Iterator

import pytest

from condorpy.clock import ManualClock
from condorpy.errors import PoolError
from condorpy.pool.cedar import PacketDecoder
from condorpy.pool.connection import AsyncExchange, Channel, Connection
from condorpy.pool.security import Op, Receive, Send
from condorpy.pool.sinful import Address, connect_order, own_address, parse_address
from condorpy.startd.poolside.exchanges import Exchanges


def test_own_address_is_written_as_htcondor_writes_a_startds() -> None:
    # a 23.9.6 startd without shared port: <ip:port?addrs=ip-port&alias=host&noUDP>
    assert own_address("127.0.0.1", 18569, "vm") == \
        "<127.0.0.1:18569?addrs=127.0.0.1-18569&alias=vm&noUDP>"
    assert own_address("10.0.0.5", 9618, "") == "<10.0.0.5:9618?addrs=10.0.0.5-9618&noUDP>"
    v6 = own_address("fd00::2", 4000, "ep.example.org")
    assert v6 == "<[fd00::2]:4000?addrs=[fd00--2]-4000&alias=ep.example.org&noUDP>"
    back = parse_address(v6)
    assert back.alternatives == (("fd00::2", 4000),) and back.alias == "ep.example.org"
    assert back.no_udp


def test_connect_order_is_the_listed_addrs() -> None:
    a = parse_address("<127.0.0.1:5?addrs=127.0.0.1-5+[fd00--2]-5+[fe80--1]-5+127.0.0.1-5"
                      "&noUDP&sock=schedd_1_2>")
    order = connect_order(a)
    assert [(x.host, x.port) for x in order] == [("127.0.0.1", 5), ("fd00::2", 5)]
    assert all(x.shared_port_id == "schedd_1_2" for x in order)
    plain = parse_address("<10.1.2.3:7?noUDP>")
    assert connect_order(plain) == (plain,)


@pytest.fixture
def refused_then_open() -> Iterator[tuple[Address, socket.socket]]:
    """An address whose first alternative refuses (a port bound but not listening)
    and whose second listens."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = closed.getsockname()[1]
    srv = socket.create_server(("127.0.0.2", 0))
    live = srv.getsockname()[1]
    addr = parse_address(f"<127.0.0.1:{dead}?addrs=127.0.0.1-{dead}+127.0.0.2-{live}&noUDP>")
    yield addr, srv
    srv.close()
    closed.close()


def test_a_blocking_connection_tries_the_next_address(
        refused_then_open: tuple[Address, socket.socket]) -> None:
    addr, srv = refused_then_open
    with Connection.connect(addr, 5) as c:
        peer, _ = srv.accept()
        assert c.sock.getpeername() == peer.getsockname()
        peer.close()


def test_no_address_answering_names_each_one_tried() -> None:
    socks = [socket.socket() for _ in range(2)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    p1, p2 = (s.getsockname()[1] for s in socks)
    with pytest.raises(PoolError) as err:
        Connection.connect(parse_address(f"<127.0.0.1:{p1}?addrs=127.0.0.1-{p1}+"
                                         f"127.0.0.1-{p2}>"), 5)
    assert f"127.0.0.1:{p1}" in str(err.value) and f"127.0.0.1:{p2}" in str(err.value)
    for s in socks:
        s.close()


def test_the_event_loop_moves_on_to_the_next_address(
        refused_then_open: tuple[Address, socket.socket]) -> None:
    addr, srv = refused_then_open

    def proto() -> Generator[Op, bytes | None, bytes]:
        yield Send(b"ping")
        reply = yield Receive("the reply")
        assert reply is not None
        return reply

    got: list[bytes] = []

    def serve() -> None:
        peer, _ = srv.accept()
        with peer:
            dec = PacketDecoder("t")
            while (msg := dec.next_message()) is None:
                dec.feed(peer.recv(4096))
            got.append(msg)
            peer.sendall(Channel("t").encode(b"pong"))
            peer.recv(1)        # until the exchange closes its end

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    sel = selectors.DefaultSelector()
    exchanges = Exchanges(sel, ManualClock())
    done: list[AsyncExchange] = []
    ex = AsyncExchange.connect(addr, proto(), time.monotonic() + 10, "test")
    exchanges.add(ex, done.append)
    end = time.monotonic() + 10
    while not done and time.monotonic() < end:
        for key, mask in sel.select(0.2):
            exchanges.handle(key.data[1], mask)
    sel.close()
    server.join(10)
    assert got == [b"ping"]
    assert done and ex.error is None and ex.result == b"pong"


def test_the_event_loop_fails_once_every_address_refused() -> None:
    socks = [socket.socket() for _ in range(2)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    p1, p2 = (s.getsockname()[1] for s in socks)

    def proto() -> Generator[Op, bytes | None, None]:
        yield Send(b"ping")

    sel = selectors.DefaultSelector()
    exchanges = Exchanges(sel, ManualClock())
    done: list[AsyncExchange] = []
    try:
        ex = AsyncExchange.connect(parse_address(f"<127.0.0.1:{p1}?addrs=127.0.0.1-{p1}+"
                                                 f"127.0.0.1-{p2}>"),
                                   proto(), time.monotonic() + 10, "test")
    except PoolError as exc:        # both refused at once: the caller hears so
        assert "cannot connect" in str(exc)
    else:
        exchanges.add(ex, done.append)
        end = time.monotonic() + 10
        while not done and time.monotonic() < end:
            for key, mask in sel.select(0.2):
                exchanges.handle(key.data[1], mask)
        assert done and isinstance(ex.error, PoolError) and "cannot connect" in str(ex.error)
    assert not sel.get_map()
    sel.close()
    for s in socks:
        s.close()
