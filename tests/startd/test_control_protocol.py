"""The control protocol without a daemon: framing with limits, argument types, replies
produced in pieces (one line or a stream), and the client reading a stream longer
than any one reply line may be."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.errors import RequestError
from condorpy.startd import client, control
from condorpy.startd.control import (BadRequest, ReplyBroken, ReplyProducer, Request,
                                     RequestReader, Streamed, parse_request)


def drain(p: ReplyProducer) -> bytes:
    out = b""
    while (piece := p.next()) is not None:
        out += piece
    return out


# --- RequestReader --------------------------------------------------------------------

def test_requests_are_taken_one_at_a_time_across_pieces() -> None:
    r = RequestReader()
    r.push(b'{"command": "ping"}\n{"command": "st')
    assert r.pop() == Request("ping", {})
    assert r.pop() is None
    assert r.held == len(b'{"command": "st')
    r.push(b'atus", "args": {}, "stream": true}\n\n  \n{"command": "q"}\n')
    assert r.pop() == Request("status", {}, stream=True)
    assert r.pop() == Request("q", {})
    assert r.pop() is None and r.held == 0


def test_a_line_over_the_limit_is_refused_once_and_skipped_to_its_end() -> None:
    r = RequestReader(limit=100)
    assert r.feed(b"x" * 60) == []
    assert r.feed(b"x" * 60) == [BadRequest("request longer than 100 bytes")]
    assert r.held == 0                       # nothing of it is kept
    assert r.feed(b"y" * 10_000) == [] and r.held == 0
    assert r.feed(b'tail\n{"command": "ping"}\n') == [Request("ping", {})]


def test_a_whole_line_over_the_limit_in_one_piece_is_refused() -> None:
    r = RequestReader(limit=30)
    got = r.feed(b'{"command": "ping", "args": {"pad": "' + b"z" * 40 + b'"}}\n'
                 b'{"command": "ping"}\n')
    assert got == [BadRequest("request longer than 30 bytes"), Request("ping", {})]


@pytest.mark.parametrize("line, why", [
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2", "not JSON"),
    (b'{"command": "ping", "args": {"n": ' + b"1" * 5000 + b"}}", "not JSON"),
    (b"[" * 10_000, "not JSON"),
    (b'"ping"', "a JSON object"),
    (b'{"command": ["ping"]}', "unknown command 'list'"),
    (b'{"command": "q", "args": []}', "'args' must be a JSON object"),
    (b'{"command": "q", "args": {"constraint": 5}}', "'constraint' must be a string"),
    (b'{"command": "q", "args": {"limit": -1}}', "'limit' must be a non-negative"),
    (b'{"command": "history", "args": {"limit": true}}', "'limit' must be"),
    (b'{"command": "submit", "args": {"cluster": 9223372036854775808}}', "'cluster'"),
    (b'{"command": "submit", "args": {"ads": ["a", 1]}}', "'ads' must be a list of str"),
    (b'{"command": "rm", "args": {"ids": [1.5]}}', "'ids' must be a list of job ids"),
    (b'{"command": "rm", "args": {"owners": "bob"}}', "'owners' must be a list"),
    (b'{"command": "config_val", "args": {"names": [{}]}}', "'names'"),
    (b'{"command": "config_val", "args": {"names": [' + b'"A", ' * 1000 + b'"B"]}}',
     "at most 1000 strings"),
    (b'{"command": "vacate", "args": {"fast": "yes"}}', "'fast' must be true or false"),
])
def test_malformed_requests_name_what_is_wrong(line: bytes, why: str) -> None:
    got = parse_request(line)
    assert isinstance(got, BadRequest) and why in got.reason, got


def test_arguments_of_the_right_type_and_unknown_ones_pass() -> None:
    got = parse_request(b'{"command": "rm", "args": {"ids": ["1.0", 2], "owners": [], '
                        b'"constraint": null, "reason": "x", "all": true, "new": {}}}')
    assert got == Request("rm", {"ids": ["1.0", 2], "owners": [], "constraint": None,
                                 "reason": "x", "all": True, "new": {}})


# --- replies ----------------------------------------------------------------------------

def test_a_small_reply_is_the_one_line_it_always_was() -> None:
    assert drain(ReplyProducer("ping", {"pid": 1}, True)) == \
        control.encode_reply(True, {"pid": 1})
    assert drain(ReplyProducer("q", error="q: no")) == control.encode_reply(False, error="q: no")


@pytest.mark.parametrize("n", [0, 1, 7, 3000])
def test_a_long_list_unasked_for_as_a_stream_is_one_line_in_pieces(n: int) -> None:
    p = ReplyProducer("q", Streamed({"now": 5}, "ads", (f"A = {i}" for i in range(n))),
                      False, piece=1000)
    pieces = []
    while (piece := p.next()) is not None:
        pieces.append(piece)
    whole = b"".join(pieces)
    assert whole.count(b"\n") == 1 and whole.endswith(b"\n")
    assert json.loads(whole) == {"ok": True, "result": {"now": 5, "ads": [
        f"A = {i}" for i in range(n)]}}
    assert max(len(x) for x in pieces) < 2000


@pytest.mark.parametrize("n", [0, 1, 3000])
def test_a_stream_is_bounded_lines_with_a_count_at_the_end(n: int) -> None:
    items = [f"A = {i}" for i in range(n)]
    whole = drain(ReplyProducer("q", Streamed({"now": 5}, "ads", iter(items)), True,
                                piece=1000))
    lines = [json.loads(x) for x in whole.splitlines()]
    assert lines[0] == {"ok": True, "result": {"now": 5}, "stream": "ads"}
    assert lines[-1] == {"ok": True, "end": n}
    assert [i for batch in lines[1:-1] for i in batch] == items
    assert max(len(x) for x in whole.splitlines()) < 2000


@pytest.mark.parametrize("stream", [False, True])
def test_pauses_end_pieces_without_changing_the_reply(stream: bool) -> None:
    # a search that finds little: pauses between its chunks give the loop back, with
    # an empty piece where nothing was found yet
    items = [control.PAUSE, control.PAUSE, "a", "b", control.PAUSE, control.PAUSE, "c",
             control.PAUSE]
    p = ReplyProducer("history", Streamed({}, "ads", iter(items)), stream, piece=1 << 20)
    pieces = []
    while (piece := p.next()) is not None:
        pieces.append(piece)
    assert pieces.count(b"") >= 3
    whole = b"".join(pieces)
    plain = drain(ReplyProducer("history", Streamed({}, "ads", iter(["a", "b", "c"])),
                                stream, piece=1 << 20))
    if stream:
        got = [json.loads(x) for x in whole.splitlines()]
        assert [i for batch in got[1:-1] for i in batch] == ["a", "b", "c"]
        assert got[-1] == {"ok": True, "end": 3}
    else:
        assert json.loads(whole) == json.loads(plain)


def _failing(after: int) -> Iterator[str]:
    for i in range(after):
        yield "x" * 100 + str(i)
    raise RequestError("the queue went away")


def test_a_failure_before_anything_is_sent_is_a_plain_error_reply() -> None:
    whole = drain(ReplyProducer("q", Streamed({}, "ads", _failing(0)), False))
    assert json.loads(whole) == {"ok": False, "error": "q: the queue went away"}


def test_a_failure_part_way_ends_a_stream_with_an_error_line() -> None:
    whole = drain(ReplyProducer("q", Streamed({}, "ads", _failing(50)), True, piece=500))
    assert json.loads(whole.splitlines()[-1]) == {"ok": False,
                                                  "error": "q: the queue went away"}


def test_a_failure_part_way_through_one_line_breaks_the_connection() -> None:
    p = ReplyProducer("q", Streamed({}, "ads", _failing(50)), False, piece=500)
    with pytest.raises(ReplyBroken, match="the queue went away"):
        while p.next() is not None:
            pass


# --- the client reads a stream longer than one reply line may be ---------------------

def _serve_once(path: Path, items: int, size: int) -> threading.Thread:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        line = b""
        while not line.endswith(b"\n"):
            line += conn.recv(4096)
        req = parse_request(line.rstrip(b"\n"))
        assert isinstance(req, Request) and req.stream
        ad = "y" * size
        p = ReplyProducer(req.command, Streamed({"now": 1}, "ads", (ad for _ in range(items))),
                          req.stream)
        while (piece := p.next()) is not None:
            conn.sendall(piece)
        conn.close()
        listener.close()

    t = threading.Thread(target=serve)
    t.start()
    return t


def test_the_client_takes_a_streamed_reply_larger_than_any_line(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    n = client.MAX_REPLY_LINE // 10_000 + 100          # the old client's limit, and more
    t = _serve_once(path, n, 10_000)
    got = client.call(path, "q", timeout=60)
    t.join(60)
    assert got["now"] == 1 and len(got["ads"]) == n and got["ads"][-1] == "y" * 10_000
