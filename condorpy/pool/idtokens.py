"""HTCondor's IDTOKENS (``TOKEN``) authentication, client side, sans-I/O.

An IDTOKEN is a JWT (``header.payload.signature``, base64url) that the pool's
``condor_token_create`` signs with HMAC-SHA256 under a key derived from the pool
signing key. The client never sends the signature: it proves it holds it through
AKEP2, the protocol of HTCondor's password method, version 2 (htcondor/htcondor
``src/condor_io/condor_auth_passwd.cpp``; facts in ``docs/pool-protocol.md``):

1. client: ``int status`` (0 OK, -1 error), ``int len(a)``, ``string a`` (the token's
   subject), ``string header.payload``, ``int 256``, 256 random bytes ``ra``; EOM;
2. server: ``int status``, ``int len(a)``, ``string a``, ``int len(b)``, ``string b``
   (the server's identity), ``int 256``, ``ra``, ``int 256``, ``rb``, ``int len(hkt)``,
   ``hkt`` = HMAC-SHA1(K, ``"a b" NUL ra rb``); EOM;
3. client: ``int status``, ``int len(a)``, ``string a``, ``int 256``, ``rb``,
   ``int len(hk)``, ``hk`` = HMAC-SHA1(K, ``a NUL rb``); EOM.

``K`` = HKDF-SHA256(ikm = the decoded signature, salt = a fixed 256-byte seed followed
by ``header.payload``, info = ``"master ka"``, 32 bytes). The server re-signs
``header.payload`` with the pool key to get the same ``K``; so a server that answers with
a valid ``hkt`` has proven it holds the pool key, and vice versa.

Which token: the first, in HTCondor's search order, whose issuer (``iss``) is the
server's ``TrustDomain`` and whose key id (``kid``) is one of the server's
``IssuerKeys``. Token text is a credential: nothing here logs or prints it.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as chmac
from cryptography.hazmat.primitives.constant_time import bytes_eq
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from condorpy.config import Config
from condorpy.errors import SecurityError, WireError
from condorpy.pool.cedar import Reader, Writer

KEY_LEN = 256              # AUTH_PW_KEY_LEN: the size of ra and rb
KEY_STRENGTH = 32          # K and K' (key_strength_bytes_v2)
MAX_NAME_LEN = 1024        # AUTH_PW_MAX_NAME_LEN: a and b
MAX_MAC_LEN = 64           # EVP_MAX_MD_SIZE
MAX_TOKEN_LEN = 65536
MAX_TOKEN_FILE = 1 << 20
STATUS_OK = 0
STATUS_ERROR = -1
DEFAULT_SYSTEM_DIRECTORY = "/etc/condor/tokens.d"

# setup_seed(): constants HTCondor chose at random once; the HKDF salts for K and K'.
SEED_KA = bytes([
    62, 74, 80, 32, 71, 213, 244, 229, 220, 124, 105, 187, 82, 16, 203, 182, 22, 122,
    221, 128, 132, 247, 221, 158, 243, 173, 44, 202, 113, 210, 131, 221, 17, 74, 79, 187,
    123, 30, 233, 10, 223, 168, 98, 196, 67, 4, 222, 84, 115, 163, 23, 47, 115, 92, 44,
    187, 110, 119, 91, 93, 64, 211, 159, 172, 232, 115, 24, 37, 35, 249, 37, 43, 98, 59,
    224, 212, 177, 103, 163, 168, 4, 12, 172, 254, 233, 238, 61, 160, 44, 10, 187, 244,
    217, 216, 177, 31, 137, 0, 76, 148, 57, 35, 206, 93, 149, 8, 187, 63, 4, 188, 102,
    163, 250, 32, 161, 58, 65, 108, 94, 111, 78, 13, 49, 135, 212, 95, 199, 131, 53, 197,
    228, 133, 219, 44, 90, 55, 23, 151, 12, 194, 110, 123, 107, 157, 25, 101, 180, 122,
    103, 223, 119, 163, 31, 34, 240, 138, 108, 11, 165, 112, 151, 162, 26, 156, 167, 198,
    4, 36, 247, 39, 57, 171, 92, 185, 21, 164, 24, 91, 209, 9, 130, 142, 53, 228, 33, 8,
    171, 133, 28, 8, 163, 223, 253, 224, 227, 176, 111, 61, 57, 56, 205, 173, 109, 246,
    239, 154, 111, 109, 194, 203, 116, 240, 34, 133, 18, 235, 122, 61, 104, 35, 1, 6, 132,
    176, 21, 193, 42, 195, 1, 76, 79, 159, 147, 142, 56, 77, 173, 30, 59, 215, 69, 255,
    140, 20, 31, 215, 11, 70, 91, 168, 175, 93, 27, 152, 180, 177])
SEED_KB = bytes([
    1, 0, 38, 173, 117, 223, 198, 193, 144, 165, 162, 102, 176, 209, 181, 216, 96, 247,
    207, 163, 132, 103, 32, 85, 1, 205, 70, 13, 74, 136, 212, 115, 250, 82, 224, 179, 233,
    20, 30, 51, 201, 125, 133, 30, 238, 45, 211, 54, 50, 243, 136, 103, 104, 239, 1, 14,
    200, 223, 221, 102, 138, 222, 146, 213, 195, 67, 8, 187, 36, 56, 149, 216, 78, 215,
    133, 226, 114, 104, 204, 94, 231, 86, 13, 228, 152, 40, 250, 183, 102, 194, 173, 140,
    11, 44, 10, 251, 67, 92, 56, 45, 181, 210, 255, 54, 168, 174, 173, 88, 32, 71, 10, 154,
    212, 93, 121, 133, 111, 94, 46, 206, 137, 75, 210, 80, 121, 41, 220, 242, 111, 125, 9,
    240, 2, 143, 26, 196, 217, 113, 244, 130, 12, 95, 84, 113, 126, 157, 205, 171, 235, 33,
    95, 97, 101, 93, 234, 212, 183, 44, 61, 59, 95, 102, 250, 75, 48, 184, 88, 136, 214,
    47, 172, 212, 18, 156, 19, 4, 145, 159, 105, 173, 109, 140, 44, 67, 217, 206, 92, 219,
    49, 212, 88, 3, 82, 199, 54, 43, 141, 128, 183, 239, 27, 186, 93, 103, 102, 96, 169,
    68, 118, 69, 2, 249, 29, 29, 60, 84, 145, 12, 8, 139, 204, 183, 43, 17, 148, 138, 94,
    26, 29, 205, 4, 54, 156, 23, 210, 152, 128, 76, 33, 110, 122, 38, 144, 184, 192, 233,
    112, 54, 51, 0, 208, 146, 223, 36, 251, 140])
assert len(SEED_KA) == KEY_LEN and len(SEED_KB) == KEY_LEN


@dataclass(frozen=True)
class Token:
    """One IDTOKEN as found on disk. ``where`` names its file and line for log lines;
    the secret parts never appear in ``repr``."""

    issuer: str
    key_id: str
    subject: str
    expires: int | None
    where: str
    header_payload: str = field(repr=False)
    signature: bytes = field(repr=False)


def _b64url(text: str, what: str, where: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise SecurityError(f"{where}: the token's {what} is not base64url") from None


def parse_token(line: str, where: str) -> Token:
    """A JWT line from a token file. The signature is not checked (only the pool can)."""
    parts = line.strip().split(".")
    if len(parts) != 3 or not all(parts):
        raise SecurityError(f"{where}: not a JWT (header.payload.signature)")
    try:
        header = json.loads(_b64url(parts[0], "header", where))
        payload = json.loads(_b64url(parts[1], "payload", where))
    except (ValueError, UnicodeDecodeError):
        raise SecurityError(f"{where}: the token's header or payload is not JSON"
                            ) from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise SecurityError(f"{where}: the token's header or payload is not an object")
    kid, iss, sub, exp = header.get("kid"), payload.get("iss"), payload.get("sub"), \
        payload.get("exp")
    if not isinstance(kid, str) or not kid:
        raise SecurityError(f"{where}: the token has no key id (kid)")
    if not isinstance(sub, str) or not sub:
        raise SecurityError(f"{where}: the token has no subject (sub)")
    if not isinstance(iss, str):
        iss = ""
    if len(sub.encode()) >= MAX_NAME_LEN or len(line) > MAX_TOKEN_LEN:
        raise SecurityError(f"{where}: the token is too long")
    if "\0" in sub:
        raise SecurityError(f"{where}: the token's subject holds a NUL")
    expires = exp if isinstance(exp, int) and not isinstance(exp, bool) else None
    return Token(issuer=iss, key_id=kid, subject=sub, expires=expires, where=where,
                 header_payload=f"{parts[0]}.{parts[1]}",
                 signature=_b64url(parts[2], "signature", where))


def token_directory(cfg: Config) -> str:
    """Where a daemon looks for its tokens (``findTokens``): SEC_TOKEN_DIRECTORY when set,
    else SEC_TOKEN_SYSTEM_DIRECTORY (HTCondor's default ``$(ETC)/tokens.d``, which the
    packages make /etc/condor/tokens.d). A daemon never reads ``~/.condor/tokens.d``."""
    return ((cfg.get("SEC_TOKEN_DIRECTORY") or "").strip()
            or (cfg.get("SEC_TOKEN_SYSTEM_DIRECTORY") or "").strip()
            or DEFAULT_SYSTEM_DIRECTORY)


@dataclass(frozen=True)
class TokenSearch:
    """What to search: a directory, the file names to skip (LOCAL_CONFIG_DIR_EXCLUDE_REGEXP,
    as HTCondor does) and the subsystem whose ``<SUBSYS>_auto_generated_token`` file
    goes first."""

    directory: str
    exclude: str = ""
    subsystem: str = "STARTD"

    def files(self) -> list[Path]:
        base = Path(self.directory)
        try:
            entries = sorted(p for p in base.iterdir() if not p.is_dir())
        except OSError:
            return []
        skip = re.compile(self.exclude) if self.exclude else None
        chosen = [p for p in entries if skip is None or not skip.match(p.name)]
        first = f"{self.subsystem}_auto_generated_token".lower()
        return sorted(chosen, key=lambda p: p.name.lower() != first)


@dataclass(frozen=True)
class Choice:
    """The outcome of a token search: the token, or why none fits."""

    token: Token | None
    examined: int
    reasons: tuple[str, ...]


def choose_token(search: TokenSearch, issuer: str, key_ids: frozenset[str],
                 now: float | None = None, read: Callable[[Path], bytes] = Path.read_bytes) -> Choice:
    """The first token whose issuer is the server's trust domain (when the server names
    one) and whose key the server holds (when it names its keys); with ``now``, not
    expired (HTCondor leaves that to the server)."""
    reasons: list[str] = []
    examined = 0
    for path in search.files():
        try:
            data = read(path)[:MAX_TOKEN_FILE]
        except OSError as exc:
            reasons.append(f"{path}: {exc.strerror or exc}")
            continue
        for n, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            examined += 1
            where = f"{path}:{n}"
            try:
                tok = parse_token(line, where)
            except SecurityError as exc:
                reasons.append(str(exc))
                continue
            if key_ids and tok.key_id not in key_ids:
                reasons.append(f"{where}: signed with key {tok.key_id}, which the server "
                               "does not hold")
            elif issuer and tok.issuer != issuer:
                reasons.append(f"{where}: issued by {tok.issuer or 'nobody'}, not "
                               f"{issuer}")
            elif now is not None and tok.expires is not None and tok.expires <= now:
                reasons.append(f"{where}: expired")
            else:
                return Choice(tok, examined, tuple(reasons))
    return Choice(None, examined, tuple(reasons))


def no_token_message(search: TokenSearch, issuer: str, key_ids: frozenset[str],
                     choice: Choice) -> str:
    why = "; ".join(choice.reasons[:3]) if choice.reasons else (
        "it holds no token" if not choice.examined else "")
    keys = ",".join(sorted(key_ids)) or "any"
    return (f"no IDTOKEN in {search.directory} fits the peer (trust domain "
            f"{issuer or 'unnamed'}, signing keys {keys}){': ' + why if why else ''}; "
            "make one on the central manager with condor_token_create and put it there")


def _hkdf(ikm: bytes, salt: bytes, info: bytes, length: int = KEY_STRENGTH) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def derive_keys(token: Token) -> tuple[bytes, bytes]:
    """K (the MAC key) and K' (the wrap key of the pre-ECDH days) from the token."""
    text = token.header_payload.encode("ascii")
    return (_hkdf(token.signature, SEED_KA + text, b"master ka"),
            _hkdf(token.signature, SEED_KB + text, b"master kb"))


