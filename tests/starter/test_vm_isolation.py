"""NO_JOB_NETWORKING and STARTER_HIDE_GPU_DEVICES on a real kernel (the `tests/vm/run`
lane, as root; the job runs as nobody): a job without networking cannot reach a
listener on the machine's 127.0.0.1 and still talks to itself over its own loopback; a
job opens its assigned GPU's node and not another's, by whatever path."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import run
from .test_vm_cgroup import PY, py, settings, work  # noqa: F401

pytestmark = pytest.mark.vm

NET_PROBE = """import json, socket, sys
out = {}
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
    out["host"] = "connected"
except OSError as e:
    out["host"] = e.errno
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.create_connection(srv.getsockname(), timeout=5); s, _ = srv.accept()
c.sendall(b"ping"); out["own"] = s.recv(4).decode()
open(sys.argv[2], "w").write(json.dumps(out))
"""


def test_a_job_without_networking_reaches_only_its_own_loopback(work: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    probe = work / "probe.py"
    probe.write_text(NET_PROBE)
    result = work / "out" / "net"
    try:
        job = {"Cmd": PY, "Arguments": f"{probe} {port} {result}", "ClusterId": 1}
        out = run(job, {"Name": "slot1@vm"}, settings(work, no_job_networking=True))
    finally:
        listener.close()
    assert out.attributes.get("ExitCode") == 0, out.attributes
    seen = json.loads(result.read_text())
    assert seen == {"host": errno.ECONNREFUSED, "own": "ping"}, seen


INFO = "Model: \t\t Fake GPU\nGPU UUID: \t {uuid}\nDevice Minor: \t {minor}\n"
GPU_PROBE = """import json, os, sys
out = {}
for path in sys.argv[2:]:
    try:
        os.close(os.open(path, os.O_RDWR))
        out[path] = 0
    except OSError as e:
        out[path] = e.errno
try:
    os.mknod(os.environ["_CONDOR_SCRATCH_DIR"] + "/again", 0o20666, os.makedev(195, 1))
    out["mknod"] = 0
except OSError as e:
    out["mknod"] = e.errno
if os.geteuid() == 0:
    # root can leave its cgroup, and the program with it
    open("/sys/fs/cgroup/cgroup.procs", "w").write("0")
    try:
        os.close(os.open(sys.argv[-1], os.O_RDWR))
        out["escaped"] = 0
    except OSError as e:
        out["escaped"] = e.errno
open(sys.argv[1], "w").write(json.dumps(out))
"""


@pytest.fixture
def fake_gpus() -> Iterator[tuple[Path, Path]]:
    # under /dev: a tmpfs the lane mounts nodev would refuse every node alike
    dev = Path(f"/dev/condorpy-gpus-{os.getpid()}")
    inventory = Path(f"/run/condorpy-gpus-{os.getpid()}")
    dev.mkdir(mode=0o755)
    for minor, uuid in enumerate(("GPU-aaaa1111-0000", "GPU-bbbb2222-0000")):
        os.mknod(dev / f"nvidia{minor}", 0o20666, os.makedev(195, minor))
        os.chmod(dev / f"nvidia{minor}", 0o666)
        bus = inventory / f"0000:0{minor + 1}:00.0"
        bus.mkdir(parents=True)
        (bus / "information").write_text(INFO.format(uuid=uuid, minor=minor))
    yield dev, inventory
    shutil.rmtree(dev, ignore_errors=True)
    shutil.rmtree(inventory, ignore_errors=True)


def test_a_job_opens_its_own_gpu_and_no_other(work: Path,
                                             fake_gpus: tuple[Path, Path]) -> None:
    dev, inventory = fake_gpus
    probe = work / "probe.py"
    probe.write_text(GPU_PROBE)
    result = work / "out" / "gpus"
    mine, other = dev / "nvidia0", dev / "nvidia1"
    via_root = f"/proc/self/root{other}"
    job = {"Cmd": PY, "Arguments": f"{probe} {result} {mine} {other} {via_root}",
           "ClusterId": 1}
    s = settings(work, gpu_inventory_dir=str(inventory), dev_dir=str(dev))
    out = run(job, {"Name": "slot1_1@vm", "AssignedGPUs": "GPU-aaaa1111"}, s)
    assert out.attributes.get("ExitCode") == 0, out.attributes
    seen = json.loads(result.read_text())
    # no driver behind the fake nodes: an allowed open gets as far as ENXIO
    assert seen[str(mine)] == errno.ENXIO, seen
    assert seen[str(other)] == errno.EPERM, seen
    assert seen[via_root] == errno.EPERM, seen
    assert seen["mknod"] == errno.EPERM, seen


def test_a_root_job_is_refused_in_its_cgroup_and_not_out_of_it(
        work: Path, fake_gpus: tuple[Path, Path]) -> None:
    dev, inventory = fake_gpus
    probe = work / "probe.py"
    probe.write_text(GPU_PROBE)
    result = work / "out" / "gpus"
    other = dev / "nvidia1"
    job = {"Cmd": PY, "Arguments": f"{probe} {result} {other}", "ClusterId": 1,
           "Owner": "root", "Err": str(work / "out" / "err")}
    s = settings(work, gpu_inventory_dir=str(inventory), dev_dir=str(dev),
                 allow_root_jobs=True)
    out = run(job, {"Name": "slot1_1@vm", "AssignedGPUs": "GPU-aaaa1111"}, s)
    assert out.attributes.get("ExitCode") == 0, (work / "out" / "err").read_text()
    seen = json.loads(result.read_text())
    # root's permissions do not pass the program, nor does a node it makes again ...
    assert seen[str(other)] == errno.EPERM and seen["mknod"] == errno.EPERM, seen
    # ... but root can move itself out of its cgroup (docs/starter.md says so)
    assert seen["escaped"] == errno.ENXIO, seen
