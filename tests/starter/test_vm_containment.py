"""Containment and request_disk where a real cgroup v2 holds the job (the `tests/vm/run`
lane, as root): the cgroup path stays as it was (no subreaper: the cgroup is what
catches an escaper), the job's ad says ``CgroupEnforced``, the machine says
``cgroup``, and the disk rule holds a job there too."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.machine.containment import containment_facts
from condorpy.machine.roots import HostRoots
from condorpy.starter.protocol import Command

from .helpers import pids_with_marker, run, start
from .test_vm_cgroup import BASE, MOUNT, settings, work  # noqa: F401

pytestmark = pytest.mark.vm
ROOT = Path(__file__).resolve().parents[2]

WRITER = ("head -c 3000000 /dev/zero > $_CONDOR_SCRATCH_DIR/fill; "
          "exec {bin} 30")


def marked_sleep(work: Path, marker: str) -> str:
    path = work / marker
    path.write_bytes(Path("/bin/sleep").read_bytes())
    os.chmod(path, 0o755)
    return str(path)


def sh(script: str) -> dict[str, object]:
    return {"Cmd": "/bin/sh", "Arguments": f"-c '{script}'", "ClusterId": 1, "ProcId": 0}


def test_the_machine_says_cgroup(work: Path) -> None:
    facts = containment_facts(Config.from_mapping({}), HostRoots(), euid=0)
    assert facts["CondorpyJobContainment"] == "cgroup"
    assert facts["CondorpyCgroupControllers"] == "cpu memory pids"


def test_a_cgroup_job_says_cgroup_enforced_and_shows_its_disk(work: Path) -> None:
    marker = f"vmdisk{os.getpid()}"
    job = sh(WRITER.format(bin=marked_sleep(work, marker)))
    running = start(job, {"Name": "slot1_1@vm", "Disk": 10240}, settings(work),
                    tag="vmdisk")
    client = running.client()
    try:
        hello = client.wait_for("event", "hello")
        assert hello["containment"] == "cgroup" and hello["cgroup"]
        seen: dict[str, object] = {}
        while int(str(seen.get("DiskUsage", 0))) < 2900:
            msg = client.read()
            assert msg is not None, "the starter ended before it reported the disk"
            if msg.get("event") == "usage":
                seen = msg["usage"]
        assert seen["CgroupEnforced"] is True
        client.send(Command.HARD_KILL)
    finally:
        client.close()
    out = running.outcome(60)
    assert out.attributes["CgroupEnforced"] is True
    assert out.hold is None and out.vacated
    assert pids_with_marker(marker) == []


def test_a_cgroup_job_over_its_disk_is_held_and_its_cgroup_removed(work: Path) -> None:
    marker = f"vmhog{os.getpid()}"
    job = sh(WRITER.format(bin=marked_sleep(work, marker)))
    out = run(job, {"Name": "slot1_1@vm", "Disk": 1024}, settings(work))
    assert out.hold is not None, out.attributes
    assert (out.attributes["HoldReasonCode"], out.attributes["HoldReasonSubCode"]) == (34, 104)
    assert pids_with_marker(marker) == []
    assert not [p for p in Path(MOUNT, BASE).glob("job_*.slice")]


def test_with_a_cgroup_the_starter_is_no_subreaper_and_the_cgroup_catches_escapers(
        work: Path) -> None:
    """The cgroup path as it was: the escaped grandchild is not the starter's, and the
    cgroup's kill still ends it with the job."""
    marker = f"vmesc{os.getpid()}"
    binary = marked_sleep(work, marker)
    script = f"#!/bin/sh\nsetsid sh -c '({binary} 600 &); exit 0' &\nsleep 3\n"
    (work / "job.sh").write_text(script)
    os.chmod(work / "job.sh", 0o755)
    (work / "job.ad").write_text(f'ClusterId = 3\nProcId = 0\nOwner = "nobody"\n'
                                 f'Cmd = "{work / "job.sh"}"\n')
    (work / "slot.ad").write_text('Name = "slot1@vm"\nCpus = 1\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT), CONDOR_CONFIG="/dev/null")
    starter = subprocess.Popen(
        [sys.executable, "-m", "condorpy", "starter", "--job-ad", str(work / "job.ad"),
         "--slot-ad", str(work / "slot.ad"), "--execute", str(work / "execute"),
         "--result", str(work / "final.ad"), "--set", f"BASE_CGROUP=/{BASE}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        # the escaper itself (its argv[0] is the marked binary), not the short-lived
        # shell whose command line also names it
        while not (found := [p for p in pids_with_marker(marker) if _runs_marked(p, marker)]):
            assert time.monotonic() < deadline and starter.poll() is None, \
                "the escaper never ran"
            time.sleep(0.02)
        escaper = found[0]
        with open(f"/proc/{escaper}/stat") as fh:
            ppid = int(fh.read().rpartition(")")[2].split()[1])
        assert ppid != starter.pid
        _out, err = starter.communicate(timeout=120)
        assert starter.returncode == 0, err
        ad = ClassAd.parse_old((work / "final.ad").read_text())
        assert ad["CgroupEnforced"] is True
        assert pids_with_marker(marker) == []
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        for pid in pids_with_marker(marker):
            os.kill(pid, 9)


def _runs_marked(pid: int, marker: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return marker.encode() in fh.read().split(b"\0")[0]
    except OSError:
        return False
