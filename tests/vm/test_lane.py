"""What the real-kernel lane promises, checked inside it (`tests/vm/run-suite`).

These run as root in the VM. The plain lane starts them from a small init
with cgroup2 mounted at /sys/fs/cgroup and this process in the root cgroup;
the systemd lane runs them in a unit after multi-user.target. On the host
they are skipped (see tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CGROOT = Path("/sys/fs/cgroup")


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = 20.0) -> None:
    # Generous: the VM is emulated and shares two host cores with other work.
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


def keyed(path: Path) -> dict[str, str]:
    """A flat-keyed cgroup file (cgroup.events, memory.events) as a dict."""
    return dict(line.split(" ", 1) for line in path.read_text().splitlines())


def join_cgroup(cg: Path) -> Callable[[], None]:
    """A preexec_fn that moves the new process into `cg` before it execs."""
    def move() -> None:
        (cg / "cgroup.procs").write_text(str(os.getpid()))
    return move


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A fresh child of the root cgroup with memory, cpu, pids and io enabled.

    The root cgroup is exempt from the no-internal-processes rule, so this
    process may stay there while the root hands controllers down.
    """
    (CGROOT / "cgroup.subtree_control").write_text("+memory +cpu +pids +io")
    cg = CGROOT / f"lane-{uuid.uuid4().hex[:8]}"
    cg.mkdir()
    yield cg
    if (cg / "cgroup.kill").exists():
        (cg / "cgroup.kill").write_text("1")
    wait_for(f"{cg} to empty", lambda: not (cg / "cgroup.procs").read_text().strip())
    cg.rmdir()


@pytest.mark.vm
def test_every_controller_is_available() -> None:
    controllers = set((CGROOT / "cgroup.controllers").read_text().split())
    assert {"memory", "cpu", "pids", "io"} <= controllers


@pytest.mark.vm
def test_lane_environment() -> None:
    assert os.environ["CONDORPY_VM"] == "1"
    assert os.getuid() == 0
    # Writes land in the VM's tmpfs overlay, never on the host's root.
    mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    assert [m[2] for m in mounts if m[1] == "/"][-1] == "overlay"
    results = Path(os.environ["CONDORPY_VM_RESULTS"])
    probe = results / f".lane-probe-{uuid.uuid4().hex[:8]}"
    probe.write_text("written in the VM\n")
    assert probe.read_text() == "written in the VM\n"
    probe.unlink()


@pytest.mark.vm
def test_process_over_memory_max_is_oom_killed(cgroup: Path) -> None:
    (cgroup / "memory.max").write_text(str(32 << 20))
    if (cgroup / "memory.swap.max").exists():
        (cgroup / "memory.swap.max").write_text("0")
    # Touching every page (bytes * n writes them) is what the limit sees.
    hog = subprocess.run([sys.executable, "-c", "b = b'x' * (256 << 20)"],
                         preexec_fn=join_cgroup(cgroup), capture_output=True)
    assert hog.returncode == -9, hog.stderr
    events = keyed(cgroup / "memory.events")
    assert int(events["oom_kill"]) >= 1, events


@pytest.mark.vm
def test_freeze_stops_a_process_and_thaw_resumes_it(cgroup: Path, tmp_path: Path) -> None:
    ticks = tmp_path / "ticks"
    ticker = subprocess.Popen(
        ["sh", "-c", f"while :; do echo t >> {ticks}; sleep 0.05; done"],
        preexec_fn=join_cgroup(cgroup))
    try:
        def size() -> int:
            return ticks.stat().st_size if ticks.exists() else 0
        wait_for("the ticker to tick", lambda: size() > 0)
        (cgroup / "cgroup.freeze").write_text("1")
        wait_for("frozen 1", lambda: keyed(cgroup / "cgroup.events")["frozen"] == "1")
        frozen_at = size()
        time.sleep(1.0)
        assert size() == frozen_at
        (cgroup / "cgroup.freeze").write_text("0")
        wait_for("frozen 0", lambda: keyed(cgroup / "cgroup.events")["frozen"] == "0")
        wait_for("ticks after the thaw", lambda: size() > frozen_at)
    finally:
        ticker.kill()
        ticker.wait()


@pytest.mark.vm
def test_new_pid_namespace_starts_at_pid_1() -> None:
    out = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
         "echo $$; ls /proc | grep -c '^[0-9]'"],
        capture_output=True, text=True, check=True)
    pid, visible = out.stdout.split()
    assert pid == "1"
    # The shell and ls (and grep): nothing of the VM outside the namespace.
    assert int(visible) <= 3


# The job that proves delegation: as `nobody`, move itself into a leaf (a
# cgroup with children may hold no processes), hand memory down and limit a
# child. Each step fails unless systemd gave the unit its subtree. systemd
# expands "$$" and "${...}" in the command line, so there are none: writing 0
# to cgroup.procs moves the writer.
DELEGATED_JOB = r"""
set -eu
cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
mkdir "$cg/leaf"
echo 0 > "$cg/leaf/cgroup.procs"
echo +memory > "$cg/cgroup.subtree_control"
mkdir "$cg/child"
echo 64M > "$cg/child/memory.max"
echo "$(id -un) $(stat -c %U "$cg") $(cat "$cg/child/memory.max")"
"""


@pytest.mark.vm_systemd
def test_systemd_is_pid_1() -> None:
    assert os.environ["CONDORPY_VM"] == "systemd"
    assert Path("/proc/1/comm").read_text().strip() == "systemd"
    state = subprocess.run(["systemctl", "is-system-running"], capture_output=True, text=True)
    assert state.stdout.strip() in {"running", "degraded"}, state.stdout


@pytest.mark.vm_systemd
def test_unit_with_delegate_yes_owns_its_cgroup() -> None:
    unit = f"lane-delegate-{uuid.uuid4().hex[:8]}"
    out = subprocess.run(
        ["systemd-run", "--quiet", "--wait", "--pipe", "--collect", f"--unit={unit}",
         "-p", "Delegate=yes", "-p", "User=nobody", "sh", "-c", DELEGATED_JOB],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["nobody", "nobody", str(64 << 20)]