def _hmac_sha1(key: bytes, data: bytes) -> bytes:
    # HTCondor's Condor_Auth_Passwd::hmac is HMAC-SHA1, K the key
    h = chmac.HMAC(key, hashes.SHA1())
    h.update(data)
    return h.finalize()


def hkt(k: bytes, a: str, b: str, ra: bytes, rb: bytes) -> bytes:
    return _hmac_sha1(k, f"{a} {b}".encode() + b"\0" + ra + rb)


def hk(k: bytes, a: str, rb: bytes) -> bytes:
    return _hmac_sha1(k, a.encode() + b"\0" + rb)


def message_one(token: Token, ra: bytes) -> bytes:
    a = token.subject
    return (Writer().put_int(STATUS_OK).put_int(len(a.encode())).put_string(a)
            .put_string(token.header_payload).put_int(len(ra)).put_raw(ra).payload())


@dataclass(frozen=True)
class ServerReply:
    status: int
    a: str
    b: str
    ra: bytes
    rb: bytes
    hkt: bytes = field(repr=False)


def _bytes(r: Reader, limit: int, what: str) -> bytes:
    n = r.get_int(f"the length of {what}")
    if not 0 <= n <= limit:
        raise WireError(f"{what} is {n} bytes long (at most {limit})", peer=r.peer)
    return r.get_raw(n, what)


