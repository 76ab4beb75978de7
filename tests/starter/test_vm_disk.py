"""Per-job scratch volumes against the real lvm, device-mapper and cryptsetup (run in
the `tests/vm/run` lane as root; the initramfs loads loop, dm-thin-pool, dm-crypt and
ext4, and the host's lvm2 and cryptsetup-bin run in the VM).

One automatic backing store (a loop-backed file, as the startd makes when no volume
group is given) serves the module's tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from condorpy.machine import volumes as v
from condorpy.starter.settings import StarterSettings

from .helpers import run

pytestmark = pytest.mark.vm
PY = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
VG = "condorpy_test"


@pytest.fixture(scope="module")
def store() -> Iterator[v.VolumeManager]:
    d = Path(tempfile.mkdtemp(prefix="condorpy-lvm-"))
    settings = v.LvmSettings(enforce=True, backing_file=str(d / "startd_disk.img"),
                             backing_file_mb=64, auto_vg_name=VG,
                             hide_mount=v.HideMount.NEVER, timeout_s=60)
    mgr = v.VolumeManager(settings, v.SubprocessRunner())
    mgr.set_up()
    yield mgr
    runner = v.SubprocessRunner()
    runner.run(("vgremove", "--config", v.LVM_CONFIG, "--yes", "--force", VG), timeout=60)
    if mgr.loop_device:
        runner.run(("pvremove", "--config", v.LVM_CONFIG, "--yes", "--force",
                    mgr.loop_device), timeout=60)
        runner.run(("losetup", "-d", mgr.loop_device), timeout=60)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="condorpy-vm-"))
    os.chmod(d, 0o755)
    for sub in ("execute", "out"):
        (d / sub).mkdir()
        os.chmod(d / sub, 0o777 if sub == "out" else 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def starter_settings(work: Path, mgr: v.VolumeManager, **lvm: object) -> StarterSettings:
    return StarterSettings(execute=str(work / "execute"), use_cgroups=False,
                           update_interval_s=0.2, kill_timeout_s=5,
                           lvm=replace(mgr.settings, **lvm))  # type: ignore[arg-type]


def py(code: str, **extra: object) -> dict[str, object]:
    ad: dict[str, object] = {"Cmd": PY, "Arguments": f"-c '{code}'", "ClusterId": 1}
    ad.update(extra)
    return ad


def ours(mgr: v.VolumeManager) -> list[str]:
    return [r.name for r in mgr.list_volumes() if r.ours]


def mappings() -> list[str]:
    return sorted(os.listdir("/dev/mapper"))


# What the job reports about its scratch directory: the device mounted there.
PROBE = ("import os; d = os.getcwd(); "
         "m = [l.split()[0] for l in open(\"/proc/self/mounts\") if l.split()[1] == d]; "
         "open(\"{out}\", \"w\").write(\" \".join(m)); {rest}")


def test_job_within_request_completes_on_its_own_volume(store: v.VolumeManager,
                                                        work: Path) -> None:
    out = work / "out" / "mounts"
    job = py(PROBE.format(out=out, rest="open(\"f\", \"wb\").write(b\"x\" * (1 << 20))"))
    before = mappings()
    result = run(job, {"Name": "slot1@vm", "Disk": 16384}, starter_settings(work, store))
    assert result.hold is None, result.attributes
    assert result.attributes.get("ExitCode") == 0, result.attributes
    device = out.read_text()
    assert device.startswith(f"/dev/mapper/{VG}-slot1+"), device
    assert not device.endswith("-enc")
    # removed at the end: no LV, no mapping, no directory
    assert ours(store) == [] and mappings() == before
    assert os.listdir(work / "execute") == [] or all(
        n.startswith("starter_") for n in os.listdir(work / "execute"))


def test_job_that_fills_its_volume_is_held_and_the_volume_removed(
        store: v.VolumeManager, work: Path) -> None:
    job = py("import time; f = open(\"big\", \"wb\"); "
             "[f.write(b\"x\" * (1 << 20)) or f.flush() for _ in range(64)]; "
             "time.sleep(30)")
    result = run(job, {"Name": "slot1@vm", "Disk": 8192}, starter_settings(work, store))
    assert result.hold is not None, result.attributes
    assert result.attributes["HoldReasonCode"] == 34, result.attributes
    assert result.attributes["HoldReasonSubCode"] == 104, result.attributes
    assert "request_disk" in str(result.attributes["HoldReason"])
    assert ours(store) == []


def test_encrypted_execute_dir_is_a_dm_crypt_mapping_gone_after(store: v.VolumeManager,
                                                                work: Path) -> None:
    out = work / "out" / "mounts"
    job = py(PROBE.format(out=out, rest="pass"), EncryptExecuteDirectory=True)
    result = run(job, {"Name": "slot2@vm", "Disk": 8192}, starter_settings(work, store))
    assert result.hold is None and result.attributes.get("ExitCode") == 0, result.attributes
    device = out.read_text()
    assert device.startswith(f"/dev/mapper/{VG}-slot2+") and device.endswith("-enc"), device
    name = os.path.basename(device)
    assert not os.path.exists(device) and name not in mappings()
    assert ours(store) == []


def test_leaked_volumes_are_swept_and_a_busy_one_is_a_failure_record(
        store: v.VolumeManager, work: Path) -> None:
    # a starter that died with its volume mounted (encrypted) and one kept busy
    crashed = work / "execute" / "dir_crashed"
    busy = work / "execute" / "dir_busy"
    crashed.mkdir()
    busy.mkdir()
    store.create("slot1_1+crash_1", 4096, str(crashed), encrypt=True)
    store.create("slot1_2+busy_1", 4096, str(busy), encrypt=False)
    holder = subprocess.Popen(["sleep", "120"], cwd=busy)
    try:
        failures = store.sweep()
        assert [f.volume for f in failures] == ["slot1_2+busy_1"], failures
        assert "lvremove" in failures[0].reason or "umount" in failures[0].reason
        assert not os.path.ismount(crashed)
        assert not os.path.exists(v.mapper_path(VG, "slot1_1+crash_1", True))
        assert ours(store) == ["slot1_2+busy_1"]
    finally:
        holder.kill()
        holder.wait()
    # the retry (the startd's back-off decides when) removes it once it is free
    waiting = v.LeakedVolumes()
    waiting.add(failures[0])
    for failure in waiting.due():
        if store.remove_named(failure.volume, failure.encrypted) is None:
            waiting.removed(failure.volume)
    assert len(waiting) == 0 and ours(store) == []


def test_own_process_starter_hides_its_thin_volume(work: Path) -> None:
    """The daemon's kind of starter (a process of its own, `condorpy starter`): with
    LVM_HIDE_MOUNT = true its job's volume is mounted in the starter's own mount
    namespace, here carved from a thin pool of an automatic store."""
    vg = "condorpy_thin"
    thin = v.LvmSettings(enforce=True, thin=True, thin_extra_mb=8, auto_vg_name=vg,
                         backing_file=str(work / "thin.img"), backing_file_mb=64,
                         timeout_s=60)
    mgr = v.VolumeManager(thin, v.SubprocessRunner())
    mgr.set_up()
    try:
        out = work / "out" / "mounts"
        probe = work / "probe.py"
        probe.write_text(PROBE.format(out=out, rest="import time; time.sleep(4)"))
        probe.chmod(0o644)
        (work / "job.ad").write_text(f'Cmd = "{PY}"\nArguments = "{probe}"\n'
                                     "ClusterId = 1\nProcId = 0\n")
        (work / "slot.ad").write_text('Name = "slot3@vm"\nDisk = 8192\nCpus = 1\n')
        sets = {"STARTD_ENFORCE_DISK_LIMITS": "true", "LVM_USE_THIN_PROVISIONING": "true",
                "LVM_THIN_LV_EXTRA_SIZE_MB": "8", "LVM_HIDE_MOUNT": "true",
                "LVM_AUTO_VG_NAME": vg, "CONDORPY_USE_CGROUPS": "false"}
        argv = [sys.executable, "-m", "condorpy", "starter", "--job-ad",
                str(work / "job.ad"), "--slot-ad", str(work / "slot.ad"),
                "--execute", str(work / "execute"), "--result", str(work / "result.ad")]
        for k, val in sets.items():
            argv += ["--set", f"{k}={val}"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while not out.exists() or not out.read_text():
            if proc.poll() is not None:
                result = work / "result.ad"
                pytest.fail(proc.communicate()[0].decode() + (
                    result.read_text() if result.exists() else ""))
            assert time.monotonic() < deadline, "the job never wrote its probe"
            time.sleep(0.1)
        device = out.read_text()
        assert device.startswith(f"/dev/mapper/{vg}-slot3+"), device
        # the job sees its volume; this process (another mount namespace) does not
        with open("/proc/self/mounts") as fh:
            assert device not in fh.read()
        live = [r for r in mgr.list_volumes() if r.ours]
        assert len(live) == 1 and live[0].pool == f"{vg}_THINPOOL", live
        text = proc.communicate(timeout=120)[0].decode()
        assert proc.returncode == 0, text
        assert "HoldReasonCode" not in (work / "result.ad").read_text()
        assert ours(mgr) == []
    finally:
        runner = v.SubprocessRunner()
        runner.run(("vgremove", "--config", v.LVM_CONFIG, "--yes", "--force", vg), timeout=60)
        if mgr.loop_device:
            runner.run(("pvremove", "--config", v.LVM_CONFIG, "--yes", "--force",
                        mgr.loop_device), timeout=60)
            runner.run(("losetup", "-d", mgr.loop_device), timeout=60)
