"""The client side of HTCondor's security handshake (``DC_AUTHENTICATE``), sans-I/O.

A handshake is a generator: it yields :class:`Send` (a message to send),
:class:`Receive` (it needs the next message) and :class:`StartCrypto` (switch the
connection to AES-GCM now, both directions), and returns the :class:`Session`. An
adapter (:mod:`condorpy.pool.connection`) runs it over a socket; tests run it
against scripted peers.

What a new session looks like on the wire (a real 23.9.6 collector, CLAIMTOBE, see
``docs/pool-protocol.md``; htcondor/htcondor ``condor_secman.cpp``
``SecManStartCommand``, ``authentication.cpp``, ``condor_auth_claim.cpp``):

1. client: ``int 60010`` (DC_AUTHENTICATE) and its policy ad (``Command``,
   ``AuthMethods``, ``CryptoMethods``, ``Authentication``/``Encryption``/``Integrity``
   as REQUIRED/PREFERRED/OPTIONAL/NEVER, ``ECDHPublicKey``, ``NewSession``, ...), EOM;
2. server: the reconciled policy ad (``Enact = "YES"``, ``Authentication``,
   ``Encryption``, ``Integrity`` as YES/NO, ``AuthMethodsList``, ``CryptoMethods``,
   its ``ECDHPublicKey``), EOM;
3. if authenticating: client ``int`` bitmask of the methods it will try, EOM; server
   ``int`` the method chosen (0: none), EOM; the method's own exchange (CLAIMTOBE:
   client ``int 1``, ``string user``, EOM; server ``int 1`` on success, EOM; IDTOKENS:
   :mod:`condorpy.pool.idtokens`; FS: :mod:`condorpy.pool.fsauth`; a method that fails
   is dropped and the client offers the rest again); then,
   when the session will encrypt or check integrity, server ``int 0`` (it has no key
   to hand over: the key comes from ECDH), EOM;
4. both switch to AES-GCM with the ECDH key; server: the post-authentication ad
   (``ReturnCode = "AUTHORIZED"``, ``Sid``, ``User``, ``ValidCommands``), EOM;
5. then the command's own message follows, encrypted.

With the client's ``NEGOTIATION`` at NEVER the client sends the bare command number
as the first value of the command's message instead (a "raw" command).
"""

from __future__ import annotations

import base64
import os
import pwd
from collections.abc import Generator
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, TypeVar, cast

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.errors import SecurityError
from condorpy.pool import fsauth
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.wire_ad import get_classad, put_classad

if TYPE_CHECKING:
    from condorpy.pool import idtokens, sslauth

DC_AUTHENTICATE = 60010
# authentication method bits (condor_auth.h)
METHOD_BITS = {"CLAIMTOBE": 2, "FS": 4, "FS_REMOTE": 8, "KERBEROS": 64, "ANONYMOUS": 128,
               "SSL": 256, "PASSWORD": 512, "TOKEN": 2048, "IDTOKENS": 2048,
               "SCITOKENS": 4096}
IMPLEMENTED_METHODS = ("FS", "TOKEN", "SSL", "CLAIMTOBE")
IMPLEMENTED_CRYPTO = ("AES",)
# the names HTCondor accepts for the one IDTOKENS method (condor_auth.h, SecMan)
METHOD_ALIASES = {"IDTOKENS": "TOKEN", "IDTOKEN": "TOKEN", "TOKENS": "TOKEN"}


def method_name(text: str) -> str:
    m = text.strip().upper()
    return METHOD_ALIASES.get(m, m)


class Level(Enum):
    REQUIRED = "REQUIRED"
    PREFERRED = "PREFERRED"
    OPTIONAL = "OPTIONAL"
    NEVER = "NEVER"


