"""A docker universe job submitted with the 23.9.6 schedd's condor_submit reaches
condorpy as HTCondor's EP receives it: matched only to a slot that advertises
HasDocker (the Requirements condor_submit wrote say so; condorpy adds nothing), its
container attributes carried unchanged into the claim and the starter's job ad, and
left idle, with the unmet clause shown by condor_q -better-analyze, where no free slot
says HasDocker.

Running the container itself is the runtime's part (docs/containers.md); here the
slot's HasDocker is set by configuration, so the test needs no Docker daemon."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from tests.pool.jobs import submit
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, sandboxes

pytestmark = pytest.mark.pool

HOST = "condorpy-docker.example"

# slot1 says it runs Docker jobs, slot2 that it does not; a claimed slot's ad carries
# the job's container attributes (STARTD_JOB_ATTRS) as condorpy received them
CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
UPDATE_INTERVAL = 600
NUM_CPUS = 2
MEMORY = 2048
NUM_SLOTS = 2
STARTD_ATTRS = $(STARTD_ATTRS) HasDocker
HasDocker = false
SLOT1_HasDocker = true
STARTD_JOB_ATTRS = $(STARTD_JOB_ATTRS) WantDocker DockerImage DockerNetworkType
"""

JOB = """\
universe = docker
docker_image = debian:12
docker_network_type = none
executable = /bin/sleep
arguments = 600
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue 2
"""


@pytest.fixture
def daemon(tmp_path: Path, refpool: RefPool) -> Iterator[Daemon]:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=2)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def wait_for(cond: Callable[[], bool], timeout: float, why: Callable[[], str]) -> None:
    # each look is a pool tool run in the chroot: once a second is enough
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(why())
        time.sleep(1)


def slot_ads(pool: RefPool) -> dict[str, list[str]]:
    res = pool.condor("condor_status", "-constraint", f'Machine == "{HOST}"', "-af:,",
                      "Name", "HasDocker", "State", "WantDocker", "DockerImage",
                      "DockerNetworkType", check=False)
    out = {}
    for line in res.stdout.splitlines():
        name, *rest = [p.strip() for p in line.split(",")]
        out[name.split("@")[0]] = rest
    return out


def job_attrs(pool: RefPool, job: str, *attrs: str) -> list[str]:
    res = pool.condor("condor_q", job, "-af:tr", *attrs, check=False)
    return [p.strip() for p in res.stdout.strip("\n").split("\t")]


def job_ad_in_sandbox(d: Daemon) -> ClassAd | None:
    for name in sandboxes(d):
        path = d.state / "execute" / name / ".job.ad"
        if path.exists():
            return ClassAd.parse_old(path.read_text())
    return None


def test_docker_jobs_match_only_a_slot_with_has_docker(
        daemon: Daemon, refpool: RefPool, jobdir: Path) -> None:
    wait_for(lambda: len(slot_ads(refpool)) == 2, 60,
             lambda: f"slots: {slot_ads(refpool)}\ndaemon: {daemon.output()[-2000:]}")
    assert {name: ad[0] for name, ad in slot_ads(refpool).items()} == \
        {"slot1": "true", "slot2": "false"}

    # two docker jobs, one negotiation: one takes slot1, the other finds no slot,
    # since slot2 is free but says no Docker
    cluster = submit(refpool, jobdir, JOB)
    jobs = (f"{cluster}.0", f"{cluster}.1")
    # as condor_submit 23.9.6 wrote it: a vanilla job that wants Docker
    universe, want, image, req = job_attrs(refpool, jobs[0], "JobUniverse", "WantDocker",
                                           "DockerImage", "Requirements")
    assert (universe, want, image) == ("5", "true", '"debian:12"')
    assert "TARGET.HasDocker" in req

    def settled() -> bool:
        # UPDATE_INTERVAL is long: a claim is sent to the collector when it happens
        rejected = [j for j in jobs
                    if job_attrs(refpool, j, "LastRejMatchReason")[0] not in ("", "undefined")]
        return slot_ads(refpool).get("slot1", ["", ""])[1] == "Claimed" and len(rejected) == 1
    wait_for(settled, 150,
             lambda: f"slots: {slot_ads(refpool)}\n"
                     f"{refpool.condor('condor_q', '-better-analyze', str(cluster), check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-3000:]}")
    slots = slot_ads(refpool)
    # the claim carries the job's container attributes unchanged
    assert slots["slot1"][2:] == ["true", "debian:12", "none"], slots
    assert slots["slot2"][1] == "Unclaimed", slots
    idle = next(j for j in jobs if job_attrs(refpool, j, "JobStatus") == ["1"])
    analysis = refpool.condor("condor_q", "-better-analyze", idle).stdout
    row = next(line for line in analysis.splitlines()
               if line.startswith("[") and "HasDocker" in line)
    # one slot (slot1, busy with the other job) satisfies the clause, slot2 does not
    assert row.split()[1] == "1", analysis

    # and the starter got the shadow's job ad with them as they were written
    wait_for(lambda: job_ad_in_sandbox(daemon) is not None, 60,
             lambda: f"no job ad in {sandboxes(daemon)}\ndaemon: {daemon.output()[-3000:]}")
    got = job_ad_in_sandbox(daemon)
    assert got is not None
    assert (got.evaluate("WantDocker"), got.evaluate("DockerImage"),
            got.evaluate("DockerNetworkType"), got.evaluate("JobUniverse")) == \
        (True, "debian:12", "none", 5)
    assert "TARGET.HasDocker" in str(got.lookup("Requirements"))
