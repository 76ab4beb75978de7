"""The lane's host side, without booting: tests/vm/run's arguments and the job
script it writes for the VM, and tests/vm/build-initramfs's module order."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RUN = HERE / "run"
BUILD = HERE / "build-initramfs"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUN), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=30)


def test_help_lists_the_options() -> None:
    out = run("--help")
    assert out.returncode == 0
    for option in ("--systemd", "--mem", "--cpus", "--timeout", "--kvm", "--env", "--results"):
        assert option in out.stdout


@pytest.mark.parametrize("args, message", [
    (["--bogus", "--", "true"], "unknown option --bogus"),
    ([], "no command"),
    (["--mem", "lots", "--", "true"], "positive whole numbers, not 'lots'"),
    (["--timeout"], "--timeout needs a value"),
    (["--env", "1X=y", "--", "true"], "--env takes NAME=VALUE, not '1X=y'"),
    (["--shell", "--systemd"], "plain mode only"),
])
def test_bad_arguments_exit_2_with_a_message(args: list[str], message: str) -> None:
    out = run(*args)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def job_script(tmp_path: Path, *args: str) -> str:
    out = run("--print-job", "--results", str(tmp_path / "results"), *args, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return out.stdout


ARGV = ["a b", "it's", "$HOME", "", "tab\there", "line\nbreak", "ü", "*", "--"]


def test_job_script_runs_the_command_with_its_arguments_and_status(tmp_path: Path) -> None:
    code = ("import json, os, sys; print(json.dumps([sys.argv[1:], os.getcwd(), "
            "{k: os.environ.get(k) for k in ('CONDORPY_VM', 'CONDORPY_VM_RESULTS', "
            "'GREETING', 'PYTHONDONTWRITEBYTECODE')}])); sys.exit(3)")
    script = job_script(tmp_path, "--env", "GREETING=hello world", "--",
                        sys.executable, "-c", code, *ARGV)
    # The script writes the status where the VM's control share is mounted;
    # run it on the host with that one path pointed at the test's directory.
    assert "/.condorpy-vm/status" in script
    status = tmp_path / "status"
    (tmp_path / "job.sh").write_text(script.replace("/.condorpy-vm/status", str(status)))
    out = subprocess.run(["bash", str(tmp_path / "job.sh")], capture_output=True,
                         text=True, cwd="/", timeout=30)
    assert out.returncode == 3
    assert status.read_text().strip() == "3"
    lines = out.stdout.splitlines()
    assert lines[0] == "@@condorpy-vm:begin@@" and lines[-1] == "@@condorpy-vm:end@@"
    argv, cwd, env = json.loads("\n".join(lines[1:-1]))
    assert argv == ARGV
    assert cwd == str(tmp_path)
    assert env == {"CONDORPY_VM": "1", "CONDORPY_VM_RESULTS": str(tmp_path / "results"),
                   "GREETING": "hello world", "PYTHONDONTWRITEBYTECODE": "1"}


def test_systemd_job_names_its_lane_and_powers_off(tmp_path: Path) -> None:
    # Not run here: it ends with `systemctl poweroff -ff`.
    script = job_script(tmp_path, "--systemd", "--", "true")
    assert "CONDORPY_VM=systemd " in script
    assert script.index("/.condorpy-vm/status") < script.index("systemctl poweroff -ff")


def fake_module(path: Path, depends: str) -> None:
    # Only the .modinfo strings matter to the builder: NUL-separated key=value.
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF\0license=GPL\0depends=" + depends.encode() + b"\0vermagic=x\0")


@pytest.mark.skipif(not (shutil.which("cpio") and os.access("/bin/busybox", os.X_OK)),
                    reason="needs cpio and /bin/busybox (tests/vm/run installs them)")
def test_initramfs_loads_modules_after_their_dependencies(tmp_path: Path) -> None:
    kdir = tmp_path / "kernel" / "6.1.0-test"
    mods = kdir / "lib" / "modules" / "6.1.0-test" / "kernel"
    graph = {"virtio_pci": "virtio_ring,virtio_pci_modern_dev,virtio", "virtio_ring": "",
             "virtio": "", "virtio_pci_modern_dev": "", "9pnet_virtio": "virtio,9pnet,virtio_ring",
             "9pnet": "", "9p": "9pnet,fscache,netfs", "fscache": "netfs", "netfs": "",
             "overlay": "",
             # the scratch volume tests' (tests/starter/test_vm_disk.py)
             "crc32c_generic": "", "loop": "", "dm-mod": "", "dm-bufio": "dm-mod",
             "dm-bio-prison": "", "libcrc32c": "", "dm-persistent-data": "dm-bufio,libcrc32c",
             "dm-thin-pool": "dm-bio-prison,dm-persistent-data,dm-mod", "dm-crypt": "dm-mod",
             "ecb": "", "xts": "", "af_alg": "", "algif_skcipher": "af_alg",
             "ext4": "jbd2,mbcache,crc16", "jbd2": "", "mbcache": "", "crc16": ""}
    for name, deps in graph.items():
        fake_module(mods / "drivers" / f"{name}.ko", deps)
    env = {**os.environ, "CONDORPY_VM_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([str(BUILD), str(kdir)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    archive = Path(out.stdout.strip())
    assert archive.parent == tmp_path / "cache" / "initramfs"
    listing = subprocess.run(["cpio", "-i", "--to-stdout", "modules/order"],
                             input=gzip.decompress(archive.read_bytes()),
                             capture_output=True, check=True).stdout.decode().split()
    assert sorted(listing) == sorted(graph)
    for name, deps in graph.items():
        for dep in filter(None, deps.split(",")):
            assert listing.index(dep) < listing.index(name), (dep, name, listing)
    # libcrc32c asks the crypto API for crc32c when it loads: nothing could load it then
    assert listing.index("crc32c_generic") < listing.index("libcrc32c")
    # Built once: a second call finds the cached archive.
    again = subprocess.run([str(BUILD), str(kdir)], capture_output=True, text=True,
                           env=env, timeout=60)
    assert again.stdout == out.stdout and again.stderr == ""


@pytest.mark.skipif(not (shutil.which("cpio") and os.access("/bin/busybox", os.X_OK)),
                    reason="needs cpio and /bin/busybox (tests/vm/run installs them)")
def test_initramfs_names_a_missing_module(tmp_path: Path) -> None:
    kdir = tmp_path / "kernel" / "6.1.0-test"
    mods = kdir / "lib" / "modules" / "6.1.0-test" / "kernel"
    fake_module(mods / "virtio_pci.ko", "virtio")
    env = {**os.environ, "CONDORPY_VM_CACHE": str(tmp_path / "cache")}
    out = subprocess.run([str(BUILD), str(kdir)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode != 0
    assert "kernel 6.1.0-test has no module virtio" in out.stderr
