"""A seeded fuzzer for the daemon's control socket (JSON lines over a Unix socket).

For CONDORPY_FUZZ_SECONDS (default a few seconds) it sends, over many connections:
valid read requests, every command's arguments with the wrong types (the table in
condorpy/startd/control.py), mutated request lines, random bytes, invalid UTF-8,
deep nesting, huge numbers, over-long and half-sent lines, hang-ups before or
mid-answer, and valid requests interleaved with all that on the same connection.
After every batch the daemon answers a ping; no answer is an "internal error"; at the
end its log holds no traceback and it holds as many descriptors as before.
The seed is printed on failure; CONDORPY_FAULT_SEED replays it."""

from __future__ import annotations

import collections
import contextlib
import json
import random
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from condorpy.startd.client import RequestRefused
from condorpy.startd.control import (ARGS, COMMANDS, MAX_REQUEST, ArgType, Request,
                                     parse_request)
from tests.faults.common import assert_unharmed, fds, replay, seconds, seed, settled_fds
from tests.startd.daemon_helpers import Daemon, running

DEFAULT_SECONDS = 6.0
BATCH = 12
# Requests the fuzzer never sends well-formed: they would stop, restart or drain the
# daemon under test, or queue jobs (each is still sent with arguments of wrong types).
ONLY_BROKEN = {"off", "restart", "drain", "vacate", "submit", "reconfig", "cancel_drain"}
READS: list[tuple[str, dict[str, Any]]] = [
    ("ping", {}), ("q", {}), ("q", {"constraint": "Owner == \"nobody\"", "limit": 3}),
    ("history", {"limit": 2}), ("status", {}), ("who", {}),
    ("config_val", {"names": ["NUM_CPUS", "NO_SUCH_KNOB"]}),
    ("q", {"projection": ["ClusterId"]}), ("tail", {"id": "1.0"}),
    ("rm", {"ids": ["999.0"]}), ("hold", {"constraint": "false"}),
    ("release", {"owners": ["nobody"]}), ("qedit", {"ids": ["999.0"], "attrs": ["A"],
                                                    "values": ["1"], "dry_run": True}),
]
# a value of every JSON kind, and some that stress decoders
ODD: list[Any] = [None, True, False, 0, -1, 1 << 63, -(1 << 63) - 1, 10 ** 200, 1.5, -0.0, 1e308,
       "", "x", "\u0000", "\ud800", "é" * 3, [], [1], ["a", 2], {}, {"a": 1},
       [[[]]], "1.0", "-1"]


def _wrong(kind: ArgType, rng: random.Random) -> Any:
    """A value that is not ``kind`` (or is, now and then: the border cases)."""
    border: dict[ArgType, list[Any]] = {
        ArgType.POSITIVE: [0, -5, True], ArgType.COUNT: [-1, 2.0],
        ArgType.NAMES: [["x"] * 1001], ArgType.IDS: [[None], [[1]], [1.5]],
        ArgType.BOOL: [0, 1, "true"], ArgType.STRS: [[1], [None]],
    }
    return rng.choice(ODD + border.get(kind, []))


def _line(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def _valid(rng: random.Random) -> bytes:
    command, args = rng.choice(READS)
    body: dict[str, Any] = {"command": command, "args": args}
    if rng.random() < 0.3:
        body["stream"] = True
    return _line(body)


def _wrong_types(rng: random.Random) -> bytes:
    command = rng.choice(sorted(ARGS))
    table = ARGS[command]
    name = rng.choice(sorted(table))
    args = {name: _wrong(table[name], rng)}
    ok_types = {ArgType.STR: "x", ArgType.BOOL: True}
    if command in ONLY_BROKEN:
        # a second argument that no check accepts keeps it a refusal
        other = [n for n in table if n != name]
        if not other:
            args[name] = [object.__name__]        # a list is no string nor bool
        else:
            args[rng.choice(other)] = {"never": "valid"}
    elif rng.random() < 0.5:
        for n, k in table.items():
            args.setdefault(n, ok_types.get(k, None))
    return _line({"command": command, "args": args})


def _not_a_request(rng: random.Random) -> bytes:
    return _line(rng.choice([
        {"command": rng.choice(ODD)}, {"args": {}}, [1, 2], "ping", 5, None,
        {"command": "ping", "args": rng.choice(ODD)},
        {"command": rng.choice(sorted(set(COMMANDS) - ONLY_BROKEN)),
         "args": {"extra": rng.choice(ODD)}, "stream": rng.choice(ODD)},
        {"command": "x" * rng.randint(100, 5000)},
    ]))


def _mutated(rng: random.Random) -> bytes:
    data = bytearray(_valid(rng) if rng.random() < 0.5 else _wrong_types(rng))
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(data))
        op = rng.randrange(4)
        if op == 0:
            data[i] = rng.randrange(256)
        elif op == 1:
            data.insert(i, rng.choice(b'{}[]",:\\0123456789.eE-+ \x00\xff\n'))
        elif op == 2:
            del data[i]
        else:
            data[i:i] = data[rng.randrange(len(data)):][:rng.randint(1, 40)]
    if rng.random() < 0.2 and b'"ping"' in data:
        data = data.replace(b'"ping"', b'"restart"')     # _harmless() keeps it broken
    return bytes(data) + b"\n"


