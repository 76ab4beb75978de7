"""condorpy in a pool that runs every daemon behind condor_shared_port, the package
default (USE_SHARED_PORT = True): the collector is reached as ``host:port?sock=collector``,
the schedd's ALIVE and the shadow's transfer server through SHARED_PORT_CONNECT."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.jobs import chown_alice as _chown_alice
from tests.pool.jobs import history, queued
from tests.pool.jobs import submit_inside as _submit
from tests.pool.test_pool_transfer import CONFIG, HOST
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool

# the second job of a cluster waits on its claim (claimed, idle) while the schedd holds
# its shadow back; the schedd asks for an ALIVE every 5 s meanwhile
POOL_EXTRA = """\
ALIVE_INTERVAL = 5
JOB_START_COUNT = 1
JOB_START_DELAY = 20
SCHEDD_DEBUG = D_FULLDEBUG D_COMMAND
"""


@pytest.fixture(scope="module")
def shared_pool(refpool: RefPool) -> Iterator[RefPool]:
    refpool.start(extra=POOL_EXTRA, shared_port=True)
    try:
        yield refpool
    finally:
        refpool.start()      # the other modules' pool: every daemon on its own port


@pytest.fixture
def submitdir(shared_pool: RefPool, request: pytest.FixtureRequest) -> Iterator[Path]:
    inside = Path("/home/alice") / re.sub(r"\W", "_", request.node.name)
    d = shared_pool.root / str(inside).lstrip("/")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    yield d
    shared_pool.condor("condor_rm", "-all", check=False)


@pytest.fixture
def daemon(tmp_path: Path, shared_pool: RefPool) -> Iterator[Daemon]:
    execute = Path(tempfile.mkdtemp(prefix="condorpy-sp-execute-", dir="/tmp"))
    execute.chmod(0o755)
    d = Daemon(tmp_path, CONFIG.format(collector=shared_pool.collector, host=HOST)
               + f"EXECUTE = {execute}\n", cpus=2)
    d.execute = execute      # type: ignore[attr-defined]
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()
    shutil.rmtree(execute, ignore_errors=True)


def _addresses(pool: RefPool, kind: str) -> list[str]:
    res = pool.condor("condor_status", kind, "-af", "MyAddress", check=False)
    return res.stdout.split()


def test_condorpy_advertises_and_runs_transfer_jobs_behind_shared_port(
        daemon: Daemon, shared_pool: RefPool, submitdir: Path) -> None:
    assert "?sock=collector" in shared_pool.collector
    assert all("sock=" in a for a in _addresses(shared_pool, "-schedd")), \
        "the schedd is not behind condor_shared_port"
    wait_for(lambda: any(HOST in line for line in shared_pool.condor(
        "condor_status", "-af", "Name", check=False).stdout.splitlines()), 60,
        lambda: daemon.output()[-3000:])
    (submitdir / "job.sh").write_text("#!/bin/sh\ncat in.bin | md5sum > sum.txt\n"
                                      "echo \"$1\" > arg.txt\n")
    (submitdir / "job.sh").chmod(0o755)
    data = os.urandom(2 * 1024 * 1024 + 5)
    (submitdir / "in.bin").write_bytes(data)
    cluster = _submit(shared_pool, submitdir, """\
executable = job.sh
arguments = $(Process)
transfer_input_files = in.bin
transfer_output_remaps = "sum.txt = sum.$(Process)"
output = out.$(Process)
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue 2
""")
    wait_for(lambda: queued(shared_pool, cluster) == 0, 240,
             lambda: f"still queued: {shared_pool.condor('condor_q', '-nobatch', '-hold', check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-4000:]}")
    done = history(shared_pool, cluster, "JobStatus", "ExitCode", "LastRemoteHost")
    assert sorted(done) == [0, 1], done
    for proc, row in done.items():
        assert row[:2] == ["4", "0"], f"{done}\n{daemon.output()[-4000:]}"
        assert row[2].endswith(f"@{HOST}")
        assert (submitdir / f"sum.{proc}").read_text().split()[0] == \
            hashlib.md5(data).hexdigest()
    out = daemon.output()
    assert "condor_shared_port" not in out and "ALIVE for" not in out, out[-4000:]
    # the schedd heard condorpy's ALIVEs for the claim that waited
    sched = shared_pool.log("SchedLog")
    assert "(ALIVE)" in sched, sched[-3000:]


def test_condor_rm_behind_shared_port(daemon: Daemon, shared_pool: RefPool,
                                      submitdir: Path) -> None:
    wait_for(lambda: any(HOST in line for line in shared_pool.condor(
        "condor_status", "-af", "Name", check=False).stdout.splitlines()), 60,
        lambda: daemon.output()[-3000:])
    (submitdir / "job.sh").write_text("#!/bin/sh\ntouch started\nexec sleep 300\n")
    (submitdir / "job.sh").chmod(0o755)
    cluster = _submit(shared_pool, submitdir, """\
executable = job.sh
when_to_transfer_output = ON_EXIT_OR_EVICT
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    execute: Path = daemon.execute      # type: ignore[attr-defined]
    wait_for(lambda: any((p / "started").exists() for p in execute.glob("dir_pool_*")), 180,
             lambda: f"never started: {daemon.output()[-4000:]}")
    shared_pool.condor("condor_rm", str(cluster))
    wait_for(lambda: "Job was aborted" in (submitdir / "job.log").read_text(), 60,
             lambda: daemon.output()[-3000:])
    wait_for(lambda: not list(execute.glob("dir_pool_*")), 60,
             lambda: daemon.output()[-3000:])
    _chown_alice(shared_pool, submitdir)


def test_a_claim_the_daemon_ends_is_released_to_its_schedd(
        daemon: Daemon, shared_pool: RefPool, submitdir: Path) -> None:
    # Two jobs, two claims: the second waits idle (JOB_START_DELAY) when the daemon
    # stops. The running job's claim is kept for its shadow to reconnect to; the idle
    # one ends with the daemon and its schedd hears so (RELEASE_CLAIM), as HTCondor's
    # startd tells it, instead of later starting the second job on a claim that is gone.
    wait_for(lambda: any(HOST in line for line in shared_pool.condor(
        "condor_status", "-af", "Name", check=False).stdout.splitlines()), 60,
        lambda: daemon.output()[-3000:])
    (submitdir / "job.sh").write_text("#!/bin/sh\ntouch started.$1\nexec sleep 300\n")
    (submitdir / "job.sh").chmod(0o755)
    _submit(shared_pool, submitdir, """\
executable = job.sh
arguments = $(Process)
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue 2
""")
    # the first job runs (its input is in, its claim stored); the second claim waits
    execute: Path = daemon.execute      # type: ignore[attr-defined]
    wait_for(lambda: daemon.output().count(" claimed by ") >= 2
             and any((p / "started.0").exists() for p in execute.glob("dir_pool_*")), 180,
             lambda: daemon.output()[-3000:])
    heard = "Got RELEASE_CLAIM from"     # the schedd drops the match record then
    before = shared_pool.log("SchedLog").count(heard)
    daemon.stop()
    out = daemon.output()
    assert re.search(r"stopping: claim \S+ released; its schedd", out), out[-3000:]
    assert re.search(r"stopping: job \S+ of \S+ runs on", out), out[-3000:]
    wait_for(lambda: shared_pool.log("SchedLog").count(heard) > before, 30,
             lambda: shared_pool.log("SchedLog")[-3000:])
