"""A seeded fuzzer for the daemon's CEDAR command port, with no pool: the daemon is
given a collector address where nothing listens (as tests/pool/test_command_port.py
does), which opens its command port on 127.0.0.1.

Seeds are valid frames (a security handshake's policy ad as HTCondor's tools send it,
a claim session's resumption, raw claim commands, admin queries); each is mutated
(packet headers: end flag and length; the command integer; the ad's attribute count,
names and values; bytes flipped, dropped, repeated), split into packets, cut off
mid-frame, or replaced by random bytes. A handful of peers meanwhile send one byte
every half second (slowloris). After every batch the daemon completes a real
handshake and query on the port and answers a ping on its control socket; at the end
its log holds no traceback and it holds as many descriptors as before the slow peers.
The seed is printed on failure; CONDORPY_FAULT_SEED replays it, CONDORPY_FUZZ_SECONDS
lengthens it."""

from __future__ import annotations

import collections
import errno
import random
import resource
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.pool import admin
from condorpy.pool.aesgcm import EcdhKey
from condorpy.pool.cedar import Writer, frame
from condorpy.pool.connection import AsyncExchange, Connection
from condorpy.errors import PoolError
from condorpy.pool.security import (DC_AUTHENTICATE, ClientPolicy, Level, Receive, Send,
                                    StartCrypto, auth_request_ad, client_handshake)
from condorpy.pool.sinful import parse_address
from condorpy.pool.wire_ad import get_classad, put_classad
from tests.faults.common import (assert_unharmed, fds, replay, seconds, seed,
                                 settled_fds, tracebacks)
from tests.startd.daemon_helpers import Daemon, running, wait_for

DEFAULT_SECONDS = 6.0
BATCH = 10
SLOW_PEERS = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path, f"""
COLLECTOR_HOST = 127.0.0.1:{_free_port()}
NETWORK_INTERFACE = 127.0.0.1
CONDORPY_POOL_ACCEPT_CLAIMS = True
# a method both sides have, so that handshakes go on to authenticate
SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE
""")) as d:
        yield d


def port_of(d: Daemon) -> int:
    wait_for(lambda: re.search(r"as <127\.0\.0\.1:(\d+)\?[^>]*noUDP>", d.output()) is not None,
             30, d.output)
    m = re.search(r"as <127\.0\.0\.1:(\d+)\?[^>]*noUDP>", d.output())
    assert m
    return int(m.group(1))


# --- seeds ------------------------------------------------------------------------------

def _handshake(command: int) -> bytes:
    ad = auth_request_ad(ClientPolicy(), command, EcdhKey().public_b64(), "<127.0.0.1:1>")
    return put_classad(Writer().put_int(DC_AUTHENTICATE), ad).payload()


def _resume(sid: str, command: int) -> bytes:
    ad = ClassAd({"UseSession": "YES", "Sid": sid, "Command": command,
                  "ResumeResponse": True})
    return put_classad(Writer().put_int(DC_AUTHENTICATE), ad).payload()


SEEDS: list[bytes] = [
    _handshake(admin.QUERY_STARTD_ADS), _handshake(admin.DRAIN_JOBS),
    _handshake(442), _handshake(60011),
    _resume("<127.0.0.1:1>#1#1", 442), _resume("<127.0.0.1:9>#9#9#x", 444),
    Writer().put_int(442).put_string("claim").payload(),
    Writer().put_int(admin.QUERY_STARTD_ADS).payload(),
    put_classad(Writer().put_int(admin.QUERY_STARTD_ADS),
                ClassAd({"MyType": "Query", "Requirements": True})).payload(),
]
ODD_INTS = [0, -1, 1, 5, 60010, 60011, 442, 443, 444, 1 << 31, 1 << 62, -(1 << 63),
            (1 << 63) - 1, 1 << 40]


def _mutate(payload: bytes, rng: random.Random) -> bytes:
    data = bytearray(payload)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(6)
        i = rng.randrange(len(data)) if data else 0
        if op == 0 and data:
            data[i] = rng.randrange(256)
        elif op == 1:
            data.insert(i, rng.choice(b"\x00\xff\n=\"()[]{}"))
        elif op == 2 and data:
            del data[i]
        elif op == 3 and len(data) >= 8:
            # an 8-byte integer (command, attribute count, string length): odd value
            at = rng.randrange(0, len(data) - 7)
            data[at:at + 8] = struct.pack(">q", rng.choice(ODD_INTS))
        elif op == 4:
            data[i:i] = data[rng.randrange(len(data) or 1):][:rng.randint(1, 64)]
        else:
            data[i:i] = rng.choice([b"A = (", b"B = " + b"[" * 500, b"C = \"\\",
                                    b"Requirements = regexp(\"(a*)*b\", \"" + b"a" * 40
                                    + b"\")", b"\xff\xfe"])
    return bytes(data)


