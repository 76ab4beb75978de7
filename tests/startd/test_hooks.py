"""Job hooks end to end: a real daemon running real hook scripts (fetch work from a
directory, reply, evict, job exit, prepare) and misbehaving ones."""

from __future__ import annotations

import os
import pwd
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.classad import ClassAd
from condorpy.queue.records import ad_of_text
from tests.startd.daemon_helpers import Daemon, slot_values, wait_for

# A fetch hook that hands out the job ads it finds in a directory, one per call,
# moving each to "taken" so that no job is handed out twice.
FETCH = """\
#!{py}
import os, sys
sys.stdin.read()
queue = {queue!r}
for name in sorted(os.listdir(queue)):
    src = os.path.join(queue, name)
    try:
        os.rename(src, os.path.join({taken!r}, name))
    except OSError:
        continue
    sys.stdout.write(open(os.path.join({taken!r}, name)).read())
    break
"""

# A hook that records its argument, the job's name and whether a ClaimId came with it.
RECORD = """\
#!{py}
import sys
text = sys.stdin.read()
job = text.split("-----")[0]
name = [l.split("=", 1)[1].strip().strip('"') for l in job.splitlines()
        if l.lower().startswith("jobname")]
claim = 'ClaimId = "' in text.split("-----")[-1]
with open({log!r}, "a") as f:
    f.write("%s %s %s %s\\n" % ({kind!r}, (sys.argv[1:] or ["-"])[0],
                                name[0] if name else "?", "claim" if claim else "noclaim"))
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _job(queue: Path, n: int, cmd: str = "/bin/sh", args: str = "-c 'echo job $0'",
         extra: str = "") -> None:
    user = pwd.getpwuid(os.getuid()).pw_name
    (queue / f"job{n:03d}").write_text(
        f'Cmd = "{cmd}"\nArguments = "{args} j{n}"\nOwner = "{user}"\n'
        f'JobName = "j{n}"\nRequestCpus = 1\nRequestMemory = 16\nRequestDisk = 1024\n'
        f'Iwd = "{queue.parent}"\nOut = "out.{n}"\n{extra}')


class Hooks:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.queue = base / "queue"
        self.taken = base / "taken"
        self.queue.mkdir(parents=True)
        self.taken.mkdir()
        self.log = base / "hooks.log"
        py = sys.executable
        self.fetch = _script(base / "fetch.py", FETCH.format(py=py, queue=str(self.queue),
                                                             taken=str(self.taken)))
        for kind in ("reply", "exit", "evict", "update"):
            _script(base / f"{kind}.py", RECORD.format(py=py, log=str(self.log), kind=kind))

    def config(self, keyword: str = "TEST") -> str:
        b = self.base
        return (f"use FEATURE : PartitionableSlot\nSTARTD_JOB_HOOK_KEYWORD = {keyword}\n"
                f"{keyword}_HOOK_FETCH_WORK = {self.fetch}\n"
                f"{keyword}_HOOK_REPLY_FETCH = {b / 'reply.py'}\n"
                f"{keyword}_HOOK_JOB_EXIT = {b / 'exit.py'}\n"
                f"{keyword}_HOOK_EVICT_CLAIM = {b / 'evict.py'}\n"
                "FetchWorkDelay = 0\n")

    def lines(self) -> list[str]:
        try:
            return self.log.read_text().splitlines()
        except FileNotFoundError:
            return []


@pytest.fixture
def hooks(tmp_path: Path) -> Hooks:
    return Hooks(tmp_path / "hooks")


def _daemon(tmp_path: Path, extra: str, cpus: int = 2) -> Daemon:
    d = Daemon(tmp_path / "d", extra=extra, cpus=cpus)
    d.start()
    return d


@pytest.fixture
def stop() -> Iterator[list[Daemon]]:
    ds: list[Daemon] = []
    yield ds
    for d in ds:
        d.stop()
        d.kill_leftovers()


def test_fetched_jobs_run_through_a_partitionable_slot(hooks: Hooks, tmp_path: Path,
                                                       stop: list[Daemon]) -> None:
    for n in range(5):
        _job(hooks.queue, n)
    # A job ad as a schedd would hand it on, with its own ids and status.
    _job(hooks.queue, 5, extra="ClusterId = 99\nProcId = 7\nJobStatus = 2\n")
    d = _daemon(tmp_path, hooks.config())
    stop.append(d)
    want = {f"exit exit j{n} noclaim" for n in range(6)}
    wait_for(lambda: want <= set(hooks.lines()), 60,
             lambda: f"{hooks.lines()}\n{d.output()}")
    lines = hooks.lines()
    for n in range(6):
        assert f"reply accept j{n} claim" in lines
        assert (hooks.base / f"out.{n}").read_text() == f"job j{n}\n"
    assert not [ln for ln in lines if "reject" in ln or "evict" in ln]
    # Each fetched job is on record like a local one, with its hook keyword.
    ads = [ad_of_text(a) for a in d.history_ads()]
    assert sorted(a.evaluate("JobName") for a in ads) == [f"j{n}" for n in range(6)]
    assert {a.evaluate("HookKeyword") for a in ads} == {"TEST"}
    assert {a.evaluate("JobStatus") for a in ads} == {4}
    assert sorted(a.evaluate("ProcId") for a in ads) == [0, 0, 0, 0, 0, 7]


def test_rejected_by_policy_then_evicted(hooks: Hooks, tmp_path: Path,
                                         stop: list[Daemon]) -> None:
    _job(hooks.queue, 0, extra="Bad = true\n")
    d = _daemon(tmp_path, hooks.config() + "START = TARGET.Bad =!= true\n")
    stop.append(d)
    wait_for(lambda: "reply reject j0 noclaim" in hooks.lines(), 30, d.output)
    # A job the slot accepts, then a vacate: EVICT_CLAIM with the claim, JOB_EXIT evict.
    _job(hooks.queue, 1, args="-c 'sleep 300'")
    wait_for(lambda: "reply accept j1 claim" in hooks.lines(), 30, d.output)
    wait_for(lambda: any(a.get("State") == "Claimed" and a.get("Activity") == "Busy"
                         for a in slot_values(d)), 30, d.output)
    # The fetched job is on record like a local one: `who` and `q` show it.
    who = [ClassAd.parse_old(t) for t in d.call("who")["ads"]]
    assert [a.evaluate("JobId") for a in who if isinstance(a.evaluate("JobId"), str)] == ["1.0"]
    running = ClassAd.parse_old(d.call("q")["ads"][0])
    assert running.evaluate("HookKeyword") == "TEST" and running.evaluate("JobStatus") == 2
    time.sleep(0.5)
    d.cli("vacate")
    wait_for(lambda: "evict - j1 claim" in hooks.lines(), 30,
             lambda: f"{hooks.lines()}\n{d.output()}")
    wait_for(lambda: "exit evict j1 noclaim" in hooks.lines(), 30, d.output)
    # Evicted fetched work is not rerun from the local queue.
    time.sleep(1.5)
    assert d.statuses() == {"1.0": 3}    # the rejected job was never stored
    assert hooks.lines().count("reply accept j1 claim") == 1


@pytest.mark.parametrize("case,body,expect", [
    ("exit", "sys.stdin.read(); print('Cmd = \"/bin/true\"'); sys.exit(3)",
     "exited with status 3"),
    ("garbage", "sys.stdin.read(); sys.stdout.write('this is not = = a job ad\\n\\x00\\xff')",
     "reply discarded"),
    ("timeout", "import time; time.sleep(600)", "timed out after"),
    ("huge", "sys.stdout.write('A = 1\\n' * 400000)", "wrote more output than allowed"),
    ("forks", "import os, time\nif os.fork() == 0:\n    time.sleep(600)\ntime.sleep(600)",
     "timed out after"),
    ("crash", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
     "killed by signal SIGSEGV"),
])
def test_misbehaving_fetch_hooks(hooks: Hooks, tmp_path: Path, stop: list[Daemon],
                                 case: str, body: str, expect: str) -> None:
    bad = _script(hooks.base / f"bad_{case}.py", f"#!{sys.executable}\nimport sys\n{body}\n")
    extra = hooks.config() + f"TEST_HOOK_FETCH_WORK = {bad}\n" \
        "TEST_HOOK_FETCH_WORK_TIMEOUT = 2\nCONDORPY_METRICS_ADDRESS = 127.0.0.1:0\n"
    d = _daemon(tmp_path, extra)
    stop.append(d)
    wait_for(lambda: expect in d.output(), 30, d.output)
    # The hook (and anything it forked) is gone; the daemon and its slot are as before.
    wait_for(lambda: not _processes_of(bad), 10, lambda: str(_processes_of(bad)))
    assert "Traceback" not in d.output()
    assert "TEST_HOOK_FETCH_WORK" in d.output()
    ads = slot_values(d)
    assert [a["State"] for a in ads] == ["Unclaimed"]
    assert d.call("ping")["running"] == 0
    assert d.statuses() == {}
    if case != "garbage":      # a clean exit with a bad reply is a run, not a failure
        from tests.startd.test_cron import _sample, _scrape
        assert _sample(_scrape(d), 'condorpy_hook_failures_total{hook="FETCH_WORK"}') >= 1


def _processes_of(path: Path) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = (Path("/proc") / pid / "cmdline").read_bytes()
        except OSError:
            continue
        if str(path).encode() in cmd:
            out.append(int(pid))
    return out


def test_prepare_job_hook_holds_with_its_status(hooks: Hooks, tmp_path: Path,
                                                stop: list[Daemon]) -> None:
    prep = _script(hooks.base / "prepare.py",
                   f"#!{sys.executable}\nimport sys\nad = sys.stdin.read()\n"
                   "if 'j1' in ad:\n"
                   "    print('HookStatusCode = 190')\n"
                   "    print('HookStatusMessage = \"Really bad\"')\n"
                   "else:\n    print('Prepared = \"yes\"')\n"
                   "print('SawBefore = %s' % ('Before = 1' in ad))\n")
    before = _script(hooks.base / "before.sh", "#!/bin/sh\ncat >/dev/null\necho Before = 1\n")
    _job(hooks.queue, 0)
    _job(hooks.queue, 1)
    d = _daemon(tmp_path, hooks.config() + f"TEST_HOOK_PREPARE_JOB = {prep}\n"
                f"TEST_HOOK_PREPARE_JOB_BEFORE_TRANSFER = {before}\n")
    stop.append(d)
    wait_for(lambda: sorted(d.statuses().values()) == [4, 5], 30,
             lambda: f"{d.statuses()}\n{d.output()}")
    ads = {a.evaluate("JobName"): a for a in
           (ad_of_text(t) for t in d.history_ads())}
    assert ads["j0"].evaluate("Prepared") == "yes"
    assert ads["j0"].evaluate("SawBefore") is True       # BEFORE_TRANSFER ran first
    held = ClassAd.parse_old(d.call("q")["ads"][0])
    assert held.evaluate("HoldReasonCode") == 19
    assert held.evaluate("HoldReasonSubCode") == 190
    assert held.evaluate("HoldReason") == "Really bad"
    # As HTCondor's starter: a job that never started gets no JOB_EXIT.
    time.sleep(0.5)
    assert not [ln for ln in hooks.lines() if ln.startswith("exit") and "j1" in ln]


# A starter hook (sh: it runs as the job's user) that records its argument, the job's
# name, its own uid and, for UPDATE_JOB_INFO, whether the job's pid came with the ad,
# for JOB_EXIT the exit code.
STARTER_RECORD = """\
#!/bin/sh
ad=$(cat)
name=$(printf '%s\\n' "$ad" | sed -n 's/^JobName = "\\(.*\\)"$/\\1/p')
if [ {kind} = update ]; then
    if printf '%s\\n' "$ad" | grep -q '^JobPid = '; then extra=" pid"; else extra=" nopid"; fi
