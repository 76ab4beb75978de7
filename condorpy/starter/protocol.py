"""The starter's control socket: line-delimited JSON over a Unix stream socket.

The socket lives in the execute directory (``starter_<pid>.sock``), so a restarted
startd finds its running starters by listing that directory and reconnects. Every new
connection is greeted with the current state; see docs/starter.md for the messages.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from condorpy.inputs import loads_json

PROTOCOL_VERSION = 1
MAX_LINE = 65536


class Command(Enum):
    SUSPEND = "suspend"
    CONTINUE = "continue"
    SOFT_KILL = "soft_kill"
    HARD_KILL = "hard_kill"
    STATUS = "status"


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), sort_keys=True).encode() + b"\n"


@dataclass
class Connection:
    sock: socket.socket
    buffer: bytes = b""
    closed: bool = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self) -> list[dict[str, Any]]:
        """Complete messages now available; malformed lines become error messages."""
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return []
        self.buffer += data
        out: list[dict[str, Any]] = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                msg = loads_json(line.decode("utf-8"))
                if not isinstance(msg, dict):
                    raise ValueError("not an object")
                out.append(msg)
            except ValueError as exc:
                out.append({"cmd": None, "error": f"malformed message: {exc}"})
        if len(self.buffer) > MAX_LINE:
            self.buffer = b""
            out.append({"cmd": None, "error": "message too long"})
        return out

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.sock.setblocking(True)
            self.sock.settimeout(1.0)     # a stuck peer must not stall the job's starter
            self.sock.sendall(encode(message))
        except OSError:
            self.closed = True
        finally:
            if not self.closed:
                self.sock.setblocking(False)

    def close(self) -> None:
        self.closed = True
        self.sock.close()


@dataclass
class ControlServer:
    path: str
    sock: socket.socket = field(init=False)
    connections: list[Connection] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        old = os.umask(0o077)
        try:
            self.sock.bind(self.path)
        finally:
            os.umask(old)
        self.sock.listen(8)
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def accept(self) -> Connection | None:
        try:
            conn, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return None
        conn.setblocking(False)
        c = Connection(conn)
        self.connections.append(c)
        return c

    def broadcast(self, message: dict[str, Any]) -> None:
        for c in self.connections:
            c.send(message)
        self.connections = [c for c in self.connections if not c.closed]

    def close(self) -> None:
        for c in self.connections:
            c.close()
        self.connections = []
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class StarterClient:
    """The startd's (and the tests') side: send commands, read updates."""

    def __init__(self, path: str, *, timeout_s: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.sock.settimeout(timeout_s)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")

    def send(self, command: Command) -> None:
        self.sock.sendall(encode({"cmd": command.value}))

    def read(self) -> dict[str, Any] | None:
        line = self.file.readline()
        if not line:
            return None
        msg: dict[str, Any] = json.loads(line)
        return msg

    def wait_for(self, key: str, value: object) -> dict[str, Any]:
        while True:
            msg = self.read()
            if msg is None:
                raise EOFError(f"starter closed the connection before {key}={value}")
            if msg.get(key) == value:
                return msg

    def close(self) -> None:
        self.file.close()
        self.sock.close()
