"""The daemon's side of systemd's service protocol (``Type=notify``).

systemd gives a notify service ``NOTIFY_SOCKET`` (a datagram socket, ``@`` meaning
the abstract namespace) and, with ``WatchdogSec=``, ``WATCHDOG_USEC`` (and maybe
``WATCHDOG_PID``). The daemon says ``READY=1`` once its slots are built and every
running job is re-adopted, ``RELOADING=1`` with ``MONOTONIC_USEC`` around a reload
(what ``Type=notify-reload`` in systemd >= 253 wants; harmless before), ``STOPPING=1``
when it goes, a ``STATUS=`` line that ``systemctl status`` shows, and ``WATCHDOG=1``
from the event loop itself, so that a stalled loop is what gets the service restarted.

Messages go through systemd-python's ``systemd.daemon.notify`` (libsystemd) when that
is installed and the socket is the process's own; otherwise through a small built-in
sender on the same socket. Nothing is sent, and nothing fails, outside systemd.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

log = logging.getLogger("condorpy.startd")

# Ping this many times per WatchdogSec: one late loop pass must not cost a restart.
_PINGS_PER_PERIOD = 4

Sender = Callable[[str], bool]


def socket_address(value: str) -> str | bytes:
    """``NOTIFY_SOCKET`` as an address for ``sendto``: ``@name`` is abstract."""
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    return value


class SocketSender:
    """sd_notify without libsystemd: one datagram per message."""

    def __init__(self, address: str) -> None:
        self.address = socket_address(address)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    def __call__(self, message: str) -> bool:
        try:
            self.sock.sendto(message.encode(), self.address)
        except OSError as exc:
            log.warning("cannot notify systemd on %r: %s", self.address,
                        exc.strerror or exc)
            return False
        return True

    def close(self) -> None:
        self.sock.close()


def _libsystemd_sender() -> Sender | None:
    try:
        # systemd-python (Debian: python3-systemd); imported by name, since the source
        # tree's systemd/ directory (unit files) would shadow it for a type checker.
        daemon = importlib.import_module("systemd.daemon")
    except ImportError:
        return None

    def send(message: str) -> bool:
        return bool(daemon.notify(message))
    return send


def default_sender(env: Mapping[str, str]) -> Sender | None:
    """How to reach the service manager, or None when not run as a notify service."""
    address = env.get("NOTIFY_SOCKET")
    if not address:
        return None
    # libsystemd reads the process's environment: use it only when that is ``env``'s.
    if os.environ.get("NOTIFY_SOCKET") == address:
        sender = _libsystemd_sender()
        if sender is not None:
            return sender
    return SocketSender(address)


def watchdog_interval(env: Mapping[str, str], pid: int) -> float | None:
    """Seconds between two ``WATCHDOG=1``, or None when no watchdog is asked of us
    (none set, a bad value, or one meant for another process: ``WATCHDOG_PID``)."""
    usec = env.get("WATCHDOG_USEC", "")
    owner = env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) <= 0:
        return None
    if owner and (not owner.isdigit() or int(owner) != pid):
        return None
    return int(usec) / 1e6 / _PINGS_PER_PERIOD


def status_line(slots: Iterable[tuple[str, str]], running: int) -> str:
    """What ``systemctl status`` shows: slots by state/activity, jobs running.
    ``slots`` are (state, activity) pairs, e.g. ``("Claimed", "Busy")``."""
    counts = Counter(f"{state}/{activity}" for state, activity in slots)
    total = sum(counts.values())
    parts = ", ".join(f"{n} {name}" for name, n in sorted(counts.items(),
                                                          key=lambda kv: (-kv[1], kv[0])))
    noun = "slot" if total == 1 else "slots"
    jobs = "job" if running == 1 else "jobs"
    return f"{total} {noun}" + (f" ({parts})" if parts else "") + f"; {running} {jobs} running"


class Notifier:
    """The daemon's notifications. ``tick`` is called on every pass of the event loop
    and ``next_due`` bounds how long the loop may sleep, so the watchdog is fed by the
    loop and by nothing else."""

    def __init__(self, sender: Sender | None, watchdog_s: float | None) -> None:
        self.sender = sender
        self.watchdog_s = watchdog_s if sender is not None else None
        self.next_ping = 0.0
        self.last_status: str | None = None
        self.is_ready = False

    @classmethod
    def from_env(cls, env: Mapping[str, str], pid: int | None = None) -> Notifier:
        return cls(default_sender(env), watchdog_interval(env, pid or os.getpid()))

    @property
    def enabled(self) -> bool:
        return self.sender is not None

    def send(self, *lines: str) -> bool:
        if self.sender is None:
            return False
        return self.sender("\n".join(lines))

    def _status(self, status: str | None) -> list[str]:
        if status is None or status == self.last_status:
            return []
        self.last_status = status
        return [f"STATUS={status}"]

    def ready(self, status: str | None = None) -> None:
        """Start-up (or a reload) is complete."""
        self.is_ready = True
        self.send("READY=1", *self._status(status))

    def reloading(self, monotonic_s: float) -> None:
        """A reload begins; ``monotonic_s`` is CLOCK_MONOTONIC now."""
        self.send("RELOADING=1", f"MONOTONIC_USEC={int(monotonic_s * 1e6)}",
                  "STATUS=Reloading the configuration")
        self.last_status = None

    def stopping(self, status: str | None = None) -> None:
        self.send("STOPPING=1", *self._status(status))

    def next_due(self) -> float | None:
        """The monotonic time by which the loop must call ``tick`` again."""
        return self.next_ping if self.watchdog_s is not None else None

    def tick(self, now: float, status: Callable[[], str]) -> None:
        """Feed the watchdog when due, with the status line when it changed."""
        if self.sender is None or not self.is_ready:
            return
        if self.watchdog_s is not None and now >= self.next_ping:
            self.next_ping = now + self.watchdog_s
            self.send("WATCHDOG=1", *self._status(status()))
        elif now >= self.next_ping:
            # No watchdog: still keep STATUS current, at most once a second.
            self.next_ping = now + 1.0
            lines = self._status(status())
            if lines:
                self.send(*lines)
