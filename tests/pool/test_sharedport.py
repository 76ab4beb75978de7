"""SHARED_PORT_CONNECT (sans-I/O) and the sinful strings of a pool behind
condor_shared_port, as HTCondor 23.9.6's daemons advertise them."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from condorpy.errors import CondorpyError, PoolError, WireError
from condorpy.pool.cedar import PacketDecoder, Writer
from condorpy.pool.connection import AsyncExchange, Channel, Connection
from condorpy.pool.security import Receive, Send
from condorpy.pool.sharedport import SHARED_PORT_CONNECT, connect_payload, parse_connect
from condorpy.pool.sinful import parse_address


def test_the_message_is_htcondors_five_fields() -> None:
    p = connect_payload("schedd_1234_abcd", 19.2)
    assert p == (struct.pack(">q", 75) + b"schedd_1234_abcd\0" + b"STARTD\0"
                 + struct.pack(">q", 20) + struct.pack(">q", 0))
    assert parse_connect(p, "test") == ("schedd_1234_abcd", "STARTD", 20)
    assert parse_connect(connect_payload("collector", None), "t") == ("collector", "STARTD", -1)
    assert parse_connect(connect_payload("c", -3), "t")[2] == 0


@pytest.mark.parametrize("cut", [1, 8, 12, 20, 30])
def test_truncated_messages_are_wire_errors(cut: int) -> None:
    p = connect_payload("schedd_1", 5)
    with pytest.raises(WireError):
        parse_connect(p[:-cut], "peer")
    with pytest.raises(WireError, match="unread"):
        parse_connect(p + b"x", "peer")
    with pytest.raises(PoolError, match="SHARED_PORT_CONNECT"):
        parse_connect(Writer().put_int(SHARED_PORT_CONNECT + 1).payload(), "peer")


def test_the_handshake_digests_start_after_the_message() -> None:
    ch = Channel("peer")
    data = ch.shared_port_connect("collector", 10)
    dec = PacketDecoder("peer")
    dec.feed(data)
    assert parse_connect(dec.next_message() or b"", "peer")[0] == "collector"
    # nothing of it is in the AAD of the first encrypted packet
    assert ch.transcript.digests() == (bytes(32), bytes(32))
    fresh = Channel("peer")
    assert ch.encode(b"x") == fresh.encode(b"x")
    assert ch.transcript.digests() == fresh.transcript.digests()


def _stand_in(results: list[object]) -> tuple[socket.socket, int]:
    """A loopback stand-in for condor_shared_port in front of a daemon that answers one
    message: it reads SHARED_PORT_CONNECT, then the command, and echoes it back."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            dec = PacketDecoder("client")
            msgs: list[bytes] = []
            while len(msgs) < 2:
                data = conn.recv(4096)
                if not data:
                    break
                dec.feed(data)
                while (m := dec.next_message()) is not None:
                    msgs.append(m)
            results.append(parse_connect(msgs[0], "client"))
            results.append(msgs[1])
            conn.sendall(Channel("x").encode(msgs[1]))
    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_a_blocking_connection_sends_it_first() -> None:
    results: list[object] = []
    srv, port = _stand_in(results)
    with srv, Connection.connect(parse_address(f"<127.0.0.1:{port}?sock=schedd_9>"), 10) as c:
        c.send(b"hello")
        assert c.receive("the echo") == b"hello"
    assert results == [("schedd_9", "STARTD", 10), b"hello"]


