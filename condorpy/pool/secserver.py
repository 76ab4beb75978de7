"""The server side of HTCondor's security handshake on the daemon's command port,
sans-I/O: new (negotiated) sessions, their resumption, raw commands, and who may run
which command.

A command port serves two kinds of session:

- claim sessions, carried in the claim ids this daemon publishes (the schedd and the
  shadow resume them; :mod:`condorpy.pool.server`);
- sessions negotiated here by the pool's tools and daemons (``condor_status
  -direct``, ``condor_vacate``, ``condor_drain``, ``condor_config_val``). The exchange
  mirrors :func:`condorpy.pool.security.client_handshake` (htcondor/htcondor
  ``daemon_command.cpp`` ``DaemonCommandProtocol``, ``condor_secman.cpp``
  ``ReconcileSecurityPolicyAds``, ``authentication.cpp``, ``condor_auth_claim.cpp``):

  1. client ``int 60010`` and its policy ad (levels, ``AuthMethods``,
     ``CryptoMethods``, ``ECDHPublicKey``, ``NewSession``, ``Command``), EOM;
  2. server, when the client asked (``Enact = "NO"``): the reconciled ad
     (``Authentication``/``Encryption``/``Integrity`` YES/NO, ``AuthMethodsList``,
     ``CryptoMethods``, ``SessionDuration``, ``SessionLease``, ``Enact = "YES"``,
     ``RemoteVersion``, its own ``ECDHPublicKey``), EOM;
  3. when authenticating: client ``int`` method bits, EOM; server ``int`` the method
     chosen, EOM; CLAIMTOBE: client ``int 1``, ``string user``, EOM; server ``int 1``,
     EOM; or FS (:mod:`condorpy.pool.fsauth`); then, when the session will encrypt, server ``int 0`` (the key comes from
     ECDH, none is handed over), EOM;
  4. both switch to AES-GCM; server: the post-authentication ad (``User``, ``Sid``,
     ``ValidCommands``, ``ReturnCode`` AUTHORIZED / DENIED / CMD_NOT_FOUND), EOM;
  5. the command's own message, encrypted (none for commands without arguments).

Authorisation follows HTCondor's levels: each command needs READ, WRITE,
ADMINISTRATOR or DAEMON; the policy for a level comes from ``SEC_<LEVEL>_<X>`` else
``SEC_DEFAULT_<X>``; the peer passes when an ``ALLOW_<LEVEL>`` entry (or one of a level
that implies it) matches its ``user/host`` and no ``DENY_<LEVEL>`` entry does
(``condor_ipverify.cpp``). An entry is ``user/host`` or a bare ``host`` (any user);
both parts take ``*`` wildcards; a host part may be an address, a CIDR network or a
name (resolved when the configuration is read). A peer that did not authenticate is
``unauthenticated@unmapped``.
"""

from __future__ import annotations

import base64
import fnmatch
import ipaddress
import logging
import os
import socket
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from enum import Enum

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.errors import SecurityError, WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool import fsauth, mapfile, sslauth
from condorpy.pool.security import (DC_AUTHENTICATE, IMPLEMENTED_CRYPTO, METHOD_BITS, Level,
                                    Op, Receive, Send, StartCrypto, knob_level,
                                    knob_methods, method_name, run_exchange)
from condorpy.pool.wire_ad import get_classad, put_classad

log = logging.getLogger("condorpy.pool")
UNAUTHENTICATED = "unauthenticated@unmapped"
DC_SEC_QUERY = 60040
# the methods this port can verify, in no order of its own (the configuration's rules)
SERVED_METHODS = ("FS", "SSL", "CLAIMTOBE")
MAX_SESSIONS = 4096


class Perm(Enum):
    READ = "READ"
    WRITE = "WRITE"
    ADMINISTRATOR = "ADMINISTRATOR"
    DAEMON = "DAEMON"


# the levels whose ALLOW list also grants a level (condor_perms.cpp: ADMINISTRATOR
# implies WRITE, WRITE and DAEMON imply READ, DAEMON implies WRITE)
IMPLIED_BY: dict[Perm, tuple[Perm, ...]] = {
    Perm.READ: (Perm.READ, Perm.WRITE, Perm.ADMINISTRATOR, Perm.DAEMON),
    Perm.WRITE: (Perm.WRITE, Perm.ADMINISTRATOR, Perm.DAEMON),
    Perm.ADMINISTRATOR: (Perm.ADMINISTRATOR,),
    Perm.DAEMON: (Perm.DAEMON,),
}


