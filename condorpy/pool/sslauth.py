"""HTCondor's SSL authentication method, both sides, sans-I/O.

A TLS handshake whose records travel inside CEDAR messages, then a 256-byte key the
server writes over TLS (htcondor/htcondor ``src/condor_io/condor_auth_ssl.cpp``). The
key is not used by condorpy: the session's key comes from ECDH, as for every method.
TLS itself is Python's :mod:`ssl` over memory BIOs (:class:`ssl.SSLObject`); this module
only moves its bytes.

Wire (every value an 8-byte CEDAR int, each message ending in EOM):

1. server: ``int status`` (0: ready, -1: it could not set up TLS); client: ``int
   status`` likewise; either non-zero ends the method;
2. handshake rounds, strictly alternating, client first: ``int status``, ``int len``,
   ``len`` raw bytes of TLS records (perhaps none). A status says where the sender's
   TLS engine stands: 2 (waiting for data), 4 (done, holding), 3 (quitting). Each side
   advances its TLS engine once per round before its message; the rounds end when
   both have said 4; a 3 from either ends the method;
3. each side checks the peer's certificate (below); a side that refuses it says 3 in
   its next message (the server at once, with no bytes; the client after reading the
   server's first key message);
4. key rounds, server first: the server writes 256 random bytes over TLS; the
   messages are as in 2 until both have said 4.

Checks, as HTCondor makes them: the client verifies the server's chain against
``AUTH_SSL_CLIENT_CAFILE``/``CADIR`` (and the system's CAs unless
``AUTH_SSL_CLIENT_USE_DEFAULT_CAS`` is false) and that the certificate names the host
the client meant (a DNS subjectAltName, ``*`` matching within a label, else the
subject's CN), unless ``SSL_SKIP_HOST_CHECK``. The server asks for a client
certificate and verifies one that comes against ``AUTH_SSL_SERVER_CAFILE``/``CADIR``;
a client without one is ``unauthenticated`` unless ``AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE``
refuses it. The authenticated name is the certificate's subject as OpenSSL writes it
on one line (``/C=US/O=Org/CN=host``), mapped through ``CERTIFICATE_MAPFILE`` with
method ``SSL`` (:mod:`condorpy.pool.mapfile`); unmapped it is ``ssl@unmapped``.
Not done: proxy certificates (``AUTH_SSL_ALLOW_CLIENT_PROXY``), known_hosts and
``BOOTSTRAP_SSL_SERVER_TRUST``, VOMS, SciTokens. With ``AUTH_SSL_REQUIRE_CLIENT_MAPPING``
the server refuses a client certificate the map file does not map.
"""

from __future__ import annotations

import ipaddress
import os
import re
import ssl
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Protocol

from condorpy.config import Config
from condorpy.errors import SecurityError
from condorpy.pool.cedar import Reader, Writer

# the statuses each side reports (condor_auth_ssl.h)
ERROR = -1
OK = 0
SENDING = 1
RECEIVING = 2
QUITTING = 3
HOLDING = 4
MAX_DATA = 1 << 20
KEY_LEN = 256
MAX_KEY_ROUNDS = 256
# a handshake that has not ended after this many messages is not going to
MAX_HANDSHAKE_ROUNDS = 64
HTCONDOR_CIPHERS = (
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:"
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-SHA256:"
    "ECDHE-RSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES256-SHA384:"
    "ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384:ECDHE-ECDSA-AES256-SHA:"
    "ECDHE-RSA-AES256-SHA:DHE-RSA-AES128-SHA256:DHE-RSA-AES128-SHA:DHE-RSA-AES256-SHA256:"
    "DHE-RSA-AES256-SHA:AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA256:AES256-SHA256:"
    "AES128-SHA:AES256-SHA:!DSS")
UNAUTHENTICATED = "unauthenticated"
UNMAPPED = "ssl@unmapped"

Step = Generator[tuple[str, bytes], bytes | None, "Peer"]


# --- framing -----------------------------------------------------------------------

def status_message(status: int) -> bytes:
    return Writer().put_int(status).payload()


def read_status(payload: bytes, peer: str) -> int:
    r = Reader(payload, peer)
    status = r.get_int("the SSL status")
    r.end("the SSL status")
    return status


