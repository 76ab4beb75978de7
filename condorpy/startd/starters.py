"""The daemon's link to a running starter's control socket.

Starters are launched by the fork server (:mod:`condorpy.startd.forkserver`) as
processes of their own session, so the daemon learns of a job's end from the
starter's socket (``done`` with the final ad) or, when the daemon was away, from the
result file the starter leaves; never from ``waitpid``.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any

from condorpy.errors import StartdError
from condorpy.starter.protocol import Connection, encode


class StarterLink:
    """A connection to one starter's control socket, for the daemon's event loop."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn: Connection | None = None

    def connect(self) -> bool:
        """Try once; False while the starter has not yet started listening."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.EAGAIN):
                return False
            raise StartdError(f"cannot connect to the starter at {self.path}: "
                              f"{exc.strerror}") from None
        sock.setblocking(False)
        self.conn = Connection(sock)
        return True

    def fileno(self) -> int:
        assert self.conn is not None
        return self.conn.fileno()

    def send(self, cmd: str) -> bool:
        if self.conn is None or self.conn.closed:
            return False
        try:
            self.conn.sock.sendall(encode({"cmd": cmd}))
            return True
        except OSError:
            return False

    def receive(self) -> list[dict[str, Any]]:
        if self.conn is None:
            return []
        return self.conn.receive()

    @property
    def closed(self) -> bool:
        return self.conn is None or self.conn.closed

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.sock.close()
            except OSError:
                pass
            self.conn.closed = True


def kill_quietly(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass
