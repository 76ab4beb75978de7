"""HTCondor's file transfer, sans-I/O (condorpy/pool/filetransfer.py): the sender and the
receiver run against each other in memory; the frames have HTCondor's shape (checked
against the 23.9.6 shadow by tests/pool/test_pool_transfer.py); damaged streams end in
one WireError naming the peer; local failures travel in the TransferAck as holds."""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Generator
from typing import Any, BinaryIO

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import WireError
from condorpy.pool import filetransfer as ft
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import Op, Receive, Send
from condorpy.pool.wire_ad import get_classad, put_classad

PEER = "127.0.0.1:9618"


class MemSink:
    def __init__(self, fail_on: str = "") -> None:
        self.files: dict[str, bytes] = {}
        self.modes: dict[str, int] = {}
        self.dirs: dict[str, int] = {}
        self.fail_on = fail_on

    def mkdir(self, name: str, mode: int) -> None:
        self.dirs[name] = mode

    def create(self, name: str, mode: int) -> BinaryIO:
        if name == self.fail_on:
            raise OSError(28, "No space left on device")
        return io.BytesIO()

    def finish(self, name: str, handle: BinaryIO, mode: int) -> None:
        assert isinstance(handle, io.BytesIO)
        self.files[name] = handle.getvalue()
        self.modes[name] = mode


class MemSource:
    def __init__(self, data: dict[str, bytes]) -> None:
        self.data = data

    def open(self, path: str) -> BinaryIO:
        if path not in self.data:
            raise OSError(2, "No such file or directory")
        return io.BytesIO(self.data[path])


def exchange(a: Generator[Op, bytes | None, Any], b: Generator[Op, bytes | None, Any],
             tape: list[bytes] | None = None) -> tuple[Any, Any]:
    """Run two protocol generators against each other; ``tape`` records what ``a``
    sends."""
    gens = (a, b)
    inbox: tuple[deque[bytes], deque[bytes]] = (deque(), deque())
    waiting = [False, False]
    done = [False, False]
    results: list[Any] = [None, None]
    progress = True
    while not all(done) and progress:
        progress = False
        for i in (0, 1):
            while not done[i] and not (waiting[i] and not inbox[i]):
                value = inbox[i].popleft() if waiting[i] else None
                waiting[i] = False
                try:
                    op = gens[i].send(value)
                except StopIteration as stop:
                    results[i], done[i] = stop.value, True
                    break
                progress = True
                if isinstance(op, Send):
                    inbox[1 - i].append(op.payload)
                    if i == 0 and tape is not None:
                        tape.append(op.payload)
                elif isinstance(op, Receive):
                    waiting[i] = True
    assert all(done), "the two sides deadlocked"
    return results[0], results[1]


def replay(gen: Generator[Op, bytes | None, Any], messages: list[bytes]) -> Any:
    """Feed recorded messages to one side; what it sends is dropped."""
    queue = deque(messages)
    value: bytes | None = None
    while True:
        try:
            op = gen.send(value)
        except StopIteration as stop:
            return stop.value
        value = None
        if isinstance(op, Receive):
            if not queue:
                raise AssertionError(f"ran out of messages waiting for {op.what}")
            value = queue.popleft()


BIG = bytes(range(256)) * 2049            # 524,544 bytes: two full buffers and a bit
DATA = {"/s/in.txt": b"input\n", "/s/empty": b"", "/s/big.bin": BIG,
        "/s/d/sub/deep.txt": b"deep\n", "/s/exact": b"x" * ft.BUFFER_SIZE}


def items() -> list[ft.Item]:
    return [ft.Item("in.txt", "/s/in.txt", 0o644, 6),
            ft.Item("empty", "/s/empty", 0o600, 0),
            ft.Item("d", "/s/d", 0o755, directory=True),
            ft.Item("d/sub", "/s/d/sub", 0o700, directory=True),
            ft.Item("d/sub/deep.txt", "/s/d/sub/deep.txt", 0o640, 5),
            ft.Item("big.bin", "/s/big.bin", 0o755, len(BIG)),
            ft.Item("exact", "/s/exact", 0o644, ft.BUFFER_SIZE)]


def recorded() -> list[bytes]:
    tape: list[bytes] = []
    exchange(ft.send(PEER, items(), MemSource(DATA), final=True),
             ft.receive(PEER, MemSink()), tape)
    return tape


