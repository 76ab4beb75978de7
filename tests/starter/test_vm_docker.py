"""Docker- and container-universe jobs on a real kernel with Debian's dockerd (the
`tests/vm/run` lane, as root). One dockerd serves the whole file (vfs storage, no
bridge, no iptables, the cgroupfs driver so that a container's cgroup can go under
its job's); the image is a busybox root imported offline. The argument lists and the
parsers are tested on the host (tests/starter/test_container.py,
tests/machine/test_docker.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.machine.docker import DockerCli, DockerSettings, client_env, probe_docker
from condorpy.starter.container_run import remove_left_behind
from condorpy.starter.protocol import Command
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR
from condorpy.starter.settings import MemoryPolicy
from tests.busybox_image import busybox_tar

from .helpers import Running, start
from .test_vm_cgroup import BASE, MOUNT, settings, wait_file

pytestmark = pytest.mark.vm
IMAGE = "condorpy-test/busybox:1"
DOCKERD = "/usr/sbin/dockerd"
DOCKER = "/usr/bin/docker"


@pytest.fixture(scope="module")
def dockerd() -> Iterator[DockerCli]:
    if not os.path.exists(DOCKERD):
        pytest.skip("docker.io is not installed (tests/vm/run installs it)")
    root = Path("/var/lib/condorpy-test-docker")
    root.mkdir(parents=True, exist_ok=True)
    log = open(root / "dockerd.log", "wb")
    proc = subprocess.Popen(
        [DOCKERD, "--data-root", str(root / "data"), "--storage-driver", "vfs",
         "--iptables=false", "--ip-masq=false", "--bridge=none",
         "--exec-opt", "native.cgroupdriver=cgroupfs", "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    cli = DockerCli(DOCKER, env=client_env())
    deadline = time.monotonic() + 120
    while not cli.server_ok()[0]:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("dockerd did not come up: "
                                 + (root / "dockerd.log").read_text()[-2000:])
        time.sleep(0.2)
    imported = subprocess.run([DOCKER, "import", "-", IMAGE], input=busybox_tar(),
                              capture_output=True, check=False)
    assert imported.returncode == 0, imported.stderr
    try:
        yield cli
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def work() -> Iterator[Path]:
    """The file's one execute directory and cgroup base (test_vm_cgroup's, for a
    module)."""
    d = Path(tempfile.mkdtemp(prefix="condorpy-vm-docker-"))
    os.chmod(d, 0o755)
    (d / "execute").mkdir(mode=0o755)
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


def _scratch(work: Path, n: int, files: dict[str, str]) -> Path:
    """A prepared scratch directory (as the daemon makes a pool job's) with input."""
    d = work / "execute" / f"dir_pool_{n}"
    d.mkdir(mode=0o700)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def _slot(n: int, **kw: object) -> dict[str, object]:
    base: dict[str, object] = {"Name": f"slot1_{n}@vm", "Cpus": 1, "Memory": 64}
    base.update(kw)
    return base


SCRIPT = ("cat input > output; echo $(pwd) >> output; id -u >> output; "
          "cat /sys/fs/cgroup/memory.max >> output; echo done")
HOG = "awk \"BEGIN { s = \\\"xxxxxxxx\\\"; while (1) s = s s }\""
LOOP = "touch ready; while true; do sleep 1; done"


def _job(scratch: Path, cluster: int, cmd: str, image: dict[str, object] | None = None,
         **extra: object) -> dict[str, object]:
    ad: dict[str, object] = {**(image or {"WantDocker": True, "DockerImage": IMAGE}),
                             "ClusterId": cluster, "ProcId": 0, "Cmd": "/bin/sh",
                             "Arguments": f"-c '{cmd}'", "DockerNetworkType": "none",
                             PREPARED_SCRATCH_ATTR: str(scratch)}
    ad.update(extra)
    return ad


@pytest.fixture(scope="module")
def jobs(dockerd: DockerCli, work: Path) -> Iterator[dict[str, tuple[Path, Running]]]:
    """Every job of the file started at once, as slots of one machine would run them:
    the emulated client calls overlap (each costs seconds in the VM)."""
    s = settings(work, memory_policy=MemoryPolicy.HARD, disable_swap=True,
                 update_interval_s=1.0,
                 docker=DockerSettings(path=DOCKER, cgroup_driver="cgroupfs"))
    specs: dict[str, tuple[dict[str, object], dict[str, object]]] = {}
    scratch: dict[str, Path] = {}
    for n, name in enumerate(("docker", "container", "oom", "missing", "suspend")):
        scratch[name] = _scratch(work, n + 1, {"input": f"hello {name}\n"})
    specs["docker"] = (_job(scratch["docker"], 7, SCRIPT, Out="stdout", Err="stderr"),
                       _slot(1))
    specs["container"] = (_job(scratch["container"], 8, SCRIPT,
                               {"WantContainer": True, "ContainerImage": f"docker://{IMAGE}"},
                               Out="stdout", Err="stderr"), _slot(2))
    specs["oom"] = (_job(scratch["oom"], 9, HOG), _slot(3, Memory=48))
    specs["missing"] = (_job(scratch["missing"], 10, "true", {
        "WantDocker": True, "DockerImage": "condorpy-test/nosuch:1"}), _slot(4))
    specs["suspend"] = (_job(scratch["suspend"], 11, LOOP), _slot(5))
    started = {name: (scratch[name], start(ad, slot, s, tag=f"d{name}"))
               for name, (ad, slot) in specs.items()}
    yield started
    for _, running in started.values():     # a failed test's job must not outlive it
        if running.thread.is_alive():
            client = running.client(timeout_s=60)
            client.send(Command.HARD_KILL)
            client.close()
            running.thread.join(120)


def test_docker_and_container_universe_jobs(dockerd: DockerCli,
                                            jobs: dict[str, tuple[Path, Running]]) -> None:
    for universe in ("docker", "container"):
        scratch, running = jobs[universe]
        out = running.outcome(timeout_s=300)
        assert out.hold is None and not out.vacated, (out.attributes, out.notices)
        assert out.attributes["ExitCode"] == 0
        lines = (scratch / "output").read_text().splitlines()
        assert lines[0] == f"hello {universe}"
        assert lines[1] == str(scratch)                      # scratch is the working dir
        assert lines[2] == str(os.stat(scratch).st_uid) != "0"   # the job's user
        assert lines[3] == str(64 << 20)                     # the slot's memory
        assert (scratch / "stdout").read_text() == "done\n"
        # removed at the end
        assert not [n for n in dockerd.left_behind(str(scratch.parent))
                    if n.startswith(f"HTCJob{7 if universe == 'docker' else 8}_")]


def test_over_memory_container_is_held_34(jobs: dict[str, tuple[Path, Running]]) -> None:
    out = jobs["oom"][1].outcome(timeout_s=300)
    assert out.hold is not None, (out.attributes, out.notices)
    assert (out.attributes["HoldReasonCode"], out.attributes["HoldReasonSubCode"]) == \
        (34, 102), out.attributes


def test_missing_image_is_requeued_and_docker_stays_usable(
        dockerd: DockerCli, jobs: dict[str, tuple[Path, Running]]) -> None:
    out = jobs["missing"][1].outcome(timeout_s=300)
    assert out.hold is None and out.vacated, (out.attributes, out.notices)
    assert out.attributes["VacateReasonCode"] == 1021         # ContainerError: requeue
    assert "nosuch" in str(out.attributes["VacateReason"])
    # the runtime itself is fine: the slots keep HasDocker
    assert "DockerOfflineReason" not in out.attributes
    attrs = probe_docker(dockerd).attrs()
    assert attrs["HasDocker"] is True and attrs["HasContainer"] is True
    assert str(attrs["DockerVersion"]).startswith("Docker version ")
    assert int(str(attrs["DockerCachedImageSizeMb"])) >= 1


def test_suspend_continue_and_vacate(dockerd: DockerCli, work: Path,
                                     jobs: dict[str, tuple[Path, Running]]) -> None:
    scratch, running = jobs["suspend"]
    # connected once the job runs: a client that reads nothing while the container
    # starts would fill its socket and be dropped
    wait_file(scratch / "ready", timeout_s=300)
    client = running.client(timeout_s=60)
    client.wait_for("event", "hello")
    slice_ = Path(MOUNT, BASE, "job_dsuspend.slice")
    # the container's cgroup lies under the job's: the job's limits and freezer hold it
    below = [p for p in slice_.iterdir() if p.is_dir() and p.name != "job.scope"]
    assert below and (below[0] / "cgroup.procs").read_text().split()
    client.send(Command.SUSPEND)
    client.wait_for("state", "suspended")
    assert "frozen 1" in (slice_ / "cgroup.events").read_text()
    client.send(Command.CONTINUE)
    client.wait_for("state", "running")
    assert "frozen 0" in (slice_ / "cgroup.events").read_text()
    client.send(Command.SOFT_KILL)
    client.wait_for("event", "done")
    client.close()
    out = running.outcome(timeout_s=120)
    assert out.vacated and out.hold is None, (out.attributes, out.notices)
    assert out.attributes["ExitSignal"] == 15          # SIGTERM, through docker start
    assert not slice_.exists()


def test_container_left_behind_is_removed(dockerd: DockerCli, work: Path) -> None:
    # a container a previous startd left behind (its starter is gone) is found by its
    # label and removed
    old_execute = str(work / "old-execute")
    name = "HTCJob12_0_slot1_PID999999"
    made = subprocess.run(
        [DOCKER, "create", "--name", name, "--label", "org.htcondorproject=True",
         "--label", f"org.condorpy.execute={old_execute}", "--network=none", IMAGE,
         "/bin/sleep", "300"], capture_output=True, check=False)
    assert made.returncode == 0, made.stderr
    assert dockerd.left_behind(old_execute) == [name]
    assert remove_left_behind(dockerd, old_execute, live=[os.getpid()], say=print) == [name]
    assert dockerd.left_behind(old_execute) == []
