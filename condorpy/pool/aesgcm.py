"""AES-256-GCM on CEDAR packets, and the key derivations that feed it.

Facts (htcondor/htcondor ``src/condor_io/condor_crypt_aesgcm.cpp``, ``reli_sock.cpp``,
``condor_crypt.cpp``, ``condor_secman.cpp``; checked against a real 23.9.6 collector,
whose ``D_SECURITY:2`` log prints the IVs and AAD it uses):

- Every packet is sealed apart. The first packet in each direction starts with a
  random 16-byte IV; packet *n* (counted from 0, per direction) uses that IV with its
  first 4 bytes, read as a big-endian number, increased by *n*. The body is
  ``[IV] ciphertext tag`` (16-byte tag) and the header's length counts all of it.
- The associated data is the packet's 5-byte header; for the first packet in each
  direction it is preceded by SHA-256 of every plaintext byte the sender had sent on
  the connection and SHA-256 of every plaintext byte it had received (32 zero bytes
  for a direction with nothing), taken when encryption was switched on. That binds
  the clear handshake to the encrypted channel.
- The key of a negotiated session: ECDH on P-256 (public keys exchanged as base64 of
  the 65-byte uncompressed point), then HKDF-SHA256 of the shared secret with salt
  ``htcondor`` and info ``keygen``, 32 bytes. The key of a session carried in a claim
  id: the same HKDF over the ASCII text of the claim id's key (not hex-decoded).
"""

from __future__ import annotations

import base64
import binascii
import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from condorpy.errors import SecurityError, WireError
from condorpy.pool.cedar import Transcript

IV_SIZE = 16
TAG_SIZE = 16
KEY_SIZE = 32
_HDR = struct.Struct(">BI")


def hkdf_key(ikm: bytes, length: int = KEY_SIZE) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=b"htcondor",
                info=b"keygen").derive(ikm)


class EcdhKey:
    """This side's ephemeral P-256 key for one handshake."""

    def __init__(self) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())

    def public_b64(self) -> str:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        point = self._key.public_key().public_bytes(Encoding.X962,
                                                    PublicFormat.UncompressedPoint)
        return base64.b64encode(point).decode("ascii")

    def session_key(self, peer_b64: str, peer: str) -> bytes:
        """The AES key agreed with the peer whose public key is ``peer_b64``."""
        try:
            point = base64.b64decode(peer_b64, validate=True)
            pub = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        except (ValueError, binascii.Error):
            raise SecurityError("the peer's ECDHPublicKey is not a P-256 point",
                                peer=peer) from None
        return hkdf_key(self._key.exchange(ec.ECDH(), pub))


def _iv(base: bytes, n: int) -> bytes:
    head = (int.from_bytes(base[:4], "big") + n) & 0xFFFFFFFF
    return head.to_bytes(4, "big") + base[4:]


class AesGcmCipher:
    """One connection's AES-GCM state, both directions (a :class:`PacketCipher`)."""

    def __init__(self, key: bytes, transcript: Transcript, peer: str) -> None:
        if len(key) != KEY_SIZE:
            raise SecurityError(f"AES-GCM key of {len(key)} bytes, not {KEY_SIZE}", peer=peer)
        self._aead = AESGCM(key)
        self.peer = peer
        sent, received = transcript.digests()
        self._send_prefix = sent + received
        self._recv_prefix = received + sent
        self._send_iv: bytes | None = None
        self._recv_iv: bytes | None = None
        self.sent_packets = 0
        self.received_packets = 0

    def seal(self, end: int, plain: bytes) -> bytes:
        first = self._send_iv is None
        if self._send_iv is None:
            self._send_iv = os.urandom(IV_SIZE)
        length = len(plain) + TAG_SIZE + (IV_SIZE if first else 0)
        header = _HDR.pack(end, length)
        aad = self._send_prefix + header if first else header
        sealed = self._aead.encrypt(_iv(self._send_iv, self.sent_packets), plain, aad)
        self.sent_packets += 1
        return header + (self._send_iv if first else b"") + sealed

    def open(self, header: bytes, body: bytes) -> bytes:
        first = self._recv_iv is None
        if self._recv_iv is None:
            if len(body) < IV_SIZE + TAG_SIZE:
                raise WireError(f"encrypted packet of {len(body)} bytes is too short",
                                peer=self.peer)
            self._recv_iv, body = body[:IV_SIZE], body[IV_SIZE:]
        elif len(body) < TAG_SIZE:
            raise WireError(f"encrypted packet of {len(body)} bytes is too short",
                            peer=self.peer)
        aad = self._recv_prefix + header if first else header
        try:
            plain = self._aead.decrypt(_iv(self._recv_iv, self.received_packets), body, aad)
        except InvalidTag:
            raise WireError(f"encrypted packet {self.received_packets} does not verify "
                            "(wrong key, IV or handshake transcript)", peer=self.peer) from None
        self.received_packets += 1
        return plain
