"""A seeded fuzzer for the control socket: an ordinary user sends a bounded number of
random and mutated requests to a real root daemon, in batches; after each batch the
daemon must still answer `ping` and `status`, no reply may be an internal error, and
its log must hold no traceback. ``CONDORPY_FUZZ_SEED`` picks another seed (the
failing seed is in the assertion message), ``CONDORPY_FUZZ_SECONDS`` another bound."""

from __future__ import annotations

import json
import os
import random
import socket
import time
from pathlib import Path
from typing import Any, Callable

from condorpy.startd import control
from condorpy.startd.client import call
from tests.attackers import User, attacker, open_base  # noqa: F401
from tests.startd.daemon_helpers import Daemon

SEED = int(os.environ.get("CONDORPY_FUZZ_SEED", "3030"))
SECONDS = float(os.environ.get("CONDORPY_FUZZ_SECONDS", "15"))
BATCH = 40
MAX_CASES = 2000

UNICODE = ["\u00e9t\u00e9", "\u2603", "\U0001f600", "\u202e", "\ufeff", "\x00", "\ud800",
           "\\", "\"", "\n", "a" * 70_000]
RAW_VALUES = ["1" * 5000, "-" + "9" * 4400, "1e999", "-1e999", "NaN", "Infinity",
              "1.5", "0", "-1", "true", "null", "9223372036854775808", "[]", "{}",
              "[" * 300 + "]" * 300, "{\"a\":" * 250 + "1" + "}" * 250]
_SELECT = ["ids", "owners", "constraint", "reason", "all"]
ARG_NAMES = {"q": ["constraint", "limit"], "history": ["constraint", "limit"],
             "config_val": ["names"], "submit": ["cluster", "ads"], "rm": _SELECT,
             "hold": _SELECT, "release": _SELECT, "vacate": ["slots", "fast"],
             "drain": ["how", "on_completion", "reason", "check", "start"],
             "cancel_drain": ["request_id"], "off": ["how"],
             "qedit": ["ids", "owners", "constraint", "attrs", "values", "dry_run"],
             "tail": ["id", "stderr", "offset", "maxbytes"]}
CONSTRAINTS = ["true", "false", "Owner == \"cpyattacker\"", "(" * 5000 + "1" + ")" * 5000,
               "((((", "x =?= ", "1/0", "strcat(" * 300, "ClusterId > 9999999999999999999",
               "size(\"" + "z" * 10_000 + "\")", "[a=1;b=a]", "{1,2,3}[5]", "\u2603 == 1"]