def tls_message(status: int, data: bytes) -> bytes:
    return Writer().put_int(status).put_int(len(data)).put_raw(data).payload()


def read_tls_message(payload: bytes, peer: str) -> tuple[int, bytes]:
    r = Reader(payload, peer)
    status = r.get_int("the SSL status")
    n = r.get_int("the SSL record length")
    if not 0 <= n <= MAX_DATA:
        raise SecurityError(f"SSL: the peer sent a record length of {n}", peer=peer)
    data = r.get_raw(n, "the SSL records")
    r.end("the SSL message")
    return status, data


# --- settings ----------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    """One side's TLS material and checks, from the AUTH_SSL_* knobs."""

    cafile: tuple[str, ...] = ()
    cadir: str = ""
    certs: tuple[tuple[str, str], ...] = ()        # (certificate chain, key) pairs
    use_default_cas: bool = True
    ciphers: str = HTCONDOR_CIPHERS
    require_client_cert: bool = False               # server: refuse anonymous clients
    require_client_mapping: bool = False            # server: refuse unmapped subjects
    skip_host_check: bool = False                   # client

    def readable_cert(self) -> tuple[str, str] | None:
        """The certificate and key pair used: the last of the list that can be opened,
        as HTCondor loads each in turn (a server offers SSL only when there is one)."""
        found = None
        for cert, key in self.certs:
            if os.access(cert, os.R_OK) and os.access(key, os.R_OK):
                found = (cert, key)
        return found


def _paths(cfg: Config, name: str) -> tuple[str, ...]:
    return tuple(cfg.get_list(name)) if cfg.get(name) else ()


def _side_settings(cfg: Config, certfile: str, keyfile: str, cafile: str, cadir: str,
                   default_cas: str) -> Settings:
    """What the client's and the server's settings share, from that side's knobs."""
    return Settings(certs=tuple(zip(_paths(cfg, certfile), _paths(cfg, keyfile))),
                    cafile=_paths(cfg, cafile), cadir=cfg.get(cadir) or "",
                    use_default_cas=cfg.get_bool(default_cas, True),
                    ciphers=cfg.get("AUTH_SSL_CIPHERLIST") or HTCONDOR_CIPHERS,
                    require_client_cert=cfg.get_bool("AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE",
                                                     False))


def client_settings(cfg: Config) -> Settings:
    return replace(_side_settings(cfg, "AUTH_SSL_CLIENT_CERTFILE", "AUTH_SSL_CLIENT_KEYFILE",
                                  "AUTH_SSL_CLIENT_CAFILE", "AUTH_SSL_CLIENT_CADIR",
                                  "AUTH_SSL_CLIENT_USE_DEFAULT_CAS"),
                   skip_host_check=cfg.get_bool("SSL_SKIP_HOST_CHECK", False))


def server_settings(cfg: Config) -> Settings:
    return replace(_side_settings(cfg, "AUTH_SSL_SERVER_CERTFILE", "AUTH_SSL_SERVER_KEYFILE",
                                  "AUTH_SSL_SERVER_CAFILE", "AUTH_SSL_SERVER_CADIR",
                                  "AUTH_SSL_SERVER_USE_DEFAULT_CAS"),
                   require_client_mapping=cfg.get_bool("AUTH_SSL_REQUIRE_CLIENT_MAPPING",
                                                       False))


