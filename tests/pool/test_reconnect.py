"""The shadow's reconnect commands (CA_CMD), sans-I/O: a request as HTCondor's shadow
sends it parses; truncated, oversized and garbled requests end in one WireError naming
the peer; the replies have HTCondor's shape."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import WireError
from condorpy.pool import reconnect
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.collector import new_claim_id
from condorpy.pool.wire_ad import get_classad, put_classad

PEER = "127.0.0.1:4242"
CID = new_claim_id("<127.0.0.1:4242?noUDP>", 1795468569, 3, "25.14.1")
GJID = "submit.example#12.0#1795468000"


def _payload(command: str) -> bytes:
    return reconnect.request(command, CID, GJID).payload()


@pytest.mark.parametrize("command", [reconnect.LOCATE_STARTER, reconnect.RECONNECT_JOB])
def test_a_shadows_request_parses_with_its_private_claim_id(command: str) -> None:
    payload = _payload(command)
    assert b"ZKM" in payload            # the claim id travels as a secret attribute
    req = reconnect.parse_request(Reader(payload, PEER, crypto=True))
    assert (req.command, req.claim_id, req.global_job_id) == (command, CID, GJID)
    assert req.ad["MyType"] == "Command"


def test_a_reconnect_request_carries_the_shadows_attributes_and_a_secret_key() -> None:
    payload = reconnect.request(reconnect.RECONNECT_JOB, None, GJID,
                                ShadowIpAddr="<127.0.0.1:9618?noUDP>",
                                ShadowVersion="$CondorVersion: 23.9.6 $",
                                TransferKey="1#abc", TransferSocket="<127.0.0.1:9618>"
                                ).payload()
    assert b"1#abc" not in payload[:payload.index(b"ZKM")]   # the key goes as a secret
    req = reconnect.parse_request(Reader(payload, PEER, crypto=True))
    assert req.claim_id is None and req.global_job_id == GJID
    assert req.ad["ShadowIpAddr"] == "<127.0.0.1:9618?noUDP>"
    assert req.ad["TransferKey"] == "1#abc"


@pytest.mark.parametrize("command", [reconnect.LOCATE_STARTER, reconnect.RECONNECT_JOB])
@pytest.mark.parametrize("damage", ["truncated", "oversized", "garbled", "extra"])
def test_a_damaged_request_ends_in_one_error_naming_the_peer(command: str,
                                                             damage: str) -> None:
    payload = _payload(command)
    if damage == "truncated":
        data = payload[:len(payload) * 2 // 3]
    elif damage == "oversized":
        # an attribute count far past any shadow's request
        data = (1 << 40).to_bytes(8, "big") + payload[8:]
    elif damage == "garbled":
        data = payload[:8] + b"\xff" * (len(payload) - 8)
    else:
        data = payload + (7).to_bytes(8, "big") + b"junk\0"
    with pytest.raises(WireError) as e:
        reconnect.parse_request(Reader(data, PEER, crypto=True))
    assert PEER in str(e.value)


def _ad_payload(ad: ClassAd) -> bytes:
    return put_classad(Writer(crypto=True), ad).payload()


def test_requests_without_a_command_or_with_odd_values_are_refused() -> None:
    no_command = ClassAd()
    no_command["ClaimId"] = CID
    with pytest.raises(WireError, match="names no Command"):
        reconnect.parse_request(Reader(_ad_payload(no_command), PEER, crypto=True))
    odd = ClassAd()
    odd["Command"] = reconnect.LOCATE_STARTER
    odd["GlobalJobId"] = 12
    with pytest.raises(WireError, match="GlobalJobId is not a string"):
        reconnect.parse_request(Reader(_ad_payload(odd), PEER, crypto=True))
    big = ClassAd()
    big["Command"] = reconnect.LOCATE_STARTER
    for i in range(reconnect.MAX_REQUEST_ATTRS + 1):
        big[f"A{i}"] = i
    with pytest.raises(WireError, match="attributes"):
        reconnect.parse_request(Reader(_ad_payload(big), PEER, crypto=True))


def test_an_unknown_sub_command_parses() -> None:
    req = reconnect.parse_request(Reader(_payload("CA_BULK_REQUEST"), PEER, crypto=True))
    assert req.command == "CA_BULK_REQUEST"


def test_replies_have_htcondors_shape_and_never_carry_private_attributes() -> None:
    r = Reader(reconnect.failure(Writer(crypto=True), "no starter").payload(), PEER,
               crypto=True)
    ad = get_classad(r)
    r.end()
    assert (ad["Result"], ad["ErrorString"]) == ("Failure", "no starter")
    info = ClassAd()
    info["StarterIpAddr"] = "<127.0.0.1:5000>"
    info["ClaimId"] = CID
    r = Reader(reconnect.success(Writer(crypto=True), info).payload(), PEER, crypto=True)
    ad = get_classad(r)
    assert ad["Result"] == "Success" and ad["StarterIpAddr"] == "<127.0.0.1:5000>"
    assert "ClaimId" not in ad and "ClaimId" in info


def test_the_locate_reply_names_the_starters_address() -> None:
    info = ClassAd()
    info["StarterIpAddr"] = "<10.0.0.1:1>"
    info["Name"] = "slot1_1@host"
    r = Reader(reconnect.located(Writer(crypto=True), "<127.0.0.1:5000?noUDP>", info)
               .payload(), PEER, crypto=True)
    ad = get_classad(r)
    r.end()
    assert ad["Result"] == "Success"
    assert ad["StarterIpAddr"] == "<127.0.0.1:5000?noUDP>" and ad["Name"] == "slot1_1@host"
