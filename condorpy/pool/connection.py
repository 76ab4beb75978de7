"""One CEDAR connection over a socket: the thin I/O shell around the sans-I/O protocol.

:class:`Channel` holds a connection's protocol state (packet decoder, handshake
transcript, AES-GCM once switched on) without touching a socket; :class:`Connection`
is the blocking adapter (with a deadline on every wait), used for short client
exchanges such as a collector update and by tests.
"""

from __future__ import annotations

import errno
import logging
import os
import selectors
import socket
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, TypeVar

from condorpy.errors import CondorpyError, PoolError, WireError
from condorpy.pool.cedar import PacketDecoder, Reader, Transcript, Writer, frame
from condorpy.pool.security import Await, ClientPolicy, Op, Receive, Send, Session, \
    StartCrypto, client_handshake
from condorpy.pool.sharedport import check_reachable, connect_payload
from condorpy.pool.sinful import Address, connect_order

if TYPE_CHECKING:
    from condorpy.pool.aesgcm import AesGcmCipher

T = TypeVar("T")
log = logging.getLogger("condorpy.pool")


class Channel:
    """A connection's protocol state: what to send, what was received, crypto."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.transcript = Transcript()
        self.decoder = PacketDecoder(peer)
        self.decoder.transcript = self.transcript
        self.cipher: AesGcmCipher | None = None

    @property
    def crypto(self) -> bool:
        return self.cipher is not None

    def start_crypto(self, key: bytes) -> None:
        from condorpy.pool.aesgcm import AesGcmCipher      # cryptography at first use

        self.cipher = AesGcmCipher(key, self.transcript, self.peer)
        self.decoder.cipher = self.cipher

    def encode(self, payload: bytes) -> bytes:
        return frame(payload, cipher=self.cipher, transcript=self.transcript)

    def shared_port_connect(self, sock_id: str, seconds_left: float | None) -> bytes:
        """SHARED_PORT_CONNECT framed, then the handshake digests start afresh."""
        data = self.encode(connect_payload(sock_id, seconds_left))
        self.transcript.reset()
        return data

    def writer(self) -> Writer:
        return Writer(crypto=self.crypto)

    def reader(self, payload: bytes) -> Reader:
        return Reader(payload, self.peer, crypto=self.crypto)


class Connection:
    """A blocking CEDAR connection. Every wait ends by ``timeout`` seconds."""

    def __init__(self, sock: socket.socket, peer: str, timeout: float) -> None:
        self.sock = sock
        self.peer = peer
        self.timeout = timeout
        self.channel = Channel(peer)
        self.session: Session | None = None

    @classmethod
    def connect(cls, addr: Address, timeout: float) -> "Connection":
        peer = addr.hostport()
        check_reachable(addr)
        sock = _connect_first(addr, timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = cls(sock, peer, timeout)
        if addr.shared_port_id:
            try:
                sock.sendall(conn.channel.shared_port_connect(addr.shared_port_id, timeout))
            except OSError as exc:
                sock.close()
                raise PoolError(f"send failed: {exc.strerror or exc}", peer=peer) from None
        return conn

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, payload: bytes) -> None:
        try:
            self.sock.sendall(self.channel.encode(payload))
        except OSError as exc:
            raise PoolError(f"send failed: {exc.strerror or exc}", peer=self.peer) from None

    def receive(self, what: str) -> bytes:
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self.channel.decoder.next_message()
            if msg is not None:
                return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise PoolError(f"timed out after {self.timeout:g}s waiting for {what}",
                                peer=self.peer)
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError as exc:
                raise PoolError(f"receive failed while waiting for {what}: "
                                f"{exc.strerror or exc}", peer=self.peer) from None
            if not data:
                raise WireError(f"connection closed while waiting for {what}",
                                peer=self.peer)
            self.channel.decoder.feed(data)

    def run(self, protocol: Generator[Op, bytes | None, T]) -> T:
        """Drive a sans-I/O protocol generator to its result."""
        reply: bytes | None = None
        try:
            while True:
                op = protocol.send(reply)
                reply = None
                if isinstance(op, Send):
                    self.send(op.payload)
                elif isinstance(op, Receive):
                    reply = self.receive(op.what)
                elif isinstance(op, StartCrypto):
                    self.channel.start_crypto(op.key)
                elif isinstance(op, Await):
                    raise PoolError(f"a blocking connection cannot wait for {op.what}",
                                    peer=self.peer)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    def start_command(self, command: int, policy: ClientPolicy) -> Writer:
        """Run the security handshake for ``command``; the writer for the command's own
        message (starting with the command number when no handshake was made)."""
        self.session = self.run(client_handshake(command, policy, self.peer))
        w = self.channel.writer()
        if self.session.raw:
            w.put_int(command)
        return w


def _connect_first(addr: Address, timeout: float) -> socket.socket:
    """A socket connected to the first of ``addr``'s addresses (its ``addrs``, in
    :func:`connect_order`) that answers, each given ``timeout``; the error names every
    one tried when none does."""
    failed: list[str] = []
    for where in connect_order(addr):
        try:
            return socket.create_connection((where.host, where.port), timeout=timeout)
        except OSError as exc:
            failed.append(f"{where.hostport()}: {exc.strerror or exc}")
    raise PoolError(f"cannot connect: {'; '.join(failed)}", peer=addr.hostport())


def _start_connect(where: Address, peer: str, untried: list[Address]) -> socket.socket:
    """A non-blocking socket connecting to ``where``; one that fails at once moves on
    to the next of ``untried`` (taken from it)."""
    while True:
        try:
            infos = socket.getaddrinfo(where.host, where.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            err = f"cannot resolve {where.host}: {exc}"
        else:
            family, _, _, _, sockaddr = infos[0]
            try:
                sock = socket.socket(family, socket.SOCK_STREAM)
            except OSError as exc:   # out of descriptors: a failed attempt, retried later
                raise PoolError(f"cannot open a socket: {exc.strerror or exc}",
                                peer=peer) from None
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            code = sock.connect_ex(sockaddr)
            if code in (0, errno.EINPROGRESS):
                return sock
            sock.close()
            err = f"cannot connect: {os.strerror(code)}"
        if not untried:
            raise PoolError(err, peer=peer)
        where = untried.pop(0)



def send_some(sock: socket.socket, out: bytearray, peer: str) -> None:
    """Send what a non-blocking socket takes now of ``out`` and drop it from ``out``."""
    try:
        n = sock.send(out)
    except BlockingIOError:
        return
    except OSError as exc:
        raise PoolError(f"send failed: {exc.strerror or exc}", peer=peer) from None
    del out[:n]


def receive_some(sock: socket.socket, peer: str) -> bytes | None:
    """What a non-blocking socket has now: None when nothing yet, b"" when the peer
    closed the connection."""
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return None
    except OSError as exc:
        raise PoolError(f"receive failed: {exc.strerror or exc}", peer=peer) from None


class AsyncExchange:
    """A protocol generator run over a non-blocking socket by the daemon's event loop:
    the loop calls :meth:`handle` when the socket is ready (for :meth:`interest`) and
    :meth:`overdue` on its timer. It never blocks; when it ends, ``done`` is set and
    ``error`` says why if it failed."""

    def __init__(self, sock: socket.socket, peer: str,
                 protocol: Generator[Op, bytes | None, object], deadline: float, label: str,
                 connected: bool) -> None:
        self.sock = sock
        self.peer = peer
        self.label = label
        self.deadline = deadline
        self.channel = Channel(self.peer)
        self.protocol: Generator[Op, bytes | None, object] = protocol
        self.out = bytearray()
        self.connected = connected
        self.done = False
        self.result: object = None
        self.error: Exception | None = None
        self.waiting = False
        self.awaiting: str | None = None       # an Await in progress: what it waits for
        self.started = False
        self.result_ready = False
        # the peer's addresses not tried yet, and the socket of the one that refused
        # (the loop takes it out of its selector: take_replaced)
        self.untried: list[Address] = []
        self.replaced: socket.socket | None = None
        if connected:
            self.handle(0)      # start the protocol: a peer speaks first or we do

    @classmethod
    def connect(cls, addr: Address, protocol: Generator[Op, bytes | None, object],
                deadline: float, label: str) -> "AsyncExchange":
        """An exchange this side starts: a non-blocking connect to ``addr`` (to its
        ``addrs`` in turn, :func:`connect_order`, while one refuses)."""
        peer = addr.hostport()
        check_reachable(addr)
        order = list(connect_order(addr))
        sock = _start_connect(order.pop(0), peer, order)
        ex = cls(sock, peer, protocol, deadline, label, connected=False)
        ex.untried = order
        if addr.shared_port_id:
            # queued before the protocol's first bytes: sent once the connect completes
            # (the deadline is on the monotonic clock; one from a test's mock clock
            # makes no sense here and goes as "none", -1)
            left: float | None = deadline - time.monotonic()
            if left is not None and not 0 < left <= 86400:
                left = None
            ex.out += ex.channel.shared_port_connect(addr.shared_port_id, left)
        return ex

    def take_replaced(self) -> socket.socket | None:
        """The socket of an address that refused, given up for the next one (the
        caller unregisters and closes it); None when there is none."""
        old, self.replaced = self.replaced, None
        return old

    @classmethod
    def accepted(cls, sock: socket.socket, peer: str,
                 protocol: Generator[Op, bytes | None, object], deadline: float,
                 label: str) -> "AsyncExchange":
        """An exchange a peer started on a connection this side accepted."""
        sock.setblocking(False)
        return cls(sock, peer, protocol, deadline, label, connected=True)

    def fileno(self) -> int:
        return self.sock.fileno()

    def interest(self) -> int:
        if not self.connected or self.out:
            return selectors.EVENT_WRITE
        return selectors.EVENT_READ

    def _fail(self, exc: Exception) -> None:
        self.error = exc
        self.done = True
        if self.out and self.connected:
            # a refusal the protocol sent just before it gave up (DENIED,
            # SID_NOT_FOUND) is the peer's only way to learn why: best effort
            try:
                self.sock.send(self.out)
            except OSError:
                pass
            self.out.clear()

    def overdue(self, now: float) -> bool:
        if not self.done and now >= self.deadline:
            self._fail(PoolError(f"{self.label}: no answer in time", peer=self.peer))
        return self.done

    def handle(self, mask: int) -> None:
        try:
            self._handle(mask)
        except CondorpyError as exc:
            self._fail(exc)
        except Exception as exc:   # a bug closes this connection; the loop goes on
            log.exception("%s: internal error", self.label)
            self._fail(PoolError(f"{self.label}: internal error ({exc!r})", peer=self.peer))

    def _handle(self, mask: int) -> None:
        if not self.started:
            if not self.connected:
                err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err and self.untried:
                    log.info("%s: no connection to one address of %s (%s), trying %s",
                             self.label, self.peer, os.strerror(err),
                             self.untried[0].hostport())
                    fresh = _start_connect(self.untried.pop(0), self.peer, self.untried)
                    self.replaced, self.sock = self.sock, fresh
                    return
                if err:
                    raise PoolError(f"cannot connect: {os.strerror(err)}", peer=self.peer)
                self.connected = True
            self.started = True
            self._advance(None)
            return
        if mask & selectors.EVENT_WRITE and self.out:
            send_some(self.sock, self.out, self.peer)
        if mask & selectors.EVENT_READ:
            data = receive_some(self.sock, self.peer)
            if data == b"":
                raise WireError(f"{self.label}: connection closed early", peer=self.peer)
            if data:
                self.channel.decoder.feed(data)
                if self.waiting:
                    msg = self.channel.decoder.next_message()
                    if msg is not None:
                        self._advance(msg)
        if self.result_ready and not self.out:
            self.done = True

    def _advance(self, reply: bytes | None) -> None:
        self.waiting = False
        while True:
            try:
                op = self.protocol.send(reply)
            except StopIteration as stop:
                self.result = stop.value
                self.result_ready = True
                if not self.out:
                    self.done = True
                return
            reply = None
            if isinstance(op, Send):
                self.out += self.channel.encode(op.payload)
            elif isinstance(op, StartCrypto):
                self.channel.start_crypto(op.key)
            elif isinstance(op, Receive):
                reply = self.channel.decoder.next_message()
                if reply is None:
                    self.waiting = True
                    return
            elif isinstance(op, Await):
                self.awaiting = op.what
                self.deadline = float("inf")
                return

    def resume(self, deadline: float) -> None:
        """Go on after an :class:`Await` (the event it waited for happened)."""
        if self.awaiting is None or self.done:
            return
        self.awaiting = None
        self.deadline = deadline
        try:
            self._advance(None)
        except CondorpyError as exc:
            self._fail(exc)
        except Exception as exc:
            log.exception("%s: internal error", self.label)
            self._fail(PoolError(f"{self.label}: internal error ({exc!r})", peer=self.peer))

    def close(self) -> None:
        self.sock.close()
