"""The fork server: its wire encoding on its own, then real launches on the host (the
starter falls back to session tracking without cgroup v2 controllers).

Every integration test makes this process a child subreaper, so that starters whose
fork server has gone are re-parented here and reaped by their pid at the end: no test
leaves a process or a zombie behind.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from condorpy.errors import RequestError, StartdError, StarterError
from condorpy.startd.forkserver import (ForkServer, current_boot_id, open_pidfd, same_process,
                                        start_ticks)
from condorpy.startd.forkserver_wire import (MAX_MESSAGE, Launched, LaunchFailed, LaunchRequest,
                                             LineBuffer, Ready, Release, Released,
                                             decode_reply, decode_request, encode_release,
                                             encode_reply, encode_request, request_job_id)
from condorpy.starter.protocol import Command, StarterClient

PR_SET_CHILD_SUBREAPER = 36
SLOT_AD = 'Name = "slot1@test"\nCpus = 1\nMemory = 256\n'
KNOBS = {"CONDORPY_USAGE_INTERVAL": "0.2", "KILLING_TIMEOUT": "5"}


# --- the encoding, without I/O ----------------------------------------------------------

def request(**kw: object) -> LaunchRequest:
    base: dict[str, object] = dict(job_id="7.0", job_ad='Cmd = "/bin/true"\n',
                                   slot_ad=SLOT_AD, execute="/x", result_path="/r/7.0.ad")
    base.update(kw)
    return LaunchRequest(**base)  # type: ignore[arg-type]


def test_request_round_trips_with_newlines_in_ads() -> None:
    req = request(knobs={"BASE_CGROUP": "htcondor"}, cgroup="/sys/fs/cgroup/a/starters.leaf",
                  job_ad='Cmd = "/bin/true"\nArguments = "a\\nb"\n')
    line = encode_request(req)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_request(line.rstrip(b"\n")) == req
    assert request_job_id(line) == "7.0"


@pytest.mark.parametrize("line, says", [
    (b"not json", "malformed request"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"op": "explode", "job_id": "1.0"}', "unknown request op"),
    (b'{"op": "launch"}', "'job_id' must be a string"),
    (b'{"op": "launch", "job_id": "3.1", "job_ad": "", "slot_ad": ""}',
     "job 3.1: 'execute' must be a string"),
    (b'{"op": "launch", "job_id": "3.1", "job_ad": "", "slot_ad": "", "execute": "/x",'
     b' "result_path": "/r", "knobs": {"A": 1}}', "job 3.1: 'knobs' must map"),
    (b'\xff\xfe', "malformed request"),
    (b'{"op": "release", "pid": "12"}', "'pid' must be a process id"),
    (b'{"op": "launch", "job_id": "3.1", "job_ad": "", "slot_ad": "", "execute": "/x",'
     b' "result_path": "/r", "hold": 1}', "'hold' must be true or false"),
])
def test_malformed_requests_say_what_is_wrong(line: bytes, says: str) -> None:
    with pytest.raises(RequestError, match=says):
        decode_request(line)


def test_replies_round_trip() -> None:
    launched = Launched("7.0", 123, 456, "boot", "/x/starter_123.sock", "/r/7.0.ad",
                        "/x/starter_123.log")
    for reply in (launched, LaunchFailed("7.0", "bad ad"), LaunchFailed(None, "nope"),
                  Ready(99, 1), Released(123)):
        assert decode_reply(encode_reply(reply).rstrip(b"\n")) == reply
    assert decode_request(encode_release(Release(123))) == Release(123)
    held = request(hold=True)
    assert decode_request(encode_request(held)) == held


@pytest.mark.parametrize("line", [b"{}", b'{"ok": true, "job": "1.0", "pid": "x"}',
                                  b'{"ok": false, "job": "1.0"}', b"zzz"])
def test_bad_replies_are_startd_errors(line: bytes) -> None:
    with pytest.raises(StartdError):
        decode_reply(line)


def test_line_buffer_joins_pieces_and_drops_overlong_lines() -> None:
    buf = LineBuffer(limit=10)
    assert buf.feed(b'{"a"') == []
    assert buf.feed(b':1}\n\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert buf.feed(b"x" * 20) == [None]          # reported once, as soon as it is known
    assert buf.feed(b"y" * 20 + b"\nok\n") == [b"ok"]
    assert LineBuffer(limit=4).feed(b"12345\nabc\n") == [None, b"abc"]
    assert MAX_MESSAGE >= 1 << 20


# --- /proc facts ------------------------------------------------------------------------

def test_same_process_tells_a_reused_pid_and_another_boot(tmp_path: Path) -> None:
    me = os.getpid()
    ticks = start_ticks(me)
    boot = current_boot_id()
    assert ticks is not None
    assert same_process(me, ticks, boot)
    assert not same_process(me, ticks + 1, boot)
    assert not same_process(me, ticks, "another-boot")
    # A command name with spaces and parentheses does not shift the fields.
    (tmp_path / "sys/kernel/random").mkdir(parents=True)
    (tmp_path / "sys/kernel/random/boot_id").write_text("b1\n")
    (tmp_path / "42").mkdir()
    fields = ["S"] + [str(n) for n in range(4, 22)] + ["777"] + ["0"] * 30
    (tmp_path / "42/stat").write_text("42 (a) b (c)) " + " ".join(fields) + "\n")
    assert start_ticks(42, str(tmp_path)) == 777
    assert same_process(42, 777, "b1", proc_root=str(tmp_path))
    assert not same_process(43, 777, "b1", proc_root=str(tmp_path))


def test_a_zombie_is_not_the_same_process() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        ticks = start_ticks(pid)
        assert ticks is not None
        deadline = time.monotonic() + 10
        while same_process(pid, ticks, current_boot_id()):
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert start_ticks(pid) == ticks        # still there, as a zombie
    finally:
        os.waitpid(pid, 0)


# --- real launches ------------------------------------------------------------------------

@dataclass
class Env:
    tmp: Path
    execute: Path
    results: Path
    launched: list[Launched] = field(default_factory=list)
    servers: list[ForkServer] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)     # other processes to reap at the end

    def request(self, job_id: str, job_ad: str = "", **kw: object) -> LaunchRequest:
        base: dict[str, object] = dict(job_id=job_id, job_ad=job_ad, slot_ad=SLOT_AD,
                                       execute=str(self.execute),
                                       result_path=str(self.results / f"{job_id}.ad"),
                                       knobs=KNOBS)
        base.update(kw)
        return LaunchRequest(**base)  # type: ignore[arg-type]

    def launch(self, server: ForkServer, job_id: str, job_ad: str,
               **kw: object) -> Launched:
        launched = server.launch(self.request(job_id, job_ad, **kw))
        self.launched.append(launched)
        return launched


def _subreaper(on: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def wait_exit(launched: Launched, timeout_s: float = 20.0) -> None:
    fd = open_pidfd(launched)
    if fd is None:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        assert ready, f"starter {launched.pid} still runs after {timeout_s} s"
    finally:
        os.close(fd)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass        # not ours: its parent (the fork server, or init) reaps it


@pytest.fixture
def env() -> Iterator[Env]:
    tmp = Path(tempfile.mkdtemp(prefix="condorpy-fs-"))
    os.chmod(tmp, 0o755)      # the job's user (nobody, as root) must reach the sandbox
    e = Env(tmp, tmp / "execute", tmp / "results")
    for d in (e.execute, e.results):
        d.mkdir()
        os.chmod(d, 0o755)
    _subreaper(True)
    try:
        yield e
    finally:
        for server in e.servers:
            server.close()
        for launched in e.launched:
            if same_process(launched.pid, launched.start_ticks, launched.boot_id):
                os.kill(launched.pid, signal.SIGTERM)    # a soft kill: the job goes too
                wait_exit(launched)
            _reap(launched.pid)
        for pid in e.pids:
            _reap(pid)
        _subreaper(False)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def server(env: Env) -> ForkServer:
    s = ForkServer.start(env=dict(os.environ, NOTIFY_SOCKET="/run/systemd/notify",
                                  INVOCATION_ID="0123abcd"))
    env.servers.append(s)
    return s


def job(cmd: str, args: str = "", n: int = 1) -> str:
    text = f'Cmd = "{cmd}"\nClusterId = {n}\nProcId = 0\n'
    return text + (f'Arguments = "{args}"\n' if args else "")


def connect(launched: Launched, timeout_s: float = 10.0) -> StarterClient:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return StarterClient(launched.socket_path)
        except (FileNotFoundError, ConnectionRefusedError):
            assert time.monotonic() < deadline, "the starter never listened"
            time.sleep(0.005)


def final_ad(launched: Launched) -> str:
    wait_exit(launched)
    assert os.path.exists(launched.result_path), Path(launched.log_path).read_text()
    return Path(launched.result_path).read_text()


def stat_fields(pid: int) -> list[str]:
    data = Path(f"/proc/{pid}/stat").read_text()
    return data[data.rfind(")") + 2:].split()


def children_of(pid: int) -> list[tuple[int, str]]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = stat_fields(int(name))
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append((int(name), fields[0]))
    return out


def test_true_job_runs_to_its_final_ad(env: Env, server: ForkServer) -> None:
    launched = env.launch(server, "1.0", job("/bin/true"))
    assert launched.socket_path == str(env.execute / f"starter_{launched.pid}.sock")
    assert launched.log_path == str(env.execute / f"starter_{launched.pid}.log")
    assert launched.boot_id == current_boot_id()
    ad = final_ad(launched)
    assert "ExitCode = 0" in ad and "ExitBySignal = false" in ad
    assert 'Cmd = "/bin/true"' in ad and "JobDuration = " in ad
    assert not any(".tmp" in p.name for p in env.results.iterdir())
    assert not os.path.exists(launched.socket_path)
    assert sorted(p.name for p in env.execute.iterdir()) == [f"starter_{launched.pid}.log"]


def test_sleep_job_answers_status_and_obeys_a_soft_kill(env: Env,
                                                        server: ForkServer) -> None:
    launched = env.launch(server, "2.0", job("/bin/sleep", "30", n=2))
    client = connect(launched)
    try:
        hello = client.wait_for("event", "hello")
        if hello["state"] != "running":
            client.send(Command.STATUS)
            hello = client.wait_for("state", "running")
        assert hello["starter_pid"] == launched.pid and hello["job_pid"] is not None
        client.send(Command.STATUS)
        assert client.wait_for("event", "hello")["state"] == "running"
        client.send(Command.SOFT_KILL)
        done = client.wait_for("event", "done")
    finally:
        client.close()
    assert done["ad"]["ExitSignal"] == signal.SIGTERM
    ad = final_ad(launched)
    assert "ExitBySignal = true" in ad and f"ExitSignal = {int(signal.SIGTERM)}" in ad


def test_starter_has_its_own_session_files_and_clean_environment(env: Env,
                                                                 server: ForkServer) -> None:
    launched = env.launch(server, "3.0", job("/bin/sleep", "30", n=3))
    fields = stat_fields(launched.pid)
    assert int(fields[1]) == server.pid
    assert int(fields[2]) == launched.pid and int(fields[3]) == launched.pid  # pgrp, sid
    assert os.readlink(f"/proc/{launched.pid}/fd/0") == os.devnull
    assert os.readlink(f"/proc/{launched.pid}/fd/1") == launched.log_path
    assert os.readlink(f"/proc/{launched.pid}/fd/2") == launched.log_path
    environ = Path(f"/proc/{launched.pid}/environ").read_bytes().split(b"\0")
    assert not [v for v in environ if v.startswith((b"NOTIFY_SOCKET=", b"INVOCATION_ID="))]
    # Nothing of the startd's is held open: only stdio, the control socket, and what
    # the starter opens itself (selector, pidfd).
    fds = {}
    for n in os.listdir(f"/proc/{launched.pid}/fd"):
        try:        # the starter may close a descriptor of its own while we look
            fds[int(n)] = os.readlink(f"/proc/{launched.pid}/fd/{n}")
        except FileNotFoundError:
            pass
    assert not [t for t in fds.values() if t.startswith("socket:")][1:], fds
    os.kill(launched.pid, signal.SIGTERM)
    assert "ExitBySignal = true" in final_ad(launched)


@pytest.mark.parametrize("line, says", [
    (b"this is not json\n", "malformed request"),
    (b'{"op": "launch", "job_id": "4.2"}\n', "job 4.2"),
    (b'{"op": "fly"}\n', "unknown request op"),
])
def test_a_malformed_request_gets_an_error_and_the_server_goes_on(
        env: Env, server: ForkServer, line: bytes, says: str) -> None:
    server.sock.sendall(line)
    reply = server._read_reply()
    assert isinstance(reply, LaunchFailed) and says in reply.error
    assert "Traceback" not in reply.error
    assert "ExitCode = 0" in final_ad(env.launch(server, "4.0", job("/bin/true", n=4)))


def test_launch_failures_name_the_job_and_the_server_goes_on(env: Env,
                                                             server: ForkServer) -> None:
    afile = env.tmp / "a-file"
    afile.write_text("")
    cases = [
        (dict(job_ad="Cmd = [[[ broken"), "bad ad"),
        (dict(slot_ad="= nothing"), "bad ad"),
        (dict(execute=str(env.tmp / "missing")), "does not exist"),
        (dict(execute=str(afile)), "does not exist"),
        (dict(execute="relative/execute"), "not an absolute path"),
        (dict(result_path=str(env.tmp / "no/such/dir/r.ad")), "result directory"),
        (dict(result_path=str(env.results)), "is a directory"),
        (dict(knobs={"KILLING_TIMEOUT": "soon"}), "bad configuration"),
        (dict(cgroup=str(env.tmp)), "could not be set up: cgroup"),
    ]
    for n, (kw, says) in enumerate(cases):
        args: dict[str, object] = {"job_ad": job("/bin/true", n=5), **kw}
        with pytest.raises(StarterError) as info:
            server.launch(env.request(f"5.{n}", **args))
        text = str(info.value)
        assert says in text and f"(job 5.{n})" in text and info.value.job == f"5.{n}"
        assert "Traceback" not in text
    assert "ExitCode = 0" in final_ad(env.launch(server, "5.99", job("/bin/true", n=5)))
    assert children_of(server.pid) == [] or all(s != "Z" for _, s in children_of(server.pid))


def test_starter_moves_into_the_requested_cgroup(env: Env, server: ForkServer) -> None:
    """A stand-in cgroup directory (a real one is in test_vm_forkserver below): the
    starter writes "0", meaning itself, to its cgroup.procs before running the job."""
    leaf = env.tmp / "service" / "starters.leaf"
    leaf.mkdir(parents=True)
    (leaf / "cgroup.procs").write_text("")
    launched = env.launch(server, "6.0", job("/bin/true", n=6), cgroup=str(leaf))
    assert "ExitCode = 0" in final_ad(launched)
    assert (leaf / "cgroup.procs").read_text() == "0"


def test_fifty_launches_leave_no_zombie(env: Env, server: ForkServer) -> None:
    launches = [env.launch(server, f"8.{n}", job("/bin/true", n=8)) for n in range(50)]
    assert len({x.pid for x in launches}) == 50
    for launched in launches:
        assert "ExitCode = 0" in final_ad(launched)
    deadline = time.monotonic() + 10
    pids = {x.pid for x in launches}
    # the server reaps each on its SIGCHLD (its one other child: the spare starter
    # waiting for the next launch)
    while [c for c in children_of(server.pid) if c[0] in pids or c[1] == "Z"]:
        assert time.monotonic() < deadline, children_of(server.pid)
        time.sleep(0.01)
    assert [c for c in children_of(os.getpid()) if c[1] == "Z"] == []
    assert len(list(env.results.iterdir())) == 50


def test_a_spare_starter_waits_for_the_next_launch(env: Env, server: ForkServer) -> None:
    """Once quiet, the server forks the next starter ahead of its launch, and the
    launch is that process's."""
    deadline = time.monotonic() + 10
    while len(children_of(server.pid)) != 1:
        assert time.monotonic() < deadline, children_of(server.pid)
        time.sleep(0.01)
    [(spare, _)] = children_of(server.pid)
    launched = env.launch(server, "13.0", job("/bin/true", n=13))
    assert launched.pid == spare
    assert "ExitCode = 0" in final_ad(launched)


