"""Claim sessions and the claim commands, sans-I/O: the server's resume path against
the client's, every command's message round trip, and truncated, oversized and
garbled input for each (the real schedd and shadow are in test_pool_claims.py)."""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError, SecurityError, WireError
from condorpy.config import Config
from condorpy.pool import admin, claims
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.collector import new_claim_id
from condorpy.pool.connection import Channel
from condorpy.pool.security import Op, Receive, Send, StartCrypto
from condorpy.pool.secserver import Authorized, SessionCache, serve, server_policy
from condorpy.pool.server import claim_session_key, parse_claim_id, resume_session
from condorpy.pool.wire_ad import put_classad

PEER = "127.0.0.1:4242"
CID = new_claim_id("<127.0.0.1:4242?noUDP>", 1795468569, 3, "25.14.1")


def test_claim_ids_are_htcondors_shape_and_split_into_session_and_key() -> None:
    parts = parse_claim_id(CID)
    assert parts.session_id == "<127.0.0.1:4242?noUDP>#1795468569#3"
    assert 'Encryption="YES"' in parts.info and 'ShortVersion="25.14.1"' in parts.info
    assert len(parts.key) == 64 and int(parts.key, 16) >= 0
    real = ('<127.0.0.1:25875?addrs=127.0.0.1-25875+[fd00--2]-25875&alias=vm>#1795468569#1#'
            '[Integrity="YES";Encryption="YES";ShortVersion="23.9.6";CryptoMethods="BLOWFISH";'
            'CryptoMethodsList="AES.BLOWFISH.3DES";]'
            '11180e36d3bb12b548e70cdf03930b13b22569ad5b644140171935ad992d584c')
    assert parse_claim_id(real).session_id.endswith("#1795468569#1")
    assert parse_claim_id(real).key.startswith("11180e36")
    for bad in ("nohash", "#x", "<a>#1#2#[unterminated"):
        with pytest.raises(ValueError):
            parse_claim_id(bad)


def pump(client: Generator[Op, bytes | None, object],
         server: Generator[Op, bytes | None, object],
         tweak: Callable[[bytes], bytes] = lambda b: b,
         then: bytes = b"") -> tuple[object, object]:
    """Run a client and a server generator against each other over two Channels;
    ``tweak`` damages what the client sends; ``then`` is a payload the client sends
    once its side is done (the command's message)."""
    cch, sch = Channel(PEER), Channel("client")
    results: dict[str, object] = {}
    gens = {"c": client, "s": server}
    chans = {"c": cch, "s": sch}
    inbox: dict[str, bytes | None] = {"c": None, "s": None}
    waiting: set[str] = set()
    sent_then = False
    for _ in range(100):
        progressed = False
        for side in ("c", "s"):
            if side in results:
                continue
            if side in waiting:
                msg = chans[side].decoder.next_message()
                if msg is None:
                    continue
                inbox[side] = msg
                waiting.discard(side)
            try:
                op = gens[side].send(inbox[side])
            except StopIteration as stop:
                results[side] = stop.value
                progressed = True
                continue
            inbox[side] = None
            progressed = True
            other = "s" if side == "c" else "c"
            if isinstance(op, Send):
                data = chans[side].encode(op.payload)
                chans[other].decoder.feed(tweak(data) if side == "c" else data)
            elif isinstance(op, StartCrypto):
                chans[side].start_crypto(op.key)
            elif isinstance(op, Receive):
                waiting.add(side)
        if "c" in results and then and not sent_then:
            sent_then = True
            chans["s"].decoder.feed(tweak(chans["c"].encode(then)))
            progressed = True
        if len(results) == 2 or not progressed:
            break
    if "s" not in results:
        raise WireError("the server never finished (connection closed)", peer=PEER)
    return results.get("c"), results["s"]


def sessions(sid: str) -> bytes | None:
    return claim_session_key(CID) if sid == parse_claim_id(CID).session_id else None


def claim_server(peer: str, version: str) -> Generator[Op, bytes | None, Authorized]:
    """The daemon's command port (one server code path), as far as the command's first
    message: claim sessions come from ``sessions``."""
    return serve(peer, "127.0.0.1", server_policy(Config.from_text("")), SessionCache(),
                 sessions, admin.COMMANDS, lambda: 0.0, version)