def test_an_event_loop_exchange_sends_it_first() -> None:
    import selectors
    import time
    results: list[object] = []
    srv, port = _stand_in(results)

    def proto():  # type: ignore[no-untyped-def]
        yield Send(b"ping")
        reply = yield Receive("the echo")
        return reply

    with srv:
        ex = AsyncExchange.connect(parse_address(f"<127.0.0.1:{port}?addrs=127.0.0.1-{port}"
                                                 f"&noUDP&sock=shadow_7_1>"),
                                   proto(), time.monotonic() + 10, "test")
        sel = selectors.DefaultSelector()
        end = time.monotonic() + 10
        while not ex.done and time.monotonic() < end:
            sel.register(ex, ex.interest())
            for key, mask in sel.select(1):
                ex.handle(mask)
            sel.unregister(ex)
        ex.close()
    assert ex.error is None and ex.result == b"ping"
    assert results[0][:2] == ("shadow_7_1", "STARTD")  # type: ignore[index]
    assert 0 < results[0][2] <= 10  # type: ignore[index]


# addresses as HTCondor 23.9.6 advertised them in the reference pool with
# USE_SHARED_PORT = True (condor_status -any -af MyAddress; a shadow's TransferSocket);
# the IPv6 alternative is written with '-' for ':'
REAL = [
    ("<127.0.0.1:51209?addrs=127.0.0.1-51209+[fd00--2]-51209&alias=vm&noUDP"
     "&sock=collector>",
     "127.0.0.1", 51209, "collector", (("127.0.0.1", 51209), ("fd00::2", 51209)), "vm"),
    ("<127.0.0.1:51209?addrs=127.0.0.1-51209+[fd00--2]-51209&alias=vm&noUDP"
     "&sock=schedd_404975_0ee5>",
     "127.0.0.1", 51209, "schedd_404975_0ee5", (("127.0.0.1", 51209), ("fd00::2", 51209)),
     "vm"),
    ("<127.0.0.1:11733?addrs=127.0.0.1-11733+[fd00--2]-11733&alias=vm&noUDP"
     "&sock=shadow_405866_1031_1>",
     "127.0.0.1", 11733, "shadow_405866_1031_1", (("127.0.0.1", 11733), ("fd00::2", 11733)),
     "vm"),
    ("<[::1]:9618?addrs=[--1]-9618&sock=startd_1_2>", "::1", 9618, "startd_1_2",
     (("::1", 9618),), None),
    ("127.0.0.1:9618?sock=collector", "127.0.0.1", 9618, "collector", (), None),
]


@pytest.mark.parametrize("text, host, port, sock, addrs, alias", REAL)
def test_sinful_strings_behind_shared_port(text: str, host: str, port: int, sock: str,
                                           addrs: tuple[tuple[str, int], ...],
                                           alias: str | None) -> None:
    a = parse_address(text)
    assert (a.host, a.port, a.shared_port_id, a.alternatives, a.alias) == \
        (host, port, sock, addrs, alias)
    assert a.ccb_id is None
    assert parse_address(a.sinful()) == a


def test_ccb_addresses_are_refused_in_one_line() -> None:
    a = parse_address("<10.0.0.9:9618?CCBID=10.0.0.1:9618%3faddrs%3d10.0.0.1-9618#7"
                      "&PrivNet=site.example&noUDP&sock=startd_5_6>")
    assert a.ccb_id == "10.0.0.1:9618?addrs=10.0.0.1-9618#7"
    assert a.private_network == "site.example" and a.no_udp
    with pytest.raises(PoolError, match="CCB broker"):
        Connection.connect(a, 1)
    with pytest.raises(PoolError, match="CCB broker"):
        AsyncExchange.connect(a, iter(()), 0.0, "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("text", [
    "<127.0.0.1:9618?sock=../../etc/passwd>",
    "<127.0.0.1:9618?sock=a/b>",
    "<127.0.0.1:9618?addrs=127.0.0.1>",
    "<127.0.0.1:9618?addrs=127.0.0.1-0>",
    "<127.0.0.1:9618?addrs=[::1]9618>",
    "<127.0.0.1:9618?addrs=127.0.0.1-9618+>",
])
def test_bad_parameters_name_their_source(text: str) -> None:
    with pytest.raises(CondorpyError, match="TransferSocket"):
        parse_address(text, source="TransferSocket")
