"""Jobs submitted with condor_submit to a real HTCondor 23.9.6 pool run on condorpy.

The pool's schedd claims condorpy's slots (REQUEST_CLAIM on the claim session from the
private ad), its shadow activates them and talks to condorpy as to a starter; the job
runs under condorpy's own starter, on a directory both sides see at one path. The user
log, condor_history and the outputs are as with HTCondor's own execution point."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.jobs import cmdline as _cmdline
from tests.pool.jobs import history, queued, submit
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool
# every test has its own daemon and job directory: the pool lane's workers may share
# them out (tests/pool/conftest.py)
POOL_TESTS_APART = True

HOST = "condorpy-jobs.example"

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
UPDATE_INTERVAL = 600
NUM_CPUS = 4
MEMORY = 4096
"""


@pytest.fixture
def daemon(tmp_path: Path, refpool: RefPool) -> Iterator[Daemon]:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def test_ten_jobs_with_mixed_requests_complete_on_a_partitionable_slot(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    t0 = time.monotonic()
    cluster = submit(refpool, jobdir, """\
executable = /bin/sh
arguments = "-c 'echo job $(Process) on $$(Name); exit $(Process)'"
request_cpus = $(Process) % 2 + 1
request_memory = 100 + 50 * $(Process)
output = out.$(Process)
error = err.$(Process)
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue 10
""")
    wait_for(lambda: queued(refpool, cluster) == 0, 240,
             lambda: f"still queued: {refpool.condor('condor_q', '-nobatch', check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-3000:]}")
    took = time.monotonic() - t0
    done = history(refpool, cluster, "JobStatus", "ExitCode", "LastRemoteHost",
                   "RequestCpus", "RequestMemory")
    assert sorted(done) == list(range(10))
    for proc, (status, code, host, cpus, mem) in done.items():
        assert (status, code) == ("4", str(proc)), f"job {proc}: {done[proc]}"
        assert host.endswith(f"@{HOST}") and host.startswith("slot1_")
        assert (cpus, mem) == (str(proc % 2 + 1), str(100 + 50 * proc))
        out = (jobdir / f"out.{proc}").read_text()
        assert re.match(rf"job {proc} on slot1_\d+@{re.escape(HOST)}\n\Z", out), out
    log = (jobdir / "job.log").read_text()
    for proc in range(10):
        assert re.search(rf"^001 \({cluster:03d}\.{proc:03d}\.000\) .*Job executing on host: "
                         rf"<127\.0\.0\.1:\d+\?[^>]*noUDP>", log, re.M), log
        assert re.search(rf"^005 \({cluster:03d}\.{proc:03d}\.000\) .*Job terminated\.\n"
                         rf"\s+\(1\) Normal termination \(return value {proc}\)", log, re.M)
    # the daemon's log names each job as the pool knows it (output() is only the tail)
    whole = (daemon.base / "daemon.out").read_text()
    missing = [p for p in range(10) if f"(pool job {cluster}.{p}): ended in slot1_" not in whole]
    assert not missing, (missing, whole[-3000:])
    # the d-slots went back to the partitionable slot
    wait_for(lambda: [a for a in daemon.call("status")["ads"] if "slot1_" in a] == [], 30)
    print(f"10 jobs through condorpy in {took:.1f}s")


def test_a_slot_whose_start_is_false_is_never_claimed(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST)
               + "START = False\n", cpus=4)
    d.start()
    try:
        cluster = submit(refpool, jobdir, """\
executable = /bin/true
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
        time.sleep(15)    # three negotiation cycles
        assert queued(refpool, cluster) == 1
        assert "claimed by" not in d.output() and "activated" not in d.output()
        assert "Job executing" not in (jobdir / "job.log").read_text()
    finally:
        d.stop()
        d.kill_leftovers()


def test_condor_rm_of_a_running_job_ends_it_on_condorpy(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    marker = jobdir / "started"
    cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 'echo $$ > {marker}.tmp; mv {marker}.tmp {marker}; exec sleep 300'"
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    wait_for(marker.exists, 120, lambda: daemon.output()[-3000:])
    pid = marker.read_text().strip()
    # the marker is written just before the shell execs sleep
    wait_for(lambda: _cmdline(pid) == "sleep 300", 10, lambda: _cmdline(pid))
    refpool.condor("condor_rm", str(cluster))
    wait_for(lambda: _cmdline(pid) != "sleep 300", 60, lambda: daemon.output()[-3000:])
    wait_for(lambda: "Job was aborted" in (jobdir / "job.log").read_text(), 60)
    wait_for(lambda: not [a for a in daemon.call("status")["ads"] if "slot1_" in a], 60,
             lambda: daemon.output()[-3000:])


def test_a_job_outliving_its_claim_lease_is_kept_alive_by_its_shadow(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    cluster = submit(refpool, jobdir, """\
executable = /bin/sleep
arguments = 30
job_lease_duration = 12
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    wait_for(lambda: queued(refpool, cluster) == 0, 150, lambda: daemon.output()[-3000:])
    assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "0"], daemon.output()
    assert "lease expired" not in daemon.output()


