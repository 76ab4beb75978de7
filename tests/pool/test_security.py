"""The DC_AUTHENTICATE client against a scripted server that speaks as the 23.9.6 collector
did on the wire (the real collector is in test_pool_collector.py): success, refusals,
and truncated, oversized and garbled replies at every step."""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.errors import CondorpyError, PoolError, SecurityError, WireError
from condorpy.pool.aesgcm import EcdhKey
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.connection import Channel
from condorpy.pool.security import (DC_AUTHENTICATE, ClientPolicy, Level, Op, Receive, Send,
                                    Session, StartCrypto, client_handshake, client_policy)
from condorpy.pool.wire_ad import get_classad, put_classad

PEER = "127.0.0.1:9618"
POLICY = ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                      integrity=Level.REQUIRED, claimtobe_user="condorpy", trust_domain="vm")


def ad(**attrs: object) -> ClassAd:
    a = ClassAd()
    for k, v in attrs.items():
        a[k] = v
    return a


class Server:
    """The server half, message by message; ``tweak`` may replace any reply."""

    def __init__(self, tweak: Callable[[str, bytes], bytes] | None = None,
                 reply: ClassAd | None = None, chosen: int = 2, claim_ok: int = 1,
                 post: ClassAd | None = None) -> None:
        self.ch = Channel("client")
        self.tweak = tweak or (lambda step, data: data)
        self.key = EcdhKey()
        self.reply = reply or ad(Enact="YES", Authentication="YES", Encryption="YES",
                                 Integrity="YES", AuthMethodsList="CLAIMTOBE",
                                 CryptoMethods="AES", ECDHPublicKey=self.key.public_b64(),
                                 RemoteVersion="$CondorVersion: 23.9.6 $")
        self.chosen, self.claim_ok = chosen, claim_ok
        self.post = post or ad(ReturnCode="AUTHORIZED", Sid="vm:1:2:3", User="condorpy@vm",
                               ValidCommands="0,13,60")
        self.seen: dict[str, object] = {}
        self.out = b""

    def script(self) -> Generator[bytes, bytes, None]:
        """Receives each client message (as bytes); yields what the server sends before it
        needs the next one."""
        r = self._read((yield b""))
        assert r.get_int() == DC_AUTHENTICATE
        request = get_classad(r)
        self.seen["request"] = request
        self._send("policy", put_classad(Writer(), self.reply).payload())
        if self.reply.get("Authentication") == "YES":
            self.seen["bits"] = self._read((yield self._flush())).get_int()
            self._send("chosen", Writer().put_int(self.chosen).payload())
            r = self._read((yield self._flush()))
            self.seen["claim"] = (r.get_int(), r.get_str())
            self._send("claim", Writer().put_int(self.claim_ok).payload())
            self._send("haskey", Writer().put_int(0).payload())
        if self.reply.get("Encryption") == "YES":
            self.ch.start_crypto(self.key.session_key(str(request["ECDHPublicKey"]), "c"))
        self._send("post", put_classad(self.ch.writer(), self.post).payload())
        self.seen["command"] = get_classad(self._read((yield self._flush())))
        yield b""

    def _read(self, data: bytes) -> Reader:
        self.ch.decoder.feed(data)
        msg = self.ch.decoder.next_message()
        assert msg is not None
        return self.ch.reader(msg)

    def _send(self, step: str, payload: bytes) -> None:
        self.out += self.tweak(step, self.ch.encode(payload))

    def _flush(self) -> bytes:
        out, self.out = self.out, b""
        return out


def converse(server: Server, policy: ClientPolicy = POLICY) -> Session:
    """Run the client's handshake against ``server``, then send one ClassAd command."""
    client = Channel(PEER)
    srv = server.script()
    next(srv)
    gen: Generator[Op, bytes | None, Session] = client_handshake(0, policy, PEER)
    inbox: bytes | None = None
    try:
        while True:
            op = gen.send(inbox)
            inbox = None
            if isinstance(op, Send):
                client.decoder.feed(srv.send(client.encode(op.payload)))
            elif isinstance(op, Receive):
                inbox = client.decoder.next_message()
                if inbox is None:
                    raise WireError(f"connection closed while waiting for {op.what}",
                                    peer=PEER)
            elif isinstance(op, StartCrypto):
                client.start_crypto(op.key)
    except StopIteration as stop:
        session: Session = stop.value
    w = client.writer()
    if session.raw:
        return session
    put_classad(w, ad(MyType="Machine", Name="slot1@test"))
    srv.send(client.encode(w.payload()))
    return session


def test_a_claimtobe_aes_session_is_negotiated_and_the_command_arrives_encrypted() -> None:
    server = Server()
    session = converse(server)
    assert session.authenticated and session.encrypted and session.method == "CLAIMTOBE"
    assert session.sid == "vm:1:2:3" and session.valid_commands == (0, 13, 60)
    req = server.seen["request"]
    assert isinstance(req, ClassAd)
    assert req["Command"] == 0 and req["AuthMethods"] == "CLAIMTOBE"
    assert req["Encryption"] == "REQUIRED" and req["CryptoMethods"] == "AES"
    assert server.seen["bits"] == 2 and server.seen["claim"] == (1, "condorpy")
    cmd = server.seen["command"]
    assert isinstance(cmd, ClassAd) and cmd["Name"] == "slot1@test"