def make_context(settings: Settings, server: bool) -> ssl.SSLContext:
    """The TLS context for one side, as HTCondor sets up its own: TLS 1.2 or later,
    peer verification, HTCondor's cipher list; the last readable CA file of the list.
    Raises SecurityError naming what is missing or unreadable."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False        # the host check is HTCondor's own (host_matches)
    # the server asks for a certificate and verifies one that comes, but takes a client
    # without one (SSL_VERIFY_PEER without FAIL_IF_NO_PEER_CERT)
    ctx.verify_mode = ssl.CERT_OPTIONAL if server else ssl.CERT_REQUIRED
    side = "SERVER" if server else "CLIENT"
    try:
        ctx.set_ciphers(settings.ciphers)
    except ssl.SSLError:
        raise SecurityError("SSL: AUTH_SSL_CIPHERLIST names no usable cipher") from None
    readable = [f for f in settings.cafile if os.access(f, os.R_OK)]
    try:
        if readable or settings.cadir:
            ctx.load_verify_locations(cafile=readable[-1] if readable else None,
                                      capath=settings.cadir or None)
        if settings.use_default_cas:
            ctx.set_default_verify_paths()
    except (ssl.SSLError, OSError) as exc:
        raise SecurityError(f"SSL: cannot load AUTH_SSL_{side}_CAFILE/CADIR "
                            f"({', '.join(settings.cafile) or settings.cadir}): {exc}"
                            ) from None
    pair = settings.readable_cert()
    if pair is None and (server or settings.require_client_cert):
        named = ", ".join(c for c, _ in settings.certs) or "unset"
        raise SecurityError(f"SSL: no readable certificate and key in AUTH_SSL_{side}_"
                            f"CERTFILE/KEYFILE ({named})")
    if pair is not None:
        try:
            ctx.load_cert_chain(pair[0], pair[1])
        except (ssl.SSLError, OSError) as exc:
            raise SecurityError(f"SSL: cannot load certificate {pair[0]} with key "
                                f"{pair[1]}: {exc}") from None
    return ctx


# --- certificates ------------------------------------------------------------------

# OpenSSL's short names for the attributes a subject usually holds
SHORT_NAMES = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
    "2.5.4.11": "OU", "2.5.4.5": "serialNumber", "2.5.4.4": "SN", "2.5.4.42": "GN",
    "2.5.4.12": "title", "2.5.4.9": "street", "2.5.4.17": "postalCode",
    "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
    "1.2.840.113549.1.9.1": "emailAddress",
}


def subject_oneline(der: bytes) -> str:
    """The certificate's subject as OpenSSL's one-line form: ``/C=US/O=Org/CN=host``."""
    from cryptography import x509

    cert = x509.load_der_x509_certificate(der)
    parts: list[str] = []
    for rdn in cert.subject.rdns:
        parts.append("+".join(
            f"{SHORT_NAMES.get(a.oid.dotted_string, a.oid.dotted_string)}="
            f"{a.value if isinstance(a.value, str) else a.value.hex()}"
            for a in rdn))
    return "".join("/" + p for p in parts)


def _label_match(pattern: str, label: str) -> bool:
    rx = "".join(".*" if c == "*" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, label) is not None


def hostname_match(pattern: str, host: str) -> bool:
    """HTCondor's match of a certificate name against a host: label by label, case
    folded, ``*`` within one label."""
    p, h = pattern.lower().rstrip(".").split("."), host.lower().rstrip(".").split(".")
    return len(p) == len(h) and all(_label_match(a, b) for a, b in zip(p, h))


def host_matches(der: bytes, host: str) -> bool:
    """Whether the certificate names ``host``: a DNS subjectAltName, else its CN."""
    from cryptography import x509

    cert = x509.load_der_x509_certificate(der)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        if any(hostname_match(n, host) for n in san.get_values_for_type(x509.DNSName)):
            return True
    except x509.ExtensionNotFound:
        pass
    cns = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return bool(cns) and str(cns[0].value).lower() == host.lower()


def host_alias(connect_sinful: str, peer: str) -> str:
    """The name the client meant the server by: the ``alias`` of the address it
    connected to, else the host it was given when that is a name (an address alone
    names no host, and the check then fails, as in HTCondor)."""
    m = re.search(r"[?&]alias=([^&>]+)", connect_sinful)
    if m:
        return m.group(1)
    host = peer.rpartition(":")[0] if peer.count(":") == 1 or peer.startswith("[") else peer
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
        return ""
    except ValueError:
        return host


# --- the exchange ------------------------------------------------------------------

@dataclass(frozen=True)
class Peer:
    """What the method established: the peer certificate's subject (empty: none)."""

    subject: str


