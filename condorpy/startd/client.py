"""Talking to the running daemon: one request over the control socket, one answer
(:func:`call`), or several in turn over one connection (:class:`Connection`).

The client asks for a streamed reply (see :mod:`condorpy.startd.control`): a long
list comes in lines of bounded size, so a queue or history of any length can be read,
while each line, and a plain one-line reply, stays under :data:`MAX_REPLY_LINE`.
"""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path
from typing import Any

from condorpy.errors import StartdError
from condorpy.inputs import loads_json
from condorpy.startd.wire import MAX_REQUEST, encode_request

MAX_REPLY_LINE = 4 * MAX_REQUEST


class DaemonUnreachable(StartdError):
    pass


class RequestRefused(StartdError):
    """The daemon answered with an error."""


def call(path: Path, command: str, args: dict[str, Any] | None = None,
         timeout: float = 60.0) -> Any:
    """Send one request and return its result; errors are one clear line."""
    with Connection(path, timeout) as conn:
        return conn.call(command, args)


class Connection:
    """One connection for several requests in turn: what the daemon ties to a
    connection (a submission in parts) ends with it."""

    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            _connect(self.sock, path, timeout)
            self.sock.settimeout(timeout)
        except BaseException:
            self.sock.close()
            raise
        self.lines = _Lines(self.sock, path, timeout)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def call(self, command: str, args: dict[str, Any] | None = None) -> Any:
        """Send one request on this connection and return its result."""
        path, timeout = self.path, self.timeout
        try:
            self.sock.sendall(encode_request(command, args or {}, stream=True))
        except socket.timeout:
            raise DaemonUnreachable(f"condorpy startd at {path} did not take the request "
                                    f"within {timeout:g} s") from None
        except OSError:
            pass    # it may have answered (a refusal) and closed: its answer says why
        lines = self.lines
        first = lines.reply()
        key = first.get("stream")
        if key is None:
            return _result(first)
        head = _result(first)
        if not isinstance(key, str) or not isinstance(head, dict):
            raise lines.malformed()
        items: list[Any] = []
        while True:
            line = lines.next()
            if isinstance(line, list):
                items.extend(line)
                continue
            if not isinstance(line, dict) or "ok" not in line:
                raise lines.malformed()
            _result(line)
            if line.get("end") != len(items):
                raise lines.malformed()
            head[key] = items
            return head


def _connect(sock: socket.socket, path: Path, timeout: float) -> None:
    # A blocking connect waits while the daemon's backlog is full (a non-blocking one
    # fails at once with EAGAIN); SO_SNDTIMEO bounds the wait.
    secs = int(timeout)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                    struct.pack("ll", secs, int((timeout - secs) * 1e6)))
    try:
        sock.connect(str(path))
    except FileNotFoundError:
        raise DaemonUnreachable(f"condorpy startd is not running (no control socket "
                                f"at {path})") from None
    except ConnectionRefusedError:
        raise DaemonUnreachable(f"condorpy startd is not running (nothing listens on "
                                f"{path})") from None
    except PermissionError:
        raise DaemonUnreachable(f"cannot reach condorpy startd at {path}: permission "
                                f"denied") from None
    except (BlockingIOError, socket.timeout):
        raise DaemonUnreachable(f"condorpy startd at {path} did not accept the connection "
                                f"within {timeout:g} s (it is busy or out of "
                                f"descriptors)") from None
    except OSError as exc:
        raise DaemonUnreachable(f"cannot reach condorpy startd at {path}: "
                                f"{exc.strerror or exc}") from None


def _result(reply: dict[str, Any]) -> Any:
    if not reply["ok"]:
        raise RequestRefused(str(reply.get("error", "request failed")))
    return reply.get("result")


class _Lines:
    """The reply's JSON lines, each bounded."""

    def __init__(self, sock: socket.socket, path: Path, timeout: float) -> None:
        self.sock = sock
        self.path = path
        self.timeout = timeout
        self.buf = bytearray()
        self.scan = 0

    def malformed(self) -> DaemonUnreachable:
        return DaemonUnreachable(f"condorpy startd at {self.path} sent a malformed reply")

    def reply(self) -> dict[str, Any]:
        obj = self.next()
        if not isinstance(obj, dict) or "ok" not in obj:
            raise self.malformed()
        return obj

    def next(self) -> Any:
        while True:
            nl = self.buf.find(b"\n", self.scan)
            if nl >= 0:
                break
            self.scan = len(self.buf)
            if self.scan > MAX_REPLY_LINE:
                raise DaemonUnreachable(f"condorpy startd at {self.path} sent an oversized "
                                        f"reply")
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                raise DaemonUnreachable(f"condorpy startd at {self.path} did not answer "
                                        f"within {self.timeout:g} s") from None
            except OSError:
                chunk = b""
            if not chunk:
                raise DaemonUnreachable(f"condorpy startd at {self.path} closed the "
                                        f"connection")
            self.buf += chunk
        line = bytes(self.buf[:nl])
        del self.buf[:nl + 1]
        self.scan = 0
        try:
            return loads_json(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self.malformed() from None
