"""Starter logs (issue #23): one StarterLog.<slot> per slot in LOG, as HTCondor names
them, rotated at MAX_STARTER_LOG, instead of a starter_<pid>.log per job in EXECUTE."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from condorpy.config import Config
from condorpy.config.typed import log_size_value
from condorpy.errors import ConfigError
from condorpy.startd.forkserver_wire import LaunchRequest, decode_request, encode_request
from condorpy.startd.starter_logs import StarterLogs, open_starter_log, starter_logs
from tests.startd.daemon_helpers import Daemon, counts, submit, wait_for


def test_log_sizes_read_as_htcondor_reads_them() -> None:
    assert log_size_value("10 Mb") == log_size_value("10M") == 10 * 1024 * 1024
    assert log_size_value("500 Kb") == 500 * 1024
    assert log_size_value("1 GiB") == 1 << 30
    assert log_size_value("1000000") == 1000000 and log_size_value("0") == 0
    for by_time_or_bad in ("10m", "2 min", "1 h", "1 Mi", "lots", "", "-1"):
        assert log_size_value(by_time_or_bad) is None, by_time_or_bad


def _cfg(text: str) -> Config:
    return Config.from_text(text, source="site.conf", env={})


def test_starter_log_per_slot_in_log(tmp_path: Path) -> None:
    logs = starter_logs(_cfg(f"LOG = {tmp_path}/log\n"), tmp_path / "log")
    assert logs == StarterLogs(f"{tmp_path}/log/StarterLog", 10 * 1024 * 1024)
    assert logs.path_for("slot1_3") == f"{tmp_path}/log/StarterLog.slot1_3"
    # a personal daemon that moved LOG takes the StarterLog with it
    moved = starter_logs(_cfg("LOG = /var/log/condorpy\n"), tmp_path / "personal")
    assert moved.base == f"{tmp_path}/personal/StarterLog"
    # an administrator's own place is kept, and MAX_STARTER_LOG read in HTCondor's units
    own = starter_logs(_cfg(f"LOG = {tmp_path}\nSTARTER_LOG = /srv/logs/Starter\n"
                            "MAX_STARTER_LOG = 500 Kb\n"), tmp_path)
    assert own == StarterLogs("/srv/logs/Starter", 512000)
    with pytest.raises(ConfigError) as err:
        starter_logs(_cfg("MAX_STARTER_LOG = 10 min\n"), tmp_path)
    assert "MAX_STARTER_LOG" in str(err.value) and "site.conf" in str(err.value)


def test_a_full_log_moves_to_old_when_the_next_starter_opens_it(tmp_path: Path) -> None:
    path = str(tmp_path / "StarterLog.slot1")
    for text, expect_old in ((b"a" * 10, None), (b"b" * 5, None), (b"c", b"a" * 10 + b"b" * 5)):
        fd = open_starter_log(path, 12)
        os.write(fd, text)
        os.close(fd)
        old = tmp_path / "StarterLog.slot1.old"
        assert (old.read_bytes() if old.exists() else None) == expect_old
    assert Path(path).read_bytes() == b"c"
    fd = open_starter_log(path, 0)      # 0: never rotated
    os.close(fd)


def test_the_launch_request_carries_the_log() -> None:
    req = LaunchRequest("1.0", "", "", "/x", "/r", log_path="/l/StarterLog.slot1",
                        log_max=5)
    assert decode_request(encode_request(req)) == req


@pytest.mark.skipif(os.geteuid() != 0 and not os.access("/tmp", os.W_OK),
                    reason="needs a writable /tmp")
def test_daemon_writes_one_starter_log_per_slot_and_none_in_execute(tmp_path: Path) -> None:
    d = Daemon(tmp_path, "MAX_STARTER_LOG = 1000\n", cpus=1)
    d.start()
    try:
        work = tmp_path / "work"
        work.mkdir()
        submit(d, "executable = /bin/true\nrequest_memory = 16\nqueue 6\n", work)
        wait_for(lambda: counts(d).get(4) == 6, 60, d.output)
    finally:
        d.stop()
        d.kill_leftovers()
    log = d.state / "log"
    names = sorted(p.name for p in log.iterdir() if p.name.startswith("StarterLog"))
    assert names and all(n.startswith("StarterLog.slot1_") for n in names), names
    assert len([n for n in names if not n.endswith(".old")]) <= 1     # one CPU: one d-slot
    text = "".join((log / n).read_text() for n in names)
    assert text.count("starter ") >= 2 and "for job 1." in text
    assert not list((d.state / "execute").glob("starter_*.log"))
