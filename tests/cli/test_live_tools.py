"""The administrator's tools against a real daemon: q -analyze / -better-analyze read
its queue and its live slot ads, status -claimed and who -long show who runs where."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

PSLOT = "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path, extra=PSLOT)) as d:
        yield d


def test_analyze_status_and_who_on_a_live_daemon(daemon: Daemon, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    submit(daemon, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"
                   "queue 1\n", work)
    submit(daemon, "executable = /bin/sleep\narguments = 300\nrequest_memory = 9000\n"
                   "queue 1\n", work)
    wait_for(lambda: counts(daemon).get(2) == 1, 30, daemon.output)
    wait_for(lambda: "JobId" in daemon.cli("who", "-long").stdout, 30, daemon.output)

    # the job too big for the machine: its memory condition matches no slot
    res = daemon.cli("q", "-better-analyze", "2.0")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "The Requirements expression for job 2.000 is" in out
    assert "    RequestMemory = 9000 (mb)\n" in out
    memory_rows = [line for line in out.splitlines()
                   if line.endswith("TARGET.Memory >= RequestMemory")]
    assert len(memory_rows) == 1 and memory_rows[0].split()[1] == "0"
    assert "      1 are rejected by your job's requirements\n" in out
    assert "   No machines matched the jobs's constraints\n" in out

    # the running one: it runs, and where
    out = daemon.cli("q", "-analyze", "1.0").stdout
    assert "001.000:  Job is running.\n\nRemote host: slot1_1@" in out
    assert "The Requirements expression" not in out

    # status -claimed names the d-slot and who holds it; who -long prints its ad
    claimed = daemon.cli("status", "-claimed").stdout.splitlines()
    assert claimed[0].split() == ["Name", "OpSys", "Arch", "LoadAv", "RemoteUser",
                                  "ClientMachine"]
    assert claimed[2].startswith("slot1_1@")
    long = daemon.cli("who", "-long").stdout
    assert 'JobId = "1.0"\n' in long and long.endswith("\n\n")
    assert 'Name = "slot1_1@' in long

    # nothing runs: who and who -long print nothing, status -claimed too
    daemon.cli("rm", "-all")
    wait_for(lambda: counts(daemon).get(2) is None and
             daemon.cli("who", "-long").stdout == "", 30, daemon.output)
    for argv in (("who",), ("who", "-long"), ("status", "-claimed")):
        res = daemon.cli(*argv)
        assert (res.returncode, res.stdout) == (0, ""), argv
