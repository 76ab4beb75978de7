"""The daemon's control protocol: one JSON object per line over a Unix stream socket.

Sans I/O: :class:`RequestReader` turns received bytes into validated :class:`Request`
records (or :class:`BadRequest` for what cannot be one), :func:`encode_reply` gives the
bytes of an answer. Every request is authorised by the peer's credentials
(``SO_PEERCRED``), never by anything the request says about its sender:

- anyone may read (``q``, ``history``, ``status``, ``who``, ``config_val``, ``ping``);
- users submit jobs as themselves and manage their own jobs;
- root, the daemon's own user, and members of ``CONDORPY_ADMIN_GROUP`` may also manage
  every job and vacate, drain, turn off and on, and reconfigure.
"""

from __future__ import annotations

import grp
import json
import pwd
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from condorpy.inputs import loads_json

MAX_REQUEST = 16 * 1024 * 1024       # a submission of thousands of jobs fits
PROTOCOL_VERSION = 1


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
}


@dataclass(frozen=True)
class Peer:
    """Who is on the other end, as the kernel says (SO_PEERCRED)."""

    pid: int
    uid: int
    gid: int

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


@dataclass(frozen=True)
class BadRequest:
    """A line that is not a request: answered with an error, the connection kept."""

    reason: str


class RequestReader:
    """Splits a byte stream into requests; a line longer than MAX_REQUEST is refused
    and the rest of it skipped, so a client cannot make the daemon hold it all."""

    def __init__(self, limit: int = MAX_REQUEST) -> None:
        self._buf = bytearray()
        self._skipping = False
        self._limit = limit

    def feed(self, data: bytes) -> list[Request | BadRequest]:
        out: list[Request | BadRequest] = []
        self._buf += data
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > self._limit:
                    if not self._skipping:
                        out.append(BadRequest(f"request longer than {self._limit} bytes"))
                    self._skipping = True
                    self._buf.clear()
                return out
            line = bytes(self._buf[:nl])
            del self._buf[:nl + 1]
            if self._skipping:
                self._skipping = False
                continue
            if line.strip():
                out.append(parse_request(line))


def parse_request(line: bytes) -> Request | BadRequest:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return BadRequest("request is not UTF-8 text")
    try:
        obj = loads_json(text)
    except json.JSONDecodeError as exc:
        return BadRequest(f"request is not JSON: {exc.msg}")
    if not isinstance(obj, dict):
        return BadRequest("a request is a JSON object")
    command = obj.get("command")
    if not isinstance(command, str) or command not in COMMANDS:
        return BadRequest(f"unknown command {command!r}")
    args = obj.get("args", {})
    if not isinstance(args, dict):
        return BadRequest(f"{command}: 'args' must be a JSON object")
    return Request(command, args)


def encode_request(command: str, args: dict[str, Any]) -> bytes:
    return json.dumps({"command": command, "args": args}).encode() + b"\n"


def encode_reply(ok: bool, result: Any = None, error: str | None = None) -> bytes:
    body: dict[str, Any] = {"ok": ok}
    if ok:
        body["result"] = result
    else:
        body["error"] = error or "request failed"
    return json.dumps(body, default=str).encode() + b"\n"


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
