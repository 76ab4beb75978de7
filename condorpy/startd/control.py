"""The daemon's control protocol: JSON lines over a Unix stream socket.

Sans I/O: :class:`RequestReader` turns received bytes into validated :class:`Request`
records (or :class:`BadRequest` for what cannot be one), :class:`ReplyProducer` gives
the bytes of an answer piece by piece. Every request is authorised by the peer's
credentials (``SO_PEERCRED``), never by anything the request says about its sender:

- anyone may read (``q``, ``history``, ``status``, ``who``, ``config_val``, ``ping``);
- users submit jobs as themselves and manage their own jobs (``rm``, ``hold``,
  ``release``, ``qedit``); ``tail`` reads a running job's output for its owner or
  root only;
- root, the daemon's own user, and members of ``CONDORPY_ADMIN_GROUP`` may also manage
  every job and vacate, drain, turn off and on, reconfigure and restart.

The wire, version 1:

- a request is one line, ``{"command": C, "args": {...}}``, at most
  :data:`MAX_REQUEST` bytes; requests may be pipelined and are answered in order;
- a reply is one line, ``{"ok": true, "result": R}`` or ``{"ok": false, "error": E}``;
- a request that also says ``"stream": true`` may get a long list as a *stream*: a
  first line ``{"ok": true, "result": HEAD, "stream": KEY}`` (HEAD is the result
  without its list KEY), then lines that are each a JSON array of the next items, then
  ``{"ok": true, "end": N}`` (N items in all) or, when producing the rest failed,
  ``{"ok": false, "error": E}``. The client appends the items to ``HEAD[KEY]``. Every
  line stays bounded however long the list is. A client that does not ask for a
  stream gets the same reply as one line (written in pieces as the socket drains),
  and a daemon that predates streams ignores the flag and answers with one line, so
  both ends interoperate with older ones. Only ``q``, ``history`` and ``status``
  stream, and only their ``ads``.
"""

from __future__ import annotations

import grp
import json
import pwd
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Iterator

from condorpy.errors import CondorpyError
from condorpy.inputs import loads_json
# the client's half of the wire lives apart, for the command lines' start-up
from condorpy.startd.wire import MAX_REQUEST as MAX_REQUEST
from condorpy.startd.wire import encode_request as encode_request
PROTOCOL_VERSION = 1
# Bytes held across every connection's unfinished requests: two whole submissions at
# once. Beyond it the user holding the most loses its largest connection.
MAX_HELD_TOTAL = 2 * MAX_REQUEST
# A connection is not read while this much of its replies waits to be sent: a client
# that pipelines requests and never reads the answers stops being read instead of
# growing the daemon.
MAX_UNSENT = 256 * 1024
STREAM_PIECE = 64 * 1024             # bytes of items per line of a stream (about)
MAX_CONNECTIONS_PER_USER_KNOB = "CONDORPY_CONTROL_MAX_CONNECTIONS_PER_USER"
DEFAULT_MAX_CONNECTIONS_PER_USER = 64   # administrators are not limited
# Knobs one config_val request may name: its reply is one line, built whole.
MAX_NAMES = 1000


class Access(Enum):
    READ = "read"          # anyone
    USER = "user"          # acts on the caller's own jobs (admins: on every job)
    ADMIN = "admin"        # changes the machine


COMMANDS: dict[str, Access] = {
    "ping": Access.READ, "q": Access.READ, "history": Access.READ,
    "status": Access.READ, "who": Access.READ, "config_val": Access.READ,
    "new_cluster": Access.USER, "submit": Access.USER, "rm": Access.USER,
    "hold": Access.USER, "release": Access.USER,
    "vacate": Access.ADMIN, "drain": Access.ADMIN, "cancel_drain": Access.ADMIN,
    "off": Access.ADMIN, "on": Access.ADMIN, "reconfig": Access.ADMIN,
    # the caller's own jobs (queue superusers': any job); tail: its owner or root only
    "qedit": Access.USER, "tail": Access.USER,
    "restart": Access.ADMIN,
}


class ArgType(Enum):
    """What a known argument must be; arguments not listed are passed through."""

    STR = "a string"
    OPT_STR = "a string or null"
    POSITIVE = "a positive integer"
    OPT_INT = "an integer or null"
    COUNT = "a non-negative integer"
    BOOL = "true or false"
    STRS = "a list of strings"
    NAMES = f"a list of at most {MAX_NAMES} strings"
    IDS = "a list of job ids (strings or integers)"
    ID = "a string, an integer or null"


_SELECTION = {"ids": ArgType.IDS, "owners": ArgType.STRS, "constraint": ArgType.OPT_STR,
              "reason": ArgType.OPT_STR, "all": ArgType.BOOL}