@dataclass(frozen=True)
class LevelPolicy:
    authentication: Level
    encryption: Level
    integrity: Level
    negotiation: Level
    auth_methods: tuple[str, ...]      # configured and spoken here, in preference order
    crypto_methods: tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    """One ALLOW/DENY entry: a user pattern and a host pattern or network."""

    user: str
    host: str
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    def matches(self, user: str, ip: str) -> bool:
        if not fnmatch.fnmatchcase(user, self.user):
            return False
        if self.host == "*" or fnmatch.fnmatchcase(ip, self.host):
            return True
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return False
        return any(addr in net for net in self.networks)


def _parse_entry(text: str, knob: str, cfg: Config) -> Entry:
    user, sep, host = text.partition("/")
    if not sep and "@" in text:
        # a user alone (condor@*, as security:recommended writes them): from any host
        user, host = text, "*"
    elif not sep or ("@" not in user and all(c in "0123456789.*:abcdefABCDEF" for c in user)
                   and any(c.isdigit() or c == "*" for c in user) and host.isdigit()):
        # a bare host, perhaps with a netmask (10.0.0.0/8)
        user, host = "*", text
    if not host or not user:
        raise cfg.invalid(knob, "entries of the form user/host or host")
    nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    if "*" not in host:
        try:
            nets.append(ipaddress.ip_network(host, strict=False))
        except ValueError:
            if "/" in host or not host.replace("-", "").replace(".", "").isalnum():
                raise cfg.invalid(knob, f"an address, network or host name, not {host!r}"
                                  ) from None
            try:
                # a name is resolved once, when the configuration is read
                for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM):
                    nets.append(ipaddress.ip_network(info[4][0]))
            except OSError:
                pass        # an unknown name matches nobody, as in HTCondor
    return Entry(user, host, tuple(nets))


@dataclass(frozen=True)
class ServerPolicy:
    """What this command port demands of a peer, level by level."""

    levels: dict[Perm, LevelPolicy]
    allow: dict[Perm, tuple[Entry, ...]]
    deny: dict[Perm, tuple[Entry, ...]]
    session_duration: int = 86400
    session_lease: int = 3600
    trust_domain: str = ""
    # FS: where clients make their directory, and the domain of the names it yields
    fs: fsauth.Rendezvous = field(default_factory=fsauth.Rendezvous)
    uid_domain: str = ""
    # SSL: the AUTH_SSL_SERVER_* material (None: no readable host certificate, so SSL
    # is not offered, as HTCondor's servers do); CERTIFICATE_MAPFILE's rules
    ssl: sslauth.Settings | None = None
    maps: mapfile.MapFile | None = None

    def canonical(self, method: str, name: str, default: str) -> str:
        """The user an authenticated ``name`` is: through the map file when a line of
        ``method`` matches, else ``default``."""
        mapped = self.maps.canonical(method, name) if self.maps is not None else None
        return mapfile.split_canonical(mapped, self.uid_domain) if mapped else default

    def verify(self, perm: Perm, user: str, ip: str) -> str | None:
        """None if ``user`` at ``ip`` may run a command needing ``perm``, else why not."""
        if any(e.matches(user, ip) for e in self.deny.get(perm, ())):
            return f"DENY_{perm.value} matches {user}/{ip}"
        for level in IMPLIED_BY[perm]:
            if any(e.matches(user, ip) for e in self.allow.get(level, ())):
                return None
        return f"no ALLOW_{perm.value} entry matches {user}/{ip}"


# Where ALLOW_<LEVEL> is unset: READ from anywhere, the rest from nobody. CLAIMTOBE's
# identity is the peer's say-so, and a local user
# must not get by the network port what the control socket's SO_PEERCRED check
# refuses them; an administrator opens ADMINISTRATOR to the hosts and users meant.
DEFAULT_ALLOW = {Perm.READ: "*", Perm.WRITE: "", Perm.ADMINISTRATOR: "",
                 Perm.DAEMON: ""}


