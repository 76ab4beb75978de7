"""The command port's server side of DC_AUTHENTICATE and the administration commands,
sans-I/O: condorpy's client negotiates with it, resumes the session, is refused by
DENY lists and by policy; every client message truncated, oversized and garbled ends
in one clear error; every admin command's message parses, and damaged ones do not (the
pool's own 23.9.6 tools are in test_pool_admin.py)."""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.errors import ConfigError, CondorpyError, SecurityError, WireError
from condorpy.pool import admin
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import (ClientPolicy, Level, Op, Send, Session,
                                    client_handshake, resume)
from condorpy.pool.secserver import (Authorized, Perm, SessionCache, reconcile, serve,
                                     server_policy)
from condorpy.pool.wire_ad import get_classad, put_classad
from tests.pool.test_claims import pump

PEER = "127.0.0.1:4242"
BASE = """
SEC_DEFAULT_AUTHENTICATION = REQUIRED
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
TRUST_DOMAIN = vm
ALLOW_ADMINISTRATOR = admin@vm/127.0.0.1
DENY_READ = spy@vm/*
"""
CLIENT = ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                      integrity=Level.REQUIRED, claimtobe_user="admin@vm", trust_domain="vm")


def no_claims(sid: str) -> bytes | None:
    return None


def server(cache: SessionCache, text: str = BASE, ip: str = "127.0.0.1"
           ) -> Generator[Op, bytes | None, Authorized]:
    return serve("client", ip, server_policy(Config.from_text(text)), cache, no_claims,
                 admin.COMMANDS, lambda: 1000.0, "$CondorVersion: 25.14.1 $")


def tolerant(gen: Generator[Op, bytes | None, object]) -> Generator[Op, bytes | None, object]:
    """A client whose refusal is swallowed, so that the server's own error shows."""
    try:
        return (yield from gen)
    except SecurityError:
        return None


def drain_message() -> bytes:
    ad = ClassAd()
    ad["HowFast"] = 10
    ad["ResumeOnCompletion"] = 1
    ad["DrainReason"] = "maintenance"
    ad.set_expr("CheckExpr", "Cpus > 0")
    return put_classad(Writer(crypto=True), ad).payload()


def test_a_new_session_is_negotiated_and_the_command_arrives_encrypted() -> None:
    cache = SessionCache()
    session, got = pump(client_handshake(admin.DRAIN_JOBS, CLIENT, PEER),
                        server(cache), then=drain_message())
    assert isinstance(session, Session)
    assert isinstance(got, Authorized)
    assert got.command == admin.DRAIN_JOBS and got.user == "admin@vm" and got.crypto
    assert not got.claim_session and got.session_id in cache.sessions
    cmd = admin.parse(got.command, Reader(got.payload, PEER, crypto=True))
    assert cmd == admin.Drain("quick", "resume", "maintenance", "Cpus > 0", None)
    assert session.encrypted and session.user == "admin@vm"        
    assert admin.DRAIN_JOBS in session.valid_commands             
    # the client resumes the session it negotiated: no second key exchange
    _, again = pump(resume(admin.VACATE_ALL_FAST, session.sid, session.key, PEER),
                    server(cache))
    assert isinstance(again, Authorized)
    assert again.user == "admin@vm" and again.payload == b""


def test_a_command_without_arguments_is_not_waited_for() -> None:
    _, got = pump(client_handshake(admin.VACATE_ALL_CLAIMS, CLIENT, PEER), server(SessionCache()))
    assert isinstance(got, Authorized) and got.payload == b""


@pytest.mark.parametrize("user, command, why", [
    ("spy@vm", admin.QUERY_STARTD_ADS, "DENY_READ matches spy@vm"),
    ("someone@vm", admin.DRAIN_JOBS, "no ALLOW_ADMINISTRATOR entry matches someone@vm"),
])
def test_a_denied_client_hears_denied_and_nothing_runs(user: str, command: int,
                                                       why: str) -> None:
    client = ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                          integrity=Level.REQUIRED, claimtobe_user=user)
    with pytest.raises(SecurityError, match=f"ReturnCode 'DENIED', as {user}"):
        pump(client_handshake(command, client, PEER), server(SessionCache()))
    # and the server's own reason, for its log
    with pytest.raises(SecurityError, match=why):
        pump(tolerant(client_handshake(command, client, PEER)), server(SessionCache()))


