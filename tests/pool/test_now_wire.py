"""The rest of the pool's commands, sans-I/O: COALESCE_SLOTS (condor_now) parsed and
answered, DC_SEC_QUERY (condor_ping) authorised per level, the StartD daemon ad and
its invalidation; every new message truncated, oversized and garbled ends in one
clear error naming the peer (the pool's own tools: test_pool_now.py)."""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError, SecurityError, WireError
from condorpy.pool import admin, coalesce, daemon_ad
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.collector import new_claim_id
from condorpy.pool.security import ClientPolicy, Level, Op, Send, client_handshake
from condorpy.pool.secserver import DC_SEC_QUERY, Authorized, SessionCache
from condorpy.pool.wire_ad import get_classad, put_classad
from tests.pool.test_claims import pump
from tests.pool.test_secserver import PEER, server

CIDS = [new_claim_id("<127.0.0.1:4242?noUDP>", 1795468569, n, "25.14.1") for n in (3, 4)]


def coalesce_message(ids: str = ", ".join(CIDS)) -> bytes:
    command = ClassAd()
    command["ClaimIdList"] = ids
    job = ClassAd()
    job["ClusterId"] = 7
    job["RequestCpus"] = 2
    w = Writer(crypto=True)
    put_classad(w, command)
    return put_classad(w, job).payload()


def test_coalesce_slots_carries_the_claim_ids_secretly_and_the_now_jobs_ad() -> None:
    payload = coalesce_message(f"{CIDS[0]}, {CIDS[1]},{CIDS[0]}")
    # ClaimIdList is private: it travels behind the secret marker, as ClaimId does
    assert payload.index(b"ZKM") < payload.index(b"ClaimIdList")
    cmd = coalesce.parse(Reader(payload, PEER, crypto=True))
    assert cmd.claim_ids == tuple(CIDS) and cmd.ad["ClusterId"] == 7


@pytest.mark.parametrize("damage", ["truncated", "oversized", "garbled", "extra"])
def test_a_damaged_coalesce_message_is_one_wire_error(damage: str) -> None:
    payload = coalesce_message()
    if damage == "truncated":
        data = payload[:len(payload) * 2 // 3]
    elif damage == "oversized":
        data = (1 << 40).to_bytes(8, "big") + payload[8:]
    elif damage == "garbled":
        data = payload[:8] + b"\xff" * (len(payload) - 8)
    else:
        data = payload + (7).to_bytes(8, "big") + b"junk\0"
    with pytest.raises(WireError) as e:
        coalesce.parse(Reader(data, PEER, crypto=True))
    assert PEER in str(e.value)


@pytest.mark.parametrize("ids", ["", " , ", None])
def test_a_coalesce_without_claims_is_refused(ids: str | None) -> None:
    command, job = ClassAd(), ClassAd()
    if ids is not None:
        command["ClaimIdList"] = ids
    w = Writer(crypto=True)
    put_classad(w, command)
    put_classad(w, job)
    with pytest.raises(WireError, match="ClaimIdList"):
        coalesce.parse(Reader(w.payload(), PEER, crypto=True))


def test_coalesce_replies_are_result_then_slot_ad() -> None:
    slot = ClassAd()
    slot["Name"] = "slot1_1@h"
    slot["ClaimId"] = "never sent in the slot ad"
    r = Reader(coalesce.reply(Writer(crypto=True), coalesce.SUCCESS, claim_id=CIDS[0],
                              slot_ad=slot).payload(), PEER, crypto=True)
    result, got = get_classad(r), get_classad(r)
    r.end()
    assert result["Result"] == "Success" and result["ClaimId"] == CIDS[0]
    assert got["Name"] == "slot1_1@h" and "ClaimId" not in got
    r = Reader(coalesce.reply(Writer(crypto=True), coalesce.INVALID_STATE,
                              "given slot is not idle").payload(), PEER, crypto=True)
    result, got = get_classad(r), get_classad(r)
    assert (result["Result"], result["ErrorString"]) == ("InvalidState",
                                                        "given slot is not idle")
    assert "ClaimId" not in result and len(list(got.items())) == 0


# --- condor_ping ----------------------------------------------------------------------

def sec_query(asked: int, user: str = "admin@vm") -> Generator[Op, bytes | None, object]:
    """condor_ping's client: DC_SEC_QUERY with AuthCommand, then the answer ad."""
    policy = ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                          integrity=Level.REQUIRED, claimtobe_user=user, trust_domain="vm")
    inner = client_handshake(DC_SEC_QUERY, policy, PEER)
    op = next(inner)
    assert isinstance(op, Send)
    r = Reader(op.payload, PEER)
    first = r.get_int()
    ad = get_classad(r)
    ad["AuthCommand"] = asked
    got = yield Send(put_classad(Writer().put_int(first), ad).payload())
    try:
        while True:
            op = inner.send(got)
            got = yield op
    except StopIteration as stop:
        return stop.value


# ADMINISTRATOR is granted to admin@vm (test_secserver.BASE), WRITE by implication
@pytest.mark.parametrize("asked", [admin.DC_NOP_READ, admin.DC_NOP_WRITE,
                                   admin.DC_NOP_ADMINISTRATOR])
def test_condor_ping_is_authorised_level_by_level(asked: int) -> None:
    _, got = pump(sec_query(asked), server(SessionCache()))
    assert isinstance(got, Authorized)
    assert (got.command, got.asked, got.payload) == (DC_SEC_QUERY, asked, b"")
    cmd = admin.parse(got.command, Reader(got.payload, PEER, crypto=True), got.asked)
    assert cmd == admin.SecQuery(asked)
    answer = get_classad(Reader(admin.sec_query_reply(Writer(crypto=True)).payload(), PEER,
                                crypto=True))
    assert answer["AuthorizationSucceeded"] is True


