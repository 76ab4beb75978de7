"""A docker universe job submitted with the 23.9.6 schedd's condor_submit runs on
condorpy as on HTCondor's EP: matched only to a slot whose docker probe said HasDocker
(the Requirements condor_submit wrote say so; condorpy adds nothing), its container
attributes carried unchanged into the claim and the starter's job ad, run in a
container of a real dockerd with its input transferred in and its output back, and
left idle, with the unmet clause shown by condor_q -better-analyze, where the probe
found no Docker.

The dockerd is a scratch one of the module's own (its own data and exec roots and
socket, no bridge, no iptables), reached through DOCKER_HOST in condorpy's environment
as the docker client reads it; the image is a busybox root imported offline."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from tests.busybox_image import busybox_tar
from tests.pool.jobs import history, queued
from tests.pool.jobs import submit_inside as _submit
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon

pytestmark = pytest.mark.pool

HOST = "condorpy-docker.example"
NODOCKER_HOST = "condorpy-nodocker.example"
IMAGE = "condorpy-test/busybox:1"
DOCKERD = "/usr/sbin/dockerd"
DOCKER = "/usr/bin/docker"

# a claimed slot's ad carries the job's container attributes (STARTD_JOB_ATTRS) as
# condorpy received them; HasDocker and DockerVersion are the probe's alone
CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
UPDATE_INTERVAL = 600
NUM_CPUS = 1
MEMORY = 1024
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) WantDocker DockerImage DockerNetworkType
"""

# the job waits for a file the test puts in its scratch directory once it has looked
# at the claim, so the look needs no timing
JOB = """\
universe = docker
docker_image = {image}
docker_network_type = none
executable = /bin/sh
transfer_executable = false
arguments = "-c 'while [ ! -e go ]; do sleep 0.2; done; cat in.txt > result.txt; \
echo in-container >> result.txt; exit 3'"
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
transfer_input_files = in.txt
transfer_output_files = result.txt
output = out.txt
error = err.txt
requirements = regexp("condorpy", TARGET.CondorVersion) && TARGET.Machine == "{host}"
queue
"""


def _need_docker() -> None:
    """docker.io and busybox-static, as the real-kernel lane installs them, where they
    are missing (one apt at a time: that lane may be installing its own)."""
    want = [pkg for path, pkg in ((DOCKERD, "docker.io"), ("/bin/busybox", "busybox-static"))
            if not os.path.exists(path)]
    if not want:
        return
    apt = ["flock", "/tmp/condorpy-apt.lock", "apt-get", "-o", "DPkg::Lock::Timeout=600"]
    for argv in ([*apt, "update", "-qq"], [*apt, "install", "-y", "-qq", *want]):
        subprocess.run(argv, capture_output=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def docker_host() -> Iterator[str]:
    """A scratch dockerd holding the busybox image; its DOCKER_HOST."""
    _need_docker()
    if not os.path.exists(DOCKERD):
        pytest.skip(f"{DOCKERD} is missing and docker.io could not be installed")
    root = Path(tempfile.mkdtemp(prefix="condorpy-pool-docker-", dir="/tmp"))
    host = f"unix://{root}/docker.sock"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DOCKER_HOST": host}
    log = open(root / "dockerd.log", "wb")
    proc = subprocess.Popen(
        [DOCKERD, "-H", host, "--data-root", str(root / "data"),
         "--exec-root", str(root / "exec"), "--pidfile", str(root / "dockerd.pid"),
         "--storage-driver", "vfs", "--iptables=false", "--ip-masq=false",
         "--bridge=none", "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while subprocess.run([DOCKER, "version"], env=env, capture_output=True,
                             check=False).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("dockerd did not come up: "
                                     + (root / "dockerd.log").read_text()[-2000:])
            time.sleep(0.2)
        imported = subprocess.run([DOCKER, "import", "-", IMAGE], input=busybox_tar(),
                                  env=env, capture_output=True, check=False)
        assert imported.returncode == 0, imported.stderr
        yield host
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        # what the daemon mounted under its roots goes before its files do
        subprocess.run(["umount", "-R", "-l", str(root / "exec")], capture_output=True,
                       check=False)
        shutil.rmtree(root, ignore_errors=True)


class DockerDaemon(Daemon):
    """condorpy with DOCKER_HOST in its environment, as an administrator would set it."""

    def __init__(self, base: Path, extra: str, docker_host: str, execute: Path) -> None:
        super().__init__(base, extra + f"EXECUTE = {execute}\n", cpus=1)
        self.docker_host = docker_host
        self.execute = execute

    def env(self) -> dict[str, str]:
        return {**super().env(), "DOCKER_HOST": self.docker_host}


def _execute() -> Path:
    # the job's user (nobody: alice has no account here) must reach its scratch
    # directory, so EXECUTE is world-searchable, as HTCondor wants it
    execute = Path(tempfile.mkdtemp(prefix="condorpy-docker-execute-", dir="/tmp"))
    execute.chmod(0o755)
    return execute


@pytest.fixture
def daemon(tmp_path: Path, refpool: RefPool, docker_host: str) -> Iterator[DockerDaemon]:
    execute = _execute()
    d = DockerDaemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST),
                     docker_host, execute)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()
    shutil.rmtree(execute, ignore_errors=True)


