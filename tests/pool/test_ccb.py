"""CCB's messages and timing (condorpy/pool/ccb.py), byte for byte, without sockets."""

from __future__ import annotations

import struct

import pytest

from condorpy.config import Config
from condorpy.errors import WireError
from condorpy.pool import ccb
from condorpy.pool.ccb import Heartbeat, Registration, Request
from condorpy.pool.sinful import parse_address, with_ccb
from condorpy.pool.security import ClientPolicy, Level, Send


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def s(text: str) -> bytes:
    return text.encode() + b"\0"


def ls(text: str) -> bytes:
    """A string on an encrypted connection: its length (NUL included) first."""
    return i64(len(text) + 1) + s(text)


def test_the_reverse_connect_message_is_a_raw_command_with_the_connect_id_as_a_secret() -> None:
    req = Request("<10.0.0.1:4080?addrs=10.0.0.1-4080>", "c0ffee", "17", "SCHEDD x")
    assert ccb.reverse_connect(req) == (
        i64(69) + i64(3)
        + s("ZKM") + s('ClaimId = "c0ffee"')
        + s('RequestID = "17"')
        + s('MyAddress = "<10.0.0.1:4080?addrs=10.0.0.1-4080>"')
        + s("") + s(""))


def test_a_first_registration_names_the_daemon_and_nothing_else() -> None:
    assert ccb.message(ccb.register_ad("STARTD <10.0.0.5:9000?noUDP>"), crypto=True) == (
        i64(2) + ls("Command = 67") + ls('Name = "STARTD <10.0.0.5:9000?noUDP>"')
        + ls("") + ls(""))


def test_a_registration_again_sends_the_contact_and_cookie_it_had() -> None:
    prev = Registration("10.0.0.1:9618?addrs=10.0.0.1-9618#42", "3141592653")
    assert ccb.message(ccb.register_ad("STARTD x", prev), crypto=False) == (
        i64(4) + s("Command = 67") + s('CCBID = "10.0.0.1:9618?addrs=10.0.0.1-9618#42"')
        + s("ZKM") + s('ClaimId = "3141592653"') + s('Name = "STARTD x"') + s("") + s(""))


def test_the_heartbeat_and_the_result_of_a_reverse_connection() -> None:
    assert ccb.message(ccb.heartbeat_ad(), crypto=True) == \
        i64(1) + ls("Command = 441") + ls("") + ls("")
    req = Request("<10.0.0.1:4080>", "ab", "3")
    assert ccb.message(ccb.result_ad(req, False, "failed to connect"), crypto=True) == (
        i64(5) + ls("ZKM") + ls('ClaimId = "ab"') + ls('RequestID = "3"')
        + ls('MyAddress = "<10.0.0.1:4080>"') + ls("Result = false")
        + ls('ErrorString = "failed to connect"') + ls("") + ls(""))
    ok = ccb.message(ccb.result_ad(req, True), crypto=True)
    assert ls("Result = true") in ok and b"ErrorString" not in ok


def test_the_brokers_messages_as_a_cpp_collector_sends_them_on_an_encrypted_connection() -> None:
    # the registration reply: no ZKM once the connection encrypts (a peer >= 9.9)
    reply = (i64(3) + ls('CCBID = "10.0.0.1:9618?addrs=10.0.0.1-9618&alias=cm#7"')
             + ls("Command = 67") + ls('ClaimId = "2718281828"') + ls("") + ls(""))
    reg = ccb.parse(reply, "cm", crypto=True)
    assert reg == Registration("10.0.0.1:9618?addrs=10.0.0.1-9618&alias=cm#7", "2718281828")
    assert isinstance(reg, Registration) and reg.ccbid == 7
    request = (i64(5) + ls("Command = 68") + ls('MyAddress = "<10.0.0.9:5000?noUDP>"')
               + ls('ClaimId = "0123abcd"') + ls('Name = "<10.0.0.9:5000> SCHEDD"')
               + ls('RequestID = "12"') + ls("") + ls(""))
    assert ccb.parse(request, "cm", crypto=True) == Request(
        "<10.0.0.9:5000?noUDP>", "0123abcd", "12", "<10.0.0.9:5000> SCHEDD")
    assert ccb.parse(i64(1) + ls("Command = 441") + ls("") + ls(""), "cm",
                     crypto=True) == Heartbeat()
    # and the same with ZKM (a broker that does not know our version) and no crypto
    plain = (i64(4) + s("Command = 68") + s('MyAddress = "<10.0.0.9:5000>"') + s("ZKM")
             + s('ClaimId = "99"') + s('RequestID = "1"') + s("") + s(""))
    assert ccb.parse(plain, "cm", crypto=False) == Request("<10.0.0.9:5000>", "99", "1")


