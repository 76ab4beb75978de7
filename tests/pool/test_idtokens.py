"""IDTOKENS (TOKEN) authentication, client side, without a network: the key derivation
and the three AKEP2 messages checked against an exchange recorded with the real 23.9.6
collector; token discovery as HTCondor's ``findTokens`` does it; truncated, oversized
and garbled server replies; and the DC_AUTHENTICATE handshake choosing TOKEN."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Generator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.errors import SecurityError, WireError
from condorpy.pool import idtokens
from condorpy.pool.aesgcm import EcdhKey
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import (ClientPolicy, Level, Op, Receive, Send, Session,
                                    StartCrypto, client_handshake, client_policy)
from condorpy.pool.wire_ad import get_classad, put_classad

PEER = "127.0.0.1:9618"
VECTOR = json.loads((Path(__file__).parent / "data" / "idtoken_exchange.json").read_text())


def b64(s: str) -> bytes:
    return base64.b64decode(s)


def jwt(header: dict[str, object], payload: dict[str, object], sig: bytes = b"s" * 32
        ) -> str:
    def enc(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    return ".".join((enc(json.dumps(header).encode()), enc(json.dumps(payload).encode()),
                     enc(sig)))


TOKEN = jwt({"alg": "HS256", "kid": "POOL", "typ": "JWT"},
            {"iss": "vm", "sub": "condor@vm", "iat": 1, "scope": "condor:/ADVERTISE_STARTD"})


# --- the recorded exchange ----------------------------------------------------------

def test_key_derivation_and_messages_match_the_real_collectors_exchange() -> None:
    tok = idtokens.parse_token(VECTOR["token"], "vector")
    k, k_prime = idtokens.derive_keys(tok)
    assert (k.hex(), k_prime.hex()) == (VECTOR["K"], VECTOR["K_prime"])
    ra = b64(VECTOR["ra"])
    assert idtokens.message_one(tok, ra) == b64(VECTOR["message_one"])
    reply = idtokens.parse_message_two(b64(VECTOR["message_two"]), PEER)
    # the collector's MAC over (a, b, ra, rb) checks out under our K: the derivation
    # is HTCondor's, byte for byte
    assert idtokens.check_reply(reply, tok, ra, k, PEER) == reply.b
    assert reply.a == tok.subject == "condor@vm" and reply.b.startswith("condor_pool@")
    assert idtokens.message_three(tok.subject, reply.rb, k) == b64(VECTOR["message_three"])


def test_a_wrong_key_fails_the_recorded_proof() -> None:
    tok = idtokens.parse_token(VECTOR["token"], "vector")
    reply = idtokens.parse_message_two(b64(VECTOR["message_two"]), PEER)
    with pytest.raises(SecurityError, match="not signed with this pool's key POOL"):
        idtokens.check_reply(reply, tok, b64(VECTOR["ra"]), b"\0" * 32, PEER)


@pytest.mark.parametrize("cut", [0, 1, 7, 8, 20, 100, 300, 600, -21, -1])
def test_a_truncated_reply_is_a_wire_error(cut: int) -> None:
    data = b64(VECTOR["message_two"])
    with pytest.raises(WireError) as e:
        idtokens.parse_message_two(data[:cut], PEER)
    assert PEER in str(e.value)


def test_trailing_bytes_after_the_reply_are_a_wire_error() -> None:
    with pytest.raises(WireError, match="unread"):
        idtokens.parse_message_two(b64(VECTOR["message_two"]) + b"\0", PEER)


def _reply(a: str = "condor@vm", b: str = "condor_pool@vm", ra_len: int = 256,
           rb_len: int = 256, mac_len: int = 20, a_len: int | None = None,
           status: int = 0) -> bytes:
    w = Writer().put_int(status).put_int(len(a) if a_len is None else a_len).put_string(a)
    w.put_int(len(b)).put_string(b)
    # a length never carries more than 300 bytes behind it: an oversized length claims
    # more than the message holds
    w.put_int(ra_len).put_raw(b"r" * min(max(ra_len, 0), 300))
    w.put_int(rb_len).put_raw(b"q" * min(max(rb_len, 0), 300))
    return w.put_int(mac_len).put_raw(b"m" * min(max(mac_len, 0), 300)).payload()


@pytest.mark.parametrize("data, why", [
    (_reply(ra_len=257), "at most 256"),
    (_reply(rb_len=1 << 40), "at most 256"),
    (_reply(mac_len=65), "at most 64"),
    (_reply(mac_len=-1), "at most 64"),
    (_reply(a_len=3), "announced as 3"),
    (_reply(b="x" * 2000), "announced"),
])
def test_oversized_or_inconsistent_lengths_are_wire_errors(data: bytes, why: str) -> None:
    with pytest.raises(WireError, match=why):
        idtokens.parse_message_two(data, PEER)


def test_a_refusing_server_names_the_token_file_never_the_token() -> None:
    tok = idtokens.parse_token(TOKEN, "/etc/condor/tokens.d/pool:1")
    reply = idtokens.parse_message_two(_reply(status=-1, a="", b="", ra_len=0, rb_len=0,
                                              mac_len=0), PEER)
    with pytest.raises(SecurityError) as e:
        idtokens.check_reply(reply, tok, b"r" * 256, b"k" * 32, PEER)
    text = str(e.value)
    assert "tokens.d/pool:1" in text and "rejected" in text
    assert TOKEN.split(".")[1] not in text and TOKEN.split(".")[2] not in text


@pytest.mark.parametrize("change, why", [
    ({"a": "intruder@vm"}, "echoes another client"),
    ({"ra_len": 100}, "wrong size"),
    ({"b": ""}, "names no server"),
])
def test_garbled_replies_are_refused(change: dict[str, object], why: str) -> None:
    tok = idtokens.parse_token(TOKEN, "t")
    reply = idtokens.parse_message_two(_reply(**change), PEER)  # type: ignore[arg-type]
    with pytest.raises(SecurityError, match=why):
        idtokens.check_reply(reply, tok, b"r" * 256, b"k" * 32, PEER)


def test_the_exchange_ends_with_an_error_message_when_the_proof_fails() -> None:
    tok = idtokens.parse_token(TOKEN, "t")
    gen = idtokens.exchange(tok, PEER, random=lambda n: b"r" * n)
    kind, first = next(gen)
    assert kind == "send"
    r = Reader(first, PEER)
    assert r.get_int() == 0 and r.get_int() == 9 and r.get_str() == "condor@vm"
    assert r.get_str() == TOKEN.rsplit(".", 1)[0]        # never the signature
    assert r.get_int() == 256 and r.get_raw(256, "ra") == b"r" * 256
    r.end()
    assert gen.send(None) == ("receive", b"the TOKEN reply")
    kind, last = gen.send(_reply(a="condor@vm"))          # an hkt of b"m" * 20: wrong
    assert kind == "send" and last == idtokens.error_message_three()
    with pytest.raises(SecurityError, match="proof does not match"):
        gen.send(None)


# --- tokens on disk -----------------------------------------------------------------

@pytest.mark.parametrize("line, why", [
    ("abc", "not a JWT"),
    ("a.b.", "not a JWT"),
    ("!!!.e30.c2ln", "not base64url|not JSON"),
    (jwt({"alg": "HS256"}, {"sub": "x@y"}), "no key id"),
    (jwt({"kid": "POOL"}, {"iss": "vm"}), "no subject"),
    (jwt({"kid": "POOL"}, ["not", "an", "object"]), "not an object"),  # type: ignore[arg-type]
])
def test_garbled_tokens_are_named_by_file_and_line(line: str, why: str) -> None:
    with pytest.raises(SecurityError, match=why) as e:
        idtokens.parse_token(line, "/t/tokens.d/a:3")
    assert str(e.value).startswith("/t/tokens.d/a:3")


def _write(d: Path, name: str, *lines: str) -> None:
    (d / name).write_text("".join(line + "\n" for line in lines))
    (d / name).chmod(0o600)


def test_search_order_and_matching_follow_htcondor(tmp_path: Path) -> None:
    other = jwt({"kid": "POOL"}, {"iss": "elsewhere", "sub": "condor@elsewhere"})
    newkey = jwt({"kid": "NEW"}, {"iss": "vm", "sub": "condor@vm"})
    mine = jwt({"kid": "POOL"}, {"iss": "vm", "sub": "startd@vm"})
    auto = jwt({"kid": "POOL"}, {"iss": "vm", "sub": "auto@vm"})
    _write(tmp_path, "a-other", "# a comment", "", other)
    _write(tmp_path, "b-mine", newkey, mine)
    _write(tmp_path, ".hidden", mine)
    _write(tmp_path, "z-backup~", mine)
    (tmp_path / "sub.d").mkdir()
    search = idtokens.TokenSearch(str(tmp_path), exclude=Config.from_text("").get(
        "LOCAL_CONFIG_DIR_EXCLUDE_REGEXP") or "")
    assert [p.name for p in search.files()] == ["a-other", "b-mine"]
    choice = idtokens.choose_token(search, "vm", frozenset({"POOL"}))
    assert choice.token is not None and choice.token.subject == "startd@vm"
    assert choice.token.where == f"{tmp_path}/b-mine:2"
    assert any("issued by elsewhere" in r for r in choice.reasons)
    assert any("key NEW" in r for r in choice.reasons)
    # the subsystem's auto-generated token goes first
    _write(tmp_path, "STARTD_auto_generated_token", auto)
    choice = idtokens.choose_token(search, "vm", frozenset({"POOL"}))
    assert choice.token is not None and choice.token.subject == "auto@vm"
    # a server that names no keys or trust domain takes the first token (byte order)
    (tmp_path / "STARTD_auto_generated_token").unlink()
    choice = idtokens.choose_token(idtokens.TokenSearch(str(tmp_path), subsystem="X",
                                                        exclude=search.exclude), "",
                                   frozenset())
    assert choice.token is not None and choice.token.subject == "condor@elsewhere"


def test_no_fitting_token_is_one_line_naming_the_directory_and_pool(tmp_path: Path) -> None:
    secret = jwt({"kid": "POOL"}, {"iss": "elsewhere", "sub": "condor@elsewhere"})
    _write(tmp_path, "pool", secret)
    search = idtokens.TokenSearch(str(tmp_path))
    keys = frozenset({"POOL"})
    choice = idtokens.choose_token(search, "vm", keys)
    msg = idtokens.no_token_message(search, "vm", keys, choice)
    assert choice.token is None and "\n" not in msg
    assert str(tmp_path) in msg and "trust domain vm" in msg and "condor_token_create" in msg
    assert "issued by elsewhere" in msg
    assert all(part not in msg for part in secret.split(".")[1:])
    empty = idtokens.TokenSearch(str(tmp_path / "missing"))
    assert "holds no token" in idtokens.no_token_message(
        empty, "vm", keys, idtokens.choose_token(empty, "vm", keys))


def test_an_unreadable_token_file_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    _write(tmp_path, "pool", TOKEN)

    def deny(p: Path) -> bytes:
        raise PermissionError(13, "Permission denied")
    choice = idtokens.choose_token(idtokens.TokenSearch(str(tmp_path)), "vm",
                                   frozenset({"POOL"}), read=deny)
    assert choice.token is None and "Permission denied" in choice.reasons[0]


def test_expired_tokens_are_skipped_when_the_time_is_known(tmp_path: Path) -> None:
    _write(tmp_path, "old", jwt({"kid": "POOL"}, {"iss": "vm", "sub": "c@vm", "exp": 100}))
    search = idtokens.TokenSearch(str(tmp_path))
    assert idtokens.choose_token(search, "vm", frozenset(), now=50).token is not None
    choice = idtokens.choose_token(search, "vm", frozenset(), now=200)
    assert choice.token is None and "expired" in choice.reasons[0]


def test_the_token_directory_knobs() -> None:
    assert idtokens.token_directory(Config.from_text("")) == "/etc/condor/tokens.d"
    assert idtokens.token_directory(Config.from_text(
        "SEC_TOKEN_SYSTEM_DIRECTORY = /srv/tokens\n")) == "/srv/tokens"
    assert idtokens.token_directory(Config.from_text(
        "SEC_TOKEN_SYSTEM_DIRECTORY = /srv/tokens\nSEC_TOKEN_DIRECTORY = /x/t.d\n")
    ) == "/x/t.d"
    p = client_policy(Config.from_text(
        "SEC_DEFAULT_AUTHENTICATION_METHODS = FS, IDTOKENS, CLAIMTOBE\n"), "v")
    assert p.auth_methods == ("FS", "TOKEN", "CLAIMTOBE")
    assert p.token_search is not None and p.token_search.subsystem == "STARTD"


def test_a_token_never_shows_in_a_repr() -> None:
    tok = idtokens.parse_token(TOKEN, "t")
    assert all(part not in repr(tok) for part in TOKEN.split(".")[1:])


# --- the handshake, TOKEN chosen --------------------------------------------------------

def _ad(**attrs: object) -> ClassAd:
    a = ClassAd()
    for k, v in attrs.items():
        a[k] = v
    return a


def run_handshake(policy: ClientPolicy, reply: ClassAd, chosen: int, srv_key: EcdhKey,
                  signature: bytes) -> tuple[Session, list[bytes]]:
    """Drive the client with a scripted TOKEN server at the message level."""
    sent: list[bytes] = []
    gen: Generator[Op, bytes | None, Session] = client_handshake(0, policy, PEER)
    answer: bytes | None = None
    request: ClassAd | None = None
    state = "policy"
    ra = b""
    try:
        while True:
            op = gen.send(answer)
            answer = None
            if isinstance(op, Send):
                sent.append(op.payload)
                if request is None:
                    r = Reader(op.payload, PEER)
                    r.get_int()
                    request = get_classad(r)
                elif state == "token1":
                    r = Reader(op.payload, PEER)
                    assert r.get_int() == 0
                    r.get_int()
                    a = r.get_str()
                    hp = r.get_str()
                    r.get_int()
                    ra = r.get_raw(256, "ra")
                    tok = idtokens.Token("vm", "POOL", a, None, "srv", hp, signature)
                    k, _ = idtokens.derive_keys(tok)
                    rb = b"b" * 256
                    mac = idtokens.hkt(k, a, "condor_pool@vm", ra, rb)
                    state = "token2"
                    msg2 = (Writer().put_int(0).put_int(len(a)).put_string(a)
                            .put_int(14).put_string("condor_pool@vm").put_int(256).put_raw(ra)
                            .put_int(256).put_raw(rb).put_int(len(mac)).put_raw(mac)
                            .payload())
                elif state == "token2":
                    state = "done"
            elif isinstance(op, Receive):
                if "policy" in op.what:
                    answer = put_classad(Writer(), reply).payload()
                elif "method" in op.what:
                    answer = Writer().put_int(chosen).payload()
                    state = "token1"
                elif "TOKEN" in op.what:
                    answer = msg2
                elif "hand-over" in op.what:
                    assert state == "done"
                    answer = Writer().put_int(0).payload()
                else:
                    answer = put_classad(Writer(crypto=True), _ad(
                        ReturnCode="AUTHORIZED", Sid="vm:1", User="condor@vm")).payload()
            elif isinstance(op, StartCrypto):
                assert request is not None
                assert op.key == srv_key.session_key(str(request["ECDHPublicKey"]), "c")
    except StopIteration as stop:
        return stop.value, sent
    raise AssertionError("unreachable")


def _policy(tmp_path: Path, methods: tuple[str, ...] = ("TOKEN",)) -> ClientPolicy:
    return ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                        integrity=Level.REQUIRED, auth_methods=methods,
                        configured_methods=("FS", "IDTOKENS"),
                        token_search=idtokens.TokenSearch(str(tmp_path)))


def test_the_handshake_authenticates_with_the_fitting_token(tmp_path: Path) -> None:
    sig = os.urandom(32)
    _write(tmp_path, "pool", jwt({"kid": "POOL"}, {"iss": "vm", "sub": "condor@vm"}, sig))
    key = EcdhKey()
    reply = _ad(Enact="YES", Authentication="YES", Encryption="YES", Integrity="YES",
                AuthMethodsList="FS,IDTOKENS", CryptoMethods="AES", TrustDomain="vm",
                IssuerKeys="POOL", ECDHPublicKey=key.public_b64())
    session, sent = run_handshake(_policy(tmp_path), reply, 2048, key, sig)
    assert session.method == "TOKEN" and session.authenticated and session.encrypted
    assert Reader(sent[1], PEER).get_int() == 2048       # only TOKEN offered


def test_without_a_fitting_token_the_handshake_stops_before_offering_methods(
        tmp_path: Path) -> None:
    _write(tmp_path, "pool", jwt({"kid": "POOL"}, {"iss": "other", "sub": "condor@other"}))
    key = EcdhKey()
    reply = _ad(Enact="YES", Authentication="YES", Encryption="YES", Integrity="YES",
                AuthMethodsList="FS,IDTOKENS", CryptoMethods="AES", TrustDomain="vm",
                IssuerKeys="POOL", ECDHPublicKey=key.public_b64())
    with pytest.raises(SecurityError, match="no IDTOKEN in .*trust domain vm") as e:
        run_handshake(_policy(tmp_path), reply, 2048, key, b"")
    assert PEER in str(e.value)


def test_without_a_token_another_common_method_is_offered(tmp_path: Path) -> None:
    key = EcdhKey()
    reply = _ad(Enact="YES", Authentication="YES", Encryption="YES", Integrity="YES",
                AuthMethodsList="TOKEN,CLAIMTOBE", CryptoMethods="AES", TrustDomain="vm",
                ECDHPublicKey=key.public_b64())
    gen = client_handshake(0, _policy(tmp_path, ("TOKEN", "CLAIMTOBE")), PEER)
    next(gen)
    assert isinstance(gen.send(None), Receive)
    op = gen.send(put_classad(Writer(), reply).payload())
    assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == 2   # CLAIMTOBE