def wait_for(cond: Callable[[], bool], timeout: float, why: Callable[[], str]) -> None:
    # each look is a pool tool run in the chroot: once a second is enough
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(why())
        time.sleep(1)


def slot_ads(pool: RefPool, host: str) -> dict[str, list[str]]:
    # tab-separated: DockerVersion has a comma in it
    res = pool.condor("condor_status", "-constraint", f'Machine == "{host}"', "-af:t",
                      "Name", "HasDocker", "DockerVersion", "State", "WantDocker",
                      "DockerImage", "DockerNetworkType", check=False)
    out = {}
    for line in res.stdout.splitlines():
        name, *rest = [p.strip() for p in line.split("\t")]
        out[name.split("@")[0]] = rest
    return out


def job_attrs(pool: RefPool, job: str, *attrs: str) -> list[str]:
    res = pool.condor("condor_q", job, "-af:tr", *attrs, check=False)
    return [p.strip() for p in res.stdout.strip("\n").split("\t")]


def job_sandbox(d: DockerDaemon) -> Path | None:
    for path in d.execute.glob("dir_*"):
        if (path / ".job.ad").exists():
            return path
    return None


def test_a_docker_job_runs_in_a_container_on_a_slot_the_probe_said_has_docker(
        daemon: DockerDaemon, refpool: RefPool, submitdir: Path) -> None:
    wait_for(lambda: slot_ads(refpool, HOST).get("slot1", ["undefined"])[0] != "undefined", 60,
             lambda: f"slots: {slot_ads(refpool, HOST)}\ndaemon: {daemon.whole_log()[-4000:]}")
    has, version = slot_ads(refpool, HOST)["slot1"][:2]
    # the probe's word, from the scratch daemon's client
    assert has == "true", slot_ads(refpool, HOST)
    assert version.startswith("Docker version "), version

    (submitdir / "in.txt").write_text("input line\n")
    cluster = _submit(refpool, submitdir, JOB.format(image=IMAGE, host=HOST))
    job = f"{cluster}.0"
    # as condor_submit 23.9.6 wrote it: a vanilla job that wants Docker
    universe, want, image, req = job_attrs(refpool, job, "JobUniverse", "WantDocker",
                                           "DockerImage", "Requirements")
    assert (universe, want, image) == ("5", "true", f'"{IMAGE}"')
    assert "TARGET.HasDocker" in req

    wait_for(lambda: job_sandbox(daemon) is not None, 150,
             lambda: f"no job ad in {list(daemon.execute.iterdir())}\n"
                     f"{refpool.condor('condor_q', '-better-analyze', job, check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-3000:]}")
    sandbox = job_sandbox(daemon)
    assert sandbox is not None
    # the starter got the shadow's job ad with the container attributes as written
    got = ClassAd.parse_old((sandbox / ".job.ad").read_text())
    assert (got.evaluate("WantDocker"), got.evaluate("DockerImage"),
            got.evaluate("DockerNetworkType"), got.evaluate("JobUniverse")) == \
        (True, IMAGE, "none", 5)
    assert "TARGET.HasDocker" in str(got.lookup("Requirements"))
    # and the claim (slot1's d-slot) carries them unchanged (sent to the collector
    # when it happens)
    wait_for(lambda: slot_ads(refpool, HOST).get("slot1_1", [""] * 3)[2] == "Claimed", 60,
             lambda: f"slots: {slot_ads(refpool, HOST)}")
    assert slot_ads(refpool, HOST)["slot1_1"][3:] == ["true", IMAGE, "none"]

    (sandbox / "go").write_text("")
    wait_for(lambda: queued(refpool, cluster) == 0, 120,
             lambda: f"still queued: {refpool.condor('condor_q', '-l', job, check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-4000:]}")
    done = history(refpool, cluster, "JobStatus", "ExitCode", "LastRemoteHost")
    assert done[0][:2] == ["4", "3"], f"{done}\n{daemon.output()[-4000:]}"
    assert done[0][2].endswith(f"@{HOST}")
    assert (submitdir / "result.txt").read_text() == "input line\nin-container\n"


