"""sd_notify: the messages, the watchdog's pace, and a real daemon speaking the
protocol on a real datagram socket (as systemd's NOTIFY_SOCKET)."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.startd.notify import (Notifier, SocketSender, default_sender, socket_address,
                                    status_line, watchdog_interval)

from .daemon_helpers import Daemon


class Manager:
    """The service manager's end: a bound datagram socket."""

    def __init__(self, path: str | bytes) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.05)

    def messages(self, within: float = 0.3) -> list[dict[str, str]]:
        out = []
        end = time.monotonic() + within
        while time.monotonic() < end:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            out.append(dict(line.partition("=")[::2] for line in data.decode().split("\n")))
        return out

    def wait(self, key: str, timeout: float = 30.0) -> dict[str, str]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            msg = dict(line.partition("=")[::2] for line in data.decode().split("\n"))
            if key in msg:
                return msg
        raise AssertionError(f"no {key} within {timeout} s")


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[tuple[Manager, str]]:
    path = str(tmp_path / "notify")
    m = Manager(path)
    yield m, path
    m.sock.close()


def test_messages_on_the_socket(manager: tuple[Manager, str]) -> None:
    m, path = manager
    n = Notifier(SocketSender(path), None)
    n.tick(0.0, lambda: "never asked")          # not ready yet: nothing
    assert m.messages(0.1) == []
    n.ready("2 slots; 0 jobs running")
    assert m.messages() == [{"READY": "1", "STATUS": "2 slots; 0 jobs running"}]
    n.reloading(12.5)
    assert m.messages() == [{"RELOADING": "1", "MONOTONIC_USEC": "12500000",
                             "STATUS": "Reloading the configuration"}]
    n.ready("2 slots; 0 jobs running")          # the status is said again after a reload
    assert m.messages() == [{"READY": "1", "STATUS": "2 slots; 0 jobs running"}]
    n.stopping("stopping; 1 job(s) left running")
    assert m.messages() == [{"STOPPING": "1", "STATUS": "stopping; 1 job(s) left running"}]


def test_watchdog_pace_and_status_only_when_changed(manager: tuple[Manager, str]) -> None:
    m, path = manager
    n = Notifier(SocketSender(path), 2.0)
    status = ["a"]
    n.ready("a")
    m.messages(0.1)
    assert n.next_due() == 0.0
    n.tick(100.0, lambda: status[0])
    assert m.messages() == [{"WATCHDOG": "1"}]
    assert n.next_due() == 102.0
    n.tick(101.0, lambda: status[0])
    assert m.messages(0.1) == []
    status[0] = "b"
    n.tick(102.0, lambda: status[0])
    assert m.messages() == [{"WATCHDOG": "1", "STATUS": "b"}]


def test_status_without_watchdog_follows_changes(manager: tuple[Manager, str]) -> None:
    m, path = manager
    n = Notifier(SocketSender(path), None)
    n.ready("a")
    m.messages(0.1)
    assert n.next_due() is None
    n.tick(10.0, lambda: "b")
    n.tick(10.5, lambda: "c")        # within the second: not yet
    assert m.messages() == [{"STATUS": "b"}]
    n.tick(11.0, lambda: "c")
    assert m.messages() == [{"STATUS": "c"}]


def test_abstract_socket_and_environment() -> None:
    assert socket_address("@sd/notify") == b"\0sd/notify"
    assert socket_address("/run/systemd/notify") == "/run/systemd/notify"
    name = f"condorpy-test-{os.getpid()}"
    m = Manager(b"\0" + name.encode())
    try:
        sender = default_sender({"NOTIFY_SOCKET": "@" + name})
        assert sender is not None and sender("READY=1")
        assert m.messages() == [{"READY": "1"}]
    finally:
        m.sock.close()
    assert default_sender({}) is None
    off = Notifier.from_env({})
    off.ready("x")
    off.tick(0.0, lambda: "x")
    assert not off.enabled and off.next_due() is None


def test_watchdog_interval_from_the_environment() -> None:
    assert watchdog_interval({"WATCHDOG_USEC": "60000000"}, 7) == 15.0
    assert watchdog_interval({"WATCHDOG_USEC": "8000000", "WATCHDOG_PID": "7"}, 7) == 2.0
    assert watchdog_interval({"WATCHDOG_USEC": "8000000", "WATCHDOG_PID": "8"}, 7) is None
    assert watchdog_interval({"WATCHDOG_USEC": "soon"}, 7) is None
    assert watchdog_interval({"WATCHDOG_USEC": "0"}, 7) is None
    assert watchdog_interval({}, 7) is None


def test_a_dead_socket_is_a_warning_not_a_failure(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    sender = SocketSender(str(tmp_path / "nobody-listens"))
    assert sender("READY=1") is False
    assert "cannot notify systemd" in caplog.text


def test_status_line() -> None:
    assert status_line([], 0) == "0 slots; 0 jobs running"
    assert status_line([("Claimed", "Busy"), ("Unclaimed", "Idle"), ("Claimed", "Busy")],
                       2) == "3 slots (2 Claimed/Busy, 1 Unclaimed/Idle); 2 jobs running"
    assert status_line([("Unclaimed", "Idle")], 1) == \
        "1 slot (1 Unclaimed/Idle); 1 job running"


class NotifyDaemon(Daemon):
    def __init__(self, base: Path, notify: str) -> None:
        super().__init__(base)
        self.notify = notify

    def env(self) -> dict[str, str]:
        env = super().env()
        env.update(NOTIFY_SOCKET=self.notify, WATCHDOG_USEC="400000")
        return env


def test_daemon_speaks_the_protocol_from_its_loop(tmp_path: Path,
                                                  manager: tuple[Manager, str]) -> None:
    m, path = manager
    d = NotifyDaemon(tmp_path / "d", path)
    d.start()
    try:
        assert d.proc is not None
        ready = m.wait("READY")
        assert ready["STATUS"] == "1 slot (1 Unclaimed/Idle); 0 jobs running", ready
        # WATCHDOG_USEC=0.4 s: a ping every 0.1 s, from the loop.
        pings = [msg for msg in m.messages(1.0) if "WATCHDOG" in msg]
        assert len(pings) >= 4, pings
        # A stalled loop stops pinging; it resumes when the loop does.
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            m.messages(0.2)                      # what was in flight
            assert [msg for msg in m.messages(0.6) if "WATCHDOG" in msg] == []
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        m.wait("WATCHDOG", 5)
        # SIGHUP: RELOADING=1 with CLOCK_MONOTONIC now, then READY=1.
        before = time.monotonic()
        d.proc.send_signal(signal.SIGHUP)
        reloading = m.wait("RELOADING")
        after = time.monotonic()
        usec = int(reloading["MONOTONIC_USEC"])
        assert before * 1e6 - 1e6 <= usec <= after * 1e6, (before, usec, after)
        assert "READY" in m.wait("READY", 10)
        # The fork server, and so every starter, has none of the service's variables.
        env = Path(f"/proc/{d.proc.pid}/environ").read_bytes()
        assert b"NOTIFY_SOCKET=" in env
        kids = Path(f"/proc/{d.proc.pid}/task/{d.proc.pid}/children").read_text().split()
        for kid in kids:
            kid_env = Path(f"/proc/{kid}/environ").read_bytes()
            assert b"NOTIFY_SOCKET=" not in kid_env and b"WATCHDOG_USEC=" not in kid_env
        d.proc.send_signal(signal.SIGTERM)
        stopping = m.wait("STOPPING", 10)
        assert "left running" in stopping["STATUS"]
    finally:
        d.stop()
