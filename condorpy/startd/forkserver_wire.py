"""The fork server's wire: one JSON object per line in each direction, strictly request
then reply, between the startd (:class:`condorpy.startd.forkserver.ForkServer`) and its
fork server. Pure: the records, their encoding and decoding, and :class:`LineBuffer`,
tested on their own; the processes are :mod:`.forkserver`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from condorpy.errors import CondorpyError, RequestError, StartdError
from condorpy.inputs import loads_json

PROTOCOL_VERSION = 1
# Job ads are a few KB; the limit only stops a runaway peer from exhausting memory.
MAX_MESSAGE = 16 << 20


# --- records ------------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchRequest:
    """Start one job under a starter.

    ``job_id`` names the job in every error; ``knobs`` is the whole configuration the
    starter obeys (knob -> text, read as the STARTER subsystem; the server's own
    environment does not count); ``cgroup``, when given, is the absolute cgroup v2
    directory the starter moves into before it runs the job (e.g.
    ``<service>/starters.leaf``), created when missing. ``log_path`` is the file the
    starter's output is appended to (its slot's StarterLog; empty: a file of its own
    in ``execute``), moved aside first when it has ``log_max`` bytes or more."""

    job_id: str
    job_ad: str
    slot_ad: str
    execute: str
    result_path: str
    knobs: Mapping[str, str] = field(default_factory=dict)
    cgroup: str | None = None
    log_path: str = ""
    log_max: int = 0
    hold: bool = False


@dataclass(frozen=True)
class Release:
    """Let the held starter ``pid`` run its job (the startd has recorded it)."""

    pid: int


@dataclass(frozen=True)
class Launched:
    """A running starter. ``start_ticks`` (field 22 of /proc/<pid>/stat) and
    ``boot_id`` tell it apart from a later process that reuses its pid."""

    job_id: str
    pid: int
    start_ticks: int
    boot_id: str
    socket_path: str
    result_path: str
    log_path: str


@dataclass(frozen=True)
class LaunchFailed:
    job_id: str | None
    error: str


@dataclass(frozen=True)
class Ready:
    pid: int
    version: int


@dataclass(frozen=True)
class Released:
    pid: int


Reply = Union[Launched, LaunchFailed, Ready, Released]


# --- sans-I/O encoding ----------------------------------------------------------------

def _line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), sort_keys=True).encode() + b"\n"


def _object(line: bytes, what: str) -> dict[str, Any]:
    try:
        msg = loads_json(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, CondorpyError) as exc:
        raise RequestError(f"malformed {what}: {exc}") from None
    if not isinstance(msg, dict):
        raise RequestError(f"malformed {what}: not a JSON object")
    return msg


def _text(msg: Mapping[str, Any], key: str, what: str, *, optional: bool = False) -> Any:
    value = msg.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise RequestError(f"{what}: {key!r} must be a string")
    return value


def encode_request(request: LaunchRequest) -> bytes:
    return _line({"op": "launch", "job_id": request.job_id, "job_ad": request.job_ad,
                  "slot_ad": request.slot_ad, "execute": request.execute,
                  "result_path": request.result_path, "knobs": dict(request.knobs),
                  "cgroup": request.cgroup, "log_path": request.log_path,
                  "log_max": request.log_max, "hold": request.hold})


def encode_release(release: Release) -> bytes:
    return _line({"op": "release", "pid": release.pid})


def request_job_id(line: bytes) -> str | None:
    """The job a (possibly malformed) request is about, to name it in the reply."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    job = msg.get("job_id") if isinstance(msg, dict) else None
    return job if isinstance(job, str) else None