def _raw(rng: random.Random) -> bytes:
    return rng.choice([
        bytes(rng.randrange(256) for _ in range(rng.randint(1, 2000))) + b"\n",
        b"\xff\xfe\xc0\x80" * rng.randint(1, 100) + b"\n",                 # not UTF-8
        b'{"command": "ping", "args": {"a": "\xed\xa0\x80"}}\n',          # a surrogate
        # lone surrogates as JSON escapes: valid UTF-8 on the wire, odd strings inside
        b'{"command":"q","args":{"constraint":"Owner == \\"\\udc94\\""}}\n',
        b'{"command":"config_val","args":{"names":["\\ud800", "A\\udfff"]}}\n',
        b'{"command":"rm","args":{"owners":["\\udc94"],"reason":"\\ud800"}}\n',
        b'{"command":"tail","args":{"id":"\\udc94.0"}}\n',
        b'{"command":"\\ud800"}\n',
        b"[" * rng.choice([100, 10_000, 200_000]) + b"\n",                # deep, unclosed
        b'{"command":"q","args":{"constraint":' + b"[" * 50_000 + b"]" * 50_000 + b"}}\n",
        b'{"command":"q","args":{"limit":' + b"9" * 5000 + b"}}\n",        # long integer
        b'{"command":"q","args":{"limit":1e999999}}\n',
        b'{"command":"q","args":{"limit":NaN,"constraint":Infinity}}\n',
        b'{"command":"ping","command":"ping","args":{},"args":[]}\n',     # duplicate keys
        b'{"command":"q","args":{"constraint":"' + b"(" * 20_000 + b'"}}\n',
        b"\n" * rng.randint(1, 1000),
        b"\r\n\t \x00\n",
    ])


def _huge(rng: random.Random) -> bytes:
    if rng.random() < 0.15:
        return b"x" * (MAX_REQUEST + 10) + b"\n"         # over the limit: refused whole
    text = "y" * rng.randint(100_000, 2_000_000)
    return _line({"command": "q", "args": {"constraint": f'Owner == "{text}"'}})


PING = b'{"command": "ping", "args": {"fuzz": "interleaved"}}\n'


def _interleaved(rng: random.Random) -> bytes:
    """Broken lines with a ping among them, on one connection: the ping is answered."""
    makers = [_wrong_types, _not_a_request, _mutated, _raw]
    before = b"".join(rng.choice(makers)(rng) for _ in range(rng.randint(1, 3)))
    after = b"".join(rng.choice(makers)(rng) for _ in range(rng.randint(0, 3)))
    return before + PING + after


MAKERS: list[Callable[[random.Random], bytes]] = [
    _valid, _wrong_types, _not_a_request, _mutated, _mutated, _raw, _huge, _interleaved]


def _harmless(data: bytes) -> bytes:
    """``data`` less every line the daemon's own parser would take as a well-formed
    request of ONLY_BROKEN (a mutation can drop the very argument that was wrong)."""
    lines = data.split(b"\n")
    keep = [ln for ln in lines if not (
        len(ln) < MAX_REQUEST and isinstance(req := parse_request(ln), Request)
        and req.command in ONLY_BROKEN)]
    return b"\n".join(keep)


def _exchange(d: Daemon, data: bytes, rng: random.Random, log: list[str],
              seen: collections.Counter[str]) -> None:
    """Send ``data`` on a new connection in pieces, then (by chance) hang up at once, in
    mid-line, or after reading every answer."""
    how = rng.choice(["read", "read", "read", "hangup", "half"])
    if how == "half" and len(data) > 2:
        data = data[:rng.randrange(1, len(data) - 1)]
    log.append(f"{how} {data[:120]!r}{'...' if len(data) > 120 else ''} ({len(data)} B)")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(d.socket))
        view = memoryview(data)
        while view:
            n = rng.choice([1, 7, 4096, 1 << 20])
            try:
                s.sendall(view[:n])
            except (BrokenPipeError, ConnectionResetError):
                return          # refused (too long) and closed: the daemon's right
            view = view[n:]
        if how != "read":
            return
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            try:
                chunk = s.recv(1 << 16)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
    replies = [json.loads(raw) for raw in got.splitlines()]
    if PING in data:
        assert any(isinstance(r, dict) and isinstance(r.get("result"), dict)
                   and "pid" in r["result"] for r in replies), "the ping went unanswered"
    for reply in replies:
        if isinstance(reply, dict) and reply.get("ok") is False:
            assert "internal error" not in str(reply.get("error")), reply
            seen["refused"] += 1
        else:
            seen["answered"] += 1


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path)) as d:
        yield d


def test_the_control_socket_survives_a_seeded_fuzzer(daemon: Daemon) -> None:
    s = seed()
    rng = random.Random(s)
    assert daemon.proc is not None
    pid = daemon.proc.pid
    for command, args in READS:                  # whatever a first request opens
        with contextlib.suppress(RequestRefused):
            daemon.call(command, **args)
    before = fds(pid)
    sent: list[str] = []
    batches = 0
    seen: collections.Counter[str] = collections.Counter()
    end = time.monotonic() + seconds(DEFAULT_SECONDS)
    try:
        while time.monotonic() < end:
            for _ in range(BATCH):
                _exchange(daemon, _harmless(rng.choice(MAKERS)(rng)), rng, sent, seen)
            batches += 1
            assert daemon.call("ping"), "no answer to ping"
            del sent[:-3 * BATCH]
        after = settled_fds(pid, len(before))
    except BaseException as exc:
        raise AssertionError(f"{replay(s)}: {exc!r} after batch {batches}; last sent:\n"
                             + "\n".join(sent[-BATCH:]) + f"\n{daemon.output()}") from exc
    print(f"{batches} batches of {BATCH} ({dict(seen)}), {replay(s)}")
    assert_unharmed(daemon, s, before, after)
