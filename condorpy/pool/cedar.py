"""CEDAR, HTCondor's stream protocol over TCP: packets, messages and primitive values.

Sans-I/O: bytes in, messages out; values in, bytes out. Nothing here touches a socket.

Facts (htcondor/htcondor, ``src/condor_io/reli_sock.cpp`` and ``stream.cpp``; checked
against traffic between the daemons of a real 23.9.6 pool, see ``docs/pool-protocol.md``):

- A *packet* is a 5-byte header, ``end`` (1 byte) and ``len`` (4 bytes, big-endian),
  then ``len`` bytes. ``end == 1`` marks the last packet of a *message* (what
  HTCondor calls end-of-message, EOM); ``end == 0`` says more packets follow.
  A receiver refuses a packet over 1 MiB (``max_packet_size``).
- Every integer except a ``char`` travels as an 8-byte big-endian signed integer.
- A double is ``frexp``'s fraction times 2**31-1, truncated to an int, then the
  exponent: two 8-byte integers.
- A string is its bytes and a NUL; the null string is the single byte ``0xFF``. Once a
  connection encrypts (AES-GCM turns encryption on for the whole connection) every
  string is preceded by its length, NUL included, as an 8-byte integer.
- A message is read whole: a receiver that leaves bytes unread at the end of a
  message reports an error, and so does :meth:`Reader.end` here.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from condorpy.errors import WireError

HEADER_SIZE = 5
MAX_PACKET = 1 << 20          # what HTCondor's receiver accepts (reli_sock.cpp max_packet_size)
SEND_PACKET = 1 << 16         # what this side puts in one packet
MAX_MESSAGE = 64 << 20        # a peer cannot make this side buffer more than this
FRAC_CONST = 2147483647
NULL_STRING = b"\xff"
_INT = struct.Struct(">q")
_HDR = struct.Struct(">BI")


class PacketCipher(Protocol):
    """What an encrypted connection does to packet bodies (see :mod:`condorpy.pool.aesgcm`)."""

    def seal(self, end: int, plain: bytes) -> bytes:
        """The whole packet (header and sealed body) carrying ``plain``."""
        ...

    def open(self, header: bytes, body: bytes) -> bytes:
        """The plaintext of a received packet; raises WireError if it does not verify."""
        ...


class Transcript:
    """The plaintext bytes of a connection so far, each direction hashed apart: AES-GCM
    binds the first encrypted packet to the whole handshake before it."""

    def __init__(self) -> None:
        self.reset()

    def note_sent(self, data: bytes) -> None:
        if data:
            self.sent.update(data)
            self.sent_any = True

    def note_received(self, data: bytes) -> None:
        if data:
            self.received.update(data)
            self.received_any = True

    def reset(self) -> None:
        """Forget everything so far (after SHARED_PORT_CONNECT, which the daemon behind
        condor_shared_port never sees)."""
        import hashlib      # OpenSSL's libcrypto: loaded by a pool connection, not at start
        self.sent = hashlib.sha256()
        self.received = hashlib.sha256()
        self.sent_any = False
        self.received_any = False

    def digests(self) -> tuple[bytes, bytes]:
        """SHA-256 of what was sent and of what was received; 32 zero bytes for a
        direction in which nothing passed yet."""
        zero = bytes(32)
        return (self.sent.digest() if self.sent_any else zero,
                self.received.digest() if self.received_any else zero)


def frame(payload: bytes, *, cipher: PacketCipher | None = None,
          transcript: Transcript | None = None, packet_size: int = SEND_PACKET) -> bytes:
    """One message as packets, the last one marked end-of-message."""
    out = bytearray()
    chunks = [payload[i:i + packet_size] for i in range(0, len(payload), packet_size)] or [b""]
    for i, chunk in enumerate(chunks):
        end = 1 if i == len(chunks) - 1 else 0
        if cipher is not None:
            out += cipher.seal(end, chunk)
        else:
            packet = _HDR.pack(end, len(chunk)) + chunk
            if transcript is not None:
                transcript.note_sent(packet)
            out += packet
    return bytes(out)


class PacketDecoder:
    """Bytes from a peer in, whole messages out. Raises :class:`WireError` on a bad header,
    an oversized packet or message, or a packet that does not decrypt."""

    def __init__(self, peer: str, *, max_message: int = MAX_MESSAGE) -> None:
        self.peer = peer
        self.max_message = max_message
        self.cipher: PacketCipher | None = None
        self.transcript: Transcript | None = None
        self._buf = bytearray()
        self._parts: list[bytes] = []
        self._size = 0

    def feed(self, data: bytes) -> None:
        self._buf += data

    @property
    def pending(self) -> int:
        """Bytes received and not yet part of a whole message."""
        return len(self._buf) + self._size

    def next_message(self) -> bytes | None:
        """The next whole message's payload, or None until more bytes arrive."""
        while len(self._buf) >= HEADER_SIZE:
            end, length = _HDR.unpack_from(self._buf)
            if end > 1:
                raise WireError(f"bad packet header: end flag {end}", peer=self.peer)
            if length > MAX_PACKET:
                raise WireError(f"packet of {length} bytes exceeds the {MAX_PACKET}-byte "
                                "limit", peer=self.peer)
            if length == 0 and end == 0:
                raise WireError("empty packet that is not an end of message",
                                peer=self.peer)
            if len(self._buf) < HEADER_SIZE + length:
                return None
            header = bytes(self._buf[:HEADER_SIZE])
            body = bytes(self._buf[HEADER_SIZE:HEADER_SIZE + length])
            del self._buf[:HEADER_SIZE + length]
            if self.cipher is not None:
                body = self.cipher.open(header, body)
            elif self.transcript is not None:
                self.transcript.note_received(header + body)
            self._size += len(body)
            if self._size > self.max_message:
                raise WireError(f"message longer than {self.max_message} bytes",
                                peer=self.peer)
            self._parts.append(body)
            if end:
                msg = b"".join(self._parts)
                self._parts, self._size = [], 0
                return msg
        return None

    def messages(self) -> Iterator[bytes]:
        while (msg := self.next_message()) is not None:
            yield msg


