"""`condorpy restart` and `condorpy reconfig`'s reply, on a real daemon on this host.

The daemon restarts in place (execv, see condorpy.startd.daemon.restart_in_place): the
process that answers afterwards is a new daemon (a new start time, the configuration
read anew) with the same process id, which is what keeps systemd's MainPID right."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.startd.daemon import restart_argv
from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

# The job writes its pid, then runs until the test creates release.<n>.
JOB = """#!/bin/sh
echo $$ > pid.$1
while [ ! -e release.$1 ]; do sleep 0.2; done
echo done > done.$1
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path)) as d:
        yield d


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    return work


def _running_job(d: Daemon, work: Path) -> int:
    submit(d, "executable = job.sh\narguments = 0\nrequest_memory = 16\nqueue\n", work)
    wait_for(lambda: counts(d).get(2) == 1 and (work / "pid.0").exists(), 30, d.output)
    wait_for(lambda: (work / "pid.0").read_text().strip() != "", 10)
    return int((work / "pid.0").read_text())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_restart_keeps_a_running_job_running(daemon: Daemon, tmp_path: Path) -> None:
    work = _work(tmp_path)
    job_pid = _running_job(daemon, work)
    before = daemon.call("ping")
    res = daemon.cli("restart")
    assert res.stdout.splitlines()[0] == 'Sent "Restart" command for "startd"'
    assert "1 running job(s) kept" in res.stdout
    after = daemon.call("ping")
    # a new daemon in the same process: systemd's MainPID (here, our child) holds
    assert after["since"] != before["since"]
    assert after["pid"] == before["pid"] == daemon.proc.pid      # type: ignore[union-attr]
    assert daemon.proc is not None and daemon.proc.poll() is None
    assert after["running"] == 1
    assert _alive(job_pid) and counts(daemon) == {2: 1}
    log = (daemon.state / "log" / "StartLog").read_text()
    assert "; restarting" in log and log.count("condorpy startd started") == 2
    # the re-adopted job ends as any job does, recorded once
    (work / "release.0").touch()
    wait_for(lambda: counts(daemon).get(4) == 1, 30, daemon.output)
    assert (work / "done.0").read_text() == "done\n"
    assert len(daemon.history_ads()) == 1


def test_restart_fast_ends_the_jobs_first(daemon: Daemon, tmp_path: Path) -> None:
    work = _work(tmp_path)
    job_pid = _running_job(daemon, work)
    before = daemon.call("ping")
    res = daemon.cli("restart", "-fast")
    assert res.stdout.strip() == 'Sent "Restart" command for "startd"'
    wait_for(lambda: not _alive(job_pid), 30, daemon.output)

    def restarted() -> bool:
        try:
            return bool(daemon.call("ping")["since"] != before["since"])
        except Exception:
            return False
    wait_for(restarted, 60, daemon.output)
    assert daemon.call("ping")["pid"] == before["pid"]
    # the evicted job is the queue's again: the new daemon runs it anew
    wait_for(lambda: (work / "pid.0").exists() and
             (work / "pid.0").read_text().strip() not in ("", str(job_pid)), 30,
             daemon.output)
    (work / "release.0").touch()
    wait_for(lambda: counts(daemon).get(4) == 1, 30, daemon.output)


def test_restart_refused_when_the_configuration_would_not_start(daemon: Daemon) -> None:
    before = daemon.call("ping")
    with open(daemon.config, "a") as fh:
        fh.write("POLLING_INTERVAL = soon\n")
    res = daemon.cli("restart", check=False)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "refused, the daemon keeps running" in res.stderr
    assert "POLLING_INTERVAL" in res.stderr
    assert daemon.call("ping")["since"] == before["since"]


def test_reconfig_says_a_knob_needs_a_restart_and_restart_applies_it(
        daemon: Daemon) -> None:
    assert daemon.cli("status", "-af", "TotalCpus").stdout.split()[0] == "2"
    with open(daemon.config, "a") as fh:
        fh.write("NUM_CPUS = 1\nSTART = Owner =!= \"nobody\"\n")
    res = daemon.cli("reconfig", check=False)
    assert res.returncode == 3
    assert "changed: NUM_CPUS" in res.stdout and "changed: START" in res.stdout
    assert "warning: NUM_CPUS changed but take(s) effect only when the daemon starts: " \
           "run `condorpy restart`" in res.stderr
    # a change the daemon applies live is no warning, and exit status 0
    with open(daemon.config, "a") as fh:
        fh.write("START = False\n")
    res = daemon.cli("reconfig", check=False)
    assert res.returncode == 0 and res.stderr == ""
    daemon.cli("restart")
    assert daemon.cli("status", "-af", "TotalCpus").stdout.split()[0] == "1"


def test_the_command_line_run_again_drops_fresh_queue() -> None:
    assert restart_argv(["python3", "-m", "condorpy", "startd", "-f", "-fresh-queue"],
                        "/usr/bin/python3") == \
        ["/usr/bin/python3", "-m", "condorpy", "startd", "-f"]
    assert restart_argv(["/usr/bin/python3", "/usr/bin/condorpy", "startd", "-f"],
                        "/usr/bin/python3") == \
        ["/usr/bin/python3", "/usr/bin/condorpy", "startd", "-f"]