def test_a_spare_that_rehearsed_the_last_launch_runs_the_next_job_alone(
        env: Env, server: ForkServer) -> None:
    """A spare forked after a launch runs that launch's steps once while it waits
    (so that a fresh child's copy-on-write faults come before the next job): nothing
    of the rehearsal is seen, and the next job is its own."""
    first = env.launch(server, "14.0", job("/bin/sh", "-c 'echo one > one'", n=14))
    assert "ExitCode = 0" in final_ad(first)
    deadline = time.monotonic() + 10
    while [c for c in children_of(server.pid) if c[0] != first.pid] == []:
        assert time.monotonic() < deadline, children_of(server.pid)
        time.sleep(0.01)
    time.sleep(0.2)                     # past the spare's wait before it rehearses
    second = env.launch(server, "15.0", job("/bin/sh", "-c 'echo two > two'", n=15))
    text = final_ad(second)
    assert "ExitCode = 0" in text and "ClusterId = 15" in text
    assert sorted(p.name for p in env.results.iterdir()) == ["14.0.ad", "15.0.ad"]
    # the rehearsal made no sandbox: only the two jobs' starters had one
    assert [p for p in env.execute.iterdir() if p.is_dir()] == []


def test_starter_survives_the_server_closing(env: Env, server: ForkServer) -> None:
    launched = env.launch(server, "9.0", job("/bin/sleep", "30", n=9))
    server.close()                      # the server exits on end of file...
    assert server.proc.returncode == 0
    assert same_process(launched.pid, launched.start_ticks, launched.boot_id)  # ...only
    client = connect(launched)
    try:
        assert client.wait_for("event", "hello")["starter_pid"] == launched.pid
        client.send(Command.HARD_KILL)
        client.wait_for("event", "done")
    finally:
        client.close()
    assert "ExitSignal = 9" in final_ad(launched)