ARGS: dict[str, dict[str, ArgType]] = {
    "q": {"constraint": ArgType.OPT_STR, "limit": ArgType.COUNT,
          "projection": ArgType.NAMES},
    "history": {"constraint": ArgType.OPT_STR, "limit": ArgType.POSITIVE,
                "projection": ArgType.NAMES},
    "config_val": {"names": ArgType.NAMES},
    "submit": {"cluster": ArgType.OPT_INT, "ads": ArgType.STRS},
    "rm": _SELECTION, "hold": _SELECTION, "release": _SELECTION,
    "vacate": {"slots": ArgType.STRS, "fast": ArgType.BOOL},
    "drain": {"how": ArgType.STR, "on_completion": ArgType.STR, "reason": ArgType.OPT_STR,
              "check": ArgType.OPT_STR, "start": ArgType.OPT_STR},
    "cancel_drain": {"request_id": ArgType.ID},
    "off": {"how": ArgType.STR},
    "qedit": {"ids": ArgType.IDS, "owners": ArgType.STRS, "constraint": ArgType.OPT_STR,
              "attrs": ArgType.STRS, "values": ArgType.STRS, "dry_run": ArgType.BOOL},
    "tail": {"id": ArgType.ID, "stderr": ArgType.BOOL, "offset": ArgType.OPT_INT,
             "maxbytes": ArgType.POSITIVE},
    "reconfig": {"report": ArgType.BOOL},
    "restart": {"how": ArgType.STR},
}
_INT_RANGE = range(-(1 << 63), 1 << 63)      # what SQLite and the ClassAd engine hold


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in _INT_RANGE


_ARG_CHECKS: dict[ArgType, Callable[[Any], bool]] = {
    ArgType.STR: lambda v: isinstance(v, str),
    ArgType.OPT_STR: lambda v: v is None or isinstance(v, str),
    ArgType.POSITIVE: lambda v: _is_int(v) and v >= 1,
    ArgType.OPT_INT: lambda v: v is None or _is_int(v),
    ArgType.COUNT: lambda v: _is_int(v) and v >= 0,
    ArgType.BOOL: lambda v: isinstance(v, bool),
    ArgType.STRS: lambda v: _strings(v),
    ArgType.NAMES: lambda v: _strings(v) and len(v) <= MAX_NAMES,
    ArgType.IDS: lambda v: isinstance(v, list) and all(
        isinstance(x, str) or _is_int(x) for x in v),
    ArgType.ID: lambda v: v is None or isinstance(v, str) or _is_int(v),
}


@dataclass(frozen=True)
class Peer:
    """Who is on the other end, as the kernel says (SO_PEERCRED), and which of the
    control socket's connections it is (``conn``: what lasts as long as a connection,
    a submission in parts, is tied to it)."""

    pid: int
    uid: int
    gid: int
    conn: int = 0

    @property
    def user(self) -> str:
        try:
            return pwd.getpwuid(self.uid).pw_name
        except KeyError:
            return str(self.uid)


@dataclass(frozen=True)
class Request:
    command: str
    args: dict[str, Any] = field(default_factory=dict)
    stream: bool = False      # the client reads a streamed reply (module docstring)


@dataclass(frozen=True)
class BadRequest:
    """A line that is not a request: answered with an error, the connection kept."""

    reason: str


class RequestReader:
    """Splits a byte stream into requests, one at a time, so that a connection's
    requests are parsed only as fast as their answers are sent. A line longer than
    the limit is refused and the rest of it skipped, so a client cannot make the
    daemon hold it all."""

    def __init__(self, limit: int = MAX_REQUEST) -> None:
        self._buf = bytearray()
        self._scan = 0          # no newline before here: each byte is searched once
        self._skipping = False
        self._limit = limit

    @property
    def held(self) -> int:
        """Bytes received and not yet taken as requests."""
        return len(self._buf)

    def push(self, data: bytes) -> None:
        self._buf += data

    def pop(self) -> Request | BadRequest | None:
        """The next request, or None until more bytes come."""
        while True:
            nl = self._buf.find(b"\n", self._scan)
            if nl < 0:
                if self._skipping:
                    self._buf.clear()
                    self._scan = 0
                    return None
                self._scan = len(self._buf)
                if self._scan > self._limit:
                    self._skipping = True
                    self._buf.clear()
                    self._scan = 0
                    return BadRequest(f"request longer than {self._limit} bytes")
                return None
            line = bytes(self._buf[:nl])
            del self._buf[:nl + 1]
            self._scan = 0
            if self._skipping:
                self._skipping = False
                continue
            if len(line) > self._limit:
                return BadRequest(f"request longer than {self._limit} bytes")
            if line.strip():
                return parse_request(line)

    def feed(self, data: bytes) -> list[Request | BadRequest]:
        """Every request ``data`` completes."""
        self.push(data)
        out: list[Request | BadRequest] = []
        while (req := self.pop()) is not None:
            out.append(req)
        return out