def value(rng: random.Random, depth: int = 0) -> str:
    """The JSON text of a random, often wrong, value."""
    roll = rng.random()
    if roll < 0.25:
        return rng.choice(RAW_VALUES)
    if roll < 0.45:
        return json.dumps(rng.choice(UNICODE + CONSTRAINTS))
    if roll < 0.55:
        return str(rng.choice([0, 1, -1, 2**31, 2**63 - 1, -2**63, 2**64, 10**40]))
    if roll < 0.75 and depth < 3:
        return "[" + ", ".join(value(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"
    if roll < 0.85 and depth < 3:
        return "{" + ", ".join(f"{json.dumps(rng.choice(['a', 'ids', '']))}: "
                               f"{value(rng, depth + 1)}" for _ in range(rng.randrange(3))) + "}"
    return json.dumps(rng.choice([True, False, None, "", "1.0", "1", "cpyvictim",
                                  "Owner", "slot1@x"]))


def request(rng: random.Random) -> bytes:
    """One request line: a real command whose arguments are of every kind but right."""
    command = rng.choice(sorted(control.COMMANDS) + ["nope", "", "__class__"])
    names = ARG_NAMES.get(command, []) + ["extra", "args", "command"]
    args = ", ".join(f"{json.dumps(n)}: {value(rng)}"
                     for n in rng.sample(names, rng.randrange(len(names) + 1)))
    if command == "submit" and rng.random() < 0.5:
        # ads that parse, kept from ever running
        tail = rng.choice(["A = 1", "B = ", "Owner = \"root\"", "JobUniverse = 9"])
        ads = json.dumps(["Cmd = \"/bin/true\"\nRequirements = false\nIwd = \"/tmp\"\n"
                          + tail])
        args = f"\"ads\": {ads}, \"cluster\": {value(rng)}"
    extra = rng.choice(["", ", \"stream\": true", ", \"stream\": 1", ", \"args\": 5"])
    return f"{{\"command\": {json.dumps(command)}, \"args\": {{{args}}}{extra}}}".encode()


def case(rng: random.Random) -> tuple[list[bytes], str]:
    """What one connection sends (pieces), and how it ends: "read" (half-close, then read
    every reply), "close" (abruptly) or "reset" (close with unread replies)."""
    roll = rng.random()
    if roll < 0.1:
        body = rng.randbytes(rng.randrange(1, 3000))
    elif roll < 0.2:
        body = request(rng)[:rng.randrange(1, 200)]
    elif roll < 0.25:
        body = rng.choice([b"[" * 100_000, b"{\"command\": " * 5000, b"\xff\xfe\n" * 10,
                           b"\n" * 1000, b"\"\\ud800\"", b"{\"command\": \"ping\"}\r"])
    else:
        body = b"\n".join(request(rng) for _ in range(rng.randrange(1, 6)))
    if rng.random() < 0.9:
        body += b"\n"
    cuts = sorted(rng.sample(range(len(body) + 1), min(len(body), rng.randrange(3))))
    pieces = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]
    return pieces, rng.choice(["read"] * 6 + ["close", "reset"])


def send(path: Path, pieces: list[bytes], end: str) -> list[str]:
    """Run one case; what went wrong with it (empty when nothing did)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    problems = []
    try:
        s.connect(str(path))
        for piece in pieces:
            s.sendall(piece)
            time.sleep(0.001)
        if end == "close":
            return []
        if end == "reset":
            s.sendall(b'{"command": "status"}\n' * 3)
            return []
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(1 << 16):
            data += chunk
    except socket.timeout:
        return ["no answer within 20 s"]
    except OSError as exc:
        return [f"{type(exc).__name__}: {exc}"]
    finally:
        s.close()
    if data and not data.endswith(b"\n"):
        problems.append(f"unterminated reply {data[-200:]!r}")
    streaming = False
    for line in data.splitlines():
        try:
            reply = json.loads(line)
        except ValueError:
            problems.append(f"reply is not JSON: {line[:200]!r}")
            continue
        if streaming and isinstance(reply, list):
            continue                    # the items of a streamed reply
        streaming = isinstance(reply, dict) and "stream" in reply
        if not isinstance(reply, dict) or "ok" not in reply:
            problems.append(f"reply without ok: {line[:200]!r}")
        elif "internal error" in str(reply.get("error")) or \
                "failed to answer" in str(reply.get("error")):
            problems.append(f"internal error: {line[:300]!r}")
    return problems


def fuzz_batch(path: Path, seed: int, batch: int) -> list[str]:
    rng = random.Random(f"{seed}/{batch}")
    found = []
    for i in range(BATCH):
        pieces, end = case(rng)
        for problem in send(path, pieces, end):
            found.append(f"case {i} ({end}, {b''.join(pieces)[:120]!r}): {problem}")
    return found


def test_fuzzed_requests_never_break_the_daemon(open_base: Path, attacker: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        path = d.socket
        deadline = time.monotonic() + SECONDS
        batches = 0
        while time.monotonic() < deadline and batches * BATCH < MAX_CASES:
            where = f"seed {SEED}, batch {batches}"
            got = attacker.call(_bound(fuzz_batch, path, SEED, batches), timeout=120)
            assert got.kind == "ok", (where, got)
            assert got.value == [], (where, got.value[:5])
            alive = attacker.call(lambda: (call(path, "ping", timeout=20)["pid"],
                                           len(call(path, "status", timeout=20)["ads"])))
            assert alive.kind == "ok" and alive.value[1] >= 1, (where, alive)
            log = d.whole_log()
            assert "Traceback" not in log and "internal error" not in log, (where, log[-3000:])
            batches += 1
        assert batches >= 2, "the fuzzer ran fewer than two batches"
        print(f"fuzzer: seed {SEED}, {batches * BATCH} cases in {batches} batches")
    finally:
        d.stop()
        d.kill_leftovers()


def _bound(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: fn(*args)