def server_policy(cfg: Config) -> ServerPolicy:
    levels: dict[Perm, LevelPolicy] = {}
    ssl = sslauth.server_settings(cfg)
    served = SERVED_METHODS if ssl.readable_cert() else tuple(
        m for m in SERVED_METHODS if m != "SSL")
    allow: dict[Perm, tuple[Entry, ...]] = {}
    deny: dict[Perm, tuple[Entry, ...]] = {}
    for perm in Perm:
        side = f"SEC_{perm.value}"
        configured = knob_methods(cfg, side, "AUTHENTICATION_METHODS",
                                  "FS,IDTOKENS,KERBEROS,SCITOKENS,SSL")
        crypto = knob_methods(cfg, side, "CRYPTO_METHODS", "AES,BLOWFISH,3DES")
        levels[perm] = LevelPolicy(
            authentication=knob_level(cfg, side, "AUTHENTICATION", Level.OPTIONAL),
            encryption=knob_level(cfg, side, "ENCRYPTION", Level.OPTIONAL),
            integrity=knob_level(cfg, side, "INTEGRITY", Level.OPTIONAL),
            negotiation=knob_level(cfg, side, "NEGOTIATION", Level.PREFERRED),
            auth_methods=tuple(dict.fromkeys(method_name(m) for m in configured
                                             if method_name(m) in served)),
            crypto_methods=tuple(m for m in crypto if m in IMPLEMENTED_CRYPTO))
        knob = f"ALLOW_{perm.value}"
        items = cfg.get_list(knob) if cfg.get(knob) else DEFAULT_ALLOW[perm].split()
        allow[perm] = tuple(_parse_entry(t, knob, cfg) for t in items)
        knob = f"DENY_{perm.value}"
        deny[perm] = tuple(_parse_entry(t, knob, cfg) for t in cfg.get_list(knob))
    return ServerPolicy(levels, allow, deny,
                        session_duration=cfg.get_int("SEC_DEFAULT_SESSION_DURATION", 86400),
                        session_lease=cfg.get_int("SEC_DEFAULT_SESSION_LEASE", 3600),
                        trust_domain=cfg.get("TRUST_DOMAIN") or cfg.get("UID_DOMAIN") or "",
                        fs=fsauth.rendezvous(cfg), uid_domain=cfg.get("UID_DOMAIN") or "",
                        ssl=ssl if "SSL" in served else None, maps=mapfile.load(cfg))


@dataclass
class NegotiatedSession:
    sid: str
    key: bytes
    user: str
    perm: Perm
    expires: float
    lease: float
    last_used: float


@dataclass
class SessionCache:
    """Sessions this port negotiated, for their clients to resume."""

    sessions: dict[str, NegotiatedSession] = field(default_factory=dict)
    seq: int = 0

    def new_sid(self, now: float) -> str:
        self.seq += 1
        return f"{socket.gethostname()}:{os.getpid()}:{int(now)}:{self.seq}"

    def add(self, s: NegotiatedSession) -> None:
        if len(self.sessions) >= MAX_SESSIONS:
            oldest = min(self.sessions.values(), key=lambda x: x.last_used)
            del self.sessions[oldest.sid]
        self.sessions[s.sid] = s

    def get(self, sid: str, now: float) -> NegotiatedSession | None:
        s = self.sessions.get(sid)
        if s is None:
            return None
        if now > s.expires or (s.lease and now > s.last_used + s.lease):
            del self.sessions[sid]
            return None
        s.last_used = now
        return s


@dataclass(frozen=True)
class Authorized:
    """A command the handshake let through: its number, the session it came on (empty
    for a raw command), who sent it, whether the session is a claim's, and its first
    message (empty for commands that carry none)."""

    command: int
    session_id: str
    user: str
    claim_session: bool
    payload: bytes
    crypto: bool
    asked: int = 0          # DC_SEC_QUERY: the command whose authorisation was asked


def reconcile(client: Level, server: Level) -> bool | None:
    """``ReconcileSecurityAttribute``: True (YES), False (NO) or None (no agreement)."""
    if client is Level.REQUIRED:
        return None if server is Level.NEVER else True
    if client is Level.PREFERRED:
        return server is not Level.NEVER
    if client is Level.OPTIONAL:
        return server in (Level.REQUIRED, Level.PREFERRED)
    return None if server is Level.REQUIRED else False


def _client_level(ad: ClassAd, name: str, peer: str) -> Level:
    v = ad.get(name)
    if v is None:
        return Level.OPTIONAL
    if not isinstance(v, str):
        raise WireError(f"{name} in the security request is not a string", peer=peer)
    try:
        return Level(v.strip().upper())
    except ValueError:
        raise WireError(f"{name} = {v!r} in the security request", peer=peer) from None


def _methods_of(ad: ClassAd, name: str) -> list[str]:
    v = ad.get(name)
    return [method_name(m) for m in str(v).split(",") if m.strip()] if isinstance(
        v, str) else []