@dataclass(frozen=True)
class ClientPolicy:
    """What this side asks of a session, from the SEC_CLIENT_* / SEC_DEFAULT_* knobs."""

    authentication: Level = Level.OPTIONAL
    encryption: Level = Level.OPTIONAL
    integrity: Level = Level.OPTIONAL
    negotiation: Level = Level.PREFERRED
    auth_methods: tuple[str, ...] = ("CLAIMTOBE",)
    crypto_methods: tuple[str, ...] = ("AES",)
    claimtobe_user: str = "condor"
    trust_domain: str = ""
    subsystem: str = "STARTD"
    version: str = ""
    session_duration: int = 86400
    session_lease: int = 3600
    configured_methods: tuple[str, ...] = field(default=(), compare=False)
    # where IDTOKENS are looked for (None: no TOKEN authentication)
    token_search: idtokens.TokenSearch | None = None
    # whom FS directories are made as (a daemon run by root: the condor user)
    fs_ids: tuple[int, int] | None = None
    # SSL: the AUTH_SSL_CLIENT_* material and checks (None: no SSL authentication)
    ssl: sslauth.Settings | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Send:
    payload: bytes


@dataclass(frozen=True)
class Receive:
    what: str


@dataclass(frozen=True)
class StartCrypto:
    key: bytes


@dataclass(frozen=True)
class Await:
    """Suspend until the side running the protocol resumes it (an event that is not a
    message: a job's end). No deadline runs meanwhile."""

    what: str


Op = Send | Receive | StartCrypto | Await


@dataclass(frozen=True)
class Session:
    """The outcome of a handshake."""

    raw: bool                       # no handshake: the command number leads its message
    authenticated: bool = False
    method: str = ""
    encrypted: bool = False
    sid: str = ""
    user: str = ""
    valid_commands: tuple[int, ...] = ()
    remote_version: str = ""
    key: bytes = field(default=b"", repr=False)   # the session's AES key, to resume it


def knob_level(cfg: Config, side: str, knob: str, default: Level) -> Level:
    """``<side>_<knob>`` (SEC_CLIENT_..., SEC_READ_...), else SEC_DEFAULT_<knob>."""
    for name in (f"{side}_{knob}", f"SEC_DEFAULT_{knob}"):
        text = cfg.get(name)
        if text:
            try:
                return Level(text.strip().upper())
            except ValueError:
                raise cfg.invalid(name, "REQUIRED, PREFERRED, OPTIONAL or NEVER") from None
    return default


def knob_methods(cfg: Config, side: str, knob: str, default: str) -> tuple[str, ...]:
    """A method list from ``<side>_<knob>``, else SEC_DEFAULT_<knob>, else ``default``."""
    for name in (f"{side}_{knob}", f"SEC_DEFAULT_{knob}"):
        if cfg.get(name):
            return tuple(m.upper() for m in cfg.get_list(name))
    return tuple(m.strip().upper() for m in default.split(",") if m.strip())


def client_policy(cfg: Config, version: str) -> ClientPolicy:
    """The client policy the configuration asks for (HTCondor's knobs and defaults)."""
    from condorpy.pool import idtokens, sslauth     # cryptography loads with the pool

    configured = knob_methods(cfg, "SEC_CLIENT", "AUTHENTICATION_METHODS",
                              "FS,IDTOKENS,KERBEROS,SCITOKENS,SSL")
    crypto = knob_methods(cfg, "SEC_CLIENT", "CRYPTO_METHODS", "AES,BLOWFISH,3DES")
    user = cfg.get("SEC_CLAIMTOBE_USER") or pwd.getpwuid(os.geteuid()).pw_name
    if cfg.get_bool("SEC_CLAIMTOBE_INCLUDE_DOMAIN", False) and "@" not in user:
        user = f"{user}@{cfg.get('UID_DOMAIN') or ''}"
    return ClientPolicy(
        authentication=knob_level(cfg, "SEC_CLIENT", "AUTHENTICATION", Level.OPTIONAL),
        encryption=knob_level(cfg, "SEC_CLIENT", "ENCRYPTION", Level.OPTIONAL),
        integrity=knob_level(cfg, "SEC_CLIENT", "INTEGRITY", Level.OPTIONAL),
        negotiation=knob_level(cfg, "SEC_CLIENT", "NEGOTIATION", Level.PREFERRED),
        auth_methods=tuple(dict.fromkeys(method_name(m) for m in configured
                                         if method_name(m) in IMPLEMENTED_METHODS)),
        crypto_methods=tuple(m for m in crypto if m in IMPLEMENTED_CRYPTO),
        claimtobe_user=user,
        trust_domain=cfg.get("TRUST_DOMAIN") or cfg.get("UID_DOMAIN") or "",
        version=version,
        configured_methods=configured,
        token_search=idtokens.TokenSearch(
            idtokens.token_directory(cfg),
            exclude=cfg.get("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP") or "",
            subsystem="STARTD"),
        fs_ids=fsauth.daemon_ids(cfg),
        ssl=sslauth.client_settings(cfg))