def test_a_session_of_another_host_or_an_unknown_one_is_refused() -> None:
    cache = SessionCache()
    session, _ = pump(client_handshake(admin.DRAIN_JOBS, CLIENT, PEER), server(cache),
                      then=drain_message())
    assert isinstance(session, Session)
    with pytest.raises(SecurityError, match="DENIED"):
        pump(resume(admin.VACATE_ALL_FAST, session.sid, session.key, PEER),
             server(cache, ip="10.0.0.9"))
    with pytest.raises(SecurityError, match="SID_NOT_FOUND"):
        pump(resume(admin.VACATE_ALL_FAST, "nope", b"k" * 32, PEER), server(cache))


def test_raw_commands_pass_only_where_the_policy_asks_for_nothing() -> None:
    def raw() -> Generator[Op, bytes | None, None]:
        yield Send(Writer().put_int(admin.DC_CONFIG_VAL).put_string("NAME").payload())
    with pytest.raises(SecurityError, match="require one"):
        pump(raw(), server(SessionCache()))
    _, got = pump(raw(), server(SessionCache(), "ALLOW_READ = 127.0.0.1\n"))
    assert isinstance(got, Authorized) and got.user == "unauthenticated@unmapped"
    assert admin.parse(got.command, Reader(got.payload, PEER)) == admin.ConfigVal("NAME")
    with pytest.raises(SecurityError, match="ALLOW_READ"):
        pump(raw(), server(SessionCache(), "ALLOW_READ = 10.0.0.0/8\n"))


def test_a_client_that_will_not_encrypt_meets_a_server_that_requires_it() -> None:
    client = ClientPolicy(authentication=Level.NEVER, encryption=Level.NEVER,
                          integrity=Level.NEVER, claimtobe_user="admin@vm")
    with pytest.raises(SecurityError):
        pump(client_handshake(admin.DRAIN_JOBS, client, PEER), server(SessionCache()))


