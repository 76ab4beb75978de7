"""`condorpy qedit`, `tail` and `watch-q` end to end: a real daemon, real jobs, the
commands' output and exit codes as condor_qedit, condor_tail and condor_watch_q give
them (the in-process rules are in tests/startd/test_qedit.py and test_tail.py, the
drawing in tests/queue/test_watch.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.classad import ClassAd
from tests.startd.daemon_helpers import Daemon, running, submit, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the daemon runs jobs as root")

JOB = """\
executable = job.sh
output = out.txt
error = err.txt
log = job.log
request_memory = 16
queue
executable = /bin/true
requirements = false
log = job.log
queue
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path)) as d:
        yield d


def _ad(d: Daemon, job: str) -> ClassAd:
    cluster, proc = job.split(".")
    ads = [ClassAd.parse_old(a) for a in d.call("q")["ads"]]
    [ad] = [a for a in ads if a.evaluate("ClusterId") == int(cluster)
            and a.evaluate("ProcId") == int(proc)]
    return ad


def _running(d: Daemon) -> bool:
    return any("JobPid" in a for a in d.call("who")["ads"])


def test_qedit_tail_and_watch_q(daemon: Daemon, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.sh").write_text("#!/bin/sh\necho hello\necho oops >&2\nexec sleep 300\n")
    (work / "job.sh").chmod(0o755)
    submit(daemon, JOB, work)
    wait_for(lambda: _running(daemon), 60, daemon.output)
    wait_for(lambda: (work / "out.txt").exists() and (work / "out.txt").read_text() != "",
             30, daemon.output)

    # tail: the running job's stdout, its stderr, and condor_tail's errors
    res = daemon.cli("tail", "1.0")
    assert (res.returncode, res.stdout) == (0, "hello\n")
    assert daemon.cli("tail", "-stderr", "1").stdout == "oops\n"
    assert daemon.cli("tail", "-maxbytes", "3", "1.0").stdout == "lo\n"
    res = daemon.cli("tail", "1.1", check=False)
    assert (res.returncode, res.stderr) == (1, "Job 1.1 is not running.\n")
    res = daemon.cli("tail", "9.0", check=False)
    assert (res.returncode, res.stderr) == (1, "No such job: 9.0\n")

    # qedit: condor_qedit's lines; the idle job matches once its Requirements allow it
    res = daemon.cli("qedit", "1.1", "Foo", '"bar"', "Prio=2+3")
    assert res.stdout == ('Set attribute "Foo" for 1 matching jobs.\n'
                          'Set attribute "Prio" for 1 matching jobs.\n')
    ad = _ad(daemon, "1.1")
    assert (ad.evaluate("Foo"), ad.evaluate("Prio")) == ("bar", 5)
    res = daemon.cli("qedit", "1.1", "Owner", '"x"', check=False)
    assert res.returncode == 1
    assert res.stderr == ('Update of immutable attribute "Owner" is not allowed.\n'
                          "Transaction failed.  No attributes were set.\n")
    res = daemon.cli("qedit", "1.1", "Foo", "(1", check=False)
    assert res.returncode == 1 and res.stderr.startswith("Update aborted, illegal value "
                                                         "for : Foo\n")
    res = daemon.cli("qedit", "-constraint", "Foo =?= 42", "Foo", "1", check=False)
    assert (res.returncode, res.stderr) == (1, "no matching jobs found\nQueue transaction "
                                               "failed.  No attributes were set.\n")
    daemon.restart()
    assert _ad(daemon, "1.1").evaluate("Foo") == "bar"        # kept in the job store

    # watch-q: not a terminal, so printed once, and ended by -exit with its code
    res = daemon.cli("watch-q", "-exit", "any,active,7", cwd=work, check=False)
    assert res.returncode == 7, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["BATCH", "IDLE", "RUN", "DONE", "TOTAL", "JOB_IDS"]
    assert lines[1].split()[:6] == ["ID:", "1", "1", "1", "-", "2"]
    assert lines[-1].startswith('Exiting with code 7 because of condition "any active" at ')

    # tail -f follows until the job ends
    follow = subprocess.Popen([sys.executable, "-m", "condorpy", "tail", "-f", "1.0"],
                              env=daemon.env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (work / "out.txt").read_text() == "hello\n", 5)
        daemon.cli("qedit", "1.1", "Requirements", "true")
        # the next match sees the edited Requirements: the job runs and completes
        wait_for(lambda: daemon.statuses().get("1.1") == 4, 60, daemon.output)
        daemon.cli("rm", "1.0")
        out, err = follow.communicate(timeout=60)
    finally:
        follow.kill()
        follow.wait()
    assert (follow.returncode, out, err) == (0, "hello\n", "")


def test_watch_q_with_no_jobs_and_bad_exit(daemon: Daemon, tmp_path: Path) -> None:
    res = daemon.cli("watch-q", check=False)
    assert (res.returncode, res.stdout, res.stderr) == (
        0, "", "WARNING: No jobs found, exiting...\n")
    res = daemon.cli("watch-q", "-exit", "most,done", check=False)
    assert res.returncode == 2 and 'invalid GROUPER "most"' in res.stderr