def auth_request_ad(policy: ClientPolicy, command: int, ecdh_public: str,
                    connect_sinful: str) -> ClassAd:
    ad = ClassAd()
    ad["Enact"] = "NO"
    ad["Command"] = command
    ad["Authentication"] = policy.authentication.value
    ad["Encryption"] = policy.encryption.value
    ad["Integrity"] = policy.integrity.value
    ad["OutgoingNegotiation"] = policy.negotiation.value
    ad["AuthMethods"] = ",".join(policy.auth_methods)
    ad["CryptoMethods"] = ",".join(policy.crypto_methods)
    ad["ECDHPublicKey"] = ecdh_public
    ad["NewSession"] = "YES"
    ad["NegotiatedSession"] = True
    ad["Subsystem"] = policy.subsystem
    ad["ServerPid"] = os.getpid()
    ad["SessionDuration"] = str(policy.session_duration)
    ad["SessionLease"] = policy.session_lease
    ad["ConnectSinful"] = connect_sinful
    if policy.trust_domain:
        ad["TrustDomain"] = policy.trust_domain
    if policy.version:
        ad["RemoteVersion"] = policy.version
    return ad


def _yes(ad: ClassAd, name: str) -> bool:
    v = ad.get(name)
    return isinstance(v, str) and v.strip().upper() == "YES"


def _int_message(value: int) -> bytes:
    return Writer().put_int(value).payload()


def _read_int(payload: bytes, peer: str, what: str, crypto: bool = False) -> int:
    r = Reader(payload, peer, crypto=crypto)
    value = r.get_int(what)
    r.end(what)
    return value