def test_condor_ping_of_a_level_not_granted_hears_denied() -> None:
    # READ is open to all; ADMINISTRATOR only to admin@vm (test_secserver.BASE)
    _, got = pump(sec_query(admin.DC_NOP_READ, "bob@vm"), server(SessionCache()))
    assert isinstance(got, Authorized) and got.user == "bob@vm"
    with pytest.raises(SecurityError, match="DENIED|denied"):
        pump(sec_query(admin.DC_NOP_ADMINISTRATOR, "bob@vm"), server(SessionCache()))
    with pytest.raises(SecurityError, match="DENIED"):         # ALLOW_DAEMON is unset
        pump(sec_query(admin.DC_NOP_DAEMON), server(SessionCache()))


def test_condor_ping_of_a_command_not_served_or_without_authcommand_is_refused() -> None:
    with pytest.raises(SecurityError):
        pump(sec_query(60022), server(SessionCache()))          # DC_NOP_NEGOTIATOR

    def bare() -> Generator[Op, bytes | None, None]:
        ad = ClassAd()
        ad["Command"] = DC_SEC_QUERY
        yield Send(put_classad(Writer().put_int(60010), ad).payload())
    with pytest.raises(WireError, match="AuthCommand"):
        pump(bare(), server(SessionCache()))
    with pytest.raises(WireError, match="not one this port serves"):
        admin.parse(DC_SEC_QUERY, Reader(b"", PEER), 442)


def _nth_damaged(damage: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    seen = [0]

    def tweak(data: bytes) -> bytes:
        seen[0] += 1
        return damage(data) if seen[0] == 1 else data
    return tweak


@pytest.mark.parametrize("damage", [lambda d: d[:5] + d[5:len(d) // 2],
                                    lambda d: d[:5] + bytes(b ^ 0x5A for b in d[5:]),
                                    lambda d: b"\x01\x7f\xff\xff\xff" + d[5:]],
                         ids=["truncated", "garbled", "oversized"])
def test_a_damaged_sec_query_ends_in_one_clear_error(
        damage: Callable[[bytes], bytes]) -> None:
    with pytest.raises(CondorpyError) as e:
        pump(sec_query(admin.DC_NOP_READ), server(SessionCache()), tweak=_nth_damaged(damage))
    assert isinstance(e.value, (WireError, SecurityError))


# --- the daemon ad --------------------------------------------------------------------

def slot(name: str, state: str, cpus: int, **extra: object) -> ClassAd:
    ad = ClassAd()
    for k, v in {"Name": name, "Machine": "ep.example", "State": state, "Activity": "Idle",
                 "Cpus": cpus, "Memory": 512 * cpus, "Disk": 100, "SlotID": 1,
                 "TotalCpus": 4, "OpSys": "LINUX", "CondorVersion": "v", **extra}.items():
        ad[k] = v
    ad.set_expr("START", "true")
    ad.set_expr("Requirements", "START")
    return ad


def test_the_daemon_ad_is_the_machines_not_a_slots() -> None:
    ads = [slot("slot1@ep.example", "Unclaimed", 2, PartitionableSlot=True),
           slot("slot1_1@ep.example", "Claimed", 1, DynamicSlot=True, RemoteUser="a@b"),
           slot("slot1_2@ep.example", "Claimed", 1, DynamicSlot=True)]
    ad = daemon_ad.startd_ad(ads, "<127.0.0.1:5?noUDP>", 1700000000)
    assert ad is not None
    assert (ad["MyType"], ad["Name"], ad["Machine"]) == ("StartD", "ep.example",
                                                         "ep.example")
    assert ad["MyAddress"] == ad["StartdIpAddr"] == "<127.0.0.1:5?noUDP>"
    assert (ad["TotalCpus"], ad["OpSys"], ad["DaemonStartTime"]) == (4, "LINUX",
                                                                      1700000000)
    assert (ad["TotalInUseCpus"], ad["TotalInUseMemory"]) == (2.0, 1024)
    for gone in ("State", "Activity", "Cpus", "SlotID", "Requirements", "START",
                 "RemoteUser", "PartitionableSlot"):
        assert gone not in ad, gone
    assert daemon_ad.startd_ad([], "<a>", 1) is None


def test_the_daemon_ad_update_has_no_private_ad_and_its_invalidation_names_startd() -> None:
    q = daemon_ad.invalidation_ad("ep.example", "<127.0.0.1:5?noUDP>")
    assert (q["MyType"], q["TargetType"], q["Name"]) == ("Query", "StartD", "ep.example")
    assert str(q.lookup("Requirements")) == 'TARGET.Name == "ep.example"'
    ad = daemon_ad.startd_ad([slot("slot1@ep.example", "Unclaimed", 4)], "<a>", 1)
    assert ad is not None
    policy = ClientPolicy(negotiation=Level.NEVER, authentication=Level.NEVER,
                          encryption=Level.NEVER, integrity=Level.NEVER)
    gen = daemon_ad.update(ad, policy, PEER)
    op = next(gen)
    assert isinstance(op, Send)
    r = Reader(op.payload, PEER)
    assert r.get_int() == 0                                  # UPDATE_STARTD_AD
    assert get_classad(r)["MyType"] == "StartD"
    r.end()                                                  # one ad, nothing after it