def _packets(payload: bytes, rng: random.Random) -> bytes:
    """``payload`` as CEDAR packets: whole, in several, or with a header that lies."""
    how = rng.randrange(5)
    if how == 0:
        return frame(payload)
    if how == 1:                            # many packets, the last one marked
        out = b""
        while len(payload) > 16:
            n = rng.randint(1, 16)
            out += struct.pack(">BI", 0, n) + payload[:n]
            payload = payload[n:]
        return out + struct.pack(">BI", 1, len(payload)) + payload
    if how == 2:                            # a length that lies
        n = rng.choice([0, len(payload) + rng.randint(1, 100), max(0, len(payload) - 3),
                        (1 << 20) + 1, (1 << 32) - 1])
        return struct.pack(">BI", 1, n) + payload
    if how == 3:                            # an end flag HTCondor never sends
        return struct.pack(">BI", rng.choice([2, 7, 0x80, 0xff]), len(payload)) + payload
    return frame(payload)[:rng.randrange(1, len(payload) + 5)]     # cut off


def _case(rng: random.Random) -> bytes:
    kind = rng.randrange(10)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 3000)))
    if kind == 1:
        return rng.choice(SEEDS) and frame(rng.choice(SEEDS)) * rng.randint(2, 5)
    payload = rng.choice(SEEDS)
    if kind > 3:
        payload = _mutate(payload, rng)
    return _packets(payload, rng)


def _deep(port: int, rng: random.Random) -> str:
    """A real handshake (negotiation, CLAIMTOBE, then AES-GCM) in which one message is
    mutated: before it is framed (and encrypted, once the session encrypts) or after,
    on the wire; or, once the session stands, the command's own message. What the
    daemon does next is read until it closes."""
    command = rng.choice([admin.QUERY_STARTD_ADS, admin.DC_NOP_READ, admin.DRAIN_JOBS,
                          admin.DC_CONFIG_VAL, admin.VACATE_CLAIM, 442])
    policy = ClientPolicy(authentication=rng.choice(list(Level)),
                          encryption=rng.choice([Level.REQUIRED, Level.OPTIONAL]))
    target = rng.randint(1, 4)
    on_wire = rng.random() < 0.3
    sends = 0
    with Connection.connect(parse_address(f"<127.0.0.1:{port}>"), 10) as conn:
        gen = client_handshake(command, policy, conn.peer)
        try:
            reply: bytes | None = None
            op = gen.send(None)
            while True:
                if isinstance(op, Send):
                    sends += 1
                    if sends == target:
                        break
                    conn.send(op.payload)
                    reply = None
                elif isinstance(op, Receive):
                    reply = conn.receive(op.what)
                elif isinstance(op, StartCrypto):
                    conn.channel.start_crypto(op.key)
                    reply = None
                else:
                    return "await"
                op = gen.send(reply)
            payload = op.payload
            what = f"handshake message {sends}"
        except StopIteration:
            payload = put_classad(conn.channel.writer(), ClassAd({
                "MyType": "Query", "HowFast": 1, "RequestID": "x"})).payload()
            what = "command message"
        except (PoolError, OSError) as exc:
            return f"refused before the mutation: {exc}"
        try:
            if on_wire:
                conn.sock.sendall(_mutate(conn.channel.encode(payload), rng))
            else:
                conn.send(_mutate(payload, rng))
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.settimeout(30)
            while conn.sock.recv(1 << 16):
                pass
        except (PoolError, OSError):
            pass
        return f"{what} mutated{' on the wire' if on_wire else ''}"