def client_handshake(command: int, policy: ClientPolicy, peer: str,
                     connect_sinful: str = "") -> Generator[Op, bytes | None, Session]:
    """Start ``command`` at ``peer``: negotiate, authenticate, switch on encryption."""
    if policy.negotiation is Level.NEVER:
        for name in ("authentication", "encryption", "integrity"):
            if getattr(policy, name) is Level.REQUIRED:
                raise SecurityError(f"SEC_CLIENT_NEGOTIATION is NEVER but {name} is "
                                    "REQUIRED", peer=peer)
        return Session(raw=True)
    from condorpy.pool import idtokens
    from condorpy.pool.aesgcm import EcdhKey      # cryptography at first use

    ecdh = EcdhKey()
    w = Writer().put_int(DC_AUTHENTICATE)
    put_classad(w, auth_request_ad(policy, command, ecdh.public_b64(),
                                   connect_sinful or f"<{peer}>"))
    yield Send(w.payload())
    payload = yield Receive("the security policy reply")
    assert payload is not None
    r = Reader(payload, peer)
    reply = get_classad(r, "the security policy reply", max_attrs=200)
    r.end("the security policy reply")
    if not _yes(reply, "Enact"):
        raise SecurityError("the peer did not accept a security session "
                            f"(Enact = {reply.get('Enact')!r})", peer=peer)
    authenticate = _yes(reply, "Authentication")
    encrypt = _yes(reply, "Encryption")
    integrity = _yes(reply, "Integrity")
    for name, on in (("authentication", authenticate), ("encryption", encrypt),
                     ("integrity", integrity)):
        if getattr(policy, name) is Level.REQUIRED and not on:
            raise SecurityError(f"the peer refuses {name}, which SEC_CLIENT/SEC_DEFAULT "
                                "knobs make REQUIRED", peer=peer)
    crypto_method = ""
    if encrypt or integrity:
        offered = [m.strip().upper() for m in str(reply.get("CryptoMethods") or "").split(",")]
        crypto_method = offered[0] if offered else ""
        if crypto_method != "AES":
            raise SecurityError(f"the peer chose crypto method {crypto_method or 'none'}; "
                                "condorpy speaks AES only", peer=peer)
    method = ""
    remote_version = str(reply.get("RemoteVersion") or "")
    if authenticate:
        named = [m.strip().upper()
                 for m in str(reply.get("AuthMethodsList") or reply.get("AuthMethods")
                              or "").split(",") if m.strip()]
        usable = list(dict.fromkeys(method_name(m) for m in named
                                    if method_name(m) in policy.auth_methods))
        if "SSL" in usable and policy.ssl is None:
            usable.remove("SSL")
        token: idtokens.Token | None = None
        no_token = ""
        if "TOKEN" in usable:
            token, no_token = _find_token(policy, reply)
            if token is None:
                usable.remove("TOKEN")
        if not usable:
            if no_token:
                raise SecurityError(no_token, peer=peer)
            raise SecurityError(
                "no authentication method in common: the peer offers "
                f"{', '.join(named) or 'none'}; condorpy is configured for "
                f"{', '.join(policy.configured_methods) or 'none'} and speaks "
                f"{', '.join(IMPLEMENTED_METHODS)}", peer=peer)
        # As HTCondor's Authentication loop: a method that fails is dropped and the
        # rest offered again, until one succeeds or the peer chooses none.
        failures: list[str] = [no_token] if no_token else []
        while True:
            bits = 0
            for m in usable:
                bits |= METHOD_BITS[m]
            yield Send(_int_message(bits))
            payload = yield Receive("the chosen authentication method")
            assert payload is not None
            chosen = _read_int(payload, peer, "the chosen authentication method")
            method = next((m for m in usable if METHOD_BITS[m] == chosen), "")
            if not method:
                raise SecurityError(f"the peer chose authentication method bits {chosen}, "
                                    f"not one of {bits}"
                                    + "".join(f"; {f}" for f in failures), peer=peer)
            try:
                if method == "TOKEN":
                    assert token is not None
                    yield from run_exchange(idtokens.exchange(token, peer))
                elif method == "FS":
                    yield from run_exchange(fsauth.client_exchange(peer, policy.fs_ids))
                elif method == "SSL":
                    assert policy.ssl is not None
                    yield from run_exchange(_ssl_exchange(policy.ssl, peer, connect_sinful))
                else:
                    yield Send(Writer().put_int(1).put_string(policy.claimtobe_user)
                               .payload())
                    payload = yield Receive("the CLAIMTOBE result")
                    assert payload is not None
                    if _read_int(payload, peer, "the CLAIMTOBE result") != 1:
                        raise SecurityError(f"the peer refused CLAIMTOBE as "
                                            f"{policy.claimtobe_user}", peer=peer)
                break
            except SecurityError as exc:
                failures.append(exc.reason)
                usable.remove(method)
                if not usable:
                    raise SecurityError("; ".join(failures), peer=peer) from None
        if encrypt or integrity:
            payload = yield Receive("the key hand-over flag")
            assert payload is not None
            if _read_int(payload, peer, "the key hand-over flag") != 0:
                raise SecurityError("the peer hands over a legacy session key; condorpy "
                                    "only agrees keys by ECDH", peer=peer)
    crypto = encrypt or integrity
    if crypto:
        peer_key = reply.get("ECDHPublicKey")
        if not isinstance(peer_key, str) or not peer_key:
            raise SecurityError("the peer sent no ECDHPublicKey", peer=peer)
        key = ecdh.session_key(peer_key, peer)
        yield StartCrypto(key)
    else:
        key = b""
    payload = yield Receive("the post-authentication reply")
    assert payload is not None
    r = Reader(payload, peer, crypto=crypto)
    post = get_classad(r, "the post-authentication reply", max_attrs=200)
    r.end("the post-authentication reply")
    code = post.get("ReturnCode")
    if code != "AUTHORIZED":
        raise SecurityError(f"the peer did not authorize command {command} "
                            f"(ReturnCode {code!r}, as {post.get('User') or 'unknown'})",
                            peer=peer)
    valid: list[int] = []
    for part in str(post.get("ValidCommands") or "").split(","):
        try:
            valid.append(int(part))
        except ValueError:
            continue
    return Session(raw=False, authenticated=authenticate, method=method, encrypted=crypto,
                   sid=str(post.get("Sid") or ""), user=str(post.get("User") or ""),
                   valid_commands=tuple(valid), remote_version=remote_version, key=key)


