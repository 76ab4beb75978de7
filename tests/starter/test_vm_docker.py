"""Docker- and container-universe jobs on a real kernel with Debian's dockerd (the
`tests/vm/run` lane, as root). One dockerd serves the whole file (vfs storage, no
bridge, no iptables, the cgroupfs driver so that a container's cgroup can go under
its job's); the image is a busybox root imported offline. The argument lists and the
parsers are tested on the host (tests/starter/test_container.py,
tests/machine/test_docker.py)."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.machine.docker import DockerCli, DockerSettings, client_env, probe_docker
from condorpy.starter.container_run import remove_left_behind
from condorpy.starter.protocol import Command
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR
from condorpy.starter.settings import MemoryPolicy

from .helpers import run, start
from .test_vm_cgroup import BASE, MOUNT, settings, wait_file, work  # noqa: F401

pytestmark = pytest.mark.vm
IMAGE = "condorpy-test/busybox:1"
DOCKERD = "/usr/sbin/dockerd"
DOCKER = "/usr/bin/docker"


def _busybox_tar() -> bytes:
    """A root file system of busybox alone, as ``docker import`` takes it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "tmp", "etc", "proc", "sys", "dev"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add("/bin/busybox", "bin/busybox")
        for tool in ("sh", "cat", "id", "echo", "sleep", "awk", "wc", "pwd", "ls", "true"):
            info = tarfile.TarInfo(f"bin/{tool}")
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(info)
    return buf.getvalue()


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
    imported = subprocess.run([DOCKER, "import", "-", IMAGE], input=_busybox_tar(),
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


def _scratch(work: Path, n: int, files: dict[str, str]) -> Path:  # noqa: F811
    """A prepared scratch directory (as the daemon makes a pool job's) with input."""
    d = work / "execute" / f"dir_pool_{n}"
    d.mkdir(mode=0o700)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def _slot(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {"Name": "slot1@vm", "Cpus": 1, "Memory": 64}
    base.update(kw)
    return base


def _limits(work: Path) -> dict[str, object]:  # noqa: F811
    return {"memory_policy": MemoryPolicy.HARD, "disable_swap": True,
            "update_interval_s": 1.0,
            "docker": DockerSettings(path=DOCKER, cgroup_driver="cgroupfs")}


SCRIPT = ("cat input > output; echo $(pwd) >> output; id -u >> output; "
          "cat /sys/fs/cgroup/memory.max >> output; echo done")


def _job(scratch: Path, cluster: int, cmd: str, image: dict[str, object] | None = None,
         **extra: object) -> dict[str, object]:
    ad: dict[str, object] = {**(image or {"WantDocker": True, "DockerImage": IMAGE}),
                             "ClusterId": cluster, "ProcId": 0, "Cmd": "/bin/sh",
                             "Arguments": f"-c '{cmd}'", "DockerNetworkType": "none",
                             PREPARED_SCRATCH_ATTR: str(scratch)}
    ad.update(extra)
    return ad


def test_docker_and_container_universe_jobs(dockerd: DockerCli, work: Path) -> None:  # noqa: F811
    # side by side, as two slots would run them: the emulated client calls overlap
    s = settings(work, **_limits(work))
    jobs = {}
    for n, (universe, image) in enumerate((
            ("docker", {"WantDocker": True, "DockerImage": IMAGE}),
            ("container", {"WantContainer": True,
                           "ContainerImage": f"docker://{IMAGE}"}))):
        scratch = _scratch(work, n + 1, {"input": f"hello {universe}\n"})
        ad = _job(scratch, 7 + n, SCRIPT, image, Out="stdout", Err="stderr")
        jobs[universe] = (scratch, start(ad, _slot(Name=f"slot1_{n + 1}@vm"), s,
                                         tag=f"d{universe}"))
    for universe, (scratch, running) in jobs.items():
        out = running.outcome(timeout_s=300)
        assert out.hold is None and not out.vacated, (out.attributes, out.notices)
        assert out.attributes["ExitCode"] == 0
        lines = (scratch / "output").read_text().splitlines()
        assert lines[0] == f"hello {universe}"
        assert lines[1] == str(scratch)                      # scratch is the working dir
        assert lines[2] == str(os.stat(scratch).st_uid) != "0"   # the job's user
        assert lines[3] == str(64 << 20)                     # the slot's memory
        assert (scratch / "stdout").read_text() == "done\n"
    assert not dockerd.left_behind(str(work / "execute"))  # removed at the end


def test_over_memory_held_34_and_missing_image_requeued(
        dockerd: DockerCli, work: Path) -> None:  # noqa: F811
    s = settings(work, **_limits(work))
    hog = "awk \"BEGIN { s = \\\"xxxxxxxx\\\"; while (1) s = s s }\""
    oom = start(_job(_scratch(work, 3, {}), 8, hog), _slot(Memory=48), s, tag="doom")
    missing = start(_job(_scratch(work, 5, {}), 10, "true",
                         {"WantDocker": True, "DockerImage": "condorpy-test/nosuch:1"}),
                    _slot(Name="slot1_2@vm"), s, tag="dmissing")
    # meanwhile, a container a previous startd left behind (its starter is gone) is
    # found by its label and removed; the running jobs' containers are not touched
    old_execute = str(work / "old-execute")
    name = "HTCJob11_0_slot1_PID999999"
    made = subprocess.run(
        [DOCKER, "create", "--name", name, "--label", "org.htcondorproject=True",
         "--label", f"org.condorpy.execute={old_execute}", "--network=none", IMAGE,
         "/bin/sleep", "300"], capture_output=True, check=False)
    assert made.returncode == 0, made.stderr
    assert dockerd.left_behind(old_execute) == [name]
    assert remove_left_behind(dockerd, old_execute, live=[os.getpid()], say=print) == [name]
    assert dockerd.left_behind(old_execute) == []
    out = oom.outcome(timeout_s=300)
    assert out.hold is not None, (out.attributes, out.notices)
    assert (out.attributes["HoldReasonCode"], out.attributes["HoldReasonSubCode"]) == \
        (34, 102), out.attributes
    # a missing image is the runtime's failure, not the job's: back to the queue
    out = missing.outcome(timeout_s=300)
    assert out.hold is None and out.vacated, (out.attributes, out.notices)
    assert out.attributes["VacateReasonCode"] == 1021
    assert "nosuch" in str(out.attributes["VacateReason"])
    # the runtime itself is fine: the slot keeps HasDocker
    assert "DockerOfflineReason" not in out.attributes
    attrs = probe_docker(dockerd).attrs()
    assert attrs["HasDocker"] is True and attrs["HasContainer"] is True
    assert str(attrs["DockerVersion"]).startswith("Docker version ")
    assert int(str(attrs["DockerCachedImageSizeMb"])) >= 1


def test_suspend_continue_and_vacate(dockerd: DockerCli, work: Path) -> None:  # noqa: F811
    scratch = _scratch(work, 4, {})
    ready = scratch / "ready"
    loop = "touch ready; while true; do sleep 1; done"
    ad = _job(scratch, 9, loop)
    running = start(ad, _slot(), settings(work, **_limits(work)), tag="dsusp")
    # connected once the job runs: a client that reads nothing while the container
    # starts would fill its socket and be dropped
    wait_file(ready, timeout_s=120)
    client = running.client(timeout_s=60)
    client.wait_for("event", "hello")
    slice_ = Path(MOUNT, BASE, "job_dsusp.slice")
    # the container's cgroup lies under the job's: the job's limits and freezer hold it
    below = [p for p in slice_.iterdir() if p.is_dir() and p.name != "job.scope"]
    assert below, list(slice_.iterdir())
    procs = (below[0] / "cgroup.procs").read_text().split()
    assert procs
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
    assert not dockerd.left_behind(str(work / "execute"))