def test_a_sandbox_goes_across_whole_with_its_modes_and_directories() -> None:
    sink = MemSink()
    sent, got = exchange(ft.send(PEER, items(), MemSource(DATA), final=True),
                         ft.receive(PEER, sink))
    assert sent.failure is None and got.failure is None
    assert sink.files == {"in.txt": b"input\n", "empty": b"", "big.bin": BIG,
                          "d/sub/deep.txt": b"deep\n", "exact": b"x" * ft.BUFFER_SIZE}
    assert sink.modes == {"in.txt": 0o644, "empty": 0o600, "big.bin": 0o755,
                          "d/sub/deep.txt": 0o640, "exact": 0o644}
    assert sink.dirs == {"d": 0o755, "d/sub": 0o700}
    assert got.bytes == sent.bytes == 6 + len(BIG) + 5 + ft.BUFFER_SIZE
    assert got.dirs == ["d", "d/sub"]


def _int(msg: bytes) -> int:
    r = Reader(msg, PEER, crypto=True)
    v = r.get_int()
    r.end()
    return v


def test_the_frames_are_htcondors() -> None:
    tape = recorded()
    head = Reader(tape[0], PEER, crypto=True)
    assert head.get_int() == 1                      # final transfer
    info = get_classad(head)
    head.end()
    assert info["SandboxSize"] == 6 + len(BIG) + 5 + ft.BUFFER_SIZE
    # first file: command, name, our alive interval (the go-ahead), mode, size
    assert _int(tape[1]) == ft.Command.XFER_FILE
    r = Reader(tape[2], PEER, crypto=True)
    assert r.get_str() == "in.txt"
    r.end()
    assert _int(tape[3]) == ft.ALIVE_INTERVAL
    go = Reader(tape[4], PEER, crypto=True)
    assert get_classad(go).evaluate("Result") == ft.GO_AHEAD_ALWAYS
    assert _int(tape[5]) == 0o644
    size = Reader(tape[6], PEER, crypto=True)
    assert (size.get_int(), size.get_int()) == (6, ft.BUFFER_SIZE)
    assert tape[7] == b"input\n"                     # raw bytes, one message
    # the empty file: size 0, then 666 in a message of its own
    assert _int(tape[8]) == ft.Command.XFER_FILE
    assert _int(tape[10]) == 0o600                   # no go-ahead after the first
    zero = Reader(tape[11], PEER, crypto=True)
    assert (zero.get_int(), zero.get_int()) == (0, ft.BUFFER_SIZE)
    assert _int(tape[12]) == ft.PUT_FILE_EOM_NUM
    assert _int(tape[13]) == ft.Command.MKDIR
    # data messages never exceed the buffer; the big file takes three
    assert max(len(m) for m in tape) <= ft.BUFFER_SIZE
    i = tape.index(Writer(crypto=True).put_int(len(BIG)).put_int(ft.BUFFER_SIZE).payload())
    assert [len(m) for m in tape[i + 1:i + 4]] == [ft.BUFFER_SIZE, ft.BUFFER_SIZE,
                                                   len(BIG) - 2 * ft.BUFFER_SIZE]
    assert b"".join(tape[i + 1:i + 4]) == BIG
    # the end: Finished, then the sender's ack
    assert _int(tape[-2]) == ft.Command.FINISHED
    ack = Reader(tape[-1], PEER, crypto=True)
    assert get_classad(ack).evaluate("Result") == 0


def test_a_zero_length_file_then_finished() -> None:
    sink = MemSink()
    sent, got = exchange(ft.send(PEER, [ft.Item("e", "/e", 0o644, 0)],
                                 MemSource({"/e": b""}), final=False),
                         ft.receive(PEER, sink))
    assert sink.files == {"e": b""} and got.failure is None


def _damaged(kind: str) -> list[bytes]:
    tape = recorded()
    if kind == "truncated":
        # the size message of the first file loses its buffer size
        return tape[:6] + [tape[6][:8]] + tape[7:]
    if kind == "oversized-size":
        return tape[:6] + [Writer(crypto=True).put_int(1 << 60).put_int(ft.BUFFER_SIZE)
                           .payload()] + tape[7:]
    if kind == "oversized-buffer":
        return tape[:6] + [Writer(crypto=True).put_int(6).put_int(1 << 30).payload()] \
            + tape[7:]
    if kind == "oversized-data":
        return tape[:7] + [b"input\n" + b"more than declared"] + tape[8:]
    if kind == "garbled-command":
        return tape[:1] + [Writer(crypto=True).put_int(77).payload()] + tape[2:]
    if kind == "garbled-marker":
        i = tape.index(Writer(crypto=True).put_int(ft.PUT_FILE_EOM_NUM).payload())
        return tape[:i] + [Writer(crypto=True).put_int(667).payload()] + tape[i + 1:]
    if kind == "garbled-header":
        return [b"\xff" * 20] + tape[1:]
    if kind == "garbled-go-ahead":
        return tape[:4] + [b"\x00" * 8 + b"junk"] + tape[5:]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated", "oversized-size", "oversized-buffer",
                                  "oversized-data", "garbled-command", "garbled-marker",
                                  "garbled-header", "garbled-go-ahead"])
