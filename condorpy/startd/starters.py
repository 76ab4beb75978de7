"""The daemon's handles on its starters: launching one, talking to it over its control
socket, and recognising it again after a restart.

A starter is a separate process in its own session (see :mod:`condorpy.starter`), so
the daemon learns of its job's end from the starter's socket (``done`` with the final
ad) or, when the daemon was away, from the result file the starter leaves beside its
sandbox; never from ``waitpid``.
"""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from condorpy.errors import StartdError
from condorpy.starter.protocol import Connection, encode


@dataclass(frozen=True)
class LaunchRequest:
    job_id: str
    job_ad: str                    # old-format text
    slot_ad: str                   # old-format text
    execute: str                   # the EXECUTE directory
    result_path: str               # where the starter writes the final ad
    knobs: dict[str, str] = field(default_factory=dict)   # STARTER configuration


@dataclass(frozen=True)
class Launched:
    pid: int
    start_ticks: int               # /proc/<pid>/stat starttime: a reused pid differs
    boot_id: str
    socket_path: str
    result_path: str


class Launcher(Protocol):
    def launch(self, request: LaunchRequest) -> Launched: ...
    def close(self) -> None: ...


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks after boot); None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses: count from the last ')'
    rest = stat[stat.rfind(")") + 2:].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def same_process(pid: int, start_ticks: int, boot: str) -> bool:
    """Whether ``pid`` is still the process recorded with that start time and boot."""
    if boot and boot != boot_id():
        return False
    return process_start_ticks(pid) == start_ticks


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