def _name(r: Reader, what: str) -> str:
    n = r.get_int(f"the length of {what}")
    s = r.get_str(what)
    if not 0 <= n < MAX_NAME_LEN or len(s.encode()) != n:
        raise WireError(f"{what} of {len(s.encode())} bytes announced as {n}",
                        peer=r.peer)
    return s


def parse_message_two(payload: bytes, peer: str) -> ServerReply:
    r = Reader(payload, peer)
    status = r.get_int("the server's TOKEN status")
    a = _name(r, "the client name the server echoes")
    b = _name(r, "the server's name")
    ra = _bytes(r, KEY_LEN, "the echoed ra")
    rb = _bytes(r, KEY_LEN, "the server's rb")
    mac = _bytes(r, MAX_MAC_LEN, "the server's hkt")
    r.end("the server's TOKEN reply")
    return ServerReply(status, a, b, ra, rb, mac)


def message_three(a: str, rb: bytes, k: bytes) -> bytes:
    mac = hk(k, a, rb)
    return (Writer().put_int(STATUS_OK).put_int(len(a.encode())).put_string(a)
            .put_int(len(rb)).put_raw(rb).put_int(len(mac)).put_raw(mac).payload())


def error_message_three() -> bytes:
    """Step 3 when step 2 failed: the client still ends the exchange, with nothing in it."""
    return (Writer().put_int(STATUS_ERROR).put_int(0).put_string("").put_int(0)
            .put_int(0).payload())