def _int_message(value: int) -> bytes:
    return Writer().put_int(value).payload()


def _read_int(payload: bytes, peer: str, what: str) -> int:
    r = Reader(payload, peer)
    value = r.get_int(what)
    r.end(what)
    return value


def _read_claimtobe(payload: bytes, peer: str) -> str:
    r = Reader(payload, peer)
    flag = r.get_int("the CLAIMTOBE flag")
    user = r.get_str("the CLAIMTOBE user") if flag == 1 else ""
    r.end("the CLAIMTOBE message")
    if flag != 1 or not user or len(user) > 256 or any(c in user for c in " \t\n/"):
        raise SecurityError(f"a malformed CLAIMTOBE identity {user[:64]!r}", peer=peer)
    return user


def _perm(table: dict[int, tuple[Perm, bool]], command: int) -> Perm | None:
    entry = table.get(command)
    return entry[0] if entry is not None else None


def _ssl_exchange(policy: ServerPolicy, peer: str
                  ) -> Generator[tuple[str, bytes], bytes | None, sslauth.Peer]:
    assert policy.ssl is not None
    try:
        ctx, why = sslauth.make_context(policy.ssl, server=True), ""
    except SecurityError as exc:
        ctx, why = None, exc.reason
    maps = policy.maps
    mapped = None if not policy.ssl.require_client_mapping else (
        lambda subject: maps is not None and maps.canonical("SSL", subject) is not None)
    return sslauth.server_exchange(ctx, policy.ssl.require_client_cert, peer, why, mapped)


def serve(peer: str, ip: str, policy: ServerPolicy, cache: SessionCache,
          claim_key: Callable[[str], bytes | None], table: dict[int, tuple[Perm, bool]],
          now: Callable[[], float], version: str, local: tuple[str, int] | None = None
          ) -> Generator[Op, bytes | None, Authorized]:
    """Take one command on an accepted connection, as far as its first message.
    ``local``: this end of the connection (FS authentication binds to it)."""
    first = yield Receive("a command")
    assert first is not None
    r = Reader(first, peer)
    cmd = r.get_int("the command number")
    if cmd != DC_AUTHENTICATE:
        # a raw command: allowed only where its level's policy requires nothing
        perm = _perm(table, cmd)
        if perm is None:
            raise SecurityError(f"command {cmd} without a security session refused",
                                peer=peer)
        lp = policy.levels[perm]
        if Level.REQUIRED in (lp.authentication, lp.encryption, lp.integrity,
                              lp.negotiation):
            raise SecurityError(f"command {cmd} without a security session refused: "
                                f"SEC_{perm.value}/SEC_DEFAULT knobs require one", peer=peer)
        why = policy.verify(perm, UNAUTHENTICATED, ip)
        if why is not None:
            raise SecurityError(f"command {cmd} ({perm.value}) denied: {why}", peer=peer)
        return Authorized(cmd, "", UNAUTHENTICATED, False, first[8:], False)
    ad = get_classad(r, "the security request", max_attrs=200)
    r.end("the security request")
    command = ad.get("Command")
    if not isinstance(command, int) or isinstance(command, bool):
        raise WireError("the security request lacks Command", peer=peer)
    asked = 0
    if command == DC_SEC_QUERY:
        # condor_ping: the handshake and the authorisation are those of AuthCommand,
        # which is then not run; no message of its own follows (daemon_command.cpp)
        asked = ad.get("AuthCommand")
        if not isinstance(asked, int) or isinstance(asked, bool) or asked == DC_SEC_QUERY:
            raise WireError("DC_SEC_QUERY without a usable AuthCommand", peer=peer)
        command = asked
        if asked in table:
            table = {**table, asked: (table[asked][0], False)}
    use = ad.get("UseSession")
    if isinstance(use, str) and use.upper() == "YES":
        got = yield from _resume(peer, ip, ad, command, policy, cache, claim_key,
                                 table, now, version, query=bool(asked))
    else:
        got = yield from _negotiate(peer, ip, ad, command, policy, cache, table, now, local,
                                    version)
    if asked and not got.claim_session:
        return replace(got, command=DC_SEC_QUERY, asked=asked, payload=b"")
    if asked:
        raise SecurityError("DC_SEC_QUERY on a claim session refused", peer=peer)
    return got


