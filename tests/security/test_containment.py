"""Issue #30 case 6 and request_disk, as attacks through a real root daemon on a host
without a delegated cgroup v2: a job's escaped processes (setsid + a double fork, a
fork loop) must not outlive it, whichever way it ends; a job writing past its
request_disk is held, and its DiskUsage is seen while it runs; the slot ad says what
this execution point enforces."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from condorpy.classad import ClassAd
from condorpy.machine.containment import cgroup_v2_usable
from condorpy.machine.roots import HostRoots
from tests.attackers import User, attacker, fingerprint, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon, wait_for

# The escaper: a new session, then a double fork whose middle process exits at once,
# so the sleeper's parent is gone before anyone could have seen it; the job itself
# goes on as ``sleep $1``. Every process of it names the test's own directory (other
# tests, of other developers too, run as the same accounts at the same time).
ESCAPE = """#!/bin/sh
setsid sh -c '({bin} 600 &); exit 0' &
{extra}
exec {bin} $1
"""
# and one that never stops making new escapers
FORK_LOOP = """setsid sh -c 'while :; do sh -c "({bin} 600 &)"; done' &"""


def procs(uid: int, marker: str | None = None) -> list[int]:
    """Live processes of ``uid`` (with ``marker`` in their command line, if given)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                status = fh.read()
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if int(fields.get("Uid", "-1").split()[0]) != uid or \
                fields.get("State", "").startswith("Z"):
            continue
        if marker is None or marker.encode() in cmdline:
            found.append(int(name))
    return found


def sleeper(user: User, name: str) -> str:
    """A copy of sleep in the user's home: its processes carry ``name``."""
    path = user.home / name
    res = user.run(["cp", "/bin/sleep", str(path)])
    assert res.returncode == 0, res.stderr
    return str(path)


def job_file(user: User, name: str, seconds: int, *, fork_loop: bool = False,
             extra_submit: str = "") -> Path:
    binary = sleeper(user, f"esc-{name}")
    script = ESCAPE.format(bin=binary,
                           extra=FORK_LOOP.format(bin=binary) if fork_loop else "")
    user.write(user.home / f"{name}.sh", script, mode=0o755)
    return user.write(user.home / f"{name}.sub",
                      f"executable = {name}.sh\narguments = {seconds}\n"
                      f"request_memory = 16\n{extra_submit}queue\n")


def submit(user: User, d: Daemon, sub: Path) -> str:
    res = user.cli(["submit", sub.name], env=d.env())
    assert res.rc == 0, res
    words = res.stdout.split()
    return words[words.index("cluster") + 1].rstrip(".") + ".0"


def q_ad(user: User, d: Daemon, job: str) -> ClassAd | None:
    res = user.cli(["q", job, "-l"], env=d.env())
    text = res.stdout.strip()
    return ClassAd.parse_old(text) if res.rc == 0 and text else None