class _Tls:
    """One side's TLS engine over memory BIOs: its state after each step."""

    def __init__(self, ctx: ssl.SSLContext, server: bool) -> None:
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.incoming, self.outgoing, server_side=server)
        self.error = ""

    def _run(self, op: str) -> tuple[int, bytes]:
        got: bytes | int = b""
        try:
            if op == "handshake":
                self.obj.do_handshake()
            elif op == "read":
                got = self.obj.read(KEY_LEN)
            else:
                got = self.obj.write(os.urandom(KEY_LEN))
        except ssl.SSLWantReadError:
            return RECEIVING, b""
        except ssl.SSLWantWriteError:
            return SENDING, b""
        except ssl.SSLCertVerificationError as exc:
            self.error = f"the certificate did not verify: {exc.verify_message}"
            return QUITTING, b""
        except ssl.SSLError as exc:
            self.error = exc.reason or str(exc)
            return QUITTING, b""
        return HOLDING, got if isinstance(got, bytes) else b""

    def handshake(self) -> int:
        return self._run("handshake")[0]

    def read_key(self) -> tuple[int, bytes]:
        return self._run("read")

    def write_key(self) -> int:
        return self._run("write")[0]

    def feed(self, data: bytes) -> None:
        if data:
            self.incoming.write(data)

    def pending(self) -> bytes:
        return self.outgoing.read()

    def peer_der(self) -> bytes | None:
        return self.obj.getpeercert(binary_form=True)


def _fail(peer: str, why: str) -> SecurityError:
    return SecurityError(f"SSL authentication failed: {why}", peer=peer)


def client_exchange(ctx: ssl.SSLContext | None, alias: str, skip_host_check: bool,
                    peer: str, setup_error: str = "") -> Step:
    """The client's side; returns the server's subject. ``ctx`` None: this side could
    not set up TLS (``setup_error`` says why), which it tells the server."""
    got = yield ("receive", b"the server's SSL status")
    assert got is not None
    server_status = read_status(got, peer)
    mine = OK if ctx is not None else ERROR
    yield ("send", status_message(mine))
    if ctx is None:
        raise _fail(peer, setup_error or "no TLS context")
    if server_status != OK:
        raise _fail(peer, "the server could not set up TLS (no host certificate?)")
    tls = _Tls(ctx, server=False)
    status = OK
    rounds = 0
    while True:
        if status != HOLDING:
            status = tls.handshake()
        rounds += 1
        if rounds > MAX_HANDSHAKE_ROUNDS:
            raise _fail(peer, "the TLS handshake does not end")
        if rounds % 2:
            yield ("send", tls_message(status, tls.pending()))
        else:
            got = yield ("receive", b"the server's TLS records")
            assert got is not None
            server_status, data = read_tls_message(got, peer)
            tls.feed(data)
            if server_status == ERROR:
                server_status = QUITTING
        if status == QUITTING:
            raise _fail(peer, f"TLS handshake: {tls.error}")
        if server_status == QUITTING:
            raise _fail(peer, "the server ended the TLS handshake (it did not accept "
                        "this side's certificate, or the TLS versions or ciphers do not "
                        "agree; its log says which)")
        if status == HOLDING and server_status == HOLDING:
            break
    der = tls.peer_der()
    why = ""
    if der is None:
        why = "the server sent no certificate"
    elif not skip_host_check:
        if not alias:
            why = ("no host name to check the server's certificate against (the "
                   "address is a bare IP; set SSL_SKIP_HOST_CHECK or name the host)")
        elif not host_matches(der, alias):
            why = (f"the server's certificate ({subject_oneline(der)}) does not name "
                   f"host {alias}")
    if why:
        # read the server's first key message, then say we quit (as HTCondor does)
        got = yield ("receive", b"the server's key message")
        assert got is not None
        server_status, _ = read_tls_message(got, peer)
        if server_status != QUITTING:
            yield ("send", tls_message(QUITTING, b""))
        raise _fail(peer, why)
    status = server_status = RECEIVING
    key = b""
    rounds = 0
    while True:
        rounds += 1
        if rounds > MAX_KEY_ROUNDS:
            raise _fail(peer, "too many rounds exchanging the key")
        if status != HOLDING:
            status, key = tls.read_key()
        if rounds % 2:
            got = yield ("receive", b"the server's key message")
            assert got is not None
            server_status, data = read_tls_message(got, peer)
            tls.feed(data)
        else:
            yield ("send", tls_message(status, tls.pending()))
        if server_status == QUITTING or status == QUITTING:
            raise _fail(peer, f"at the key exchange{': ' + tls.error if tls.error else ''}")
        if status == HOLDING and server_status == HOLDING:
            break
    return Peer(subject_oneline(der) if der else "")