def _resume(peer: str, ip: str, ad: ClassAd, command: int, policy: ServerPolicy,
            cache: SessionCache, claim_key: Callable[[str], bytes | None],
            table: dict[int, tuple[Perm, bool]], now: Callable[[], float], version: str,
            query: bool = False) -> Generator[Op, bytes | None, Authorized]:
    sid = ad.get("Sid")
    if not isinstance(sid, str):
        raise WireError("the session request lacks Sid", peer=peer)
    want_reply = ad.get("ResumeResponse") is True
    key = claim_key(sid)
    user = ""
    negotiated = None if key is not None else cache.get(sid, now())
    if negotiated is not None:
        key, user = negotiated.key, negotiated.user
    if key is None:
        if want_reply:
            yield Send(put_classad(Writer(), ClassAd({"ReturnCode": "SID_NOT_FOUND"}))
                       .payload())
        raise SecurityError(f"unknown session for command {command}", peer=peer)
    if negotiated is not None:
        perm = _perm(table, command)
        why = (f"command {command} is not one this port serves" if perm is None
               else policy.verify(perm, user, ip))
        if why is not None:
            if want_reply:
                yield Send(put_classad(Writer(), ClassAd({"ReturnCode": "DENIED"}))
                           .payload())
            raise SecurityError(f"command {command} on session {sid} denied: {why}",
                                peer=peer)
    if want_reply:
        reply = ClassAd()
        reply["ReturnCode"] = "AUTHORIZED"
        reply["RemoteVersion"] = version
        reply["Nonce"] = base64.b64encode(os.urandom(33)).decode("ascii")
        yield Send(put_classad(Writer(), reply).payload())
    yield StartCrypto(key)
    payload = b""
    # a DC_SEC_QUERY sends no message of its own, on any kind of session
    if not query and (negotiated is None or table[command][1]):
        got = yield Receive(f"the message of command {command}")
        assert got is not None
        payload = got
    return Authorized(command, sid, user, negotiated is None, payload, True)