def test_a_damaged_stream_ends_in_one_error_naming_the_peer(kind: str) -> None:
    with pytest.raises(WireError) as e:
        replay(ft.receive(PEER, MemSink()), _damaged(kind))
    assert PEER in str(e.value)


def _stream(*entries: tuple[int, str, bytes | None]) -> list[bytes]:
    """A sender's messages: (command, name, data or None for a directory/URL)."""
    info = ClassAd()
    info["SandboxSize"] = 0
    out = [put_classad(Writer(crypto=True).put_int(1), info).payload()]
    first = True
    for cmd, name, data in entries:
        out.append(Writer(crypto=True).put_int(cmd).payload())
        out.append(Writer(crypto=True).put_string(name).payload())
        if first:
            go = ClassAd()
            go["Result"] = ft.GO_AHEAD_ALWAYS
            out += [Writer(crypto=True).put_int(300).payload(),
                    put_classad(Writer(crypto=True), go).payload()]
            first = False
        if cmd == ft.Command.OTHER:
            assert data is not None
            out.append(put_classad(Writer(crypto=True), ClassAd.parse_old(data.decode()))
                       .payload())
        elif cmd == ft.Command.DOWNLOAD_URL:
            out.append(Writer(crypto=True).put_string(data.decode() if data else "").payload())
        elif cmd == ft.Command.MKDIR:
            out.append(Writer(crypto=True).put_int(0o755).payload())
        else:
            assert data is not None
            out.append(Writer(crypto=True).put_int(0o644).payload())
            out.append(Writer(crypto=True).put_int(len(data)).put_int(ft.BUFFER_SIZE)
                       .payload())
            out += [data] if data else [Writer(crypto=True).put_int(666).payload()]
    out.append(Writer(crypto=True).put_int(0).payload())
    out.append(put_classad(Writer(crypto=True), ft.ack_ad(None)).payload())
    return out


def _ack_sent(gen: Generator[Op, bytes | None, Any], messages: list[bytes]
              ) -> tuple[Any, ClassAd]:
    """Replay and return the outcome and the receiver's last message, its ack."""
    queue = deque(messages)
    value: bytes | None = None
    last = b""
    while True:
        try:
            op = gen.send(value)
        except StopIteration as stop:
            return stop.value, get_classad(Reader(last, PEER, crypto=True))
        value = None
        if isinstance(op, Send):
            last = op.payload
        elif isinstance(op, Receive):
            value = queue.popleft()


def test_a_name_leaving_the_sandbox_is_drained_and_held() -> None:
    sink = MemSink()
    out, ack = _ack_sent(ft.receive(PEER, sink),
                         _stream((1, "../../etc/passwd", b"root::0:0\n"), (1, "ok", b"ok")))
    assert sink.files == {}        # nothing written once the stream is known bad
    assert out.local is not None and "illegal sandbox path" in out.local.reason
    assert ack.evaluate("Result") == -1 and ack.evaluate("HoldReasonCode") == 12


def test_a_url_without_a_plugin_is_held_as_htcondor_holds_it() -> None:
    out, ack = _ack_sent(ft.receive(PEER, MemSink()),
                         _stream((5, "data.csv", b"https://example.org/data.csv")))
    assert out.local is not None
    assert ack.evaluate("Result") == -1 and ack.evaluate("HoldReasonCode") == 12
    assert "plugin for type https not found" in str(ack.evaluate("HoldReason"))


def test_a_write_error_is_told_with_its_errno() -> None:
    out, ack = _ack_sent(ft.receive(PEER, MemSink(fail_on="f")),
                         _stream((1, "f", b"data"), (1, "g", b"more")))
    assert out.local is not None and out.local.subcode == 28
    assert ack.evaluate("HoldReasonSubCode") == 28


def test_the_peers_failed_ack_is_its_failure() -> None:
    bad = ft.Failure("shadow could not write", 12, 13)
    msgs = _stream((1, "f", b"x"))
    msgs[-1] = put_classad(Writer(crypto=True), ft.ack_ad(bad)).payload()
    out = replay(ft.receive(PEER, MemSink()), msgs)
    assert out.peer == bad and out.failure == bad


def test_a_missing_output_file_still_sends_a_whole_stream_and_fails() -> None:
    sink = MemSink()
    sent, got = exchange(ft.send(PEER, [ft.Item("gone", "/gone", 0o644, 5),
                                        ft.Item("here", "/here", 0o644, 2)],
                                 MemSource({"/here": b"ok"}), final=True),
                         ft.receive(PEER, sink))
    assert sink.files["here"] == b"ok"
    assert sent.local is not None and sent.local.code == ft.UPLOAD_FILE_ERROR
    assert got.peer is not None and "reading from /gone" in got.peer.reason


