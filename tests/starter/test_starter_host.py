"""The starter end to end with real processes, without cgroup controllers."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.starter.holds import HoldCode
from condorpy.starter.meter import UsageMeter
from condorpy.starter.protocol import Command
from condorpy.starter.settings import StarterSettings
from condorpy.starter.starter import Starter
from tests.attackers import fingerprint

from .helpers import pids_with_marker, run, start

ROOT = os.geteuid() == 0


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A directory the job's unprivileged user can reach (pytest's own is 0700)."""
    d = Path(tempfile.mkdtemp(prefix="condorpy-starter-"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def execute(tmp_path: Path) -> Path:
    d = tmp_path / "execute"
    d.mkdir()
    os.chmod(d, 0o755)
    return d


@pytest.fixture
def settings(execute: Path) -> StarterSettings:
    return StarterSettings(execute=str(execute), update_interval_s=0.05, kill_timeout_s=5)


def sh(script: str, **extra: object) -> dict[str, object]:
    ad: dict[str, object] = {"Cmd": "/bin/sh", "Arguments": f"-c '{script}'",
                             "ClusterId": 7, "ProcId": 0}
    ad.update(extra)
    return ad


def wait_state(pid: int, want: str, timeout_s: float = 10.0) -> str:
    """A stop takes effect when the target next runs, which on a loaded machine can
    take a while: poll the process state; return the last one seen."""
    deadline = time.monotonic() + timeout_s
    state = "?"
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rpartition(")")[2].split()[0]
        if state == want:
            break
        time.sleep(0.01)
    return state


def outdir(tmp_path: Path) -> Path:
    d = tmp_path / "out"
    d.mkdir(exist_ok=True)
    os.chmod(d, 0o777)
    return d


def test_exit_code_duration_and_sandbox_removed(settings: StarterSettings,
                                                execute: Path) -> None:
    out = run(sh("sleep 0.2; exit 3"), None, settings)
    assert out.hold is None
    assert out.attributes["ExitBySignal"] is False and out.attributes["ExitCode"] == 3
    assert 0.2 <= float(out.attributes["JobDuration"]) < 5   # type: ignore[arg-type]
    assert list(execute.iterdir()) == []


def test_death_by_signal(settings: StarterSettings) -> None:
    out = run(sh("kill -USR1 $$"), None, settings)
    assert out.attributes["ExitBySignal"] is True
    assert out.attributes["ExitSignal"] == signal.SIGUSR1


def test_arguments_environment_and_files(settings: StarterSettings, tmp_path: Path) -> None:
    d = outdir(tmp_path)
    (d / "in.txt").write_text("from stdin\n")
    os.chmod(d / "in.txt", 0o644)
    script = ('read line; echo "$line"; printf "[%s]" "$@"; echo; '
              'echo "$GREETING|$OMP_NUM_THREADS|$_CONDOR_SLOT|${NOTIFY_SOCKET-unset}"; '
              'echo "$CUDA_VISIBLE_DEVICES|$_CONDOR_AssignedGPUs"; '
              'test -s "$_CONDOR_JOB_AD" && test -s "$_CONDOR_MACHINE_AD" && echo ads; '
              'stat -c "%a" "$_CONDOR_SCRATCH_DIR"; echo oops >&2')
    job = {"Cmd": "/bin/sh", "Arguments": f"-c '{script}' zero 'one two' 'it''s'",
           "Environment": "GREETING='hello world' NOTIFY_SOCKET=/run/bad",
           "Iwd": str(d), "In": "in.txt", "Out": "out.txt", "Err": "err.txt",
           "ClusterId": 1, "ProcId": 0}
    os.environ["NOTIFY_SOCKET"] = "/run/systemd/notify"
    try:
        out = run(job, {"Name": "slot2_1@h", "Cpus": 2, "AssignedGPUs": "CUDA1"},
                  settings)
    finally:
        del os.environ["NOTIFY_SOCKET"]
    assert out.attributes["ExitCode"] == 0, (d / "err.txt").read_text()
    lines = (d / "out.txt").read_text().splitlines()
    assert lines == ["from stdin", "[one two][it's]", "hello world|2|slot2_1|unset",
                     "1|CUDA1", "ads", "700"]
    assert (d / "err.txt").read_text() == "oops\n"


def test_old_syntax_arguments_and_env(settings: StarterSettings, tmp_path: Path) -> None:
    d = outdir(tmp_path)
    job = {"Cmd": "/bin/echo", "Args": 'a "b"  c', "Env": "X=1;Y=2",
           "Out": str(d / "o"), "ClusterId": 1}
    assert run(job, None, settings).attributes["ExitCode"] == 0
    assert (d / "o").read_text() == 'a "b" c\n'


@pytest.mark.parametrize("job,code,subcode", [
    ({"Arguments": "x"}, HoldCode.FAILED_TO_CREATE_PROCESS, 0),
    ({"Cmd": "/nonexistent/program"}, HoldCode.FAILED_TO_CREATE_PROCESS, 2),
    ({"Cmd": "/bin/true", "In": "/nonexistent/input"}, HoldCode.UNABLE_TO_OPEN_INPUT, 2),
    ({"Cmd": "/bin/true", "Out": "/nonexistent/dir/out"}, HoldCode.UNABLE_TO_OPEN_OUTPUT, 2),
    ({"Cmd": "/bin/true", "Iwd": "/nonexistent/iwd"}, HoldCode.IWD_ERROR, 2),
])
def test_bad_input_is_a_hold(settings: StarterSettings, execute: Path,
                             job: dict[str, object], code: HoldCode, subcode: int) -> None:
    out = run(job, None, settings)
    assert out.hold is not None
    assert out.attributes["HoldReasonCode"] == int(code)
    assert out.attributes["HoldReasonSubCode"] == subcode
    assert "ExitCode" not in out.attributes
    assert list(execute.iterdir()) == []


@pytest.mark.skipif(not ROOT, reason="needs root to switch users")
def test_runs_as_nobody_not_root_and_unreadable_input(settings: StarterSettings,
                                                      tmp_path: Path) -> None:
    d = outdir(tmp_path)
    out = run(sh("id -un; stat -c %U $_CONDOR_SCRATCH_DIR", Out=str(d / "o"),
                 Owner="root"), None, settings)
    assert out.attributes["ExitCode"] == 0
    assert (d / "o").read_text().split() == ["nobody", "nobody"]
    secret = d / "secret"
    secret.write_text("x")
    os.chmod(secret, 0o600)
    held = run({"Cmd": "/bin/cat", "In": str(secret)}, None, settings)
    assert held.attributes["HoldReasonCode"] == HoldCode.UNABLE_TO_OPEN_INPUT
    assert held.attributes["HoldReasonSubCode"] == 13    # EACCES, checked as the job's user


def test_stragglers_are_killed_when_the_job_exits(settings: StarterSettings,
                                                  tmp_path: Path) -> None:
    marker = f"straggler{os.getpid()}"
    # a copy of sleep named for the test (dash, the /bin/sh here, has no exec -a)
    shutil.copy("/bin/sleep", tmp_path / marker)
    os.chmod(tmp_path / marker, 0o755)
    out = run(sh(f"({tmp_path / marker} 30 &) ; sleep 0.5; exit 0"), None, settings)
    assert out.attributes["ExitCode"] == 0
    assert out.attributes["NumPids"] >= 2            # the straggler did run
    time.sleep(0.05)
    assert pids_with_marker(marker) == []


def test_user_log_reads_back_with_htcondor(settings: StarterSettings, tmp_path: Path) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    d = outdir(tmp_path)
    log = d / "job.log"
    run(sh("head -c 3000000 /dev/zero | (read -r x; sleep 0.3); exit 4",
           StarterUserLog=str(log), ClusterId=42, ProcId=3), None, settings)
    events = list(htcondor2.JobEventLog(str(log)).events(0))
    kinds = [int(e.type) for e in events]
    assert kinds[0] == 1 and kinds[-1] == 5 and 6 in kinds
    assert all((e.cluster, e.proc) == (42, 3) for e in events)
    assert events[-1]["ReturnValue"] == 4
    held = d / "held.log"
    run({"Cmd": "/nonexistent", "StarterUserLog": str(held)}, None, settings)
    (ev,) = list(htcondor2.JobEventLog(str(held)).events(0))
    assert int(ev.type) == 12 and ev["HoldReasonCode"] == 6


@pytest.mark.parametrize("ad, code", [
    ({}, HoldCode.FAILED_TO_CREATE_PROCESS),                                  # no Cmd
    ({"Cmd": "/bin/true", "Arguments": "'unterminated"}, HoldCode.FAILED_TO_CREATE_PROCESS),
])
def test_hold_before_start_is_logged(settings: StarterSettings, tmp_path: Path,
                                     execute: Path, ad: dict[str, object],
                                     code: HoldCode) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    d = outdir(tmp_path)
    # A relative log name is found in Iwd, as for a job that got to run.
    job = dict(ad, StarterUserLog="held.log", Iwd=str(d), ClusterId=7, ProcId=2)
    out = run(job, None, settings)
    assert out.hold is not None and out.attributes["HoldReasonCode"] == int(code)
    (ev,) = list(htcondor2.JobEventLog(str(d / "held.log")).events(0))
    assert int(ev.type) == 12 and (ev.cluster, ev.proc) == (7, 2)
    assert ev["HoldReasonCode"] == int(code)
    assert ev["HoldReason"] == " ".join(str(out.attributes["HoldReason"]).split())
    assert os.listdir(execute) == []


def test_hold_before_start_with_an_unusable_log_keeps_its_reason(
        settings: StarterSettings, tmp_path: Path) -> None:
    said: list[str] = []
    log = tmp_path / "no-such-dir" / "held.log"
    starter = Starter({"StarterUserLog": str(log)}, {"Name": "slot1@test"}, settings,
                      notice=said.append)
    out = starter.run()
    assert out.attributes["HoldReasonCode"] == int(HoldCode.FAILED_TO_CREATE_PROCESS)
    assert not log.parent.exists()
    assert any(str(log) in text and "held event not written" in text for text in said)


def test_suspend_continue_and_soft_kill_over_the_socket(settings: StarterSettings,
                                                        tmp_path: Path) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    log = outdir(tmp_path) / "job.log"
    ready = outdir(tmp_path) / "ready"
    running = start(sh(f"trap \"exit 9\" USR2; touch {ready}; while :; do sleep 0.02; done",
                       KillSig="SIGUSR2", StarterUserLog=str(log)),
                    {"Name": "slot1@h"}, settings, tag="susp")
    client = running.client()
    hello = client.wait_for("event", "hello")
    wait_file(ready)
    assert hello["state"] == "running" and hello["version"] == 1
    job_pid = int(hello["job_pid"])
    client.send(Command.SUSPEND)
    client.wait_for("state", "suspended")
    state = wait_state(job_pid, "T")
    if state == "D":
        # The shell was caught in vfork with its child stopped before exec: the
        # parent waits, uninterruptibly, on a child that is stopped.
        children = Path(f"/proc/{job_pid}/task/{job_pid}/children").read_text().split()
        state = "T" if children and all(wait_state(int(c), "T") == "T"
                                        for c in children) else state
    assert state == "T", f"the job's process did not stop (state {state})"
    client.send(Command.CONTINUE)
    client.wait_for("state", "running")
    client.send(Command.SOFT_KILL)
    done = client.wait_for("event", "done")
    client.close()
    out = running.outcome()
    assert out.vacated and done["ad"]["ExitCode"] == 9
    kinds = [int(e.type) for e in htcondor2.JobEventLog(str(log)).events(0)]
    assert kinds[:1] == [1] and kinds[-1] == 4 and 10 in kinds and 11 in kinds


def wait_file(path: Path, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_soft_kill_escalates_after_kill_timeout(settings: StarterSettings,
                                               tmp_path: Path) -> None:
    ready = outdir(tmp_path) / "ready"
    running = start(sh(f"trap \"\" TERM; touch {ready}; while :; do sleep 0.02; done",
                       KillSigTimeout=0.3), {"Name": "slot1@h"}, settings, tag="esc")
    client = running.client()
    client.wait_for("event", "hello")
    wait_file(ready)
    t0 = time.monotonic()
    client.send(Command.SOFT_KILL)
    done = client.wait_for("event", "done")
    assert done["ad"]["ExitSignal"] == signal.SIGKILL
    assert 0.25 < time.monotonic() - t0 < 10
    client.close()
    running.outcome()


@pytest.mark.parametrize("kill_sig", [999, "SIGNOPE", -3])
def test_a_kill_sig_that_is_no_signal_falls_back_to_sigterm(
        settings: StarterSettings, tmp_path: Path, execute: Path, kill_sig: object) -> None:
    ready = outdir(tmp_path) / "ready"
    marker = f"killsig-{os.getpid()}-{abs(hash(str(kill_sig)))}"
    running = start(sh(f"trap \"exit 7\" TERM; touch {ready}; "
                       f"while :; do sleep 0.02; done # {marker}", KillSig=kill_sig),
                    {"Name": "slot1@h"}, settings, tag=f"ks{abs(hash(str(kill_sig)))}")
    client = running.client()
    client.wait_for("event", "hello")
    wait_file(ready)
    client.send(Command.SOFT_KILL)
    done = client.wait_for("event", "done")
    client.close()
    out = running.outcome()
    assert out.vacated and done["ad"]["ExitCode"] == 7     # the job's TERM trap ran
    assert any("is not a signal; using SIGTERM" in n and repr(kill_sig) in n
               for n in out.notices), out.notices
    assert pids_with_marker(marker) == [] and os.listdir(execute) == []


def test_a_starter_that_fails_while_watching_leaves_no_job_behind(
        settings: StarterSettings, tmp_path: Path, execute: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"orphan-{os.getpid()}"
    ready = outdir(tmp_path) / "ready"

    def broken(self: UsageMeter) -> None:
        if ready.exists():
            raise RuntimeError("watch loop failed")

    monkeypatch.setattr(UsageMeter, "sample", broken)
    running = start(sh(f"touch {ready}; while :; do sleep 0.02; done # {marker}"),
                    {"Name": "slot1@h"}, settings, tag="orphan")
    with pytest.raises(RuntimeError, match="watch loop failed"):
        running.outcome()
    assert pids_with_marker(marker) == [] and os.listdir(execute) == []


def test_protocol_rejects_nonsense(settings: StarterSettings) -> None:
    running = start(sh("sleep 30"), {"Name": "slot1@h"}, settings, tag="proto")
    client = running.client()
    client.wait_for("event", "hello")
    client.sock.sendall(b"not json\n")
    assert "malformed" in client.wait_for("event", "error")["message"]
    client.sock.sendall(b'{"cmd": "explode"}\n')
    assert "unknown command" in client.wait_for("event", "error")["message"]
    client.send(Command.STATUS)
    assert client.wait_for("event", "hello")["state"] == "running"
    client.send(Command.HARD_KILL)
    assert client.wait_for("event", "done")["ad"]["ExitSignal"] == 9
    client.close()
    running.outcome()
    assert not os.path.exists(running.starter.socket_path)


@pytest.mark.skipif(not ROOT, reason="PID namespaces need root")
def test_pid_namespace_job_is_pid_1(settings: StarterSettings, tmp_path: Path) -> None:
    d = outdir(tmp_path)
    ns = StarterSettings(execute=settings.execute, use_pid_namespaces=True,
                         update_interval_s=0.05)
    out = run(sh("echo $$; ls /proc | grep -c \"^[0-9]\"", Out=str(d / "o")), None, ns)
    assert out.attributes["ExitCode"] == 0
    pid, count = (d / "o").read_text().split()
    # PID 1 (the shell), plus ls and grep of the pipeline
    assert pid == "1" and int(count) <= 3


def test_sandbox_is_private(settings: StarterSettings, execute: Path) -> None:
    running = start(sh("sleep 30"), {"Name": "slot1@h"}, settings, tag="priv")
    client = running.client()
    hello = client.wait_for("event", "hello")
    mode = os.stat(hello["sandbox"]).st_mode
    assert stat.S_IMODE(mode) == 0o700
    client.send(Command.HARD_KILL)
    client.wait_for("event", "done")
    client.close()
    running.outcome()
    assert list(execute.iterdir()) == []


def test_a_restarted_startd_reconnects(settings: StarterSettings) -> None:
    running = start(sh("sleep 30"), {"Name": "slot1@h"}, settings, tag="reconnect")
    first = running.client()
    job_pid = first.wait_for("event", "hello")["job_pid"]
    first.close()                                   # the startd goes away...
    time.sleep(0.1)
    assert running.thread.is_alive()                # ...the job does not
    second = running.client()
    hello = second.wait_for("event", "hello")
    assert hello["job_pid"] == job_pid and hello["state"] == "running"
    second.send(Command.SUSPEND)
    assert second.wait_for("event", "ok")["cmd"] == "suspend"
    second.send(Command.HARD_KILL)
    assert second.wait_for("event", "done")["ad"]["ExitSignal"] == signal.SIGKILL
    second.close()
    running.outcome()


def test_a_prepared_scratch_directory_is_used_and_left_for_its_maker(
        settings: StarterSettings, execute: Path) -> None:
    """A pool job's files arrive before it runs (condorpy/startd/pool_transfer.py):
    the starter runs it in that directory, hands it to the job's user and leaves it
    (the daemon sends the outputs, then removes it)."""
    scratch = execute / "dir_pool_1"
    scratch.mkdir(mode=0o700)               # as the daemon makes it
    (scratch / "data").mkdir()
    (scratch / "data" / "in.txt").write_text("transferred\n")
    job = sh("cat data/in.txt > result.txt; echo $PWD; echo $_CONDOR_SCRATCH_DIR; "
             "test -s .job.ad && echo ad; id -un",
             Iwd=str(scratch), Out="_condor_stdout", Owner="root",
             CondorpyPreparedScratch=str(scratch))
    out = run(job, None, settings)
    assert out.attributes["ExitCode"] == 0, out.attributes
    assert (scratch / "result.txt").read_text() == "transferred\n"
    lines = (scratch / "_condor_stdout").read_text().split()
    assert lines[:3] == [str(scratch), str(scratch), "ad"]
    if ROOT:
        assert lines[3] == "nobody"
        assert (scratch / "data" / "in.txt").stat().st_uid != 0
    assert scratch.is_dir()                 # left for the daemon
    assert [p.name for p in execute.iterdir()] == ["dir_pool_1"]


def test_a_prepared_scratch_outside_execute_is_refused(settings: StarterSettings,
                                                       tmp_path: Path) -> None:
    """Held, naming the directory: the same job would meet the same refusal on every
    restart (issue #30: /etc was restarted 3,052 times in 53 s)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    before = fingerprint(str(elsewhere))
    out = run(sh("true", CondorpyPreparedScratch=str(elsewhere)), None, settings)
    assert out.hold is not None and out.attributes["HoldReasonCode"] == 14
    assert str(elsewhere) in str(out.attributes["HoldReason"])
    assert "not a dir_pool_<n> directory made by the daemon" in \
        str(out.attributes["HoldReason"])
    assert fingerprint(str(elsewhere)) == before


def test_another_jobs_sandbox_or_a_used_scratch_is_not_adopted(
        settings: StarterSettings, execute: Path) -> None:
    """Issue #30 case 1, in the starter alone: a dir_<pid> (another starter's sandbox)
    and a dir_pool_<n> already given to a job's user (mode or owner changed) are
    refused, the job held, the directory untouched."""
    other = execute / "dir_4242"
    other.mkdir(mode=0o700)
    (other / "secret").write_text("theirs\n")
    used = execute / "dir_pool_7"
    used.mkdir(mode=0o755)
    for target in (other, used):
        before = fingerprint(str(target))
        out = run(sh("cat secret", CondorpyPreparedScratch=str(target)), None, settings)
        assert out.hold is not None and out.attributes["HoldReasonCode"] == 14, target
        assert str(target) in str(out.attributes["HoldReason"])
        assert fingerprint(str(target)) == before
    assert (other / "secret").read_text() == "theirs\n"