def _marker_dir(env: Env) -> Path:
    marks = env.tmp / "marks"
    marks.mkdir()
    marks.chmod(0o777)              # the job may run as nobody
    return marks


def test_a_held_starter_runs_its_job_once_released(env: Env, server: ForkServer) -> None:
    marks = _marker_dir(env)
    launched = env.launch(server, "11.0", job("/bin/touch", str(marks / "ran"), n=11),
                          hold=True)
    assert same_process(launched.pid, launched.start_ticks, launched.boot_id)
    server.release(launched.pid)
    assert "ExitCode = 0" in final_ad(launched)
    assert (marks / "ran").exists()
    with pytest.raises(StarterError, match="no starter .* waits to be released"):
        server.release(launched.pid)                 # once only


def test_a_release_sent_without_waiting_is_answered_before_the_next_launch(
        env: Env, server: ForkServer) -> None:
    marks = _marker_dir(env)
    first = env.launch(server, "13.0", job("/bin/touch", str(marks / "a"), n=13), hold=True)
    server.release(first.pid, wait=False)
    assert "ExitCode = 0" in final_ad(first)
    server.release(first.pid, wait=False)           # gone by now: said with the next
    second = env.launch(server, "14.0", job("/bin/touch", str(marks / "b"), n=14),
                        hold=True)
    assert server.unread == 0 and len(server.late) == 1
    assert "no starter" in server.late[0]
    server.release(second.pid)
    assert "ExitCode = 0" in final_ad(second)
    assert (marks / "a").exists() and (marks / "b").exists()