def test_a_session_without_security_sends_clear_text() -> None:
    server = Server(reply=ad(Enact="YES", Authentication="NO", Encryption="NO",
                             Integrity="NO"))
    session = converse(server, ClientPolicy())
    assert not session.authenticated and not session.encrypted


def test_negotiation_never_sends_a_raw_command() -> None:
    session = converse_raw()
    assert session.raw


def converse_raw() -> Session:
    gen = client_handshake(0, ClientPolicy(negotiation=Level.NEVER), PEER)
    try:
        next(gen)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    raise AssertionError("a raw command needs no exchange")


@pytest.mark.parametrize("server, why", [
    (Server(chosen=0), "chose authentication method bits 0"),
    (Server(chosen=4), "chose authentication method bits 4"),
    (Server(claim_ok=0), "refused CLAIMTOBE"),
    (Server(post=ad(ReturnCode="DENIED", User="condorpy@vm")), "did not authorize.*DENIED"),
    (Server(reply=ad(Enact="NO")), "did not accept"),
    (Server(reply=ad(Enact="YES", Authentication="YES", Encryption="NO", Integrity="NO",
                     AuthMethodsList="CLAIMTOBE")), "refuses encryption"),
    (Server(reply=ad(Enact="YES", Authentication="YES", Encryption="YES", Integrity="YES",
                     AuthMethodsList="CLAIMTOBE", CryptoMethods="BLOWFISH")),
     "BLOWFISH"),
    (Server(reply=ad(Enact="YES", Authentication="YES", Encryption="YES", Integrity="YES",
                     AuthMethodsList="IDTOKENS,SSL", CryptoMethods="AES")),
     "no authentication method in common.*IDTOKENS, SSL"),
    (Server(reply=ad(Enact="YES", Authentication="YES", Encryption="YES", Integrity="YES",
                     AuthMethodsList="CLAIMTOBE", CryptoMethods="AES",
                     ECDHPublicKey="AAAA")), "P-256"),
])
def test_refusals_are_security_errors_naming_the_peer(server: Server, why: str) -> None:
    with pytest.raises(SecurityError, match=why) as e:
        converse(server)
    assert PEER in str(e.value)


def _truncate(step: str) -> Callable[[str, bytes], bytes]:
    return lambda s, data: data[:-3] if s == step else data


def _garble(step: str) -> Callable[[str, bytes], bytes]:
    def tweak(s: str, data: bytes) -> bytes:
        if s != step:
            return data
        b = bytearray(data)
        b[len(b) // 2 + 3] ^= 0x5A
        return bytes(b)
    return tweak


def _oversize(step: str) -> Callable[[str, bytes], bytes]:
    return lambda s, data: (b"\x01\x7f\xff\xff\xff" + data[5:]) if s == step else data


def _extra(step: str) -> Callable[[str, bytes], bytes]:
    # a valid packet whose message carries one value too many
    def tweak(s: str, data: bytes) -> bytes:
        if s != step:
            return data
        body = data[5:] + b"\0" * 8
        return bytes([data[0]]) + len(body).to_bytes(4, "big") + body
    return tweak


@pytest.mark.parametrize("step", ["policy", "chosen", "claim", "haskey", "post"])
@pytest.mark.parametrize("damage", [_truncate, _garble, _oversize, _extra])
def test_damaged_replies_at_every_step_end_in_one_clear_error(
        step: str, damage: Callable[[str], Callable[[str, bytes], bytes]]) -> None:
    with pytest.raises(CondorpyError) as e:
        converse(Server(tweak=damage(step)))
    assert isinstance(e.value, (WireError, SecurityError, PoolError))
    assert PEER in str(e.value) or "client" in str(e.value)


def test_client_policy_reads_htcondors_knobs() -> None:
    cfg = Config.from_text("SEC_DEFAULT_ENCRYPTION = required\n"
                           "SEC_CLIENT_AUTHENTICATION = PREFERRED\n"
                           "SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE\n"
                           "SEC_CLAIMTOBE_USER = alice\nSEC_CLAIMTOBE_INCLUDE_DOMAIN = true\n"
                           "UID_DOMAIN = example.org\n")
    p = client_policy(cfg, "v")
    assert p.encryption is Level.REQUIRED and p.authentication is Level.PREFERRED
    assert p.integrity is Level.OPTIONAL and p.negotiation is Level.PREFERRED
    assert p.auth_methods == ("FS", "CLAIMTOBE")
    assert p.configured_methods == ("FS", "CLAIMTOBE")
    assert p.claimtobe_user == "alice@example.org"


def test_a_bad_security_level_names_the_knob() -> None:
    cfg = Config.from_text("SEC_DEFAULT_ENCRYPTION = sometimes\n", source="/etc/condor_config")
    with pytest.raises(CondorpyError, match="SEC_DEFAULT_ENCRYPTION"):
        client_policy(cfg, "v")
