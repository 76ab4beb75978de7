"""Containment without cgroups: the job's family from /proc, the starter as subreaper,
kills that leave nothing behind; the sandbox meter and request_disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.machine import containment
from condorpy.machine.roots import HostRoots
from condorpy.starter import cgroup, proctrack
from condorpy.starter.holds import HoldCode
from condorpy.starter.protocol import Command
from condorpy.starter.settings import StarterSettings
from condorpy.starter.usage import TreeMeter, Usage, disk_limit_kb

from .helpers import pids_with_marker, run, start

ROOT = Path(__file__).resolve().parents[2]


def st(pid: int, ppid: int, sid: int, start: int = 100, state: str = "S") -> proctrack.ProcStat:
    return proctrack.ProcStat(pid=pid, ppid=ppid, pgrp=pid, session=sid, utime_ticks=1,
                              stime_ticks=1, rss_pages=1, state=state, start_ticks=start)


# --- the family, from made-up process tables ---------------------------------------

def test_family_is_the_descendants_the_session_and_what_was_seen() -> None:
    table = {p.pid: p for p in [
        st(1, 0, 1), st(50, 1, 50),                  # init, the starter
        st(60, 50, 60),                              # the job (session 60)
        st(61, 60, 60), st(62, 61, 62),              # its child; a grandchild in a new session
        st(70, 1, 70),                               # an escaper reparented to init, seen before
        st(71, 70, 71),                              # ... and its child
        st(80, 1, 60),                               # still in the job's session
        st(90, 1, 90), st(91, 50, 91),               # unrelated; a starter child (no adopter)
    ]}
    fam = proctrack.family_of(table, session=60, known={60: 100, 70: 100}, adopter=None)
    assert sorted(fam) == [60, 61, 62, 70, 71, 80]


def test_a_reused_pid_is_not_taken_for_a_process_seen_before() -> None:
    table = {p.pid: p for p in [st(60, 50, 60), st(70, 1, 70, start=999)]}
    fam = proctrack.family_of(table, session=60, known={60: 100, 70: 100}, adopter=None)
    assert sorted(fam) == [60]


def test_the_subreaper_starter_adopts_its_children_but_is_not_one() -> None:
    table = {p.pid: p for p in [st(50, 1, 50), st(60, 50, 60), st(91, 50, 91),
                                st(92, 91, 92), st(93, 1, 93)]}
    fam = proctrack.family_of(table, session=60, known={60: 100}, adopter=50)
    assert sorted(fam) == [60, 91, 92]


def test_stat_parsing_keeps_state_and_start_time() -> None:
    line = ("4242 (a (b) c) T 1 4242 4242 0 -1 4194560 0 0 0 0 7 3 2 1 20 0 1 0 "
            "123456 1000 55 18446744073709551615")
    p = proctrack.parse_stat(line)
    assert (p.pid, p.state, p.ppid, p.utime_ticks, p.stime_ticks, p.cutime_ticks,
            p.cstime_ticks, p.start_ticks, p.rss_pages) == (4242, "T", 1, 7, 3, 2, 1,
                                                             123456, 55)


# --- a real starter process: the subreaper and the kill sweeps ------------------------

@pytest.fixture
def work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="condorpy-contain-"))
    os.chmod(d, 0o755)
    for sub in ("execute", "out"):
        (d / sub).mkdir()
        os.chmod(d / sub, 0o777 if sub == "out" else 0o755)
    (d / "slot.ad").write_text('Name = "slot1@contain"\nCpus = 1\n')
    yield d
    shutil.rmtree(d, ignore_errors=True)


def marked_sleep(work: Path, marker: str) -> str:
    """A copy of sleep named ``marker``: its processes carry the marker in their
    command line (dash, the /bin/sh here, has no ``exec -a``)."""
    path = work / marker
    shutil.copy("/bin/sleep", path)
    os.chmod(path, 0o755)
    return str(path)


def run_starter(work: Path, script: str, marker: str) -> tuple[ClassAd, str]:
    """``condorpy starter`` in a process of its own (so it is a subreaper) running
    ``script``; returns the final ad and its standard error."""
    (work / "job.sh").write_text(script.replace("MARKER", marked_sleep(work, marker)))
    os.chmod(work / "job.sh", 0o755)
    (work / "job.ad").write_text(f'ClusterId = 3\nProcId = 0\nOwner = "nobody"\n'
                                 f'Cmd = "{work / "job.sh"}"\n')
    env = dict(os.environ, PYTHONPATH=str(ROOT), CONDOR_CONFIG="/dev/null")
    res = subprocess.run([sys.executable, "-m", "condorpy", "starter", "--job-ad",
                          str(work / "job.ad"), "--slot-ad", str(work / "slot.ad"),
                          "--execute", str(work / "execute"), "--result",
                          str(work / "final.ad"), "--set", "CONDORPY_USAGE_INTERVAL=0.2",
                          "--set", "CONDORPY_USE_CGROUPS=false"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return ClassAd.parse_old((work / "final.ad").read_text()), res.stderr


# a new session, then a double fork whose middle process exits: the grandchild's
# parent is gone before the starter ever samples
ESCAPER = """#!/bin/sh
setsid sh -c '(MARKER 600 &) ; exit 0' &
sleep 0.5
exit 0
"""

# keeps making new escapers until the very end
FORKER = """#!/bin/sh
setsid sh -c 'while :; do sh -c "(MARKER 600 &)"; done' &
sleep 1
exit 0
"""


@pytest.mark.parametrize("script", [ESCAPER, FORKER], ids=["double-fork", "fork-loop"])
def test_nothing_the_job_started_outlives_it(work: Path, script: str) -> None:
    marker = f"escaper{os.getpid()}x{len(script)}"
    try:
        ad, _err = run_starter(work, script, marker)
        assert ad["ExitCode"] == 0
        assert ad["NumPids"] >= 2                   # it did start them
        assert pids_with_marker(marker) == []
    finally:
        for pid in pids_with_marker(marker):
            os.kill(pid, 9)


def test_the_starter_is_the_subreaper_of_the_escaped_process(work: Path) -> None:
    """While the job runs, the escaped grandchild's parent is the starter, not init."""
    marker = f"adopted{os.getpid()}"
    script = """#!/bin/sh
setsid sh -c '(MARKER 600 &) ; exit 0' &
sleep 1.5
ps -o ppid= -p $(pgrep -f MARKER | head -n1) > OUT
echo $PPID >> OUT
"""
    out = work / "out" / "ppids"
    try:
        run_starter(work, script.replace("OUT", str(out)), marker)
        ppids = out.read_text().split()
        assert len(ppids) == 2 and ppids[0] == ppids[1] and ppids[0] != "1", ppids
    finally:
        for pid in pids_with_marker(marker):
            os.kill(pid, 9)


