"""The daemon's control socket: a Unix stream socket in the event loop.

I/O only. Each connection's peer is taken from the kernel (``SO_PEERCRED``) when it is
accepted; requests are framed and validated by :mod:`condorpy.startd.control`,
authorised there by those credentials, and handed to a dispatcher that answers them
(:class:`condorpy.startd.commands.Commands`). A malformed or refused request gets an
error reply and the connection stays usable.

No local user can stop the socket from serving the others:

- a connection is read only while less than :data:`control.MAX_UNSENT` of its replies
  wait to be sent, and a reply is produced piece by piece as the socket drains, so a
  client that never reads holds at most that much (and one reply's next piece);
- the bytes of unfinished requests held across all connections are capped
  (:data:`control.MAX_HELD_TOTAL`); past it, the user holding the most loses its
  largest connection, with an error line;
- each user may hold ``CONDORPY_CONTROL_MAX_CONNECTIONS_PER_USER`` connections at once
  (administrators are not limited); one more is answered with an error line and
  closed;
- when accept() fails for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
  ENOMEM) the listener is left alone for a growing interval, or until a connection
  closes, while the open connections are served; each such episode is logged once;
- a peer that resets its connection is dropped quietly; what users do wrong is logged
  at most once per user and kind every :data:`LOG_EVERY` seconds.
"""

from __future__ import annotations

import errno
import logging
import os
import selectors
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from condorpy.errors import StartdError
from condorpy.startd import control

log = logging.getLogger("condorpy.startd")

Dispatch = Callable[[str, dict[str, Any], control.Peer], Any]

RECV_SIZE = 1 << 16
# Requests of one connection answered per turn of the loop: a pipeline of costly
# requests with small answers takes turns with everyone else.
REQUESTS_PER_EVENT = 8
ACCEPTS_PER_EVENT = 8        # HTCondor's MAX_ACCEPTS_PER_CYCLE: a burst waits its turn
PAUSE_FIRST = 0.05           # seconds the listener rests after accept() ran out of fds
PAUSE_MAX = 2.0
LOG_EVERY = 10.0             # seconds between log lines about one user's one misdeed
# accept() failures that mean "not now", not "never": the daemon is out of something
_SHORTAGE = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


@dataclass(eq=False)
class ControlConn:
    sock: socket.socket
    peer: control.Peer
    limited: bool = True          # counts against the per-user limit (not an admin)
    reader: control.RequestReader = field(default_factory=control.RequestReader)
    out: bytearray = field(default_factory=bytearray)
    reply: control.ReplyProducer | None = None
    eof: bool = False             # the peer will send nothing more
    backlog: bool = False         # requests received and not yet answered
    closed: bool = False
    events: int = selectors.EVENT_READ


class _Throttle:
    """At most one log line per key every ``every`` seconds; counts the rest."""

    def __init__(self, every: float) -> None:
        self.every = every
        self._last: dict[tuple[str, int], float] = {}
        self._quiet: dict[tuple[str, int], int] = {}

    def allow(self, key: tuple[str, int], now: float) -> int | None:
        """None: stay quiet; else how many were left unlogged since the last line."""
        last = self._last.get(key)
        if last is not None and now - last < self.every:
            self._quiet[key] = self._quiet.get(key, 0) + 1
            return None
        if len(self._last) > 4096:           # forget, rather than grow without end
            self._last.clear()
            self._quiet.clear()
        self._last[key] = now
        return self._quiet.pop(key, 0)