def nth(n: int, damage: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    count = [0]

    def tweak(data: bytes) -> bytes:
        count[0] += 1
        return damage(data) if count[0] == n else data
    return tweak


def _truncate(data: bytes) -> bytes:
    return data[:5] + data[5:][: max(0, (len(data) - 5) // 2)]


def _garble(data: bytes) -> bytes:
    b = bytearray(data)
    for i in range(5, len(b)):
        b[i] ^= 0x5A
    return bytes(b)


def _oversize(data: bytes) -> bytes:
    return b"\x01\x7f\xff\xff\xff" + data[5:]


# the client's messages: the request, the method bits, the CLAIMTOBE identity, the
# command's own message
@pytest.mark.parametrize("step", [1, 2, 3, 4])
@pytest.mark.parametrize("damage", [_truncate, _garble, _oversize])
def test_damaged_client_messages_end_in_one_clear_error(
        step: int, damage: Callable[[bytes], bytes]) -> None:
    with pytest.raises(CondorpyError) as e:
        pump(client_handshake(admin.DRAIN_JOBS, CLIENT, PEER), server(SessionCache()),
             tweak=nth(step, damage), then=drain_message())
    assert isinstance(e.value, (WireError, SecurityError))


def test_reconcile_follows_htcondors_table() -> None:
    R, P, O, N = Level.REQUIRED, Level.PREFERRED, Level.OPTIONAL, Level.NEVER
    assert [reconcile(R, s) for s in (R, P, O, N)] == [True, True, True, None]
    assert [reconcile(P, s) for s in (R, P, O, N)] == [True, True, True, False]
    assert [reconcile(O, s) for s in (R, P, O, N)] == [True, True, False, False]
    assert [reconcile(N, s) for s in (R, P, O, N)] == [None, False, False, False]


def test_allow_lists_imply_levels_and_deny_wins() -> None:
    p = server_policy(Config.from_text(
        "ALLOW_ADMINISTRATOR = root@vm/127.0.0.1\nALLOW_WRITE = *@vm/10.0.0.0/8\n"
        "ALLOW_READ = 192.168.1.*\nDENY_READ = bad@vm/*\n"))
    assert p.verify(Perm.ADMINISTRATOR, "root@vm", "127.0.0.1") is None
    assert p.verify(Perm.ADMINISTRATOR, "root@vm", "10.0.0.1") is not None
    assert p.verify(Perm.READ, "anyone@vm", "10.1.2.3") is None          # WRITE implies READ
    assert p.verify(Perm.READ, "x", "192.168.1.7") is None
    assert p.verify(Perm.READ, "x", "192.168.2.7") is not None
    assert "DENY_READ" in str(p.verify(Perm.READ, "bad@vm", "10.1.2.3"))
    unset = server_policy(Config.from_text(""))
    assert unset.verify(Perm.READ, "x", "10.0.0.1") is None
    assert unset.verify(Perm.ADMINISTRATOR, "x", "10.0.0.1") is not None
    # CLAIMTOBE proves nothing: unset, no one administers, not even from this host
    assert unset.verify(Perm.ADMINISTRATOR, "root@vm", "127.0.0.1") is not None
    assert unset.verify(Perm.WRITE, "root@vm", "127.0.0.1") is not None


@pytest.mark.parametrize("text, knob", [
    ("SEC_ADMINISTRATOR_ENCRYPTION = sometimes\n", "SEC_ADMINISTRATOR_ENCRYPTION"),
    ("ALLOW_READ = user@/\n", "ALLOW_READ"),
    ("DENY_ADMINISTRATOR = bad/ho st!\n", "DENY_ADMINISTRATOR"),
])
def test_bad_security_knobs_name_themselves(text: str, knob: str) -> None:
    with pytest.raises(ConfigError, match=knob):
        server_policy(Config.from_text(text))


# --- the commands' messages -------------------------------------------------------------

def messages() -> dict[str, tuple[int, bytes]]:
    query = ClassAd()
    query["Requirements"] = True
    cancel = ClassAd()
    cancel["RequestID"] = "7"
    return {
        "query": (admin.QUERY_STARTD_ADS, put_classad(Writer(crypto=True), query).payload()),
        "config_val": (admin.CONFIG_VAL, Writer(crypto=True).put_string("KNOB").payload()),
        "dc_config_val": (admin.DC_CONFIG_VAL,
                          Writer(crypto=True).put_string("KNOB").payload()),
        "vacate_claim": (admin.VACATE_CLAIM,
                         Writer(crypto=True).put_string("slot1@h").payload()),
        "drain": (admin.DRAIN_JOBS, drain_message()),
        "cancel": (admin.CANCEL_DRAIN_JOBS, put_classad(Writer(crypto=True), cancel)
                   .payload()),
    }


@pytest.mark.parametrize("name", sorted(messages()))
def test_each_admin_command_parses(name: str) -> None:
    number, payload = messages()[name]
    cmd = admin.parse(number, Reader(payload, PEER, crypto=True))
    expected = {"query": admin.Query, "config_val": admin.ConfigVal,
                "dc_config_val": admin.ConfigVal, "vacate_claim": admin.Vacate,
                "drain": admin.Drain, "cancel": admin.CancelDrain}[name]
    assert isinstance(cmd, expected)


@pytest.mark.parametrize("name", sorted(messages()))
@pytest.mark.parametrize("damage", ["truncated", "oversized", "garbled", "extra"])
def test_each_admin_command_refuses_damaged_input(name: str, damage: str) -> None:
    number, payload = messages()[name]
    if damage == "truncated":
        data = payload[:len(payload) * 2 // 3]
    elif damage == "oversized":
        data = (1 << 40).to_bytes(8, "big") + payload[8:]
    elif damage == "garbled":
        data = payload[:8] + b"\xff" * (len(payload) - 8)
    else:
        data = payload + (7).to_bytes(8, "big") + b"junk\0"
    with pytest.raises(WireError) as e:
        admin.parse(number, Reader(data, PEER, crypto=True))
    assert PEER in str(e.value)


@pytest.mark.parametrize("attrs", [{"HowFast": 5}, {"HowFast": "fast"},
                                   {"ResumeOnCompletion": 9}])
def test_a_drain_request_out_of_range_is_refused(attrs: dict[str, object]) -> None:
    ad = ClassAd()
    for k, v in attrs.items():
        ad[k] = v
    with pytest.raises(WireError, match="DRAIN_JOBS"):
        admin.parse(admin.DRAIN_JOBS,
                    Reader(put_classad(Writer(), ad).payload(), PEER))


def test_query_reply_lists_matching_slots_without_private_attributes() -> None:
    ads = []
    for i in (1, 2):
        a = ClassAd()
        a["Name"] = f"slot{i}@h"
        a["SlotID"] = i
        a["ClaimId"] = "secret"
        ads.append(a)
    q = ClassAd()
    q.set_expr("Requirements", "TARGET.SlotID == 2")
    r = Reader(admin.query_reply(Writer(), q, ads).payload(), PEER)
    assert r.get_int() == 1
    got = get_classad(r)
    assert got["Name"] == "slot2@h" and "ClaimId" not in got
    assert r.get_int() == 0
    r.end()


def test_result_reply_shapes() -> None:
    ok = get_classad(Reader(admin.result_reply(Writer(), True, "12").payload(), PEER))
    assert ok["Result"] is True and ok["RequestID"] == "12"
    bad = get_classad(Reader(admin.result_reply(Writer(), False, error="no").payload(),
                             PEER))
    assert bad["Result"] is False and bad["ErrorString"] == "no" and bad["ErrorCode"] == 1