def request_message(cid: str = CID, extra: tuple[str, ...] | None = None) -> bytes:
    ad = ClassAd()
    ad["Owner"] = "alice"
    ad["RequestCpus"] = 1
    ad["_condor_SEND_CLAIMED_AD"] = True
    w = Writer(crypto=True).put_secret(cid)
    put_classad(w, ad)
    w.put_string("<127.0.0.1:9000?addrs=127.0.0.1-9000>").put_int(300)
    if extra is not None:
        w.put_int(len(extra))
        for e in extra:
            w.put_secret(e)
    return w.payload()


def test_a_resumed_claim_session_carries_the_command_encrypted() -> None:
    _, inbound = pump(resume_session(claims.REQUEST_CLAIM, CID, PEER),
                      claim_server("client", "$CondorVersion: 25.14.1 $"),
                      then=request_message())
    assert isinstance(inbound, Authorized) and inbound.claim_session
    assert inbound.command == claims.REQUEST_CLAIM
    assert inbound.session_id == parse_claim_id(CID).session_id
    cmd = claims.parse(inbound.command, Reader(inbound.payload, "client", crypto=True))
    assert isinstance(cmd, claims.RequestClaim)
    assert cmd.claim_id == CID and cmd.ad["Owner"] == "alice"
    assert cmd.scheduler_addr.startswith("<127.0.0.1:9000") and cmd.alive_interval == 300
    assert cmd.extra_claims == ()


def test_an_unknown_session_is_refused_and_told_so() -> None:
    other = new_claim_id("<127.0.0.1:1>", 1, 1, "25.14.1")
    with pytest.raises(SecurityError, match="SID_NOT_FOUND|unknown session"):
        pump(resume_session(claims.RELEASE_CLAIM, other, PEER),
             claim_server("client", "v"))


def test_a_session_with_the_wrong_key_fails_at_the_first_encrypted_packet() -> None:
    forged = CID[:-64] + "0" * 64
    with pytest.raises(WireError, match="does not verify"):
        pump(resume_session(claims.RELEASE_CLAIM, forged, PEER),
             claim_server("client", "v"),
             then=Writer(crypto=True).put_secret(forged).payload())


def test_raw_commands_and_new_sessions_are_refused() -> None:
    def raw() -> Generator[Op, bytes | None, None]:
        yield Send(Writer().put_int(claims.REQUEST_CLAIM).put_string("x").payload())
    with pytest.raises(SecurityError, match="without a security session"):
        pump(raw(), claim_server("client", "v"))

    def new() -> Generator[Op, bytes | None, None]:
        ad = ClassAd()
        ad["NewSession"] = "YES"
        ad["Command"] = 442
        yield Send(put_classad(Writer().put_int(60010), ad).payload())
    # a claim command is taken on a claim session only: a negotiated one hears
    # CMD_NOT_FOUND, as from a daemon that does not serve it there
    with pytest.raises(SecurityError, match="unknown command"):
        pump(new(), claim_server("client", "v"))


def _truncate(data: bytes) -> bytes:
    return data[:-4]


