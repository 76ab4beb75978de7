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


def test_precompile_writes_bytecode_for_the_checkout_and_not_the_pool_chroots(
        tmp_path: Path) -> None:
    # The VM cannot keep what its Python compiles: the host compiles ahead, except
    # under .cache (the pool lane's chroots, /proc mounted in them).
    for rel in ("condorpy/a.py", "condorpy/sub/b.py", "tests/test_c.py",
                "tests/pool/.cache/chroot/usr/lib/d.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("X = 1\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    script = f'source {HERE / "lib.sh"}; vm_precompile "$1"'
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(["bash", "-c", script, "-", str(tmp_path)], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    compiled = sorted(str(p.relative_to(tmp_path)).split("/__pycache__/")[0] + "/" +
                      p.name.split(".")[0] for p in tmp_path.rglob("*.pyc"))
    assert compiled == ["condorpy/a", "condorpy/sub/b", "tests/test_c"]
    # Once up to date, a second call writes nothing.
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.pyc")}
    subprocess.run(["bash", "-c", script, "-", str(tmp_path)], check=True, timeout=60)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.pyc")} == stamps


FAKE_RUN = r"""#!/usr/bin/env bash
mode=plain times=""
args="$*"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --systemd) mode=systemd ;;
        --times) times="$2"; shift ;;
        --) break ;;
    esac
    shift
done
echo "$mode start $args" >>"$FAKE_LOG"
if [[ $mode == plain && ${FAKE_WAIT_FOR_SYSTEMD:-0} == 1 ]]; then
    # side by side: the systemd lane boots while this one runs
    for _ in $(seq 600); do
        grep -q '^systemd start' "$FAKE_LOG" && { echo "plain saw systemd" >>"$FAKE_LOG"; break; }
        sleep 0.1
    done
fi
[[ -n "$times" ]] && echo "boot=1.5 run=2.5 total=4.0" >"$times"
echo "$mode output"
echo "$mode end" >>"$FAKE_LOG"
rc="FAKE_RC_$mode"
exit "${!rc:-0}"
"""
FAKE_DEB = r"""#!/usr/bin/env bash
echo "deb start" >>"$FAKE_LOG"
[[ ${FAKE_DEB_FAIL:-0} == 1 ]] && { echo "prepare-deb: no package" >&2; exit 1; }
echo "deb end" >>"$FAKE_LOG"
echo /x/condorpy_0.1_all.deb
"""
FAKE_PYTHON = r"""#!/usr/bin/env bash
echo "python $*" >>"$FAKE_LOG"
[[ "$*" == *compileall* ]] && cat >/dev/null
exit 0
"""


def suite(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """tests/vm/run-suite in a copy of the tree with tests/vm/run, prepare-deb and the
    venv's python faked: what it runs, in which order, and what it prints."""
    vm = tmp_path / "tests" / "vm"
    vm.mkdir(parents=True)
    shutil.copy(HERE / "run-suite", vm)
    shutil.copy(HERE / "lib.sh", vm)
    for path, text in ((vm / "run", FAKE_RUN), (vm / "prepare-deb", FAKE_DEB),
                       (tmp_path / ".venv" / "bin" / "python", FAKE_PYTHON)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    # (spelt in two parts: run-suite itself greps this tree for the markers)
    mark = "pytestmark = pytest.mark."
    (tmp_path / "tests" / "test_p.py").write_text(mark + "vm\n")
    (tmp_path / "tests" / "test_s.py").write_text(mark + "vm_systemd\n")
    log = tmp_path / "log"
    log.touch()
    out = subprocess.run([str(vm / "run-suite"), "-x"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=120,
                         env={**os.environ, "FAKE_LOG": str(log), **env})
    return out, log.read_text().splitlines()


def test_suite_boots_the_lanes_side_by_side_once_the_package_is_built(
        tmp_path: Path) -> None:
    out, log = suite(tmp_path, FAKE_WAIT_FOR_SYSTEMD="1")
    assert out.returncode == 0, out.stdout + out.stderr
    # bytecode and pytest's rewritten test modules first, for both lanes' files
    assert log[0].startswith("python -m compileall")
    assert log[1].startswith("python -m pytest -q -p no:cacheprovider --collect-only "
                             "-m vm or vm_systemd tests/test_p.py tests/test_s.py")
    plain = next(line for line in log if line.startswith("plain start"))
    systemd = next(line for line in log if line.startswith("systemd start"))
    assert "--timeout 1200 -- " in plain and "-m vm and not vm_systemd -x tests/test_p.py" in plain
    assert "--systemd --timeout 1200 --env CONDORPY_DEB=/x/condorpy_0.1_all.deb" in systemd
    assert "-m vm_systemd -x tests/test_s.py" in systemd
    assert log.index("deb end") < log.index(systemd) < log.index("plain end")
    assert "plain saw systemd" in log
    # the plain lane's output, then the systemd lane's, then the summary
    text = out.stdout
    assert text.index("plain output") < text.index("systemd output") < \
        text.index("lane plain    boot    1.5s  run    2.5s")
    assert "package  /x/condorpy_0.1_all.deb: " in text
    assert "lane systemd  boot    1.5s  run    2.5s" in text and "passed" in text
    assert "real-kernel lane: " in text and "failed" not in text


def test_suite_one_lane_after_the_other_still_builds_the_package_beside(
        tmp_path: Path) -> None:
    out, log = suite(tmp_path, CONDORPY_VM_SIDE_BY_SIDE="0")
    assert out.returncode == 0, out.stdout + out.stderr
    assert log.index("deb start") < log.index("plain end")
    systemd = next(line for line in log if line.startswith("systemd start"))
    assert log.index("plain end") < log.index(systemd)


@pytest.mark.parametrize("side_by_side", ["0", "1"])
def test_suite_fails_when_the_package_or_a_lane_fails(tmp_path: Path,
                                                      side_by_side: str) -> None:
    out, log = suite(tmp_path / "deb", FAKE_DEB_FAIL="1",
                     CONDORPY_VM_SIDE_BY_SIDE=side_by_side)
    assert out.returncode == 1
    assert "lane systemd  not booted: tests/vm/prepare-deb failed" in out.stdout
    assert "real-kernel lane failed: package" in out.stdout
    assert not [line for line in log if line.startswith("systemd start")]
    out, log = suite(tmp_path / "lane", FAKE_RC_systemd="1",
                     CONDORPY_VM_SIDE_BY_SIDE=side_by_side)
    assert out.returncode == 1
    assert "FAILED (exit 1)" in out.stdout
    assert "real-kernel lane failed: systemd" in out.stdout
