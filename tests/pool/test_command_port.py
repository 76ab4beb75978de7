"""The daemon's CEDAR command port under hostile input: garbage, truncated, oversized
and unauthenticated messages close that connection with a log line; the daemon goes on
serving (no pool needed: its collector address is simply unreachable)."""

from __future__ import annotations

import re
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.pool.cedar import Writer, frame
from condorpy.pool.collector import new_claim_id
from condorpy.pool.security import DC_AUTHENTICATE
from condorpy.pool.wire_ad import put_classad
from tests.startd.daemon_helpers import Daemon, wait_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("cmdport"), f"""
COLLECTOR_HOST = 127.0.0.1:{_free_port()}
NETWORK_INTERFACE = 127.0.0.1
CONDORPY_POOL_ACCEPT_CLAIMS = True
""")
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def port_of(d: Daemon) -> int:
    m = re.search(r"as <127\.0\.0\.1:(\d+)\?[^>]*noUDP>", d.output())
    assert m, d.output()
    return int(m.group(1))


def resume_request(sid: str, command: int = 442) -> bytes:
    ad = ClassAd()
    ad["UseSession"] = "YES"
    ad["Sid"] = sid
    ad["Command"] = command
    ad["ResumeResponse"] = True
    return frame(put_classad(Writer().put_int(DC_AUTHENTICATE), ad).payload())


CASES = {
    "garbage": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "bad end flag": b"\x07\x00\x00\x00\x01x",
    "oversized packet": b"\x01" + struct.pack(">I", 1 << 30) + b"x" * 64,
    "raw command": frame(Writer().put_int(442).put_string("claim").payload()),
    "new session": frame(put_classad(Writer().put_int(DC_AUTHENTICATE),
                                     ClassAd({"NewSession": "YES", "Command": 442}))
                         .payload()),
    "unknown session": resume_request("<127.0.0.1:1>#1#1"),
    "garbled ad": frame(Writer().put_int(DC_AUTHENTICATE).put_int(3)
                        .put_string("A = (").payload()),
    "huge attribute count": frame(Writer().put_int(DC_AUTHENTICATE).put_int(1 << 40)
                                  .payload()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_input_closes_the_connection_and_the_daemon_goes_on(
        daemon: Daemon, case: str) -> None:
    before = daemon.output().count("pool:")
    with socket.create_connection(("127.0.0.1", port_of(daemon)), timeout=10) as s:
        s.sendall(CASES[case])
        s.shutdown(socket.SHUT_WR) if case == "garbage" else None
        data = b""
        end = time.monotonic() + 10
        while time.monotonic() < end:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        else:
            raise AssertionError("the daemon kept the connection open")
    wait_for(lambda: daemon.output().count("pool:") > before, 10, daemon.output)
    line = daemon.output().splitlines()[-1]
    assert "Traceback" not in daemon.output()
    assert "127.0.0.1" in line, line
    assert daemon.call("ping")


def test_a_truncated_message_waits_then_is_dropped_without_holding_the_daemon(
        daemon: Daemon) -> None:
    cid = new_claim_id("<127.0.0.1:1>", 1, 1, "25.14.1")
    with socket.create_connection(("127.0.0.1", port_of(daemon)), timeout=10) as s:
        s.sendall(resume_request(cid.rsplit("#", 1)[0])[:-7])
        t0 = time.monotonic()
        assert daemon.call("ping")          # the daemon serves meanwhile
        assert time.monotonic() - t0 < 5


def test_an_unreachable_collector_is_retried_and_the_daemon_serves_meanwhile(
        daemon: Daemon) -> None:
    wait_for(lambda: daemon.output().count("cannot connect") >= 2, 30, daemon.output)
    line = next(ln for ln in daemon.output().splitlines() if "cannot connect" in ln)
    assert "Connection refused" in line and "127.0.0.1:" in line
    assert daemon.call("ping")


@pytest.mark.parametrize("value, why", [
    ("cm.example.org:notaport", "bad port"),
    ("127.0.0.1:0", "COLLECTOR_HOST"),
    ("<127.0.0.1:9618", "bad sinful"),
])
def test_a_bad_collector_host_stops_the_start_with_one_clear_line(
        tmp_path: Path, value: str, why: str) -> None:
    d = Daemon(tmp_path, f"COLLECTOR_HOST = {value}\n")
    res = d.cli("startd", "-f", check=False)
    assert res.returncode == 1
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and why in lines[0] and "Traceback" not in res.stderr, res.stderr


def test_a_reconfig_with_a_bad_collector_host_keeps_the_old_configuration(
        tmp_path: Path) -> None:
    d = Daemon(tmp_path, f"COLLECTOR_HOST = 127.0.0.1:{_free_port()}\n"
                         "NETWORK_INTERFACE = 127.0.0.1\n")
    d.start()
    try:
        d.config.write_text(d.config.read_text() + "COLLECTOR_HOST = <127.0.0.1:9618\n")
        with pytest.raises(Exception, match="bad sinful"):
            d.call("reconfig")
        assert d.call("ping")
        assert "reconfig refused, the old configuration stays in force" in d.output()
    finally:
        d.stop()
        d.kill_leftovers()