def _negotiate(peer: str, ip: str, ad: ClassAd, command: int, policy: ServerPolicy,
               cache: SessionCache, table: dict[int, tuple[Perm, bool]], now: Callable[[], float],
               local: tuple[str, int] | None, version: str
               ) -> Generator[Op, bytes | None, Authorized]:
    perm = _perm(table, command)
    # an unknown command is still negotiated, so that the client hears CMD_NOT_FOUND
    lp = policy.levels[perm or Perm.READ]
    # 23.10+ clients say AuthenticationNew; older ones only Authentication
    cli_auth = _client_level(ad, "AuthenticationNew" if "AuthenticationNew" in ad
                             else "Authentication", peer)
    authenticate = reconcile(cli_auth, lp.authentication)
    encrypt = reconcile(_client_level(ad, "Encryption", peer), lp.encryption)
    integrity = reconcile(_client_level(ad, "Integrity", peer), lp.integrity)
    if authenticate is None or encrypt is None or integrity is None:
        raise SecurityError(f"no security policy agrees with the client's for command "
                            f"{command}", peer=peer)
    auth_required = Level.REQUIRED in (cli_auth, lp.authentication)
    methods = [m for m in lp.auth_methods if m in _methods_of(ad, "AuthMethods")]
    cryptos = [m for m in lp.crypto_methods if m in _methods_of(ad, "CryptoMethods")]
    if authenticate and cryptos and cryptos[0] == "AES":
        # AES-GCM always encrypts and checks integrity (ReconcileSecurityPolicyAds)
        encrypt = integrity = True
    crypto = encrypt or integrity
    if crypto and not cryptos:
        raise SecurityError("no crypto method in common: the client offers "
                            f"{ad.get('CryptoMethods')!r}; condorpy speaks AES", peer=peer)
    client_pub = ad.get("ECDHPublicKey")
    if crypto and (not isinstance(client_pub, str) or not client_pub):
        raise SecurityError("the client sent no ECDHPublicKey; condorpy agrees keys "
                            "by ECDH only", peer=peer)
    from condorpy.pool.aesgcm import EcdhKey      # cryptography at first use

    ecdh = EcdhKey()
    reply = ClassAd()
    reply["Authentication"] = "YES" if authenticate else "NO"
    if authenticate and not auth_required:
        reply["AuthRequired"] = False
    reply["Encryption"] = "YES" if encrypt else "NO"
    reply["Integrity"] = "YES" if integrity else "NO"
    if methods:
        reply["AuthMethodsList"] = ",".join(methods)
        reply["AuthMethods"] = methods[0]
    if cryptos:
        reply["CryptoMethods"] = ",".join(cryptos)
        reply["CryptoMethodsList"] = ",".join(cryptos)
    cli_duration = str(ad.get("SessionDuration") or "")
    duration = policy.session_duration
    if cli_duration.strip().isdigit():
        duration = min(duration, int(cli_duration))
    reply["SessionDuration"] = str(duration)
    lease = policy.session_lease
    cli_lease = ad.get("SessionLease")
    if isinstance(cli_lease, int) and not isinstance(cli_lease, bool) and cli_lease > 0:
        lease = min(lease, cli_lease) if lease else cli_lease
    reply["SessionLease"] = lease
    reply["Enact"] = "YES"
    if policy.trust_domain:
        reply["TrustDomain"] = policy.trust_domain
    reply["RemoteVersion"] = version
    if crypto:
        reply["ECDHPublicKey"] = ecdh.public_b64()
    enact = ad.get("Enact")
    if not (isinstance(enact, str) and enact.upper() == "YES"):
        yield Send(put_classad(Writer(), reply).payload())
    user = UNAUTHENTICATED
    if authenticate:
        # As HTCondor's Authentication loop: a method that fails is dropped by the
        # client, which offers the rest; 0 chosen ends it.
        failed: list[str] = []
        failure = ""
        bits = 0
        while user == UNAUTHENTICATED:
            got = yield Receive("the client's authentication methods")
            assert got is not None
            bits = _read_int(got, peer, "the client's authentication methods")
            chosen = next((m for m in methods if bits & METHOD_BITS[m]
                           and m not in failed), "")
            yield Send(_int_message(METHOD_BITS[chosen] if chosen else 0))
            if not chosen:
                break
            if chosen == "CLAIMTOBE":
                got = yield Receive("the CLAIMTOBE identity")
                assert got is not None
                claimed = _read_claimtobe(got, peer)
                user = claimed
                if "@" not in user and policy.trust_domain:
                    user = f"{user}@{policy.trust_domain}"
                user = policy.canonical("CLAIMTOBE", claimed, user)
                yield Send(_int_message(1))
            elif chosen == "SSL":
                try:
                    got_peer = yield from run_exchange(_ssl_exchange(policy, peer))
                except SecurityError as exc:
                    # said here: a client refused goes on to other methods or hangs up
                    log.warning("pool: %s", exc)
                    failed.append(chosen)
                    failure = exc.reason
                    continue
                user = sslauth.identity(got_peer.subject, policy.maps, policy.uid_domain)
            else:
                try:
                    name = yield from run_exchange(fsauth.server_exchange(policy.fs, peer, local))
                except SecurityError as exc:
                    failed.append(chosen)
                    failure = exc.reason
                    continue
                user = policy.canonical(
                    "FS", name, f"{name}@{policy.uid_domain}" if policy.uid_domain else name)
        if user != UNAUTHENTICATED:
            if crypto:
                yield Send(_int_message(0))     # no key handed over: ECDH made it
        elif auth_required:
            if failed:
                raise SecurityError(f"authentication for command {command} failed: "
                                    f"{failure}", peer=peer)
            raise SecurityError(f"no authentication method in common for command "
                                f"{command}: the client offers bits {bits}, condorpy "
                                f"takes {', '.join(methods) or 'none'}", peer=peer)
    key = b""
    if crypto:
        assert isinstance(client_pub, str)
        key = ecdh.session_key(client_pub, peer)
        yield StartCrypto(key)
    t = now()
    sid = cache.new_sid(t)
    why = (policy.verify(perm, user, ip) if perm is not None else "unknown command")
    post = ClassAd()
    post["User"] = user
    post["TriedAuthentication"] = authenticate
    post["Sid"] = sid
    post["ValidCommands"] = ",".join(str(c) for c, (p, _) in sorted(table.items())
                                     if p is perm)
    post["ReturnCode"] = ("CMD_NOT_FOUND" if perm is None
                          else "AUTHORIZED" if why is None else "DENIED")
    yield Send(put_classad(Writer(crypto=crypto), post).payload())
    if why is not None:
        raise SecurityError(f"command {command} from {user} denied: {why}", peer=peer)
    assert perm is not None
    if crypto:
        cache.add(NegotiatedSession(sid, key, user, perm, t + duration + 20,
                                    float(lease + 20 if lease else 0), t))
    payload = b""
    if table[command][1]:
        got = yield Receive(f"the message of command {command}")
        assert got is not None
        payload = got
    return Authorized(command, sid, user, False, payload, crypto)
