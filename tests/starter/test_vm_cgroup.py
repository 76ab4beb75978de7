"""The starter against a real kernel's cgroup v2 (run in the `tests/vm/run` lane as root).

The lane boots with cgroup2 mounted at /sys/fs/cgroup and this process in the root
cgroup; each test gets a fresh delegated base ``/condorpy.test`` to create jobs in.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.starter.protocol import Command
from condorpy.starter.settings import MemoryPolicy, StarterSettings

from .helpers import pids_with_marker, run, start

pytestmark = pytest.mark.vm
MOUNT = "/sys/fs/cgroup"
BASE = "condorpy.test"
# The job runs as nobody, who cannot reach a virtual environment under /root.
PY = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"


@pytest.fixture
def work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="condorpy-vm-"))
    os.chmod(d, 0o755)
    for sub in ("execute", "out"):
        (d / sub).mkdir()
    os.chmod(d / "execute", 0o755)
    os.chmod(d / "out", 0o777)
    # The root cgroup may hold processes and still hand controllers down.
    with open(f"{MOUNT}/cgroup.subtree_control", "w") as fh:
        fh.write("+cpu +memory +pids")
    yield d
    shutil.rmtree(d, ignore_errors=True)
    base = Path(MOUNT, BASE)
    if base.exists():
        for child in base.iterdir():
            if child.is_dir():
                for leaf in child.iterdir():
                    if leaf.is_dir():
                        leaf.rmdir()
                child.rmdir()
        base.rmdir()


def settings(work: Path, **kw: object) -> StarterSettings:
    base: dict[str, object] = dict(execute=str(work / "execute"), cgroup_mount=MOUNT,
                                   cgroup_base=BASE, update_interval_s=0.1,
                                   kill_timeout_s=5)
    base.update(kw)
    return StarterSettings(**base)  # type: ignore[arg-type]


def py(code: str, **extra: object) -> dict[str, object]:
    ad: dict[str, object] = {"Cmd": PY, "Arguments": f"-c '{code}'", "ClusterId": 1}
    ad.update(extra)
    return ad


def wait_file(path: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_job_over_memory_limit_is_held_with_code_34(work: Path) -> None:
    s = settings(work, memory_policy=MemoryPolicy.HARD, disable_swap=True)
    out = run(py("b = b\"x\" * (300 << 20)"), {"Name": "slot1@vm", "Memory": 64}, s)
    assert out.hold is not None, out.attributes
    assert out.attributes["HoldReasonCode"] == 34, out.attributes
    assert "64 MB" in str(out.attributes["HoldReason"])
    assert out.attributes["ExitSignal"] == 9


def test_fork_bomb_stops_at_pids_max(work: Path) -> None:
    result = work / "out" / "forks"
    code = ("import os, time\n"
            "n = 0\n"
            "try:\n"
            "    for i in range(500):\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(30); os._exit(0)\n"
            "        n += 1\n"
            "except OSError as e:\n"
            f"    open(\"{result}\", \"w\").write(f\"{{n}} {{e.errno}}\")\n")
    out = run(py(code), {"Name": "slot1@vm"}, settings(work, pids_max=16))
    assert out.hold is None, out.attributes
    n, err = result.read_text().split()
    assert int(n) < 16 and int(err) == 11          # EAGAIN from the pids controller
    assert int(out.attributes["NumPids"]) <= 16    # type: ignore[call-overload]


def test_double_forked_daemon_is_gone_after_a_kill(work: Path) -> None:
    marker = f"daemon{os.getpid()}"
    ready = work / "out" / "ready"
    script = (f"setsid sh -c \"exec -a {marker} sleep 300\" </dev/null >/dev/null 2>&1 & "
              f"touch {ready}; sleep 300")
    running = start({"Cmd": "/bin/sh", "Arguments": f"-c '{script}'"},
                    {"Name": "slot1@vm"}, settings(work), tag="daemon")
    client = running.client(timeout_s=60)
    client.wait_for("event", "hello")
    wait_file(ready)
    deadline = time.monotonic() + 10
    while not pids_with_marker(marker):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    client.send(Command.HARD_KILL)
    client.wait_for("event", "done")
    client.close()
    running.outcome(timeout_s=60)
    assert pids_with_marker(marker) == []
    assert not Path(MOUNT, BASE, "job_daemon.slice").exists()


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rpartition(") ")[2].split()
    return int(fields[11]) + int(fields[12])


def test_freeze_stops_cpu_and_thaw_resumes(work: Path) -> None:
    running = start({"Cmd": "/bin/sh", "Arguments": "-c 'while :; do :; done'"},
                    {"Name": "slot1@vm"}, settings(work), tag="freeze")
    client = running.client(timeout_s=60)
    pid = int(client.wait_for("event", "hello")["job_pid"])
    time.sleep(0.3)
    client.send(Command.SUSPEND)
    client.wait_for("state", "suspended")
    events = Path(MOUNT, BASE, "job_freeze.slice", "cgroup.events").read_text()
    assert "frozen 1" in events
    before = _cpu_ticks(pid)
    time.sleep(1.0)
    assert _cpu_ticks(pid) == before
    client.send(Command.CONTINUE)
    client.wait_for("state", "running")
    time.sleep(1.0)
    assert _cpu_ticks(pid) > before + 10
    client.send(Command.HARD_KILL)
    client.wait_for("event", "done")
    client.close()
    running.outcome(timeout_s=60)


def test_job_is_pid_1_and_sees_no_other_process(work: Path) -> None:
    result = work / "out" / "ps"
    script = f"echo $$ > {result}; ls /proc | grep \"^[0-9]\" >> {result}"
    out = run({"Cmd": "/bin/sh", "Arguments": f"-c '{script}'"}, {"Name": "slot1@vm"},
              settings(work, use_pid_namespaces=True))
    assert out.attributes.get("ExitCode") == 0, out.attributes
    lines = result.read_text().split()
    assert lines[0] == "1"
    # The shell (1) plus, at most, the ls and grep of its own pipeline.
    assert "1" in lines[1:] and len(lines[1:]) <= 3


def test_job_runs_as_nobody(work: Path) -> None:
    result = work / "out" / "id"
    script = f"id -un > {result}; stat -c %U $_CONDOR_SCRATCH_DIR >> {result}"
    out = run({"Cmd": "/bin/sh", "Arguments": f"-c '{script}'", "Owner": "root"},
              {"Name": "slot1@vm"}, settings(work))
    assert out.attributes.get("ExitCode") == 0, out.attributes
    assert result.read_text().split() == ["nobody", "nobody"]


def test_usage_within_ten_percent_of_what_the_job_did(work: Path) -> None:
    result = work / "out" / "usage"
    code = ("import os, resource, time\n"
            "b = b\"y\" * (96 << 20)\n"
            "t = time.process_time()\n"
            "while time.process_time() - t < 1.5: pass\n"
            "time.sleep(0.5)\n"
            "ru = resource.getrusage(resource.RUSAGE_SELF)\n"
            f"open(\"{result}\", \"w\").write(f\"{{ru.ru_utime}} {{ru.ru_stime}} "
            "{ru.ru_maxrss}\")\n")
    out = run(py(code), {"Name": "slot1@vm"}, settings(work))
    assert out.attributes.get("ExitCode") == 0, out.attributes
    user, system, maxrss_kb = result.read_text().split()
    cpu = float(user) + float(system)
    reported = float(out.attributes["RemoteUserCpu"]) + float(  # type: ignore[arg-type]
        out.attributes["RemoteSysCpu"])  # type: ignore[arg-type]
    assert abs(reported - cpu) <= 0.1 * cpu, (reported, cpu)
    mem_mb = int(maxrss_kb) / 1024
    assert abs(int(out.attributes["MemoryUsage"]) - mem_mb) <= 0.1 * mem_mb, (  # type: ignore[call-overload]
        out.attributes["MemoryUsage"], mem_mb)
    assert out.attributes["NumPids"] == 1


def test_starter_alone_in_its_cgroup_steps_into_a_leaf(work: Path) -> None:
    """The systemd case without DelegateSubgroup: the service cgroup holds only the
    starter; it must move itself into a leaf before handing controllers down."""
    own = Path(MOUNT, "condorpy.own")
    own.mkdir()
    (own / "cgroup.procs").write_text(str(os.getpid()))
    result = work / "out" / "cg"
    script = (f"cg=$(cut -d: -f3 /proc/self/cgroup); echo $cg > {result}; "
              f"cat /sys/fs/cgroup$cg/../memory.max >> {result}")
    try:
        out = run({"Cmd": "/bin/sh", "Arguments": f"-c '{script}'"},
                  {"Name": "slot1@vm", "Memory": 64},
                  settings(work, cgroup_base=None, memory_policy=MemoryPolicy.HARD))
        assert out.attributes.get("ExitCode") == 0, out.attributes
        assert Path("/proc/self/cgroup").read_text().strip() == \
            "0::/condorpy.own/starters.leaf"
        cgroup, limit = result.read_text().split()
        assert cgroup.startswith("/condorpy.own/job_") and cgroup.endswith(".slice/job.scope")
        assert int(limit) == 64 << 20
    finally:
        Path(MOUNT, "cgroup.procs").write_text(str(os.getpid()))
        leaf = own / "starters.leaf"
        if leaf.exists():
            leaf.rmdir()
        own.rmdir()


def test_a_memory_event_is_reported_at_once(work: Path) -> None:
    """Over memory.high, the kernel counts `high` in memory.events: the starter reports
    its usage then and there (the startd puts it in the job ad at once), not at its
    next measurement, which here is ten minutes away."""
    s = settings(work, memory_policy=MemoryPolicy.CUSTOM, custom_soft_mb=64,
                 update_interval_s=600)
    running = start(py("import time; b = b\"x\" * (160 << 20); time.sleep(300)"),
                    {"Name": "slot1@vm", "Memory": 64}, s, tag="memevent")
    client = running.client(timeout_s=120)
    client.wait_for("event", "hello")
    while True:
        msg = client.read()
        assert msg is not None, "the starter closed its socket"
        if msg.get("event") == "usage" and int(msg.get("memory_events") or 0) > 0:
            break
    assert int(msg["usage"]["ResidentSetSize"]) > 48 * 1024, msg
    client.send(Command.HARD_KILL)
    client.wait_for("event", "done")
    client.close()
    running.outcome(timeout_s=60)