def test_a_held_starter_whose_startd_goes_runs_nothing(env: Env, server: ForkServer) -> None:
    # the startd killed between the fork and recording the starter: the server sees
    # its socketpair close and exits; the starter must not start the job unknown
    marks = _marker_dir(env)
    launched = env.launch(server, "12.0", job("/bin/touch", str(marks / "ran"), n=12),
                          hold=True)
    server.close()
    wait_exit(launched)
    assert not (marks / "ran").exists()
    assert not os.path.exists(launched.result_path)
    assert "the job was not started" in Path(launched.log_path).read_text()
    # the set-up it made while it waited (the starter prepares the job while the
    # startd records it) is gone with it: no scratch directory, no socket
    left = [p.name for p in env.execute.iterdir() if p.is_dir() or p.suffix == ".sock"]
    assert left == [], left


CLIENT = textwrap.dedent("""
    import json, sys
    from dataclasses import asdict
    from condorpy.startd.forkserver import ForkServer
    from condorpy.startd.forkserver_wire import LaunchRequest
    server = ForkServer.start()
    launched = server.launch(LaunchRequest(**json.loads(sys.argv[1])))
    print(json.dumps({"server": server.pid, "launched": asdict(launched)}), flush=True)
    # Exit without closing anything: the process's death closes the socketpair.
""")