def parse_request(line: bytes) -> Request | BadRequest:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return BadRequest("request is not UTF-8 text")
    try:
        obj = loads_json(text)
    except ValueError as exc:      # also the decoder's limit on an integer's digits
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return BadRequest(f"request is not JSON: {reason}")
    if not isinstance(obj, dict):
        return BadRequest("a request is a JSON object")
    command = obj.get("command")
    if not isinstance(command, str) or command not in COMMANDS:
        shown = command if isinstance(command, str) else type(command).__name__
        return BadRequest(f"unknown command {shown[:80]!r}")
    args = obj.get("args", {})
    if not isinstance(args, dict):
        return BadRequest(f"{command}: 'args' must be a JSON object")
    for name, kind in ARGS.get(command, {}).items():
        if name in args and not _ARG_CHECKS[kind](args[name]):
            return BadRequest(f"{command}: argument {name!r} must be {kind.value}")
    return Request(command, args, obj.get("stream") is True)


def encode_reply(ok: bool, result: Any = None, error: str | None = None) -> bytes:
    body: dict[str, Any] = {"ok": ok}
    if ok:
        body["result"] = result
    else:
        body["error"] = error or "request failed"
    return json.dumps(body, default=str).encode() + b"\n"


@dataclass(frozen=True)
class Streamed:
    """A result with a long list: ``head`` plus the list ``key``, whose ``items`` are
    produced (and may first be looked up) only as the reply is sent. An item that is
    :data:`PAUSE` is no item: it ends the piece being produced, so that the loop
    serves others before more items are looked up (a search that finds little)."""

    head: dict[str, Any]
    key: str
    items: Iterable[Any]


class _Pause:
    def __repr__(self) -> str:
        return "PAUSE"


PAUSE: Any = _Pause()

# What a handler raises for a request it cannot answer; anything else is a bug.
ANSWER_ERRORS = (CondorpyError, ValueError, TypeError)


class ReplyBroken(CondorpyError):
    """A one-line reply failed part-way: the connection must be closed."""


class ReplyProducer:
    """The bytes of one reply, in pieces of about ``piece`` bytes (:meth:`next`)."""

    def __init__(self, command: str, result: Any = None, stream: bool = False, *,
                 error: str | None = None, piece: int = STREAM_PIECE) -> None:
        self.command = command
        self._piece = piece
        self._stream = stream and isinstance(result, Streamed)
        self._started = False
        self._gen: Iterator[bytes] = (
            iter((encode_reply(False, error=error),)) if error is not None
            else self._pieces(result))

    def next(self) -> bytes | None:
        """The next piece; None once the reply is complete. A failure in producing
        it ends a stream with an error line, a one-line reply that has not begun with
        an error reply, and raises :class:`ReplyBroken` otherwise."""
        try:
            out = next(self._gen, None)
        except ANSWER_ERRORS as exc:
            self._gen = iter(())
            error = encode_reply(False, error=f"{self.command}: {exc}")
            if self._stream or not self._started:
                return error
            raise ReplyBroken(f"{self.command}: {exc}") from None
        self._started = self._started or out is not None
        return out

    def _pieces(self, result: Any) -> Iterator[bytes]:
        if not isinstance(result, Streamed):
            yield encode_reply(True, result)
            return
        items = iter(result.items)
        # the first item is looked up before a byte is sent, so a lookup that fails
        # at once (a bad constraint) is a plain error reply
        first = next(items, _END)
        head = {k: v for k, v in result.head.items() if k != result.key}
        if self._stream:
            yield _line({"ok": True, "result": head, "stream": result.key})
        else:
            head[result.key] = []
            text = json.dumps({"ok": True, "result": head}, default=str)
            # ...the empty list is the last thing written: open it again
            yield text[:-len("]}}")].encode()
        count = 0
        batch: list[str] = []
        size = 0
        pending = items if first is _END else _chain(first, items)
        for item in pending:
            if item is PAUSE:
                if batch:
                    yield self._batch(batch, count == len(batch))
                    batch, size = [], 0
                else:
                    yield b""           # nothing to send yet: the loop's turn ends
                continue
            text = json.dumps(item, default=str)
            batch.append(text)
            size += len(text) + 2
            count += 1
            if size >= self._piece:
                yield self._batch(batch, count == len(batch))
                batch, size = [], 0
        if batch:
            yield self._batch(batch, count == len(batch))
        if self._stream:
            yield _line({"ok": True, "end": count})
        else:
            yield b"]}}\n"

    def _batch(self, batch: list[str], first: bool) -> bytes:
        body = ", ".join(batch)
        if self._stream:
            return f"[{body}]\n".encode()
        return (body if first else ", " + body).encode()


_END = object()


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, default=str).encode() + b"\n"


def is_admin(peer: Peer, daemon_uid: int, admin_group: str | None) -> bool:
    if peer.uid in (0, daemon_uid):
        return True
    if not admin_group:
        return False
    try:
        group = grp.getgrnam(admin_group)
    except KeyError:
        return False
    if peer.gid == group.gr_gid:
        return True
    return peer.user in group.gr_mem


def authorize(request: Request, peer: Peer, daemon_uid: int,
              admin_group: str | None) -> str | None:
    """None when ``peer`` may make this request; otherwise why not."""
    access = COMMANDS[request.command]
    if access is Access.ADMIN and not is_admin(peer, daemon_uid, admin_group):
        return (f"{request.command}: permission denied: user {peer.user} is not an "
                f"administrator of this execution point")
    return None