def _exchange(port: int, data: bytes, rng: random.Random) -> None:
    """Send ``data``, then read until the daemon closes, or hang up at once."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        try:
            view = memoryview(data)
            while view:
                n = rng.choice([1, 5, 13, 4096, 1 << 20])
                s.sendall(view[:n])
                view = view[n:]
            if rng.random() < 0.3:
                return                       # hang up mid-frame or before the answer
            s.shutdown(socket.SHUT_WR)
            while s.recv(1 << 16):
                pass
        except OSError:
            pass                 # reset or shut on us (EPIPE, ECONNRESET, ENOTCONN): its right


def _query(port: int) -> int:
    """A real handshake and QUERY_STARTD_ADS, as condor_status -direct; slots seen."""
    with Connection.connect(parse_address(f"<127.0.0.1:{port}>"), 10) as conn:
        w = conn.start_command(admin.QUERY_STARTD_ADS, ClientPolicy())
        conn.send(put_classad(w, ClassAd({"MyType": "Query",
                                          "TargetType": "Machine"})).payload())
        r = conn.channel.reader(conn.receive("the slots"))
        n = 0
        while r.get_int("more") == 1:
            get_classad(r)
            n += 1
        return n


class _SlowPeers:
    """Peers that each send a valid handshake one byte every half second."""

    def __init__(self, port: int, count: int) -> None:
        self.stop = threading.Event()
        self.socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        self.thread = threading.Thread(target=self._dribble, daemon=True)
        self.thread.start()

    def _dribble(self) -> None:
        data = frame(SEEDS[0])
        i = 0
        while not self.stop.wait(0.5) and i < len(data):
            for s in self.socks:
                try:
                    s.send(data[i:i + 1])
                except OSError:
                    pass
            i += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def test_the_cedar_port_survives_a_seeded_fuzzer(daemon: Daemon) -> None:
    s = seed()
    rng = random.Random(s)
    port = port_of(daemon)
    assert daemon.proc is not None
    pid = daemon.proc.pid
    assert _query(port) >= 1                # whatever a first exchange opens
    before = fds(pid)
    sent: list[bytes] = []
    batches = 0
    deep: collections.Counter[str] = collections.Counter()
    slow = _SlowPeers(port, SLOW_PEERS)
    end = time.monotonic() + seconds(DEFAULT_SECONDS)
    try:
        while time.monotonic() < end:
            for _ in range(BATCH):
                if rng.random() < 0.3:
                    deep[_deep(port, rng)[:90]] += 1
                    sent.append(b"(a handshake with one message mutated)")
                    continue
                sent.append(_case(rng))
                _exchange(port, sent[-1], rng)
            batches += 1
            # the slow peers hold nobody out: a real exchange and the control socket
            assert _query(port) >= 1
            assert daemon.call("ping")
            del sent[:-BATCH]
        slow.close()
        after = settled_fds(pid, len(before))
    except BaseException as exc:
        slow.close()
        raise AssertionError(
            f"{replay(s)}: {exc!r} after batch {batches}; last sent:\n"
            + "\n".join(f"{x[:100]!r} ({len(x)} B)" for x in sent[-BATCH:])
            + f"\n{daemon.output()}") from exc
    print(f"{batches} batches of {BATCH} (handshakes: {dict(deep)}), {replay(s)}")
    assert_unharmed(daemon, s, before, after)
    # every connection it dropped is named by its peer
    dropped = [ln for ln in daemon.output().splitlines() if "pool:" in ln]
    assert dropped and all("127.0.0.1" in ln for ln in dropped), dropped[:5]


def test_one_host_cannot_take_every_descriptor(tmp_path: Path) -> None:
    # A daemon started with 200 descriptors (as a shell's limit might be): one host
    # holds at most a quarter of them in unfinished commands; beyond that its new
    # connections are closed, and the control socket and other exchanges are served.
    d = Daemon(tmp_path, f"""
COLLECTOR_HOST = 127.0.0.1:{_free_port()}
NETWORK_INTERFACE = 127.0.0.1
""")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, hard))
    try:
        d.start()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    socks: list[socket.socket] = []
    try:
        port = port_of(d)
        assert d.proc is not None
        before = len(fds(d.proc.pid))
        for _ in range(150):                 # silent peers, as slowloris
            socks.append(socket.create_connection(("127.0.0.1", port)))
        wait_for(lambda: "already holds 50 unfinished commands" in d.output(), 30,
                 d.output)
        assert len(fds(d.proc.pid)) <= before + 50 + 2     # the spare, a listener's turn
        assert d.call("ping")
        for s in socks:
            s.close()
        socks.clear()
        # The daemon learns of each close when it next reads that connection; until
        # then the host still holds its 50 and a new command from it is refused.
        wait_for(lambda: len(fds(d.proc.pid)) <= before + 2, 30,
                 lambda: f"{len(fds(d.proc.pid))} descriptors open, {before} before")
        assert _query(port) >= 1
        assert not tracebacks(d.whole_log())
    finally:
        for s in socks:
            s.close()
        d.stop()
        d.kill_leftovers()


def test_out_of_descriptors_an_outgoing_exchange_is_a_pool_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a collector update when the daemon has no descriptor left: a failed attempt
    # naming the peer, retried later, not an internal error
    def no_fds(*_a: object, **_k: object) -> socket.socket:
        raise OSError(errno.EMFILE, "Too many open files")
    monkeypatch.setattr(socket, "socket", no_fds)
    with pytest.raises(PoolError, match="cannot open a socket: Too many open files"):
        AsyncExchange.connect(parse_address("<127.0.0.1:9618>"),
                              iter(()), 0.0, "update")  # type: ignore[arg-type]