def test_starter_survives_its_clients_and_servers_exit(env: Env) -> None:
    req = env.request("10.0", job("/bin/sleep", "1.5", n=10))
    proc = subprocess.run([sys.executable, "-c", CLIENT, json.dumps({
        "job_id": req.job_id, "job_ad": req.job_ad, "slot_ad": req.slot_ad,
        "execute": req.execute, "result_path": req.result_path, "knobs": dict(req.knobs)})],
        capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(proc.stdout)
    launched = Launched(**out["launched"])
    env.launched.append(launched)
    env.pids.append(out["server"])
    # The server, orphaned, comes to us (a subreaper) and exits on end of file.
    deadline = time.monotonic() + 10
    while True:
        try:
            if stat_fields(out["server"])[0] == "Z":
                break
        except FileNotFoundError:
            break
        assert time.monotonic() < deadline, "the fork server outlived its client"
        time.sleep(0.01)
    assert same_process(launched.pid, launched.start_ticks, launched.boot_id)
    client = connect(launched)
    try:
        assert client.wait_for("event", "hello")["state"] in ("running", "starting")
        client.send(Command.STATUS)
        assert client.wait_for("event", "hello")["starter_pid"] == launched.pid
    finally:
        client.close()
    assert "ExitCode = 0" in final_ad(launched)      # it ran to its natural end


@pytest.mark.vm
def test_vm_starter_runs_in_the_requested_cgroup_and_its_job_below() -> None:
    """Real cgroup v2 (the tests/vm/run lane, as root): a starter asked to live in
    <service>/starters.leaf is there, and its job is in <service>/htcondor/job_*."""
    mount = "/sys/fs/cgroup"
    service = Path(mount, "condorpy-fs.test")
    with open(f"{mount}/cgroup.subtree_control", "w") as fh:
        fh.write("+cpu +memory +pids")
    tmp = Path(tempfile.mkdtemp(prefix="condorpy-fs-vm-"))
    os.chmod(tmp, 0o755)
    execute = tmp / "execute"
    execute.mkdir()
    os.chmod(execute, 0o755)
    _subreaper(True)
    server = ForkServer.start()
    launched: Launched | None = None
    try:
        launched = server.launch(LaunchRequest(
            job_id="11.0", job_ad=job("/bin/sleep", "30", n=11), slot_ad=SLOT_AD,
            execute=str(execute), result_path=str(tmp / "11.0.ad"),
            knobs={"BASE_CGROUP": "htcondor", "CONDORPY_USAGE_INTERVAL": "0.2"},
            cgroup=str(service / "starters.leaf")))
        client = connect(launched)
        try:
            hello = client.wait_for("event", "hello")
            if hello["state"] != "running":
                hello = client.wait_for("state", "running")
            own = Path(f"/proc/{launched.pid}/cgroup").read_text().strip()
            assert own == "0::/condorpy-fs.test/starters.leaf"
            job_cg = Path(f"/proc/{hello['job_pid']}/cgroup").read_text().strip()
            assert job_cg.startswith("0::/condorpy-fs.test/htcondor/job_"), job_cg
            client.send(Command.HARD_KILL)
            client.wait_for("event", "done")
        finally:
            client.close()
        wait_exit(launched)
        assert (tmp / "11.0.ad").exists()
    finally:
        server.close()
        if launched is not None:
            _reap(launched.pid)
        _subreaper(False)
        shutil.rmtree(tmp, ignore_errors=True)
        for d in sorted(service.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if d.is_dir():
                d.rmdir()
        if service.exists():
            service.rmdir()