def test_a_pending_go_ahead_is_waited_for_and_a_refusal_ends_it() -> None:
    msgs = _stream((1, "f", b"x"))
    pending = ClassAd()
    pending["Result"] = 0
    pending["Timeout"] = 300
    ok = replay(ft.receive(PEER, MemSink()),
                msgs[:4] + [put_classad(Writer(crypto=True), pending).payload()] + msgs[4:])
    assert ok.files == ["f"]
    refused = ClassAd()
    refused["Result"] = -1
    refused["HoldReason"] = "transfer queue full"
    with pytest.raises(WireError, match="transfer queue full"):
        replay(ft.receive(PEER, MemSink()),
               msgs[:4] + [put_classad(Writer(crypto=True), refused).payload()])


@pytest.mark.parametrize("name,legal", [("a", True), ("d/sub/f", True), ("../x", False),
                                        ("/etc/passwd", False), ("a/../../b", False),
                                        ("", False), ("a\0b", False)])
def test_legal_names(name: str, legal: bool) -> None:
    assert ft.legal_name(name) is legal


def _sends(gen: Generator[Op, bytes | None, Any], messages: list[bytes]
           ) -> tuple[Any, list[bytes]]:
    """Replay and return the outcome and everything the side sent."""
    queue = deque(messages)
    value: bytes | None = None
    sent: list[bytes] = []
    while True:
        try:
            op = gen.send(value)
        except StopIteration as stop:
            return stop.value, sent
        value = None
        if isinstance(op, Send):
            sent.append(op.payload)
        elif isinstance(op, Receive):
            value = queue.popleft()


def _ads(payloads: list[bytes]) -> list[ClassAd]:
    ads = []
    for p in payloads:
        try:
            ads.append(get_classad(Reader(p, PEER, crypto=True)))
        except WireError:
            pass            # an int message
    return ads


def test_reuse_info_is_answered_with_no_reuse_and_the_files_follow() -> None:
    # 24.x/25.x senders ask before the files whether the receiver has them cached
    sink = MemSink()
    out, sent = _sends(ft.receive(PEER, sink), _stream(
        (999, "manifest", b'SubCommand = 8\nTag = "t"\nReuseList = { }'),
        (1, "in.txt", b"input\n")))
    replies = [ad for ad in _ads(sent) if "Result" in ad and "TransferStats" not in ad
               and "MaxTransferBytes" not in ad]
    assert [r.evaluate("Result") for r in replies] == [1]
    assert sink.files == {"in.txt": b"input\n"} and out.failure is None


def test_a_url_signing_request_gets_an_ad_without_signatures() -> None:
    out, sent = _sends(ft.receive(PEER, MemSink()), _stream(
        (999, "urls", b'SubCommand = 9\nSignList = { "s3://b/k" }')))
    ads = _ads(sent)
    assert any(len(ad) == 0 for ad in ads), ads      # the reply: nothing signed
    assert out.failure is None


def test_the_senders_failed_url_upload_is_a_failure_and_unknown_ones_are_skipped() -> None:
    out, ack = _ack_sent(ft.receive(PEER, MemSink()), _stream(
        (999, "x", b"SubCommand = 42"),
        (999, "out.dat", b'SubCommand = 7\nResult = 5\nFilename = "out.dat"')))
    assert out.local is not None and out.local.subcode == 5
    assert "out.dat" in out.local.reason
    assert ack.evaluate("Result") == -1 and ack.evaluate("HoldReasonCode") == 12
    out, ack = _ack_sent(ft.receive(PEER, MemSink()), _stream(
        (999, "x", b"SubCommand = 42"), (999, "u", b"SubCommand = 7\nResult = 0")))
    assert out.failure is None and ack.evaluate("Result") == 0


@pytest.mark.parametrize("kind", ["truncated", "garbled", "oversized"])
def test_a_damaged_sub_command_ad_ends_in_one_error_naming_the_peer(kind: str) -> None:
    tape = _stream((999, "m", b"SubCommand = 8"))
    ad_msg = next(j for j, p in enumerate(tape) if b"SubCommand" in p)
    assert ad_msg >= 4          # after the header, command, name and the go-ahead
    if kind == "truncated":
        tape[ad_msg] = tape[ad_msg][:6]
    elif kind == "garbled":
        tape[ad_msg] = b"\xff" * 12
    else:
        big = "\n".join(f"A{n} = {n}" for n in range(2000)) + "\nSubCommand = 8"
        tape[ad_msg] = put_classad(Writer(crypto=True), ClassAd.parse_old(big)).payload()
    with pytest.raises(WireError) as e:
        replay(ft.receive(PEER, MemSink()), tape)
    assert PEER in str(e.value)
