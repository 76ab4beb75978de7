"""CEDAR framing, values, ClassAds on the wire and AES-GCM: round trips, the C++ golden
vector, and truncated, oversized and garbled input for every parser."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError, WireError
from condorpy.pool.aesgcm import AesGcmCipher, EcdhKey, hkdf_key
from condorpy.pool.cedar import MAX_PACKET, PacketDecoder, Reader, Transcript, Writer, frame
from condorpy.pool.sinful import parse_address
from condorpy.pool.wire_ad import get_classad, put_classad

PEER = "127.0.0.1:9618"

# A private ad as HTCondor's C++ putClassAd() writes it on an AES-GCM connection with an
# all-zero key (bbockelm/cedar: message/testdata/cpp_private_ad.wire.b64, Apache-2.0).
GOLDEN = base64.b64decode(
    "AQAAALRIeNGg18XRvF7wSPlrL4oudearcrSxKwLquhM8HT9dv+IIdTzfVSw/iqWVMbpYvJLFT2LHzikf8k0KX1Wp"
    "butiidH5EnndTO2FftsTa6HRqjCpgmMzYKgHSOFNrzNb8ah1+bHXfDZDRDQ7Y8axUvVXRqCHFJoF3wAV+tQUNb+W"
    "NFs1VwbVYhWnZq/LGLqMloFxc2GdY0Vm+x5HY/RzoAMIDF+OYL44ycauyIBU3gN6r9LRjbE=")


def decode_all(data: bytes) -> list[bytes]:
    d = PacketDecoder(PEER)
    d.feed(data)
    return list(d.messages())


# --- packets ---------------------------------------------------------------------------

def test_a_message_is_packets_ending_with_the_end_flag() -> None:
    payload = bytes(range(256)) * 10
    data = frame(payload, packet_size=1000)
    assert data[0] == 0 and struct.unpack(">I", data[1:5])[0] == 1000
    assert decode_all(data) == [payload]
    # the last packet carries the end flag
    assert data[-(5 + 560)] == 1


def test_messages_arrive_byte_by_byte() -> None:
    data = frame(b"one") + frame(b"two")
    d = PacketDecoder(PEER)
    out = []
    for i in range(len(data)):
        d.feed(data[i:i + 1])
        out.extend(d.messages())
    assert out == [b"one", b"two"]


def test_an_empty_message_is_one_empty_final_packet() -> None:
    assert frame(b"") == b"\x01\x00\x00\x00\x00"
    assert decode_all(frame(b"")) == [b""]


def test_a_truncated_packet_is_not_a_message() -> None:
    data = frame(b"hello world")
    d = PacketDecoder(PEER)
    d.feed(data[:-1])
    assert d.next_message() is None
    assert d.pending == len(data) - 1


@pytest.mark.parametrize("header, why", [
    (b"\x02\x00\x00\x00\x01", "end flag 2"),
    (b"\x01" + struct.pack(">I", MAX_PACKET + 1), "exceeds"),
    (b"\x00\x00\x00\x00\x00", "empty packet"),
])
def test_bad_packet_headers_are_refused_naming_the_peer(header: bytes, why: str) -> None:
    d = PacketDecoder(PEER)
    d.feed(header + b"x")
    with pytest.raises(WireError, match=why) as e:
        d.next_message()
    assert PEER in str(e.value)


def test_an_oversized_message_is_refused_before_it_is_whole() -> None:
    d = PacketDecoder(PEER, max_message=100)
    d.feed(frame(b"x" * 200, packet_size=60)[:130])
    with pytest.raises(WireError, match="longer than 100"):
        d.next_message()


# --- values ----------------------------------------------------------------------------

@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_integers_are_8_bytes_big_endian(n: int) -> None:
    data = Writer().put_int(n).payload()
    assert data == struct.pack(">q", n)
    assert Reader(data, PEER).get_int() == n


@settings(max_examples=50)
@given(st.text(alphabet=st.characters(blacklist_characters="\0",
                                      blacklist_categories=("Cs",))), st.booleans())
def test_strings_round_trip_in_both_modes(s: str, crypto: bool) -> None:
    data = Writer(crypto=crypto).put_string(s).put_string(None).payload()
    r = Reader(data, PEER, crypto=crypto)
    assert r.get_string() == s and r.get_string() is None
    r.end()


def test_string_encodings_are_htcondors() -> None:
    assert Writer().put_string("ab").payload() == b"ab\0"
    assert Writer().put_string(None).payload() == b"\xff"
    assert Writer(crypto=True).put_string("ab").payload() == struct.pack(">q", 3) + b"ab\0"
    assert Writer(crypto=True).put_string(None).payload() == struct.pack(">q", 1) + b"\xff"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_doubles_keep_31_bits_of_fraction(x: float) -> None:
    r = Reader(Writer().put_double(x).payload(), PEER)
    assert r.get_double() == pytest.approx(x, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("data, crypto, read, why", [
    (b"\x00\x00\x00", False, "int", "ends inside"),
    (b"abc", False, "string", "no NUL"),
    (struct.pack(">q", 10) + b"ab\0", True, "string", "bad length"),
    (struct.pack(">q", 0), True, "string", "bad length"),
    (struct.pack(">q", -5) + b"ab\0", True, "string", "bad length"),
    (struct.pack(">q", 3) + b"abc", True, "string", "NUL-terminated"),
    (struct.pack(">q", 1) + struct.pack(">q", 5000), False, "double", "bad exponent"),
])
def test_garbled_values_raise_wire_errors(data: bytes, crypto: bool, read: str,
                                          why: str) -> None:
    r = Reader(data, PEER, crypto=crypto)
    with pytest.raises(WireError, match=why):
        getattr(r, f"get_{read}")()


def test_unread_bytes_at_the_end_of_a_message_are_an_error() -> None:
    r = Reader(Writer().put_int(1).put_int(2).payload(), PEER)
    r.get_int()
    with pytest.raises(WireError, match="8 unread bytes"):
        r.end()


# --- ClassAds --------------------------------------------------------------------------

AD = ClassAd.parse_old('MyType = "Machine"\nName = "slot1@x"\nCpus = 4\nLoadAvg = 0.25\n'
                       'Requirements = START && (TARGET.RequestCpus <= MY.Cpus)\n'
                       'Note = "a \\"quoted\\" word"\nClaimId = "<1.2.3.4:5>#1#1#abc"\n'
                       'Capability = ClaimId\n_condor_privThing = 1\nList = { 1, "two" }')


@pytest.mark.parametrize("crypto", [False, True])
def test_classads_round_trip_with_private_attributes_behind_the_marker(crypto: bool) -> None:
    data = put_classad(Writer(crypto=crypto), AD).payload()
    assert data.count(b"ZKM\0") == 3
    r = Reader(data, PEER, crypto=crypto)
    back = get_classad(r)
    r.end()
    assert back == AD


def test_a_public_ad_leaves_private_attributes_out() -> None:
    data = put_classad(Writer(), AD, private=False).payload()
    assert b"ClaimId" not in data and b"ZKM" not in data and b"_condor_priv" not in data
    back = get_classad(Reader(data, PEER))
    assert back["Name"] == "slot1@x" and "ClaimId" not in back


def test_the_wire_shape_is_count_lines_and_two_empty_type_strings() -> None:
    ad = ClassAd.parse_old('A = 1\nB = "x"')
    assert put_classad(Writer(), ad).payload() == \
        struct.pack(">q", 2) + b"A = 1\0" + b'B = "x"\0' + b"\0\0"


def test_legacy_mytype_and_targettype_strings_are_kept() -> None:
    data = Writer().put_int(1).put_string("A = 1").put_string("Machine") \
        .put_string("Job").payload()
    ad = get_classad(Reader(data, PEER))
    assert ad["MyType"] == "Machine" and ad["TargetType"] == "Job"


def _ad_bytes(*lines: str, count: int | None = None) -> bytes:
    w = Writer().put_int(len(lines) if count is None else count)
    for line in lines:
        w.put_string(line)
    return w.put_string("").put_string("").payload()


@pytest.mark.parametrize("data, why", [
    (_ad_bytes("A = 1", count=-1), "claims -1 attributes"),
    (_ad_bytes("A = 1", count=10**9), "claims 1000000000"),
    (_ad_bytes("A = 1", "B = ", count=2), "bad attribute"),
    (_ad_bytes("A = (1 +", count=1), "bad attribute"),
    (_ad_bytes("= 3", count=1), "bad attribute"),
    (_ad_bytes("A = 1\nB = 2", count=1), "spans lines"),
    (_ad_bytes("A = 1", "ZKM", count=2)[:-2], "ends inside"),
    (_ad_bytes("A = 1", "B = 2", count=3), "ends inside|null string"),
    (put_classad(Writer(), AD).payload()[:40], "ends inside"),
])
def test_malformed_classads_raise_wire_errors_naming_the_peer(data: bytes, why: str) -> None:
    with pytest.raises(WireError, match=why) as e:
        get_classad(Reader(data, PEER), "a slot ad")
    assert PEER in str(e.value)


@settings(max_examples=200)
@given(st.binary(max_size=300))
def test_random_bytes_never_escape_the_error_tree(data: bytes) -> None:
    for crypto in (False, True):
        try:
            get_classad(Reader(data, PEER, crypto=crypto))
        except CondorpyError:
            pass
    d = PacketDecoder(PEER)
    d.feed(data)
    try:
        list(d.messages())
    except WireError:
        pass


# --- AES-GCM ---------------------------------------------------------------------------

def test_the_cpp_golden_vector_decrypts_to_its_private_ad() -> None:
    d = PacketDecoder("golden")
    d.cipher = AesGcmCipher(bytes(32), Transcript(), "golden")
    d.feed(GOLDEN)
    msg = d.next_message()
    assert msg is not None and len(msg) == 148
    r = Reader(msg, "golden", crypto=True)
    ad = get_classad(r)
    r.end()
    assert ad["Name"] == "slot1@interop" and ad["MyType"] == "Machine"
    assert ad["ClaimId"] == "interop-secret-claimid-deadbeef"


def _pair(key: bytes) -> tuple[AesGcmCipher, AesGcmCipher]:
    # both ends saw the same clear handshake, each from its own side
    a, b = Transcript(), Transcript()
    hello, answer = frame(b"hello"), frame(b"answer")
    a.note_sent(hello), b.note_received(hello), b.note_sent(answer), a.note_received(answer)
    return AesGcmCipher(key, a, "b"), AesGcmCipher(key, b, "a")


def test_aes_gcm_round_trips_many_packets_both_ways() -> None:
    key = hkdf_key(b"shared")
    ca, cb = _pair(key)
    to_b, to_a = PacketDecoder("a"), PacketDecoder("b")
    to_b.cipher, to_a.cipher = cb, ca
    for i in range(5):
        to_b.feed(frame(b"x" * (i * 1000), cipher=ca, packet_size=700))
        assert to_b.next_message() == b"x" * (i * 1000)
        to_a.feed(frame(b"reply %d" % i, cipher=cb))
        assert to_a.next_message() == b"reply %d" % i


def test_a_tampered_or_replayed_packet_does_not_verify() -> None:
    ca, cb = _pair(hkdf_key(b"k"))
    first = frame(b"first", cipher=ca)
    second = frame(b"second", cipher=ca)
    d = PacketDecoder("a")
    d.cipher = cb
    d.feed(first)
    assert d.next_message() == b"first"
    bad = bytearray(second)
    bad[-1] ^= 1
    d.feed(bytes(bad))
    with pytest.raises(WireError, match="does not verify"):
        d.next_message()
    d2 = PacketDecoder("a")
    d2.cipher = _pair(hkdf_key(b"k"))[1]
    d2.feed(b"\x01" + struct.pack(">I", 10) + first[5:15])   # shorter than an IV and a tag
    with pytest.raises(WireError, match="too short"):
        d2.next_message()


def test_a_different_handshake_transcript_does_not_verify() -> None:
    key = hkdf_key(b"k")
    ca, _ = _pair(key)
    other = AesGcmCipher(key, Transcript(), "a")
    d = PacketDecoder("a")
    d.cipher = other
    d.feed(frame(b"x", cipher=ca))
    with pytest.raises(WireError, match="does not verify"):
        d.next_message()


def test_ecdh_agrees_on_one_key_and_refuses_garbage() -> None:
    a, b = EcdhKey(), EcdhKey()
    assert a.session_key(b.public_b64(), "b") == b.session_key(a.public_b64(), "a")
    assert len(base64.b64decode(a.public_b64())) == 65
    with pytest.raises(CondorpyError, match="P-256"):
        a.session_key("bm90IGEgcG9pbnQ=", "b")
    with pytest.raises(CondorpyError, match="P-256"):
        a.session_key("***", "b")


# --- addresses -------------------------------------------------------------------------

@pytest.mark.parametrize("text, host, port, sock", [
    ("127.0.0.1", "127.0.0.1", 9618, None),
    ("cm.example.org:9620", "cm.example.org", 9620, None),
    ("<10.0.0.5:4080?addrs=10.0.0.5-4080&sock=collector>", "10.0.0.5", 4080, "collector"),
    ("[::1]:9618", "::1", 9618, None),
])
def test_addresses(text: str, host: str, port: int, sock: str | None) -> None:
    a = parse_address(text)
    assert (a.host, a.port, a.shared_port_id) == (host, port, sock)


@pytest.mark.parametrize("text", ["", "<1.2.3.4:5", "host:port", "h:70000", "a b:1"])
def test_bad_addresses_name_their_source(text: str) -> None:
    with pytest.raises(CondorpyError, match="COLLECTOR_HOST"):
        parse_address(text, source="COLLECTOR_HOST")
