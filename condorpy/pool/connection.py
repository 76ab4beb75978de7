"""One CEDAR connection over a socket: the thin I/O shell around the sans-I/O protocol.

:class:`Channel` holds a connection's protocol state (packet decoder, handshake
transcript, AES-GCM once switched on) without touching a socket; :class:`Connection`
is the blocking adapter (with a deadline on every wait), used for short client
exchanges such as a collector update and by tests.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Generator
from typing import TypeVar

from condorpy.errors import PoolError, WireError
from condorpy.pool.aesgcm import AesGcmCipher
from condorpy.pool.cedar import PacketDecoder, Reader, Transcript, Writer, frame
from condorpy.pool.security import ClientPolicy, Op, Receive, Send, Session, StartCrypto, \
    client_handshake
from condorpy.pool.sinful import Address

T = TypeVar("T")


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
        self.cipher = AesGcmCipher(key, self.transcript, self.peer)
        self.decoder.cipher = self.cipher

    def encode(self, payload: bytes) -> bytes:
        return frame(payload, cipher=self.cipher, transcript=self.transcript)

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
        if addr.shared_port_id:
            raise PoolError("addresses behind condor_shared_port (sock=...) are not "
                            "supported yet", peer=peer)
        try:
            sock = socket.create_connection((addr.host, addr.port), timeout=timeout)
        except OSError as exc:
            raise PoolError(f"cannot connect: {exc.strerror or exc}", peer=peer) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, peer, timeout)

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