def decode_request(line: bytes) -> LaunchRequest | Release:
    """One request line; :class:`RequestError` saying what is wrong with it."""
    msg = _object(line, "request")
    if msg.get("op") == "release":
        pid = msg.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise RequestError("release request: 'pid' must be a process id")
        return Release(pid)
    if msg.get("op") != "launch":
        raise RequestError(f"unknown request op {msg.get('op')!r} "
                           f"(expected 'launch' or 'release')")
    job_id = _text(msg, "job_id", "launch request")
    what = f"launch request for job {job_id}"
    knobs = msg.get("knobs", {})
    if not isinstance(knobs, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in knobs.items()):
        raise RequestError(f"{what}: 'knobs' must map knob names to text")
    log_max = msg.get("log_max", 0)
    if not isinstance(log_max, int) or isinstance(log_max, bool) or log_max < 0:
        raise RequestError(f"{what}: 'log_max' must be a whole number of bytes")
    hold = msg.get("hold", False)
    if not isinstance(hold, bool):
        raise RequestError(f"{what}: 'hold' must be true or false")
    return LaunchRequest(job_id=job_id, job_ad=_text(msg, "job_ad", what),
                         slot_ad=_text(msg, "slot_ad", what),
                         execute=_text(msg, "execute", what),
                         result_path=_text(msg, "result_path", what), knobs=knobs,
                         cgroup=_text(msg, "cgroup", what, optional=True),
                         log_path=_text(msg, "log_path", what, optional=True) or "",
                         log_max=log_max, hold=hold)


def encode_reply(reply: Reply) -> bytes:
    if isinstance(reply, Ready):
        return _line({"event": "ready", "pid": reply.pid, "version": reply.version})
    if isinstance(reply, LaunchFailed):
        return _line({"ok": False, "job": reply.job_id, "error": reply.error})
    if isinstance(reply, Released):
        return _line({"ok": True, "released": reply.pid})
    return _line({"ok": True, "job": reply.job_id, "pid": reply.pid,
                  "start_ticks": reply.start_ticks, "boot_id": reply.boot_id,
                  "socket_path": reply.socket_path, "result_path": reply.result_path,
                  "log_path": reply.log_path})


def decode_reply(line: bytes) -> Reply:
    """One reply line; :class:`StartdError` when it is not one the server sends."""
    try:
        msg = _object(line, "reply from the fork server")
        if msg.get("event") == "ready":
            pid, version = msg.get("pid"), msg.get("version")
            if not isinstance(pid, int) or not isinstance(version, int):
                raise RequestError("malformed ready message from the fork server")
            return Ready(pid, version)
        job = msg.get("job")
        if job is not None and not isinstance(job, str):
            raise RequestError("malformed reply from the fork server: bad 'job'")
        if msg.get("ok") is False:
            return LaunchFailed(job, _text(msg, "error", "fork server reply"))
        if msg.get("ok") is True and "released" in msg:
            pid = msg["released"]
            if not isinstance(pid, int) or isinstance(pid, bool):
                raise RequestError("malformed reply from the fork server: bad 'released'")
            return Released(pid)
        if msg.get("ok") is not True or job is None:
            raise RequestError("malformed reply from the fork server")
        ints = [msg.get(k) for k in ("pid", "start_ticks")]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            raise RequestError("malformed reply from the fork server: bad pid")
        what = "fork server reply"
        return Launched(job, msg["pid"], msg["start_ticks"], _text(msg, "boot_id", what),
                        _text(msg, "socket_path", what), _text(msg, "result_path", what),
                        _text(msg, "log_path", what))
    except RequestError as exc:
        raise StartdError(str(exc)) from None


class LineBuffer:
    """Bytes in, complete lines out. A line longer than ``limit`` is dropped whole and
    reported as ``None`` in its place, so one bad request cannot wedge the stream."""

    def __init__(self, limit: int = MAX_MESSAGE) -> None:
        self.limit = limit
        self._data = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | None]:
        self._data += data
        out: list[bytes | None] = []
        while True:
            end = self._data.find(b"\n")
            if end < 0:
                if len(self._data) > self.limit:
                    if not self._skipping:
                        out.append(None)
                    self._skipping = True
                    self._data.clear()
                return out
            line = bytes(self._data[:end])
            del self._data[:end + 1]
            if self._skipping:
                self._skipping = False
                continue
            if len(line) > self.limit:
                out.append(None)
            elif line.strip():
                out.append(line)
