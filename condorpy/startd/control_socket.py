"""The daemon's control socket: a Unix stream socket in the event loop.

I/O only. Each connection's peer is taken from the kernel (``SO_PEERCRED``) when it is
accepted; requests are framed and validated by :mod:`condorpy.startd.control`,
authorised there by those credentials, and handed to a dispatcher that answers them
(:class:`condorpy.startd.commands.Commands`). A malformed or refused request gets an
error reply and the connection stays usable.
"""

from __future__ import annotations

import logging
import os
import selectors
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from condorpy.errors import CondorpyError, StartdError
from condorpy.startd import control

log = logging.getLogger("condorpy.startd")

Dispatch = Callable[[str, dict[str, Any], control.Peer], Any]


@dataclass
class ControlConn:
    sock: socket.socket
    peer: control.Peer
    reader: control.RequestReader = field(default_factory=control.RequestReader)
    out: bytearray = field(default_factory=bytearray)


class ControlSocket:
    """Listens on ``path`` and registers itself and its connections with ``sel`` under
    the event kinds ``"listen"`` and ``"control"``."""

    def __init__(self, path: Path, sel: selectors.BaseSelector, dispatch: Dispatch,
                 daemon_uid: int, admin_group: Callable[[], str | None]) -> None:
        self.path = path
        self.sel = sel
        self.dispatch = dispatch
        self.daemon_uid = daemon_uid
        self.admin_group = admin_group
        self.conns: dict[int, ControlConn] = {}
        # A live daemon owns the job store's lock already; a socket left here is stale.
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.bind(str(path))
        except OSError as exc:
            sock.close()
            raise StartdError(f"cannot listen on {path}: {exc.strerror}") from None
        # Anyone may connect: every request is authorised by the peer's credentials.
        os.chmod(path, 0o666)
        sock.listen(64)
        sock.setblocking(False)
        self.listener = sock
        sel.register(sock, selectors.EVENT_READ, ("listen", None))

    def accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                struct.calcsize("3i"))
        pid, uid, gid = struct.unpack("3i", creds)
        sock.setblocking(False)
        conn = ControlConn(sock, control.Peer(pid, uid, gid))
        self.conns[sock.fileno()] = conn
        self.sel.register(sock, selectors.EVENT_READ, ("control", conn))

    def io(self, conn: ControlConn, mask: int) -> None:
        if mask & selectors.EVENT_READ:
            try:
                data = conn.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:
                data = b""
            if data == b"":
                self._close(conn)
                return
            if data:
                for req in conn.reader.feed(data):
                    conn.out += self._answer(req, conn.peer)
        if conn.out:
            try:
                sent = conn.sock.send(conn.out)
                del conn.out[:sent]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._close(conn)
                return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
        try:
            self.sel.modify(conn.sock, events, ("control", conn))
        except (KeyError, ValueError):
            pass

    def _answer(self, req: control.Request | control.BadRequest, peer: control.Peer) -> bytes:
        if isinstance(req, control.BadRequest):
            log.warning("bad request from pid %d (uid %d): %s", peer.pid, peer.uid, req.reason)
            return control.encode_reply(False, error=req.reason)
        why = control.authorize(req, peer, self.daemon_uid, self.admin_group())
        if why is not None:
            log.warning("refused %s from %s (pid %d): %s", req.command, peer.user,
                        peer.pid, why)
            return control.encode_reply(False, error=why)
        try:
            return control.encode_reply(True, self.dispatch(req.command, req.args, peer))
        except (CondorpyError, ValueError, TypeError) as exc:
            return control.encode_reply(False, error=f"{req.command}: {exc}")

    def _close(self, conn: ControlConn) -> None:
        try:
            self.sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        self.conns.pop(conn.sock.fileno(), None)
        conn.sock.close()

    def close(self) -> None:
        for conn in list(self.conns.values()):
            self._close(conn)
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()
        try:
            self.path.unlink()
        except OSError:
            pass
