"""A condorpy daemon restarting under a job a real 23.9.6 shadow runs on it.

condorpy serves the shadow's reconnect (``HasReconnect = True``, CA_LOCATE_STARTER,
CA_RECONNECT_JOB): a daemon that stops (SIGTERM) or is killed (SIGKILL) leaves the job
running, the next one re-adopts its starter and re-creates its claim, and the shadow
takes the job back: the same process runs on, completes once with its exit code, and the
user log shows a disconnect and a reconnect, never a second execution. A daemon that
stays away past the job lease finds the job's lease run out: it kills the job, as
HTCondor's starter does, and the shadow has meanwhile put the job back in its queue."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.jobs import cmdline as _cmdline
from tests.pool.jobs import history, queued, submit
from tests.pool.test_pool_jobs import CONFIG, HOST, daemon  # noqa: F401
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool
# every test has its own daemon and job directory: the pool lane's workers may share
# them out (tests/pool/conftest.py)
POOL_TESTS_APART = True


def _job(runs: Path, overlap: Path, first_sleep: int, lease: str = "") -> str:
    # Each run notes its pid, and whether an earlier run is still alive; a first run
    # lasts until the test releases it (_release) or first_sleep seconds have passed, a
    # later one (there must be none unless the lease ran out) exits at once.
    release = runs.with_name("release")
    return f"""\
executable = /bin/sh
arguments = "-c 't=1; for p in $(cat {runs} 2>/dev/null); do t=0; [ -e /proc/$p ] && echo $p >> {overlap}; done; echo $$ >> {runs}; [ $t = 0 ] || for i in $(seq {first_sleep * 5}); do [ -e {release} ] && break; sleep 0.2; done; exit 3'"
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
{lease}
queue
"""


def _release(runs: Path) -> None:
    """The job's first run may end now: the test has seen it run on where it must."""
    runs.with_name("release").touch()


@contextlib.contextmanager
def _fresh_pool_if_failed(pool: RefPool) -> Iterator[None]:
    """A test that restarts the pool's daemons or cuts their connections and fails
    leaves the pool in a state no later test expects: it gets a fresh pool."""
    since = time.time()
    try:
        yield
    except BaseException:
        pool.last_diagnosis = pool.diagnose(since - 5)    # before the fresh pool
        pool.start()
        raise


@pytest.mark.parametrize("sig,lease", [(signal.SIGKILL, ""), (signal.SIGTERM, ""),
                                       (signal.SIGKILL, "job_lease_duration = 30")],
                         ids=["SIGKILL", "SIGTERM", "SIGKILL-short-lease"])