def check_reply(reply: ServerReply, token: Token, ra: bytes, k: bytes, peer: str) -> str:
    """The server's identity, once its reply proves it holds the pool key."""
    if reply.status != STATUS_OK:
        raise SecurityError(f"the peer rejected IDTOKEN {token.where} (subject "
                            f"{token.subject}, key {token.key_id}): is it revoked, "
                            "expired, or from another pool's signing key?", peer=peer)
    if len(reply.ra) != KEY_LEN or len(reply.rb) != KEY_LEN:
        raise SecurityError("the peer's TOKEN reply has random strings of the wrong "
                            "size", peer=peer)
    if reply.a != token.subject or not bytes_eq(reply.ra, ra):
        raise SecurityError("the peer's TOKEN reply echoes another client or nonce",
                            peer=peer)
    if not reply.b:
        raise SecurityError("the peer's TOKEN reply names no server", peer=peer)
    if not bytes_eq(hkt(k, reply.a, reply.b, reply.ra, reply.rb), reply.hkt):
        raise SecurityError(f"the peer's TOKEN proof does not match IDTOKEN {token.where}: "
                            f"the token was not signed with this pool's key "
                            f"{token.key_id} (another pool's, or damaged), or the peer is "
                            "not the pool's", peer=peer)
    return reply.b


# the generator protocol of condorpy.pool.security (Send/Receive), kept structural here
# to avoid an import cycle: the caller wraps the bytes
Exchange = Generator[tuple[str, bytes], bytes | None, str]


def exchange(token: Token, peer: str, random: Callable[[int], bytes] = os.urandom
             ) -> Exchange:
    """Run the three messages: yields ``("send", bytes)`` and ``("receive", b"")``;
    returns the server's identity."""
    ra = random(KEY_LEN)
    k, _k_prime = derive_keys(token)
    yield ("send", message_one(token, ra))
    payload = yield ("receive", b"the TOKEN reply")
    assert payload is not None
    try:
        reply = parse_message_two(payload, peer)
        server = check_reply(reply, token, ra, k, peer)
    except (SecurityError, WireError):
        yield ("send", error_message_three())
        raise
    yield ("send", message_three(token.subject, reply.rb, k))
    return server
