"""The daemon end to end on this host: real `condorpy startd`, real starters, real jobs.

Tests that started a daemon only to check a decision (rm/hold/release, vacate and drain,
the drain and off kinds, the policy interval, periodic job policy, leave_in_queue) run
in-process on the resource manager: tests/startd/test_resource_manager.py."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import time
import tty as tty_mod
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.queue.records import ad_of_text
from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0 and not os.access("/tmp", os.W_OK),
                                reason="needs a writable /tmp")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path)) as d:
        yield d


def _jobs_dir(tmp_path: Path) -> Path:
    sub = tmp_path / "work"
    sub.mkdir(exist_ok=True)
    return sub


def test_jobs_run_and_complete_with_their_outputs(daemon: Daemon, tmp_path: Path) -> None:
    work = _jobs_dir(tmp_path)
    out = submit(daemon, "executable = /bin/sh\narguments = \"-c 'echo out $(Process); "
                         "exit $(Process)'\"\noutput = out.$(Process)\nerror = err.$(Process)\n"
                         "log = job.log\nrequest_memory = 16\nqueue 4\n", work)
    assert out.splitlines()[-1] == "4 job(s) submitted to cluster 1."
    wait_for(lambda: counts(daemon).get(4) == 4, 60, daemon.output)
    for p in range(4):
        assert (work / f"out.{p}").read_text() == f"out {p}\n"
    codes = sorted(ad_of_text(ad).evaluate("ExitCode") for ad in daemon.history_ads())
    assert codes == [0, 1, 2, 3]
    import htcondor2
    events = [(e.type.name, e.proc) for e in
              htcondor2.JobEventLog(str(work / "job.log")).events(stop_after=0)]
    for p in range(4):
        assert ("SUBMIT", p) in events and ("EXECUTE", p) in events
        assert ("JOB_TERMINATED", p) in events
    q = daemon.cli("q", "-nobatch").stdout
    assert "0 jobs; 0 completed" in q
    hist = daemon.cli("history").stdout
    assert hist.count(" C ") == 4 or hist.count(" C  ") + hist.count(" C ") >= 4
    # nothing of a finished job stays in the spool: removed once its end is committed,
    # which a reader of the queue may see a moment before the removal
    spool_jobs = daemon.state / "spool" / "jobs"
    wait_for(lambda: not spool_jobs.exists() or list(spool_jobs.iterdir()) == [], 10,
             lambda: f"left in the spool: {list(spool_jobs.iterdir())}\n{daemon.output()}")


def test_sigkill_in_the_middle_of_twenty_jobs(tmp_path: Path) -> None:
    d = Daemon(tmp_path, cpus=20)
    d.start()
    try:
        work = _jobs_dir(tmp_path)
        submit(d, "executable = /bin/sh\narguments = \"-c 'sleep 3; echo done $(Process) >> "
                  "ran.$(Process)'\"\nrequest_memory = 16\nrequest_disk = 10\nqueue 20\n",
               work)
        wait_for(lambda: counts(d).get(2) == 20, 60, d.output)
        d.restart(signal.SIGKILL)           # the jobs keep running without a daemon
        wait_for(lambda: counts(d).get(4) == 20, 90, d.output)
        for p in range(20):
            assert (work / f"ran.{p}").read_text() == f"done {p}\n"   # once, not twice
    finally:
        d.stop()
        d.kill_leftovers()


def test_sigterm_leaves_jobs_running_and_restart_adopts_them(tmp_path: Path) -> None:
    d = Daemon(tmp_path)
    d.start()
    try:
        work = _jobs_dir(tmp_path)
        # the job ends only when told, so a slow restart cannot see it finished already
        go = work / "go"
        submit(d, "executable = /bin/sh\narguments = \"-c 'while [ ! -e " + str(go) +
                  " ]; do sleep 0.1; done; echo ok'\"\n"
                  "output = out\nrequest_memory = 16\nqueue\n", work)
        wait_for(lambda: counts(d).get(2) == 1, 30, d.output)
        d.stop(signal.SIGTERM)
        d.start()
        assert "re-adopted starter" in d.output()
        go.touch()
        wait_for(lambda: counts(d).get(4) == 1, 30, d.output)
        assert (work / "out").read_text() == "ok\n"
    finally:
        d.stop()
        d.kill_leftovers()


def test_bad_requests_and_permissions(daemon: Daemon, tmp_path: Path) -> None:
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(daemon.socket))
    s.sendall(b"not json\n{\"command\": \"frobnicate\"}\n" + b"x" * 100 + b"\n")
    data = b""
    while data.count(b"\n") < 3:
        data += s.recv(65536)
    s.close()
    replies = data.decode().splitlines()
    assert all('"ok": false' in r for r in replies[:3])
    assert "unknown command 'frobnicate'" in replies[1]
    assert daemon.call("ping")["pid"] > 0        # still serving
    # an ordinary user may read but not administer, and not touch root's jobs
    work = _jobs_dir(tmp_path)
    submit(daemon, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\nqueue\n",
           work)
    os.chmod(tmp_path, os.stat(tmp_path).st_mode | stat.S_IXOTH | stat.S_IROTH)
    for parent in tmp_path.parents:
        if parent == Path("/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IXOTH)
    nobody = 65534
    vacate = _call_as(nobody, daemon, "vacate", {})
    assert vacate["ok"] is False and "permission denied" in vacate["error"]
    rm = _call_as(nobody, daemon, "rm", {"ids": ["1.0"]})
    assert rm["ok"] is False and "permission denied" in rm["error"]
    assert _call_as(nobody, daemon, "q", {})["ok"] is True
    assert daemon.statuses()["1.0"] in (1, 2)      # untouched
    res = daemon.cli("submit", str(tmp_path / "nope.sub"), check=False)
    assert res.returncode == 1 and "nope.sub" in res.stderr and "Traceback" not in res.stderr
    (work / "bad.sub").write_text("universe = grid\nexecutable = /bin/true\nqueue\n")
    res = daemon.cli("submit", "bad.sub", cwd=work, check=False)
    assert res.returncode == 1 and "bad.sub" in res.stderr and "line 1" in res.stderr


def test_unreachable_daemon_is_one_line(tmp_path: Path) -> None:
    d = Daemon(tmp_path)
    res = d.cli("q", check=False)
    assert res.returncode == 1
    assert res.stderr.strip().count("\n") == 0 and "not running" in res.stderr


def test_bad_configuration_at_start_up(tmp_path: Path) -> None:
    d = Daemon(tmp_path, extra="NUM_SLOTS = many\n")
    res = d.cli("startd", "-f", check=False)
    assert res.returncode == 1
    assert f"NUM_SLOTS = many at {d.config}" in res.stderr


def _call_as(uid: int, d: Daemon, command: str, args: dict[str, object]) -> dict[str, object]:
    """One request from a process of another user (the daemon sees its credentials)."""
    import json
    import socket
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgid(uid)
            os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.socket))
            s.sendall(json.dumps({"command": command, "args": args}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            os.write(w, data)
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    reply: dict[str, object] = json.loads(data)
    return reply


DESKTOP = """use POLICY : Desktop
CONSOLE_DEVICES = {tty}
STARTD_HAS_BAD_UTMP = false
# The machine running the tests is busy: judge the owner by the keyboard alone.
START = KeyboardIdle > 60
SUSPEND = KeyboardIdle < 60
CONTINUE = KeyboardIdle > 120
PREEMPT = False
"""


@contextlib.contextmanager
def _desktop_job(tmp_path: Path, *, raw: bool = False
                 ) -> Iterator[tuple[Daemon, Path, int, int, str]]:
    """A daemon under the desktop policy whose console is a fresh pty, idle for an
    hour, running one sleep job: (daemon, its jobs' directory, the pty's master and
    slave ends, the tty's path). ``raw``: keystrokes are read as they come, as a
    shell's line editor reads them."""
    master, slave = os.openpty()
    if raw:
        tty_mod.setraw(slave)
    tty = os.ttyname(slave)
    try:
        then = time.time() - 3600
        os.utime(tty, (then, then))
        with running(Daemon(tmp_path, extra=DESKTOP.format(
                tty=tty.removeprefix("/dev/")))) as d:
            work = _jobs_dir(tmp_path)
            submit(d, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"
                      "log = job.log\nqueue\n", work)
            wait_for(lambda: counts(d).get(2) == 1, 30, d.output)
            yield d, work, master, slave, tty
    finally:
        os.close(master)
        os.close(slave)


def test_desktop_policy_suspends_on_a_keystroke_and_resumes(tmp_path: Path) -> None:
    """A real idle measurement: the atime of a terminal device the configuration names
    as the console, which is what a keystroke on it changes."""
    with _desktop_job(tmp_path) as (d, work, _master, _slave, tty):
        os.utime(tty, None)               # someone types: the device's atime moves
        t0 = time.monotonic()
        wait_for(lambda: counts(d).get(7) == 1, 10, d.output)
        assert time.monotonic() - t0 < 5
        assert "Suspended" in d.cli("status").stdout
        away = time.time() - 600
        os.utime(tty, (away, away))         # and goes away again
        wait_for(lambda: counts(d).get(2) == 1, 10, d.output)
        import htcondor2

        def kinds() -> list[str]:
            return [e.type.name for e in
                    htcondor2.JobEventLog(str(work / "job.log")).events(stop_after=0)]
        # The queue says Running once the starter is told; the starter writes the
        # event once it has resumed the job.
        wait_for(lambda: "JOB_UNSUSPENDED" in kinds(), 10, d.output)
        assert "JOB_SUSPENDED" in kinds()
        d.cli("rm", "-all")
        wait_for(lambda: counts(d).get(3) == 1, 30, d.output)


def test_a_keystroke_suspends_even_where_the_terminal_s_atime_does_not_move(
        tmp_path: Path) -> None:
    """The kernel moves a terminal's atime at most every 8 s; the daemon hears the
    keystroke itself (inotify on the console device). The test types on a raw pty as a
    shell would read it, then puts the atime back an hour: only the keystroke seen as
    it happened can suspend the job."""
    with _desktop_job(tmp_path, raw=True) as (d, _work, master, slave, tty):
        then = time.time() - 3600
        time.sleep(1.5)                     # the probe has read the hour-old atime
        os.write(master, b"k")              # the owner types; the shell reads it
        os.read(slave, 1)
        os.utime(tty, (then, then))         # as if the kernel had not moved the atime
        wait_for(lambda: counts(d).get(7) == 1, 30, d.output)
        ads = d.call("status")["ads"]
        assert any("KeyboardIdle = " in a and "Suspended" in a for a in ads), ads
        d.cli("rm", "-all")
        wait_for(lambda: counts(d).get(3) == 1, 30, d.output)


def test_off_ends_the_jobs_and_the_daemon(tmp_path: Path) -> None:
    d = Daemon(tmp_path)
    d.start()
    try:
        work = _jobs_dir(tmp_path)
        submit(d, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\nqueue 2\n",
               work)
        wait_for(lambda: counts(d).get(2) == 2, 30, d.output)
        d.cli("off", "-fast")
        assert d.proc is not None
        d.proc.wait(30)
        assert d.proc.returncode == 0
        # evicted by the shutdown, back in the queue for the next start
        assert counts(d).get(1) == 2
    finally:
        d.stop()
        d.kill_leftovers()


def test_two_hundred_short_jobs_on_a_two_core_partitionable_slot(tmp_path: Path) -> None:
    d = Daemon(tmp_path, cpus=2)
    d.start()
    try:
        work = _jobs_dir(tmp_path)
        submit(d, "executable = /bin/sh\narguments = \"-c 'echo $(Process); "
                  "exit $(Process)'\"\noutput = o.$(Process)\nrequest_memory = 16\n"
                  "request_disk = 10\nqueue 200\n", work)
        wait_for(lambda: counts(d).get(4) == 200, 300, d.output)
        codes = {ad_of_text(a).evaluate("ProcId"): ad_of_text(a).evaluate("ExitCode")
                 for a in d.history_ads()}
        assert len(codes) == 200
        assert all((work / f"o.{p}").read_text() == f"{p}\n" for p in range(200))
        assert all(codes[p] == p for p in range(200))
    finally:
        d.stop()
        d.kill_leftovers()


def test_every_queue_form_through_the_daemon(daemon: Daemon, tmp_path: Path) -> None:
    work = _jobs_dir(tmp_path)
    (work / "items.txt").write_text("red 1\nblue 2\n")
    (work / "a.dat").write_text("")
    (work / "b.dat").write_text("")
    text = ("executable = /bin/echo\nrequest_memory = 16\nrequest_disk = 10\n"
            "arguments = n$(Process)\noutput = plain.$(Process)\nqueue 2\n"
            "arguments = $(fruit)\noutput = in.$(fruit)\nqueue fruit in (apple, pear)\n"
            "arguments = $(color) $(n)\noutput = from.$(color)\n"
            "queue color, n from items.txt\n"
            "arguments = $(f)\noutput = $(f).out\nqueue f matching *.dat\n")
    out = submit(daemon, text, work)
    assert out.splitlines()[-1] == "8 job(s) submitted to cluster 1."
    wait_for(lambda: counts(daemon).get(4) == 8, 60, daemon.output)
    assert (work / "plain.1").read_text() == "n1\n"
    assert (work / "in.pear").read_text() == "pear\n"
    assert (work / "from.blue").read_text() == "blue 2\n"
    assert (work / "b.dat.out").read_text() == "b.dat\n"


def test_reconfig_applies_a_changed_knob(daemon: Daemon) -> None:
    assert daemon.cli("config-val", "-startd", "START").stdout.strip() == "True"
    with open(daemon.config, "a") as fh:
        fh.write("START = Owner == \"nobody-here\"\n")
    out = daemon.cli("reconfig").stdout
    assert "START" in out
    assert daemon.cli("config-val", "-startd", "START").stdout.strip() == \
        'Owner == "nobody-here"'
    assert 'Owner == "nobody-here"' in daemon.cli("status", "-l").stdout
    with open(daemon.config, "a") as fh:
        fh.write("POLLING_INTERVAL = soon\n")
    res = daemon.cli("reconfig", check=False)
    assert res.returncode == 1 and "POLLING_INTERVAL = soon" in res.stderr
    assert daemon.call("ping")["pid"] > 0      # still running on the old configuration


def _slot_kinds(d: Daemon) -> dict[str, str]:
    out = d.cli("status", "-af", "Name", "SlotType").stdout.split("\n")
    return dict(line.split()[:2] for line in out if line.strip())


def test_reconfig_new_layout_applies_as_slots_become_free(tmp_path: Path) -> None:
    static = "NUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_1 = cpus=1, mem=1024\n"
    d = Daemon(tmp_path, extra=static)
    d.start()
    try:
        kinds = _slot_kinds(d)
        assert sorted(k.split("@")[0] for k in kinds) == ["slot1", "slot2"]
        work = _jobs_dir(tmp_path)
        submit(d, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\nqueue\n",
               work)
        wait_for(lambda: counts(d).get(2) == 1, 30, d.output)
        busy = next(n for n, a in _who_slots(d).items() if a)
        text = d.config.read_text().replace(static, "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
                                            "SLOT_TYPE_1_PARTITIONABLE = True\n")
        d.config.write_text(text)
        out = d.cli("reconfig").stdout
        assert "NUM_SLOTS_TYPE_1" in out
        # the free static slot is gone at once; the busy one keeps its job
        kinds = _slot_kinds(d)
        assert [n.split("@")[0] for n in kinds] == [busy]
        assert counts(d).get(2) == 1
        log = (d.state / "log" / "StartLog").read_text()
        assert "leave as they become free" in log
        d.cli("rm", "-all")
        wait_for(lambda: list(_slot_kinds(d).values()) == ["Partitionable"], 30, d.output)
        # the new p-slot runs jobs
        submit(d, "executable = /bin/true\nrequest_memory = 16\nqueue 2\n", work)
        wait_for(lambda: counts(d).get(4) == 2, 30, d.output)
    finally:
        d.stop()
        d.kill_leftovers()


def _who_slots(d: Daemon) -> dict[str, bool]:
    ads = d.call("who")["ads"]
    out = {}
    for text in ads:
        name = next(line.split("=", 1)[1].strip().strip('"') for line in text.splitlines()
                    if line.startswith("Name "))
        out[name.split("@")[0]] = "JobId" in text
    return out


def test_who_shows_each_running_job_with_its_pid_and_directory(daemon: Daemon,
                                                               tmp_path: Path) -> None:
    work = _jobs_dir(tmp_path)
    submit(daemon, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\nqueue\n",
           work)
    wait_for(lambda: counts(daemon).get(2) == 1, 30, daemon.output)
    wait_for(lambda: "JobPid" in "".join(daemon.call("who")["ads"]), 30, daemon.output)
    out = daemon.cli("who").stdout
    lines = out.strip().splitlines()
    assert lines[0].startswith("--Startd : ") and "has 1 job(s) running" in lines[0]
    assert lines[1].split() == ["OWNER", "CLIENT", "SLOT", "JOB", "RUNTIME", "PID", "JOB_DIR"]
    row = lines[2].split()
    host = daemon.call("who")["name"].split("@", 1)[1]
    assert row[1] == host and row[3] == "1.0" and row[-1] == str(work), out
    assert os.readlink(f"/proc/{row[-2]}/cwd") == str(work)
    daemon.cli("rm", "-all")