class ControlSocket:
    """Listens on ``path`` and registers itself and its connections with ``sel`` under
    the event kinds ``"listen"`` and ``"control"``; :meth:`tick` and :meth:`next_due`
    belong in the loop's timers (the listener's rest after a shortage)."""

    def __init__(self, path: Path, sel: selectors.BaseSelector, dispatch: Dispatch,
                 daemon_uid: int, admin_group: Callable[[], str | None], *,
                 monotonic: Callable[[], float],
                 per_user: int = control.DEFAULT_MAX_CONNECTIONS_PER_USER,
                 on_close: Callable[[control.Peer], None] = lambda peer: None) -> None:
        """``on_close``: told of each connection's end, by its peer (whose ``conn``
        tells it from the others of the same process)."""
        self.path = path
        self.sel = sel
        self.dispatch = dispatch
        self.daemon_uid = daemon_uid
        self.admin_group = admin_group
        self.monotonic = monotonic
        self.per_user = per_user
        self.on_close = on_close
        self.serial = 0                              # numbers the connections
        self.conns: dict[int, ControlConn] = {}
        self.by_uid: dict[int, int] = {}             # limited connections per uid
        self.throttle = _Throttle(LOG_EVERY)
        self.paused_until: float | None = None       # the listener rests till then
        self.pause = PAUSE_FIRST
        self.shortage_since: float | None = None     # an episode of failed accepts
        # A socket left here is stale unless a daemon still answers on it: another
        # execution point on this host whose LOCK is this one's (its job store lock
        # is its own SPOOL's, so nothing else would have stopped this start)
        if _answers(path):
            raise StartdError(f"the control socket {path} is another running daemon's: "
                              f"give each execution point on this host its own LOCK "
                              f"(or CONDORPY_CONTROL_SOCKET)")
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
        # A full backlog makes a client's connect() fail (EAGAIN): let bursts queue.
        sock.listen(socket.SOMAXCONN)
        sock.setblocking(False)
        self.listener = sock
        sel.register(sock, selectors.EVENT_READ, ("listen", None))

    # ------------------------------------------------------------------ accepting
    def accept(self) -> None:
        for _ in range(ACCEPTS_PER_EVENT):
            if self.paused_until is not None or self.listener.fileno() < 0:
                return
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                self._rest(exc)
                return
            if self.shortage_since is not None:
                log.info("control socket: accepting connections again after %.1f s",
                         self.monotonic() - self.shortage_since)
                self.shortage_since = None
                self.pause = PAUSE_FIRST
            self._admit(sock)

    def _rest(self, exc: OSError) -> None:
        """accept() failed: leave the listener alone for a while (a growing one), so
        that a shortage of descriptors is not a busy loop of failures."""
        now = self.monotonic()
        if self.shortage_since is None:
            self.shortage_since = now
            what = "out of descriptors or memory" if exc.errno in _SHORTAGE else "failed"
            log.warning("control socket: accept() %s (%s) with %d connections open; "
                        "new connections wait, the open ones are served", what,
                        exc.strerror or exc, len(self.conns))
        else:
            self.pause = min(self.pause * 2, PAUSE_MAX)
        self.paused_until = now + self.pause
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass

    def next_due(self) -> float | None:
        """When the loop must call :meth:`tick` (monotonic seconds), if ever."""
        return self.paused_until

    def tick(self, now: float) -> None:
        if self.paused_until is not None and now >= self.paused_until:
            self._resume()

    def _resume(self) -> None:
        self.paused_until = None
        if self.listener.fileno() >= 0:
            self.sel.register(self.listener, selectors.EVENT_READ, ("listen", None))

    def _admit(self, sock: socket.socket) -> None:
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                    struct.calcsize("3i"))
            sock.setblocking(False)
        except OSError:
            sock.close()
            return
        pid, uid, gid = struct.unpack("3i", creds)
        self.serial += 1
        peer = control.Peer(pid, uid, gid, self.serial)
        limited = not control.is_admin(peer, self.daemon_uid, self.admin_group())
        if limited and self.by_uid.get(uid, 0) >= self.per_user:
            why = (f"too many connections from user {peer.user} (at most {self.per_user} "
                   f"at once): connection refused")
            self._log_misdeed("connections", peer, why)
            _say(sock, why)
            sock.close()
            return
        conn = ControlConn(sock, peer, limited)
        if limited:
            self.by_uid[uid] = self.by_uid.get(uid, 0) + 1
        self.conns[sock.fileno()] = conn
        self.sel.register(sock, selectors.EVENT_READ, ("control", conn))

    # ------------------------------------------------------------------ serving
    def io(self, conn: ControlConn, mask: int) -> None:
        if conn.closed:
            return
        if mask & selectors.EVENT_READ and self._reads(conn):
            try:
                data = conn.sock.recv(RECV_SIZE)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:             # reset by the peer: nothing to say
                self._close(conn)
                return
            if data == b"":
                conn.eof = True
            elif data:
                conn.reader.push(data)
                self._cap_held()
                if conn.closed:
                    return
        idle = self._work(conn)
        if conn.closed:
            return
        if conn.out:
            try:
                sent = conn.sock.send(conn.out)
                del conn.out[:sent]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._close(conn)
                return
        if conn.eof and idle and not conn.out and conn.reply is None:
            self._close(conn)
            return
        events = (selectors.EVENT_READ if self._reads(conn) else 0) | \
            (selectors.EVENT_WRITE if conn.out or conn.reply is not None or conn.backlog
             else 0)
        if events == 0:
            self._close(conn)
        elif events != conn.events:
            conn.events = events
            self.sel.modify(conn.sock, events, ("control", conn))

    @staticmethod
    def _reads(conn: ControlConn) -> bool:
        # Not while a reply is on its way or waits unsent: the client's next requests
        # stay in the kernel's buffers (and then its own), not in the daemon.
        return not (conn.eof or conn.backlog or conn.reply is not None
                    or len(conn.out) >= control.MAX_UNSENT)

    def _work(self, conn: ControlConn) -> bool:
        """Answer requests and produce replies until MAX_UNSENT bytes wait or this
        turn's requests are answered; True when every request received is answered."""
        budget = REQUESTS_PER_EVENT
        conn.backlog = False
        while len(conn.out) < control.MAX_UNSENT:
            if conn.reply is not None:
                try:
                    piece = conn.reply.next()
                except control.ReplyBroken as exc:
                    log.warning("reply to %s (pid %d) broken off: %s", conn.peer.user,
                                conn.peer.pid, exc)
                    self._close(conn)
                    return False
                except Exception:      # a bug: the others must still be served
                    log.exception("reply to %s (pid %d): internal error", conn.peer.user,
                                  conn.peer.pid)
                    self._close(conn)
                    return False
                if piece is None:
                    conn.reply = None
                elif not piece:
                    break               # the reply paused: others first, then more
                else:
                    conn.out += piece
                continue
            if budget == 0:
                conn.backlog = True     # the rest on the loop's next turn
                return False
            req = conn.reader.pop()
            if req is None:
                return True
            budget -= 1
            conn.reply = self._answer(req, conn.peer)
        conn.backlog = True
        return False

    def _answer(self, req: control.Request | control.BadRequest,
                peer: control.Peer) -> control.ReplyProducer:
        if isinstance(req, control.BadRequest):
            self._log_misdeed("bad request", peer, req.reason)
            return control.ReplyProducer("request", error=req.reason)
        why = control.authorize(req, peer, self.daemon_uid, self.admin_group())
        if why is not None:
            self._log_misdeed(f"refused {req.command}", peer, why)
            return control.ReplyProducer(req.command, error=why)
        try:
            result = self.dispatch(req.command, req.args, peer)
        except control.ANSWER_ERRORS as exc:
            return control.ReplyProducer(req.command, error=f"{req.command}: {exc}")
        except Exception:      # a bug: answered, logged for the administrator
            log.exception("%s from %s (pid %d): internal error", req.command, peer.user,
                          peer.pid)
            return control.ReplyProducer(
                req.command, error=f"{req.command}: the daemon failed to answer; its log "
                                   f"says why")
        return control.ReplyProducer(req.command, result, req.stream)

    def _cap_held(self) -> None:
        """Keep the bytes of unfinished requests across connections under the cap."""
        total = sum(c.reader.held for c in self.conns.values())
        while total > control.MAX_HELD_TOTAL:
            per_uid: dict[int, int] = {}
            for c in self.conns.values():
                per_uid[c.peer.uid] = per_uid.get(c.peer.uid, 0) + c.reader.held
            uid = max(per_uid, key=lambda u: per_uid[u])
            worst = max((c for c in self.conns.values() if c.peer.uid == uid),
                        key=lambda c: c.reader.held)
            why = (f"the daemon holds {total} bytes of unfinished requests, more than "
                   f"{control.MAX_HELD_TOTAL}; this connection's {worst.reader.held} are "
                   f"dropped")
            self._log_misdeed("unfinished requests", worst.peer, why)
            total -= worst.reader.held
            _say(worst.sock, why)
            self._close(worst)

    def _log_misdeed(self, kind: str, peer: control.Peer, why: str) -> None:
        quiet = self.throttle.allow((kind, peer.uid), self.monotonic())
        if quiet is not None:
            more = f" (and {quiet} more like it)" if quiet else ""
            log.warning("%s from %s (pid %d): %s%s", kind, peer.user, peer.pid,
                        why[:300], more)

    def _close(self, conn: ControlConn) -> None:
        if conn.closed:
            return
        conn.closed = True
        try:
            self.sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        self.conns.pop(conn.sock.fileno(), None)
        if conn.limited:
            left = self.by_uid.get(conn.peer.uid, 0) - 1
            if left > 0:
                self.by_uid[conn.peer.uid] = left
            else:
                self.by_uid.pop(conn.peer.uid, None)
        conn.sock.close()
        conn.out = bytearray()
        conn.reply = None
        if self.paused_until is not None:
            self._resume()          # a descriptor is free: try the waiting ones now
        try:
            self.on_close(conn.peer)
        except Exception:      # a bug: the socket must still serve the others
            log.exception("control socket: after closing a connection of %s (pid %d): "
                          "internal error", conn.peer.user, conn.peer.pid)

    def close(self) -> None:
        for conn in list(self.conns.values()):
            self._close(conn)
        self.paused_until = None
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()
        try:
            self.path.unlink()
        except OSError:
            pass


def _say(sock: socket.socket, why: str) -> None:
    """One error line before the connection is closed, if the socket takes it now."""
    try:
        sock.setblocking(False)
        sock.send(control.encode_reply(False, error=why))
    except OSError:
        pass


def _answers(path: Path) -> bool:
    """Whether a daemon listens on the Unix socket ``path`` (connecting says so)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
