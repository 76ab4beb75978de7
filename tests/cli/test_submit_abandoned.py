"""A submission in parts whose client dies or falls silent half-way (issue 25), against
a real daemon: what it staged is dropped when its connection closes, or when no part
comes for CONDORPY_SUBMIT_PART_TIMEOUT seconds, and the StartLog says so; nothing of it
is queued, a late part is refused, and the daemon serves on."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.startd.daemon_helpers import ROOT, Daemon, running, wait_for

# A client as condorpy submit is one (condorpy.startd.client.Connection): it sends the
# first of two parts of 400 jobs, says so, and sends the last when told to on stdin.
_CLIENT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from condorpy.startd.client import Connection, RequestRefused
    common = 'MyType = "Job"\\nCmd = "/bin/true"\\nJobUniverse = 5\\n'
    with Connection(Path(sys.argv[1])) as conn:
        cluster = conn.call("new_cluster", {})
        got = conn.call("submit", {"cluster": cluster, "common": common,
                                   "procs": [f"A = {i}" for i in range(200)],
                                   "first": 0, "total": 400, "more": True})
        print(cluster, got["staged"], flush=True)
        sys.stdin.readline()
        try:
            got = conn.call("submit", {"cluster": cluster, "common": common,
                                       "procs": [f"A = {i}" for i in range(200, 400)],
                                       "first": 200, "total": 400, "more": False})
            print("queued", got, flush=True)
        except RequestRefused as exc:
            print("refused:", exc, flush=True)
""")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # START = False: nothing runs, the jobs stay where the test counts them
    d = Daemon(tmp_path_factory.mktemp("abandoned"), extra="START = False\n")
    with running(d):
        yield d


@pytest.fixture
def impatient(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path / "d", extra="START = False\nCONDORPY_SUBMIT_PART_TIMEOUT = 2\n")
    with running(d):
        yield d


def _client(d: Daemon) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-c", _CLIENT, str(d.socket)], env=d.env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    assert proc.stdout is not None
    first = proc.stdout.readline().split()
    assert len(first) == 2 and first[1] == "200", first
    return proc, int(first[0])


def _staged(d: Daemon, cluster: int) -> int:
    with d.db() as db:      # (the table is there: every test stages a part first)
        (n,) = db.execute("SELECT count(*) FROM staged_jobs WHERE cluster=?",
                          (cluster,)).fetchone()
    return int(n)


def _start_log(d: Daemon) -> str:
    return (d.state / "log" / "StartLog").read_text()


def _queued(d: Daemon, cluster: int) -> int:
    with d.db() as db:
        (n,) = db.execute("SELECT count(*) FROM jobs WHERE cluster=?",
                          (cluster,)).fetchone()
    return int(n)


def test_a_client_killed_mid_submission_leaves_nothing_staged(daemon: Daemon) -> None:
    proc, cluster = _client(daemon)
    try:
        assert _staged(daemon, cluster) == 200
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        # the line is written once the rows are gone
        said = f"submission of cluster {cluster} by "
        wait_for(lambda: said in _start_log(daemon), 30, daemon.output)
        assert _staged(daemon, cluster) == 0 and _queued(daemon, cluster) == 0
        log = _start_log(daemon)
        assert "abandoned: its connection closed before the last part; its 200 staged " \
               "job(s) dropped, nothing was queued" in log, log[-2000:]
        assert daemon.call("ping")["pid"] > 0          # serving on
    finally:
        proc.kill()
        proc.wait(30)


def test_a_silent_client_is_dropped_after_the_timeout_and_its_late_part_refused(
        impatient: Daemon) -> None:
    daemon = impatient
    proc, cluster = _client(daemon)
    try:
        # the connection stays open, nothing more is sent
        said = "no part came for 2 s (CONDORPY_SUBMIT_PART_TIMEOUT)"
        wait_for(lambda: said in _start_log(daemon), 60, daemon.output)
        assert _staged(daemon, cluster) == 0
        out, _err = proc.communicate("go\n", timeout=60)
        assert out.startswith("refused:") and "no submission under way" in out, out
        assert _queued(daemon, cluster) == 0
    finally:
        proc.kill()
        proc.wait(30)


def test_condorpy_submit_sends_its_parts_on_one_connection(daemon: Daemon,
                                                            tmp_path: Path) -> None:
    (tmp_path / "job.sub").write_text("executable = /bin/true\nqueue 2100\n")
    res = daemon.cli("submit", "job.sub", cwd=tmp_path)      # three parts
    said = re.search(r"^2100 job\(s\) submitted to cluster (\d+)\.$", res.stdout, re.M)
    assert said is not None, res.stdout
    cluster = int(said.group(1))
    assert _queued(daemon, cluster) == 2100 and _staged(daemon, cluster) == 0
    assert f"submission of cluster {cluster} by" not in _start_log(daemon)