else
    extra=" code=$(printf '%s\\n' "$ad" | sed -n 's/^ExitCode = //p')"
fi
echo "{kind} ${{1:--}} $name uid=$(id -u)$extra" >> {log}
"""


def test_starter_hooks_for_local_jobs(tmp_path: Path, stop: list[Daemon]) -> None:
    import tempfile
    # Hooks run as the job's user: they and their log must be reachable by nobody.
    shared = Path(tempfile.mkdtemp(prefix="condorpy-hooks-", dir="/tmp"))
    shared.chmod(0o777)
    try:
        log = shared / "log"
        log.touch()
        log.chmod(0o666)
        for kind in ("update", "exit"):
            _script(shared / f"{kind}.py", STARTER_RECORD.format(
                py=sys.executable, kind=kind, log=str(log)))
        # The default keyword; a job naming hooks the configuration lacks gets it too.
        d = _daemon(tmp_path, f"STARTER_DEFAULT_JOB_HOOK_KEYWORD = LOC\n"
                              f"LOC_HOOK_UPDATE_JOB_INFO = {shared / 'update.py'}\n"
                              f"LOC_HOOK_JOB_EXIT = {shared / 'exit.py'}\n"
                              "STARTER_INITIAL_UPDATE_INTERVAL = 1\n", cpus=4)
        stop.append(d)
        work = tmp_path / "work"
        work.mkdir()
        (work / "j.sub").write_text(
            "executable = /bin/sh\narguments = \"-c 'exit 3'\"\n+JobName = \"done\"\n"
            "+HookKeyword = \"NOSUCH\"\n"
            "request_memory = 16\nqueue\n"
            "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"
            "+JobName = \"rm\"\nqueue\n+JobName = \"hold\"\nqueue\n")
        d.cli("submit", "j.sub", cwd=work)
        from tests.startd.test_daemon import _call_as
        for p in (tmp_path, *tmp_path.parents):      # nobody reaches the socket
            if p == Path("/tmp"):
                break
            p.chmod(p.stat().st_mode | 0o005)
        for p in (d.state, d.state / "lock"):
            p.chmod(p.stat().st_mode | 0o005)
        got = _call_as(65534, d, "submit", {"ads": [
            'Cmd = "/bin/true"\nIwd = "/tmp"\nRequestMemory = 16\nRequestCpus = 1\n'
            'RequestDisk = 10\nRequirements = true\nJobName = "nobody"\n']})
        assert got["ok"] is True, got

        def lines() -> list[str]:
            return log.read_text().splitlines()
        wait_for(lambda: "exit exit done uid=0 code=3" in lines(), 30,
                 lambda: f"{lines()}\n{d.output()}")
        wait_for(lambda: "exit exit nobody uid=65534 code=0" in lines(), 30,
                 lambda: f"{lines()}\n{d.output()}")
        # The sleeping jobs report through UPDATE_JOB_INFO, then leave by rm and hold.
        wait_for(lambda: {"update - rm uid=0 pid", "update - hold uid=0 pid"} <= set(lines()),
                 30, lambda: f"{lines()}\n{d.output()}")
        d.cli("rm", "1.1")
        d.cli("hold", "1.2")
        wait_for(lambda: {"exit remove rm uid=0 code=", "exit hold hold uid=0 code="}
                 <= set(lines()), 30, lambda: f"{lines()}\n{d.output()}")
    finally:
        import shutil
        shutil.rmtree(shared, ignore_errors=True)


def test_fetched_job_survives_a_daemon_restart(hooks: Hooks, tmp_path: Path,
                                               stop: list[Daemon]) -> None:
    _job(hooks.queue, 0, args="-c 'sleep 3; echo slept $0'")
    d = _daemon(tmp_path, hooks.config())
    stop.append(d)
    wait_for(lambda: d.statuses() == {"1.0": 2}, 30, d.output)
    # the job has been accepted (REPLY_FETCH ran) before the daemon goes: on a loaded
    # machine the kill could otherwise come between the job's start and that hook
    wait_for(lambda: "reply accept j0 claim" in hooks.lines(), 30,
             lambda: f"{hooks.lines()}\n{d.output()}")
    d.restart()                                   # SIGKILL, then a new daemon
    wait_for(lambda: "exit exit j0 noclaim" in hooks.lines(), 30,
             lambda: f"{hooks.lines()}\n{d.output()}")
    assert d.statuses() == {"1.0": 4}
    assert (hooks.base / "out.0").read_text() == "slept j0\n"
    assert hooks.lines().count("reply accept j0 claim") == 1