@pytest.fixture
def nodocker_daemon(tmp_path: Path, refpool: RefPool) -> Iterator[Daemon]:
    # the client named by DOCKER is missing: the probe says no Docker
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=NODOCKER_HOST)
               + f"DOCKER = {tmp_path}/no-docker\n", cpus=1)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def test_a_docker_job_stays_idle_where_the_probe_found_no_docker(
        nodocker_daemon: Daemon, refpool: RefPool, submitdir: Path) -> None:
    wait_for(lambda: "slot1" in slot_ads(refpool, NODOCKER_HOST), 60,
             lambda: f"slots: {slot_ads(refpool, NODOCKER_HOST)}\n"
                     f"daemon: {nodocker_daemon.output()[-2000:]}")
    # as on HTCondor's EP: no client, no HasDocker at all
    assert slot_ads(refpool, NODOCKER_HOST)["slot1"][:2] == ["undefined", "undefined"]
    (submitdir / "in.txt").write_text("input line\n")
    cluster = _submit(refpool, submitdir, JOB.format(image=IMAGE, host=NODOCKER_HOST))
    job = f"{cluster}.0"
    # one negotiation looked at the free slot and turned it down
    wait_for(lambda: job_attrs(refpool, job, "LastRejMatchReason")[0]
             not in ("", "undefined") or job_attrs(refpool, job, "JobStatus") != ["1"], 150,
             lambda: refpool.condor("condor_q", "-better-analyze", job, check=False).stdout)
    assert job_attrs(refpool, job, "JobStatus") == ["1"]
    assert slot_ads(refpool, NODOCKER_HOST)["slot1"][2] == "Unclaimed"
    analysis = refpool.condor("condor_q", "-better-analyze", job).stdout
    row = next(line for line in analysis.splitlines()
               if line.startswith("[") and "HasDocker" in line)
    # no slot satisfies the clause
    assert row.split()[1] == "0", analysis


def test_a_docker_job_whose_image_cannot_be_had_goes_back_to_idle(
        daemon: DockerDaemon, refpool: RefPool, submitdir: Path) -> None:
    # no such image in the daemon, and no registry to pull it from: the runtime fails
    # the start, which is the machine's fault, not the job's, so it is requeued
    (submitdir / "in.txt").write_text("input line\n")
    cluster = _submit(refpool, submitdir,
                      JOB.format(image="condorpy-test/missing:1", host=HOST))
    job = f"{cluster}.0"

    seen: list[list[str]] = []

    def requeued() -> bool:
        # one read of the queue: the job is matched and started again and again
        seen[:] = [job_attrs(refpool, job, "JobStatus", "NumShadowStarts", "NumJobStarts",
                             "LastJobStatus", "HoldReasonCode", "LastVacateTime")]
        return seen[0][0] == "1" and seen[0][1] not in ("", "undefined", "0")
    wait_for(requeued, 150,
             lambda: f"{refpool.condor('condor_q', '-l', job, check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-3000:]}")
    status, shadow_starts, job_starts, last, hold, vacated = seen[0]
    # back in the queue as the 23.9.6 schedd records a requeue: it ran, it was not
    # held, and it went back to idle from running
    assert (last, hold) == ("2", "undefined"), seen
    assert int(job_starts) >= 1 and vacated != "undefined", seen
    assert not history(refpool, cluster, "JobStatus")
    assert not (submitdir / "result.txt").exists()