def _garble(data: bytes) -> bytes:
    b = bytearray(data)
    b[len(b) // 2] ^= 0x41
    return bytes(b)


def _oversize(data: bytes) -> bytes:
    return b"\x01\x7f\xff\xff\xff" + data[5:]


@pytest.mark.parametrize("damage", [_truncate, _garble, _oversize])
def test_damaged_session_requests_end_in_one_clear_error(
        damage: Callable[[bytes], bytes]) -> None:
    with pytest.raises(CondorpyError) as e:
        pump(resume_session(claims.REQUEST_CLAIM, CID, PEER),
             claim_server("client", "v"), tweak=damage,
             then=request_message())
    assert isinstance(e.value, (WireError, SecurityError))


# --- the commands' messages -------------------------------------------------------------

def messages() -> dict[str, tuple[int, bytes]]:
    job = ClassAd()
    job["Cmd"] = "/bin/true"
    act = Writer(crypto=True).put_secret(CID).put_int(2)
    put_classad(act, job)
    return {
        "request": (claims.REQUEST_CLAIM, request_message()),
        "request+extra": (claims.REQUEST_CLAIM, request_message(extra=(CID, CID))),
        "activate": (claims.ACTIVATE_CLAIM, act.payload()),
        "deactivate": (claims.DEACTIVATE_CLAIM, Writer(crypto=True).put_secret(CID).payload()),
        "forcibly": (claims.DEACTIVATE_CLAIM_FORCIBLY,
                     Writer(crypto=True).put_secret(CID).payload()),
        "release": (claims.RELEASE_CLAIM, Writer(crypto=True).put_secret(CID).payload()),
    }


@pytest.mark.parametrize("name", sorted(messages()))
def test_each_claim_command_parses(name: str) -> None:
    cmd_no, payload = messages()[name]
    cmd = claims.parse(cmd_no, Reader(payload, PEER, crypto=True))
    assert cmd.claim_id == CID
    if name == "request+extra":
        assert isinstance(cmd, claims.RequestClaim) and cmd.extra_claims == (CID, CID)
    if name == "activate":
        assert isinstance(cmd, claims.ActivateClaim) and cmd.ad["Cmd"] == "/bin/true"


@pytest.mark.parametrize("name", sorted(messages()))
@pytest.mark.parametrize("damage", ["truncated", "oversized", "garbled", "extra"])
def test_each_claim_command_refuses_damaged_input(name: str, damage: str) -> None:
    cmd_no, payload = messages()[name]
    if damage == "truncated":
        data = payload[:len(payload) * 2 // 3]
    elif damage == "oversized":
        # a length field claiming far more than the message holds
        data = (1 << 40).to_bytes(8, "big") + payload[8:]
    elif damage == "garbled":
        data = payload[:8] + b"\xff" * (len(payload) - 8)
    else:
        data = payload + (7).to_bytes(8, "big") + b"junk\0"
    with pytest.raises(WireError) as e:
        claims.parse(cmd_no, Reader(data, PEER, crypto=True))
    assert PEER in str(e.value)


def test_a_command_no_execution_point_takes_is_refused() -> None:
    with pytest.raises(WireError, match="not one an execution point takes"):
        claims.parse(60011, Reader(b"", PEER, crypto=True))


def test_replies_have_htcondors_shape() -> None:
    slot = ClassAd()
    slot["Name"] = "slot1_1@x"
    slot["ClaimId"] = "secret"
    w = claims.request_claim_reply(Writer(crypto=True), [claims.ClaimGranted(CID, slot)],
                                   ok=True, leftovers=claims.ClaimGranted(CID, slot))
    r = Reader(w.payload(), PEER, crypto=True)
    assert r.get_int() == 7 and r.get_secret() == CID
    from condorpy.pool.wire_ad import get_classad
    granted = get_classad(r)
    assert granted["Name"] == "slot1_1@x" and "ClaimId" not in granted
    assert r.get_int() == 5 and r.get_secret() == CID
    get_classad(r)
    r.end()
    r = Reader(claims.request_claim_reply(Writer(crypto=True), [], ok=False).payload(),
               PEER, crypto=True)
    assert r.get_int() == 0
    r.end()
    r = Reader(claims.deactivate_reply(Writer(crypto=True), True).payload(), PEER,
               crypto=True)
    assert get_classad(r)["Start"] is True


# --- the shadow's answers ---------------------------------------------------------------

from condorpy.pool import shadow  # noqa: E402


def run_call(gen: Generator[Op, bytes | None, object], answer: bytes) -> object:
    sent = next(gen)
    assert isinstance(sent, Send)
    r = Reader(sent.payload, "test", crypto=True)
    number = r.get_int()
    assert number in shadow.NAMES
    op = gen.send(None)
    assert isinstance(op, Receive)
    try:
        gen.send(answer)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the call did not end")


def job_answer() -> bytes:
    job = ClassAd()
    job["Cmd"] = "/bin/true"
    job["ClusterId"] = 7
    return put_classad(Writer(crypto=True).put_int(0), job).payload()


def test_get_job_info_reads_the_job_ad() -> None:
    ad = run_call(shadow.get_job_info(PEER), job_answer())
    assert isinstance(ad, ClassAd) and ad["ClusterId"] == 7


def test_a_negative_answer_is_an_error_with_the_shadows_errno() -> None:
    with pytest.raises(CondorpyError, match=r"get_job_info with -1 \(errno 13\)"):
        run_call(shadow.get_job_info(PEER), Writer(crypto=True).put_int(-1).put_int(13)
                 .payload())


@pytest.mark.parametrize("damage", ["truncated", "oversized", "garbled", "extra"])
@pytest.mark.parametrize("call", ["get_job_info", "begin_execution", "job_exit"])
def test_damaged_answers_from_the_shadow_are_wire_errors(call: str, damage: str) -> None:
    good = job_answer() if call == "get_job_info" else Writer(crypto=True).put_int(0).payload()
    if damage == "truncated":
        data = good[:-3] if len(good) > 8 else good[:5]
    elif damage == "oversized":
        data = good[:8] + (1 << 40).to_bytes(8, "big") + good[16:]
    elif damage == "garbled":
        data = good[:8] + b"\xfe" * max(8, len(good) - 8)
    else:
        data = good + b"\0" * 8
    gen: Generator[Op, bytes | None, object]
    if call == "get_job_info":
        gen = shadow.get_job_info(PEER)
    elif call == "begin_execution":
        gen = shadow.begin_execution(PEER)
    else:
        gen = shadow.job_exit(PEER, 0, shadow.JOB_EXITED, ClassAd())
    with pytest.raises(WireError) as e:
        run_call(gen, data)
    assert PEER in str(e.value)


def test_exit_status_is_a_wait_status_with_htcondors_reasons() -> None:
    assert shadow.exit_status({"ExitBySignal": False, "ExitCode": 3}, False)[:2] == (768, 100)
    assert shadow.exit_status({"ExitBySignal": True, "ExitSignal": 9}, True)[:2] == (9, 102)
    assert shadow.exit_status({"ExitBySignal": True, "ExitSignal": 15}, False,
                              evicted=True)[:2] == (15, 107)
    assert shadow.exit_status({"HoldReasonCode": 6, "HoldReason": "x"}, False)[1] == 112
    # the starter sent the job back itself: a container runtime failure, a system OOM
    runtime = {"ExitBySignal": False, "ExitCode": 0, "VacateReasonCode": 1021,
               "VacateReason": "Container runtime failure: daemon down"}
    assert shadow.exit_status(runtime, False)[1] == 107
    assert shadow.exit_status(runtime, True)[1] == 100     # the shadow's own kill wins


# --- ALIVE --------------------------------------------------------------------------------

from condorpy.pool.server import alive  # noqa: E402


def schedd_side(answer: bytes) -> Generator[Op, bytes | None, str]:
    """What a schedd does with an ALIVE: resume the claim's session, read the claim id,
    answer."""
    inbound = yield from claim_server("startd", "$CondorVersion: 23.9.6 $")
    assert inbound.command == claims.ALIVE
    r = Reader(inbound.payload, "startd", crypto=True)
    cid = r.get_secret()
    r.end()
    yield Send(answer)
    return cid


@pytest.mark.parametrize("interval", [300, -1])
def test_alive_carries_the_claim_id_and_reads_the_schedds_answer(interval: int) -> None:
    answer = Writer(crypto=True).put_int(interval).payload()
    got, cid = pump(alive(CID, PEER, "v"), schedd_side(answer))
    assert cid == CID and got == interval


@pytest.mark.parametrize("answer", [b"", b"\0\0\0", (1).to_bytes(8, "big") + b"junk"])
def test_a_damaged_alive_answer_is_a_wire_error(answer: bytes) -> None:
    with pytest.raises(WireError):
        pump(alive(CID, PEER, "v"), schedd_side(answer))


# --- RELEASE_CLAIM, execution point to schedd ----------------------------------------

from condorpy.pool.server import release_claim  # noqa: E402


def schedd_hears_release() -> Generator[Op, bytes | None, str]:
    """What a schedd does with the execution point's RELEASE_CLAIM: resume the claim's
    session and read the claim id; nothing goes back."""
    inbound = yield from claim_server("startd", "$CondorVersion: 23.9.6 $")
    assert inbound.command == claims.RELEASE_CLAIM
    r = Reader(inbound.payload, "startd", crypto=True)
    cid = r.get_secret()
    r.end()
    return cid


def test_release_claim_goes_on_the_claims_session_with_the_claim_id_and_waits_for_nothing(
        ) -> None:
    got, cid = pump(release_claim(CID, PEER, "v"), schedd_hears_release())
    assert got is None and cid == CID