def _ssl_exchange(settings: sslauth.Settings, peer: str, connect_sinful: str
                  ) -> Generator[tuple[str, bytes], bytes | None, sslauth.Peer]:
    from condorpy.pool import sslauth

    try:
        ctx, why = sslauth.make_context(settings, server=False), ""
    except SecurityError as exc:
        ctx, why = None, exc.reason
    return sslauth.client_exchange(ctx, sslauth.host_alias(connect_sinful, peer),
                                   settings.skip_host_check, peer, why)


def _find_token(policy: ClientPolicy, reply: ClassAd) -> tuple[idtokens.Token | None, str]:
    from condorpy.pool import idtokens

    """The token for this server (its TrustDomain and IssuerKeys), or why there is none."""
    search = policy.token_search
    if search is None:
        return None, ""
    issuer = str(reply.get("TrustDomain") or "").strip()
    # a server lists its trust domains as "a, b": HTCondor matches the first
    issuer = issuer.replace("\t", " ").replace(",", " ").split(" ")[0] if issuer else ""
    keys = frozenset(k.strip() for k in str(reply.get("IssuerKeys") or "").split(",")
                     if k.strip())
    choice = idtokens.choose_token(search, issuer, keys)
    if choice.token is None:
        return None, idtokens.no_token_message(search, issuer, keys, choice)
    return choice.token, ""


T = TypeVar("T")


def run_exchange(gen: Generator[tuple[str, bytes], bytes | None, T]
                 ) -> Generator[Op, bytes | None, T]:
    """An authentication method's own exchange (:mod:`idtokens`, :mod:`fsauth` speak
    ``("send", payload)`` / ``("receive", what)``) as this module's Send/Receive."""
    answer: bytes | None = None
    while True:
        try:
            kind, data = gen.send(answer)
        except StopIteration as stop:
            return cast(T, stop.value)
        if kind == "send":
            answer = None
            yield Send(data)
        else:
            answer = yield Receive(data.decode() or "the method's reply")


def resume(command: int, sid: str, key: bytes, peer: str, version: str = ""
           ) -> Generator[Op, bytes | None, Session]:
    """Start ``command`` on an existing session (``sid``, ``key``) instead of a new
    handshake: ``int 60010`` and an ad ``UseSession = "YES"``, ``Sid``, ``Command``,
    ``Nonce``, ``ResumeResponse = true``; the peer answers ``ReturnCode =
    "AUTHORIZED"`` (or ``"SID_NOT_FOUND"``) in the clear; then both encrypt with the
    session's key (``condor_secman.cpp`` resume path)."""
    ad = ClassAd()
    ad["UseSession"] = "YES"
    ad["Sid"] = sid
    ad["Command"] = command
    ad["Nonce"] = base64.b64encode(os.urandom(33)).decode("ascii")
    ad["ResumeResponse"] = True
    # A session offering several methods (a shadow's file-transfer session lists
    # AES,BLOWFISH,3DES) is resumed with the one the client names here; a client that
    # names none gets BLOWFISH or 3DES (daemon_command.cpp, resume path)
    ad["CryptoMethods"] = "AES"
    if version:
        ad["RemoteVersion"] = version
    yield Send(put_classad(Writer().put_int(DC_AUTHENTICATE), ad).payload())
    payload = yield Receive("the session resumption reply")
    assert payload is not None
    r = Reader(payload, peer)
    reply = get_classad(r, "the session resumption reply", max_attrs=200)
    r.end("the session resumption reply")
    if reply.get("ReturnCode") != "AUTHORIZED":
        raise SecurityError(f"session resumption refused ({reply.get('ReturnCode')!r})",
                            peer=peer)
    yield StartCrypto(key)
    return Session(raw=False, authenticated=True, encrypted=True, sid=sid,
                   remote_version=str(reply.get("RemoteVersion") or ""), key=key)