@pytest.mark.parametrize("body,match", [
    (s("Command = 5"), "unexpected message"),
    (s("Command = 68") + s('MyAddress = "<10.0.0.9:5000>"'), "no ClaimId"),
    (s("Command = 67"), "no CCBID"),
])
def test_a_broker_message_this_side_cannot_act_on_names_the_broker(
        body: bytes, match: str) -> None:
    n = body.count(b"\0")
    with pytest.raises(WireError, match=match) as info:
        ccb.parse(i64(n) + body + s("") + s(""), "10.0.0.1:9618", crypto=False)
    assert "10.0.0.1:9618" in str(info.value)


def test_registering_runs_the_handshake_then_the_ad_then_reads_the_answer() -> None:
    policy = ClientPolicy(negotiation=Level.NEVER)
    gen = ccb.register(policy, "cm", "STARTD x")
    op = next(gen)
    # a raw command: its number leads the registration's message
    assert isinstance(op, Send) and op.payload.startswith(i64(67) + i64(2) + s("Command = 67"))
    assert next(gen).what.startswith("the reply to command 67")   # type: ignore[union-attr]
    with pytest.raises(StopIteration) as stop:
        gen.send(i64(3) + s('CCBID = "cm:9618#1"') + s("Command = 67") + s("ZKM")
                 + s('ClaimId = "5"') + s("") + s(""))
    session, reg = stop.value.value
    assert session.raw and reg == Registration("cm:9618#1", "5")


def test_an_earlier_daemons_registration_is_its_number_and_cookie() -> None:
    assert ccb.resumed("cm:9618", 7, 123) == Registration("cm:9618#7", "123")
    assert ccb.resumed("cm:9618", None, 123) is None


def test_heartbeats_and_retries_keep_htcondors_bounds() -> None:
    assert ccb.heartbeat_interval(0) == 0 and ccb.heartbeat_interval(-1) == 0
    assert ccb.heartbeat_interval(10) == 30 and ccb.heartbeat_interval(300) == 300
    assert ccb.heartbeat_due(100.0, 50.0, 300) == 400.0
    assert ccb.heartbeat_due(100.0, 250.0, 300) == 550.0
    assert ccb.heartbeat_due(100.0, 50.0, 0) == float("inf")
    assert not ccb.silent_too_long(0.0, 900.0, 300)
    assert ccb.silent_too_long(0.0, 901.0, 300)
    assert not ccb.silent_too_long(0.0, 1e9, 0)
    assert [ccb.retry_delay(n, 60) for n in range(9)] == [0, 1, 2, 4, 8, 16, 32, 60, 60]
    assert ccb.retry_delay(3, 0.5) == 1.0


def test_ccb_address_and_its_companions() -> None:
    cfg = Config.from_text("COLLECTOR_HOST = cm.example:9620\n"
                           "CCB_ADDRESS = $(COLLECTOR_HOST), 10.0.0.2\n"
                           "FULL_HOSTNAME = ep1.example\nCCB_HEARTBEAT_INTERVAL = 10\n")
    st = ccb.ccb_settings(cfg)
    assert st is not None
    assert [(n, a.hostport()) for n, a in st.brokers] == [
        ("cm.example:9620", "cm.example:9620"), ("10.0.0.2", "10.0.0.2:9618")]
    assert (st.heartbeat, st.reconnect_time, st.timeout) == (30, 60.0, 300.0)
    # HTCondor's default: the host's own name
    assert st.private_network == "ep1.example"
    assert ccb.ccb_settings(Config.from_text("COLLECTOR_HOST = cm\n")) is None


def test_a_registered_daemons_address_carries_the_contacts_as_htcondor_escapes_them() -> None:
    base = "<10.78.0.2:9000?noUDP>"
    contact = "10.77.0.1:9618?addrs=10.77.0.1-9618&alias=cm#12"
    addr = with_ccb(base, [contact], "ep1.example")
    assert addr == ("<10.78.0.2:9000?CCBID=10.77.0.1:9618%3faddrs%3d10.77.0.1-9618"
                    "%26alias%3dcm#12&PrivNet=ep1.example&noUDP>")
    parsed = parse_address(addr)
    assert parsed.ccb_id == contact and parsed.private_network == "ep1.example"
    assert parsed.no_udp and parsed.hostport() == "10.78.0.2:9000"
    # two brokers: space-separated; none: the address as it was
    two = parse_address(with_ccb(base, [contact, "10.0.0.2:9618#3"], None))
    assert two.ccb_id == f"{contact} 10.0.0.2:9618#3" and two.private_network is None
    assert with_ccb(addr, [], "ep1.example") == base