def test_subreaper_flag() -> None:
    """prctl round trip, in a child so that the test process is left as it was."""
    pid = os.fork()
    if pid == 0:
        ok = proctrack.set_child_subreaper() and proctrack.is_child_subreaper()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_an_orphans_cpu_is_counted_once_when_the_starter_reaps_it() -> None:
    """In a child made subreaper: an orphan burns CPU and ends; the scan that finds its
    zombie and reaps it counts its time once, not once from /proc and once from wait4."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()                                 # a session of its own: the job's
            proctrack.set_child_subreaper()
            me = os.getpid()
            mid = os.fork()
            if mid == 0:
                if os.fork() == 0:                      # the orphan
                    end = time.process_time() + 0.3
                    while time.process_time() < end:
                        pass
                    os._exit(0)
                os._exit(0)
            os.waitpid(mid, 0)
            family = proctrack.ProcessFamily("/proc", mid, os.getsid(0), adopter=me)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                found = family.members()
                if any(st.zombie for st in found.values() if st.ppid == me):
                    break
                time.sleep(0.02)
            first = family.usage()                      # finds the zombie, then reaps it
            second = family.usage()                     # its time now from wait4 alone
            burnt = family.reaped_user_s + family.reaped_system_s
            ok = burnt >= 0.2 and abs(first.user_s - second.user_s) < 0.05 and \
                first.user_s + first.system_s < burnt + 0.05
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


# --- the sandbox meter ----------------------------------------------------------------

def test_meter_counts_blocks_once_per_inode_and_never_follows_links(tmp_path: Path) -> None:
    box = tmp_path / "box"
    (box / "a" / "b").mkdir(parents=True)
    (box / "a" / "b" / "big").write_bytes(os.urandom(1 << 20))
    os.link(box / "a" / "b" / "big", box / "hard")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "huge").write_bytes(os.urandom(4 << 20))
    os.symlink(outside, box / "link")
    kb = TreeMeter(str(box)).measure()
    assert 1024 <= kb < 1024 + 64                 # one MiB and three directories
    meter = TreeMeter(str(box))
    assert meter.begin()
    steps = 0
    while meter.step(1) is None:                  # one entry a slice
        steps += 1
    assert steps >= 4 and meter.files == 5
    assert not meter.walking


def test_meter_of_a_missing_or_linked_sandbox_is_nothing(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_bytes(b"x" * 100000)
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert TreeMeter(str(tmp_path / "link")).measure() == 0
    assert TreeMeter(str(tmp_path / "none")).measure() == 0


def test_disk_limit_is_the_slots_disk_else_the_request() -> None:
    assert disk_limit_kb({"Disk": 10240}, {"RequestDisk": 5}) == 10240
    assert disk_limit_kb({}, {"RequestDisk": 2048}) == 2048
    assert disk_limit_kb({"Disk": True}, {"RequestDisk": "x"}) is None


def test_usage_reports_disk_peaks_only_once_measured() -> None:
    u = Usage()
    assert "DiskUsage" not in u.attributes()
    u.add_disk(500, 3)
    u.add_disk(200, 9)
    assert (u.attributes()["DiskUsage"], u.attributes()["ScratchDirFileCount"]) == (500, 9)


# --- request_disk through a starter ----------------------------------------------------

@pytest.fixture
def settings(work: Path) -> StarterSettings:
    return StarterSettings(execute=str(work / "execute"), update_interval_s=0.05,
                           kill_timeout_s=5, use_cgroups=False)


WRITER = "head -c 3000000 /dev/zero > $_CONDOR_SCRATCH_DIR/fill; exec MARKER 30"


def test_disk_usage_is_reported_while_the_job_runs(settings: StarterSettings,
                                                   work: Path) -> None:
    marker = f"diskuser{os.getpid()}"
    job = {"Cmd": "/bin/sh", "ClusterId": 9, "ProcId": 0,
           "Arguments": f"-c '{WRITER.replace('MARKER', marked_sleep(work, marker))}'"}
    running = start(job, {"Name": "slot1_1@h", "Disk": 10240}, settings, tag="diskuser")
    client = running.client()
    try:
        seen = 0
        while seen < 2900:
            msg = client.read()
            assert msg is not None, "the starter ended before it reported the disk"
            if msg.get("event") == "usage":
                seen = int(msg["usage"].get("DiskUsage", 0))
                assert msg["usage"]["ScratchDirFileCount"] >= 1
        client.send(Command.HARD_KILL)
    finally:
        client.close()
    out = running.outcome()
    assert out.hold is None and out.vacated
    assert int(str(out.attributes["DiskUsage"])) >= 2900


def test_a_job_over_its_disk_is_held(settings: StarterSettings, work: Path) -> None:
    marker = f"diskhog{os.getpid()}"
    job = {"Cmd": "/bin/sh", "ClusterId": 9, "ProcId": 0, "RequestDisk": 1024,
           "Arguments": f"-c '{WRITER.replace('MARKER', marked_sleep(work, marker))}'"}
    out = run(job, {"Name": "slot1_1@h", "Disk": 1024}, settings)
    assert out.hold is not None
    assert out.attributes["HoldReasonCode"] == HoldCode.JOB_OUT_OF_RESOURCES
    assert int(HoldCode.JOB_OUT_OF_RESOURCES) == 34
    assert out.attributes["HoldReasonSubCode"] == 104
    assert "exceeded allocated disk" in str(out.attributes["HoldReason"])
    assert int(str(out.attributes["DiskUsage"])) >= 2900
    assert not out.vacated
    assert pids_with_marker(marker) == []


def test_disk_is_measured_but_not_enforced_when_turned_off(settings: StarterSettings) -> None:
    job = {"Cmd": "/bin/sh", "Arguments": "-c 'head -c 2000000 /dev/zero > "
           "$_CONDOR_SCRATCH_DIR/f; sleep 0.3'", "ClusterId": 9, "ProcId": 1}
    out = run(job, {"Name": "slot1@h", "Disk": 100}, replace(settings, enforce_disk=False))
    assert out.hold is None and out.attributes["ExitCode"] == 0
    assert int(str(out.attributes["DiskUsage"])) >= 1900


# --- what the slot ad says -------------------------------------------------------------

def cfg(**knobs: object) -> Config:
    return Config.from_mapping(knobs)


def test_containment_facts_from_the_cgroup_tree(tmp_path: Path) -> None:
    (tmp_path / "cg").mkdir()
    roots = HostRoots(cgroup=tmp_path / "cg", proc=tmp_path / "proc")
    assert containment.containment_facts(cfg(), roots, euid=0) == {
        "CondorpyJobContainment": "subreaper", "CondorpyDiskEnforcement": "hold"}
    (tmp_path / "cg" / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    facts = containment.containment_facts(cfg(), roots, euid=0)
    assert facts["CondorpyJobContainment"] == "cgroup"
    assert facts["CondorpyCgroupControllers"] == "cpu memory pids"
    off = containment.containment_facts(cfg(CONDORPY_USE_CGROUPS="false",
                                            CONDORPY_ENFORCE_DISK_USAGE="false"),
                                        roots, euid=0)
    assert off == {"CondorpyJobContainment": "subreaper", "CondorpyDiskEnforcement": "none"}
    # an ordinary user needs its own cgroup delegated
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/user/me\n")
    assert containment.containment_facts(cfg(), roots, euid=1000)[
        "CondorpyJobContainment"] == "subreaper"          # /user/me is not there
    (tmp_path / "cg" / "user" / "me").mkdir(parents=True)
    (tmp_path / "cg" / "user" / "me" / "cgroup.procs").write_text("")
    assert containment.cgroup_v2_usable(roots, 1000)      # writable (we are its owner)


def test_the_machine_probe_and_the_starter_need_the_same_controllers() -> None:
    assert containment.NEEDED_CONTROLLERS == cgroup.NEEDED_CONTROLLERS
