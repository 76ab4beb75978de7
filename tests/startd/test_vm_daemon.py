"""The daemon against a real kernel's cgroup v2 (run in the `tests/vm/run` lane as root):
jobs submitted through it get their limits, and keep them across a daemon restart."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

pytestmark = pytest.mark.vm
MOUNT = Path("/sys/fs/cgroup")
BASE = "condorpy.daemontest"
PY = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"

CGROUPS = f"""BASE_CGROUP = {BASE}
CGROUP_MEMORY_LIMIT_POLICY = hard
DISABLE_SWAP_FOR_JOB = true
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # One daemon for the module: a start costs tens of seconds emulated, and each test
    # looks only at its own job (the held one stays held, out of the other's way).
    with open(MOUNT / "cgroup.subtree_control", "w") as fh:
        fh.write("+cpu +memory +pids")
    with running(Daemon(tmp_path_factory.mktemp("daemon"), extra=CGROUPS)) as d:
        yield d


def _job_cgroup(pid: int) -> Path:
    line = Path(f"/proc/{pid}/cgroup").read_text().strip().splitlines()[-1]
    return MOUNT / line.split("::", 1)[1].lstrip("/")


def _job_pid(d: Daemon) -> int:
    from condorpy.classad import ClassAd
    for _ in range(100):
        for text in d.call("who")["ads"]:
            pid = ClassAd.parse_old(text).evaluate("JobPid")
            if isinstance(pid, int):
                return pid
        time.sleep(0.1)
    raise AssertionError("no running job")


def test_vm_daemon_job_over_its_memory_is_held_with_code_34(daemon: Daemon,
                                                            tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    submit(daemon, f"executable = {PY}\narguments = \"-c 'import time; "
                   f"x = bytearray(400 * 1024 * 1024); time.sleep(5)'\"\n"
                   f"request_memory = 64\nrequest_disk = 10\nqueue\n", work)
    wait_for(lambda: counts(daemon).get(5) == 1, 120, daemon.output)
    held = daemon.cli("q", "-hold").stdout
    assert " 34/" in held, held
    assert "H" in daemon.cli("q", "-nobatch").stdout


def test_vm_daemon_jobs_keep_their_cgroup_across_a_restart(daemon: Daemon,
                                                           tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    # The job runs until the test releases it, after the restart: however long the
    # daemon takes to come back, the job is still there.
    release = work / "release"
    submit(daemon, f"executable = /bin/sh\narguments = \"-c 'while [ ! -e {release} ]; "
                   "do sleep 0.2; done; echo done'\"\n"
                   "output = out\nrequest_memory = 100\nrequest_disk = 10\nqueue\n", work)
    wait_for(lambda: counts(daemon).get(2) == 1, 60, daemon.output)
    pid = _job_pid(daemon)
    cg = _job_cgroup(pid)
    assert BASE in str(cg)
    limit = int((cg.parent / "memory.max").read_text())
    assert limit == 100 * 1024 * 1024 or limit == 128 * 1024 * 1024
    daemon.restart(signal.SIGKILL)
    assert os.path.exists(f"/proc/{pid}") and _job_cgroup(pid) == cg
    release.touch()
    wait_for(lambda: counts(daemon).get(4) == 1, 120, daemon.output)
    assert (work / "out").read_text() == "done\n"