def test_escaped_processes_die_with_their_job_however_it_ends(
        open_base: Path, attacker: User, victim: User) -> None:
    d = Daemon(open_base / "d", cpus=4)
    d.start()
    try:
        jobs = {}
        for name, seconds, loop in (("exit", 3, True), ("rm", 600, False),
                                    ("hold", 600, False)):
            jobs[name] = submit(attacker, d, job_file(attacker, name, seconds,
                                                      fork_loop=loop))
        # the victim's job, whose processes must be left alone throughout
        vjob = submit(victim, d, job_file(victim, "victim", 600))
        for name in ("exit", "rm", "hold"):
            wait_for(lambda: bool(procs(attacker.uid, f"esc-{name}")), 60, d.output)
        wait_for(lambda: bool(procs(victim.uid, "esc-victim")), 60, d.output)
        # the escapers really left the job's session
        for pid in procs(attacker.uid, "esc-rm"):
            assert os.getsid(pid) != os.getsid(1)
        assert attacker.cli(["rm", jobs["rm"]], env=d.env()).rc == 0
        assert attacker.cli(["hold", jobs["hold"]], env=d.env()).rc == 0
        for name in ("exit", "rm", "hold"):
            wait_for(lambda: not procs(attacker.uid, f"esc-{name}"), 30,
                     lambda: f"{name}: {procs(attacker.uid, f'esc-{name}')} left\n"
                             + d.output())
        # nothing at all of the attacker's jobs is left, and the victim's job still runs
        mine = str(open_base)
        wait_for(lambda: not procs(attacker.uid, mine), 30,
                 lambda: f"attacker processes left: {procs(attacker.uid, mine)}")
        assert procs(victim.uid, "esc-victim")
        assert d.statuses()[vjob] == 2
        # the queue hears of the ends once the starters have reported them
        wait_for(lambda: d.statuses()[jobs["exit"]] == 4 and d.statuses()[jobs["hold"]] == 5,
                 30, lambda: f"{d.statuses()}\n{d.output()}")
        # the daemon still serves, and removing the victim's job cleans it up as well
        assert victim.cli(["rm", vjob], env=d.env()).rc == 0
        wait_for(lambda: not procs(victim.uid, mine), 30,
                 lambda: f"victim processes left: {procs(victim.uid, mine)}")
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_job_over_its_request_disk_is_held_and_the_slot_says_what_is_enforced(
        open_base: Path, attacker: User) -> None:
    d = Daemon(open_base / "d")
    d.start()
    try:
        res = attacker.cli(["status", "-l"], env=d.env())
        assert res.rc == 0, res
        slot = ClassAd.parse_old(res.stdout.strip().split("\n\n")[0])
        expected = "cgroup" if cgroup_v2_usable(HostRoots(), 0) else "subreaper"
        assert slot["CondorpyJobContainment"] == expected
        assert slot["CondorpyDiskEnforcement"] == "hold"
        assert slot.lookup("IsEnforcingDiskUsage") is None    # HTCondor's: an LVM per job
        # 3 MB, a pause to be seen, then 30 MB more: request_disk is 10 MB
        bin = sleeper(attacker, "hog")
        script = ("#!/bin/sh\nhead -c 3000000 /dev/zero > $_CONDOR_SCRATCH_DIR/a\n"
                  f"{bin} 4\nhead -c 30000000 /dev/zero > $_CONDOR_SCRATCH_DIR/b\n"
                  f"{bin} 600\n")
        attacker.write(attacker.home / "hog.sh", script, mode=0o755)
        sub = attacker.write(attacker.home / "hog.sub",
                             "executable = hog.sh\nrequest_disk = 10MB\n"
                             "request_memory = 16\nqueue\n")
        job = submit(attacker, d, sub)

        def running_with_disk() -> bool:
            ad = q_ad(attacker, d, job)
            return ad is not None and ad.evaluate("JobStatus") == 2 and \
                isinstance(ad.evaluate("DiskUsage"), int) and ad.evaluate("DiskUsage") >= 2900
        wait_for(running_with_disk, 60, d.output)

        def held() -> bool:
            ad = q_ad(attacker, d, job)
            return ad is not None and ad.evaluate("JobStatus") == 5
        wait_for(held, 60, d.output)
        ad = q_ad(attacker, d, job)
        assert ad is not None
        assert ad["HoldReasonCode"] == 34 and ad["HoldReasonSubCode"] == 104
        assert "exceeded allocated disk" in ad["HoldReason"]
        assert ad["DiskUsage"] > 10240
        hog = str(attacker.home)
        wait_for(lambda: not procs(attacker.uid, hog), 30,
                 lambda: f"attacker processes left: {procs(attacker.uid, hog)}")
        assert not [p for p in (open_base / "d" / "state" / "execute").iterdir()
                    if p.name.startswith("dir_")]
    finally:
        d.stop()
        d.kill_leftovers()


def test_containment_outlives_a_daemon_killed_and_restarted(open_base: Path,
                                                            attacker: User) -> None:
    """The subreaper is the starter, not the daemon: a daemon SIGKILLed and started
    again re-adopts the job, and removing it still ends the escaped process."""
    d = Daemon(open_base / "d")
    d.start()
    try:
        job = submit(attacker, d, job_file(attacker, "restart", 600))
        wait_for(lambda: bool(procs(attacker.uid, "esc-restart")), 60, d.output)
        d.restart(signal.SIGKILL)
        for pid in procs(attacker.uid, "esc-restart"):
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rpartition(")")[2].split()[1])
            assert ppid != 1 and os.stat(f"/proc/{ppid}").st_uid == 0   # its starter
        wait_for(lambda: d.statuses().get(job) == 2, 30, d.output)
        assert attacker.cli(["rm", job], env=d.env()).rc == 0
        mine = str(open_base)
        wait_for(lambda: not procs(attacker.uid, mine), 30,
                 lambda: f"attacker processes left: {procs(attacker.uid, mine)}")
    finally:
        d.stop()
        d.kill_leftovers()