class Writer:
    """A message under construction. ``crypto`` selects length-prefixed strings, as a
    connection does once it encrypts."""

    def __init__(self, *, crypto: bool = False) -> None:
        self.crypto = crypto
        self._buf = bytearray()

    def put_int(self, value: int) -> "Writer":
        if not -(1 << 63) <= value < (1 << 63):
            raise ValueError(f"integer {value} does not fit CEDAR's 64 bits")
        self._buf += _INT.pack(value)
        return self

    def put_char(self, value: int) -> "Writer":
        self._buf.append(value & 0xFF)
        return self

    def put_bool(self, value: bool) -> "Writer":
        return self.put_int(1 if value else 0)

    def put_double(self, value: float) -> "Writer":
        frac, exp = math.frexp(value)
        return self.put_int(int(frac * FRAC_CONST)).put_int(exp)

    def put_string(self, value: str | None) -> "Writer":
        if value is None:
            data = NULL_STRING
        else:
            raw = value.encode("utf-8", "surrogateescape")
            if b"\0" in raw:
                raise ValueError("a CEDAR string cannot hold a NUL byte")
            data = raw + b"\0"
        if self.crypto:
            self.put_int(len(data))
        self._buf += data
        return self

    def put_secret(self, value: str) -> "Writer":
        """A value HTCondor sends with ``put_secret``: encrypted when the connection has a
        key, which on an AES-GCM connection is already so for everything."""
        return self.put_string(value)

    def put_raw(self, data: bytes) -> "Writer":
        self._buf += data
        return self

    def payload(self) -> bytes:
        return bytes(self._buf)


@dataclass
class Reader:
    """One received message, read front to back. Every short or malformed read raises
    :class:`WireError` naming the peer and what was being read."""

    data: bytes
    peer: str
    crypto: bool = False
    pos: int = 0

    def _take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise WireError(f"message ends inside {what} (needs {n} bytes at offset "
                            f"{self.pos}, has {len(self.data) - self.pos})", peer=self.peer)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def get_raw(self, n: int, what: str = "raw bytes") -> bytes:
        """``n`` bytes as they come (what :meth:`Writer.put_raw` sends)."""
        return self._take(n, what)

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def get_int(self, what: str = "an integer") -> int:
        return int(_INT.unpack(self._take(8, what))[0])

    def get_char(self, what: str = "a char") -> int:
        return self._take(1, what)[0]

    def get_bool(self, what: str = "a boolean") -> bool:
        return self.get_int(what) != 0

    def get_double(self, what: str = "a double") -> float:
        frac = self.get_int(what)
        exp = self.get_int(what)
        if not -2000 < exp < 2000:
            raise WireError(f"bad exponent {exp} in {what}", peer=self.peer)
        return math.ldexp(frac / FRAC_CONST, exp)

    def get_string(self, what: str = "a string") -> str | None:
        if self.crypto:
            n = self.get_int(what)
            if n < 1 or n > self.remaining:
                raise WireError(f"bad length {n} for {what}", peer=self.peer)
            raw = self._take(n, what)
            if raw == NULL_STRING:
                return None
            if raw[-1] != 0 or b"\0" in raw[:-1]:
                raise WireError(f"{what} is not NUL-terminated at its length",
                                peer=self.peer)
            raw = raw[:-1]
        else:
            if self.pos < len(self.data) and self.data[self.pos] == NULL_STRING[0]:
                self.pos += 1
                return None
            nul = self.data.find(b"\0", self.pos)
            if nul < 0:
                raise WireError(f"message ends inside {what} (no NUL)", peer=self.peer)
            raw = self.data[self.pos:nul]
            self.pos = nul + 1
        return raw.decode("utf-8", "surrogateescape")

    def get_str(self, what: str = "a string") -> str:
        """A string that must not be the null string."""
        s = self.get_string(what)
        if s is None:
            raise WireError(f"null string for {what}", peer=self.peer)
        return s

    def get_secret(self, what: str = "a secret") -> str:
        return self.get_str(what)

    def end(self, what: str = "the message") -> None:
        """The message must be consumed exactly (HTCondor's end_of_message check)."""
        if self.pos != len(self.data):
            raise WireError(f"{len(self.data) - self.pos} unread bytes at the end of "
                            f"{what}", peer=self.peer)