def test_a_pool_job_survives_a_daemon_restart_and_completes_once(
        tmp_path: Path, refpool: RefPool, jobdir: Path, sig: signal.Signals,
        lease: str) -> None:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    runs, overlap = jobdir / "runs", jobdir / "overlap"
    try:
        cluster = submit(refpool, jobdir, _job(runs, overlap, 300, lease))
        wait_for(runs.exists, 120, lambda: d.output()[-3000:])
        if lease:
            # most of the short lease has passed since the job started: the shadow's
            # last word must have been noted since, or the restarted daemon would count
            # the lease out before the shadow's next try
            time.sleep(25)
        first = runs.read_text().split()[0]
        assert "sh" in _cmdline(first)
        # the daemon notes the starter once the fork server has answered, which a job
        # may outrun: the restart comes once it is noted (a kill before then is the
        # window docs/startd.md names)
        wait_for(lambda: d.db().execute("SELECT count(*) FROM starters WHERE cluster < 0")
                 .fetchone()[0] == 1, 30, lambda: d.output()[-3000:])
        # the claim was stored before the job started: its key only there, never logged
        (record,), = d.db().execute("SELECT record FROM pool_claims").fetchall()
        key = json.loads(record)["claim_id"].rpartition("#")[2]
        db = d.state / "spool" / "condorpy_queue.sqlite3"
        assert db.stat().st_mode & 0o077 == 0, oct(db.stat().st_mode)
        d.restart(sig)
        assert "sh" in _cmdline(first), "the job died with the daemon"
        wait_for(lambda: "reconnected to job" in d.output(), 90, lambda: d.output()[-3000:])
        # the re-created claim is advertised as HTCondor's startd would
        wait_for(lambda: f"slot1_1@{HOST} Claimed Busy" in refpool.condor(
            "condor_status", "-af", "Name", "State", "Activity").stdout, 30)
        # the pool sees it running all along (or briefly disconnected), never idle
        status = refpool.condor("condor_q", str(cluster), "-af", "JobStatus").stdout.split()
        assert status == ["2"], status
        assert "sh" in _cmdline(first)
        _release(runs)
        wait_for(lambda: queued(refpool, cluster) == 0, 150, lambda: d.output()[-3000:])
        assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "3"]
        assert runs.read_text().split() == [first], runs.read_text()
        assert not overlap.exists(), overlap.read_text()
        log = (jobdir / "job.log").read_text()
        assert log.count("Job executing") == 1, log
        assert log.count("Job terminated") == 1, log
        assert "(return value 3)" in log, log
        # HTCondor's shadow writes the pair as it loses and finds the job again
        assert log.count("Job disconnected") == 1 and log.count("Job reconnected") == 1, log
        assert log.index("Job disconnected") < log.index("Job reconnected") < \
            log.index("Job terminated"), log
        # the claim (and its key) is gone from the store once the job is done
        wait_for(lambda: not d.db().execute("SELECT * FROM pool_claims").fetchall(), 30)
        assert key not in (d.base / "daemon.out").read_text()
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_job_that_ends_while_the_daemon_is_down_reports_its_exit_on_reconnect(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    runs, overlap = jobdir / "runs", jobdir / "overlap"
    try:
        cluster = submit(refpool, jobdir, _job(runs, overlap, 60))
        wait_for(runs.exists, 120, lambda: d.output()[-3000:])
        first = runs.read_text().split()[0]
        d.stop(signal.SIGKILL)
        _release(runs)
        wait_for(lambda: _cmdline(first) == "", 30)       # it ended, unseen
        d.start()
        wait_for(lambda: queued(refpool, cluster) == 0, 150, lambda: d.output()[-3000:])
        assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "3"]
        assert runs.read_text().split() == [first], runs.read_text()
        log = (jobdir / "job.log").read_text()
        assert log.count("Job executing") == 1 and log.count("Job terminated") == 1, log
        assert "(return value 3)" in log, log
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_daemon_away_past_the_job_lease_finds_the_job_killed_and_requeued(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    runs, overlap = jobdir / "runs", jobdir / "overlap"
    try:
        cluster = submit(refpool, jobdir, _job(runs, overlap, 300, "job_lease_duration = 15"))
        wait_for(runs.exists, 120, lambda: d.output()[-3000:])
        first = runs.read_text().split()[0]
        d.stop(signal.SIGKILL)
        # the shadow gives up once the lease has run out, and the job goes back to
        # its schedd's queue
        wait_for(lambda: "Job reconnection failed" in (jobdir / "job.log").read_text(), 90)
        time.sleep(1)
        d.start()
        # the restarted daemon finds the lease run out: the first run is killed
        wait_for(lambda: _cmdline(first) == "", 30, lambda: d.output()[-3000:])
        assert "job lease" in d.output()
        wait_for(lambda: queued(refpool, cluster) == 0, 240, lambda: d.output()[-3000:])
        assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "3"]
        assert len(runs.read_text().split()) == 2, runs.read_text()
        assert not overlap.exists(), overlap.read_text()
        log = (jobdir / "job.log").read_text()
        assert log.count("Job terminated") == 1, log
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_pool_job_survives_a_schedd_restart(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    # The shadow goes away with its schedd; the schedd's next shadow finds the job
    # through the same two commands, while condorpy keeps it running.
    with _fresh_pool_if_failed(refpool):
        runs, overlap = jobdir / "runs", jobdir / "overlap"
        cluster = submit(refpool, jobdir, _job(runs, overlap, 120))
        wait_for(runs.exists, 120, lambda: daemon.output()[-3000:])
        # a restarted schedd reconnects only to a job whose queue record shows a live
        # lease (LastJobLeaseRenewal, noted when it started the shadow)
        wait_for(lambda: refpool.condor("condor_q", str(cluster), "-af", "LastJobLeaseRenewal")
                 .stdout.strip().isdigit(), 60, lambda: daemon.output()[-3000:])
        # fast: a graceful schedd shutdown that meets a negotiation cycle in progress
        # keeps preempting for minutes (23.9.6's SchedLog: "Called preempt( 1 ) for a
        # graceful shutdown" each second); the shadow dies either way
        refpool.condor("condor_restart", "-fast", "-schedd")
        wait_for(lambda: "went away; its job" in daemon.output(), 60,
                 lambda: daemon.output()[-3000:])
        _completes_once_after_reconnect(daemon, refpool, jobdir, cluster)


def test_a_pool_job_survives_a_cut_connection_to_its_shadow(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    # Both ends of the shadow's connection are reset (ss -K, as a network fault would
    # leave them); neither daemon restarts: the shadow reconnects to the running job.
    with _fresh_pool_if_failed(refpool):
        runs, overlap = jobdir / "runs", jobdir / "overlap"
        cluster = submit(refpool, jobdir, _job(runs, overlap, 120))
        wait_for(runs.exists, 120, lambda: daemon.output()[-3000:])
        m = re.search(r"as <127\.0\.0\.1:(\d+)\?[^>]*noUDP>", daemon.output())
        assert m, daemon.output()
        port = m.group(1)
        for side in ("dport", "sport"):
            res = subprocess.run(["ss", "-K", "dst" if side == "dport" else "src",
                                  "127.0.0.1", side, "=", port], capture_output=True,
                                 text=True)
            if res.returncode != 0:
                pytest.skip(f"ss -K cannot reset connections here: {res.stderr.strip()}")
        log = _completes_once_after_reconnect(daemon, refpool, jobdir, cluster)
        assert "Job disconnected" in log and "Job reconnected" in log, log


def _completes_once_after_reconnect(daemon: Daemon, refpool: RefPool, jobdir: Path,
                                    cluster: int) -> str:
    """The shadow reconnects to the job's first run, which completes with its exit code,
    once; returns the user log."""
    runs = jobdir / "runs"
    first = runs.read_text().split()[0]
    wait_for(lambda: "reconnected to job" in daemon.output(), 120,
             lambda: daemon.output()[-3000:])
    assert "sh" in _cmdline(first)
    _release(runs)
    wait_for(lambda: queued(refpool, cluster) == 0, 150, lambda: daemon.output()[-3000:])
    assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "3"]
    assert runs.read_text().split() == [first], runs.read_text()
    log = (jobdir / "job.log").read_text()
    assert log.count("Job executing") == 1 and log.count("Job terminated") == 1, log
    return log