def server_exchange(ctx: ssl.SSLContext | None, require_client_cert: bool, peer: str,
                    setup_error: str = "", mapped: Callable[[str], bool] | None = None
                    ) -> Step:
    """The server's side; returns the client's subject (empty: it sent none).
    ``mapped``: with AUTH_SSL_REQUIRE_CLIENT_MAPPING, whether the map file maps a
    subject; a certificate it does not map is refused here, so that the client can try
    its other methods."""
    mine = OK if ctx is not None else ERROR
    yield ("send", status_message(mine))
    if ctx is None:
        raise _fail(peer, setup_error or "no TLS context")
    got = yield ("receive", b"the client's SSL status")
    assert got is not None
    if read_status(got, peer) != OK:
        raise _fail(peer, "the client could not set up TLS")
    tls = _Tls(ctx, server=True)
    status = client_status = OK
    rounds = 0
    while True:
        if status != HOLDING:
            status = tls.handshake()
        if rounds > MAX_HANDSHAKE_ROUNDS:
            raise _fail(peer, "the TLS handshake does not end")
        if rounds % 2 == 0:
            got = yield ("receive", b"the client's TLS records")
            assert got is not None
            client_status, data = read_tls_message(got, peer)
            tls.feed(data)
        else:
            yield ("send", tls_message(status, tls.pending()))
        rounds += 1
        if client_status == ERROR:
            client_status = QUITTING
        if status == QUITTING:
            raise _fail(peer, f"TLS handshake: {tls.error}")
        if client_status == QUITTING:
            raise _fail(peer, "the client ended the TLS handshake (it refused this "
                        "side's certificate)")
        if status == HOLDING and client_status == HOLDING:
            break
    der = tls.peer_der()
    if der is None and require_client_cert:
        yield ("send", tls_message(QUITTING, b""))
        raise _fail(peer, "the client sent no certificate and "
                    "AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE is true")
    if der is not None and mapped is not None and not mapped(subject_oneline(der)):
        yield ("send", tls_message(QUITTING, b""))
        raise _fail(peer, f"the client's certificate ({subject_oneline(der)}) is not in "
                    "CERTIFICATE_MAPFILE and AUTH_SSL_REQUIRE_CLIENT_MAPPING is true")
    status = client_status = RECEIVING
    rounds = 0
    while True:
        if rounds > MAX_KEY_ROUNDS:
            raise _fail(peer, "too many rounds exchanging the key")
        if status != HOLDING:
            status = tls.write_key()
        if rounds % 2 == 0:
            yield ("send", tls_message(status, tls.pending()))
        else:
            got = yield ("receive", b"the client's key message")
            assert got is not None
            client_status, data = read_tls_message(got, peer)
            tls.feed(data)
        rounds += 1
        if status == QUITTING or client_status == QUITTING:
            raise _fail(peer, "the client gave up at the key exchange (it refused "
                        "this side's certificate or host name)")
        if status == HOLDING and client_status == HOLDING:
            break
    return Peer(subject_oneline(der) if der else "")


class MapLookup(Protocol):
    """What :func:`identity` needs of a map file (:class:`condorpy.pool.mapfile.MapFile`)."""

    def canonical(self, method: str, name: str) -> str | None: ...


def identity(subject: str, maps: MapLookup | None, uid_domain: str) -> str:
    """The canonical user an SSL peer is: its subject through the map file, else
    ``ssl@unmapped`` (``unauthenticated@unmapped`` without a certificate)."""
    name = subject or UNAUTHENTICATED
    canonical = maps.canonical("SSL", name) if maps is not None else None
    if canonical:
        return canonical if "@" in canonical else f"{canonical}@{uid_domain}"
    return UNMAPPED if subject else f"{UNAUTHENTICATED}@unmapped"

