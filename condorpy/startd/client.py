"""Talking to the running daemon: one request over the control socket, one answer
(:func:`call`), or several in turn over one connection (:class:`Connection`), or one
whose long list is read as it comes (:func:`stream`).

The client asks for a streamed reply (see :mod:`condorpy.startd.control`): a long
list comes in lines of bounded size, so a queue or history of any length can be read,
while each line, and a plain one-line reply, stays under :data:`MAX_REPLY_LINE`.
"""

from __future__ import annotations

import json
import socket
import struct
from pathlib import Path
from typing import Any, Generator, Iterator

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
        replies = self.exchange(command, args or {})
        try:
            head, key = next(replies)
            if key is None:
                return head
            items: list[Any] = []
            for part in replies:
                items.extend(part)
            head[key] = items
            return head
        finally:
            replies.close()

    def exchange(self, command: str, args: dict[str, Any]
                 ) -> Generator[Any, None, None]:
        """Send one request; first (result, its stream key or None), then each part of
        a streamed list as it arrives, the end line checked. Errors are one clear
        line."""
        path, timeout = self.path, self.timeout
        try:
            self.sock.sendall(encode_request(command, args, stream=True))
        except socket.timeout:
            raise DaemonUnreachable(f"condorpy startd at {path} did not take the request "
                                    f"within {timeout:g} s") from None
        except OSError:
            pass    # it may have answered (a refusal) and closed: its answer says why
        lines = self.lines
        first = lines.reply()
        key = first.get("stream")
        if key is None:
            yield _result(first), None
            return
        head = _result(first)
        if not isinstance(key, str) or not isinstance(head, dict):
            raise lines.malformed()
        yield head, key
        count = 0
        while True:
            line = lines.next()
            if isinstance(line, list):
                count += len(line)
                yield line
                continue
            if not isinstance(line, dict) or "ok" not in line:
                raise lines.malformed()
            _result(line)
            if line.get("end") != count:
                raise lines.malformed()
            return


class Streaming:
    """A streamed reply read as it comes: :attr:`head` (the result without its list),
    then :meth:`parts`, each the next items of the list. The connection closes at
    :meth:`close` (also as a context manager)."""

    def __init__(self, conn: Connection, command: str, args: dict[str, Any],
                 key: str) -> None:
        self._conn = conn
        self._replies = conn.exchange(command, args)
        try:
            head, streamed = next(self._replies)
        except BaseException:
            conn.close()
            raise
        self._whole: list[Any] | None = None
        if streamed is None:
            # a one-line answer (a daemon that streams no list): its list is one part
            if not isinstance(head, dict):
                conn.close()
                raise conn.lines.malformed()
            whole = head.pop(key, [])
            self._whole = whole if isinstance(whole, list) else []
        self.head: dict[str, Any] = head

    def parts(self) -> Iterator[list[Any]]:
        if self._whole is not None:
            yield self._whole
            return
        yield from self._replies

    def close(self) -> None:
        self._replies.close()
        self._conn.close()

    def __enter__(self) -> Streaming:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stream(path: Path, command: str, args: dict[str, Any] | None = None, *,
           key: str = "ads", timeout: float = 60.0) -> Streaming:
    """Send one request whose result has a long list ``key`` and read its answer as it
    comes (see :class:`Streaming`), so that a caller may show the first items before
    the last arrive and never hold them all."""
    return Streaming(Connection(path, timeout), command, args or {}, key)


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