def test_a_job_condorpy_vacates_goes_back_to_the_pools_queue(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    marker = jobdir / "started"
    cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 'touch {marker}; exec sleep 300'"
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    wait_for(marker.exists, 120, lambda: daemon.output()[-3000:])
    daemon.call("vacate", fast=True)
    wait_for(lambda: "Job was evicted" in (jobdir / "job.log").read_text(), 60,
             lambda: daemon.output()[-3000:])
    # evicted, not ended: the job is in the queue again (idle, or already running anew)
    status = refpool.condor("condor_q", str(cluster), "-af", "JobStatus").stdout.split()
    assert status and status[0] in ("1", "2"), status
    assert history(refpool, cluster, "JobStatus") == {}


def test_condor_hold_and_release_of_a_running_job(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    once, marker = jobdir / "once", jobdir / "started"
    cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 'test -e {once} && exit 0; touch {once}; echo $$ > {marker}.tmp; mv {marker}.tmp {marker}; exec sleep 300'"
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    wait_for(marker.exists, 120, lambda: daemon.output()[-3000:])
    pid = marker.read_text().strip()
    # the marker is written just before the shell execs sleep
    wait_for(lambda: _cmdline(pid) == "sleep 300", 10, lambda: _cmdline(pid))
    refpool.condor("condor_hold", str(cluster))
    wait_for(lambda: _cmdline(pid) != "sleep 300", 60, lambda: daemon.output()[-3000:])
    wait_for(lambda: refpool.condor("condor_q", str(cluster), "-af", "JobStatus")
             .stdout.split() == ["5"], 60)
    refpool.condor("condor_release", str(cluster))
    wait_for(lambda: queued(refpool, cluster) == 0, 120, lambda: daemon.output()[-3000:])
    assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "0"]
    log = (jobdir / "job.log").read_text()
    assert "Job was held" in log and "Job was released" in log


def test_a_job_condorpys_policy_suspends_shows_suspended_in_the_pool(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST) + """
WANT_SUSPEND = True
SUSPEND = Activity == "Busy" && (time() - EnteredCurrentActivity) > 4
CONTINUE = (time() - EnteredCurrentActivity) > 8
PREEMPT = False
""", cpus=4)
    d.start()
    try:
        cluster = submit(refpool, jobdir, """\
executable = /bin/sleep
arguments = 12
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
        seen: set[str] = set()

        def watch() -> bool:
            seen.update(refpool.condor("condor_q", str(cluster), "-af", "JobStatus",
                                       check=False).stdout.split())
            return "7" in seen
        wait_for(watch, 120, lambda: f"JobStatus seen: {seen}; {d.output()[-3000:]}")
        wait_for(lambda: queued(refpool, cluster) == 0, 120, lambda: d.output()[-3000:])
        assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "0"]
        log = (jobdir / "job.log").read_text()
        assert "Job was suspended" in log and "Job was unsuspended" in log, log
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_daemon_stopping_under_a_job_without_a_lease_tells_the_shadow_and_leaves_nothing(
        tmp_path: Path, refpool: RefPool, jobdir: Path) -> None:
    # Without a job lease the shadow cannot reconnect (test_pool_restart.py covers the
    # jobs that can): the job must not run on unseen.
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    marker = jobdir / "started"
    try:
        cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 'echo $$ > {marker}.tmp; mv {marker}.tmp {marker}; exec sleep 300'"
job_lease_duration = 0
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
        wait_for(marker.exists, 120, lambda: d.output()[-3000:])
        pid = marker.read_text().strip()
        d.stop()
        wait_for(lambda: _cmdline(pid) != "sleep 300", 30)
        wait_for(lambda: "Job was evicted" in (jobdir / "job.log").read_text(), 60)
        status = refpool.condor("condor_q", str(cluster), "-af", "JobStatus").stdout.split()
        assert status == ["1"], status       # back in the queue, nothing ran elsewhere
    finally:
        d.stop()
        d.kill_leftovers()
