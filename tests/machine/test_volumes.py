"""Per-job scratch volumes: the pure parts (knobs, names, sizes, command lines, lvs
parsing, the back-off) and the manager driven through a fake command runner. The real
lvm and cryptsetup are exercised in the VM (tests/starter/test_vm_disk.py)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest

from condorpy.config import Config, DetectedFacts
from condorpy.errors import ConfigError, MachineError
from condorpy.machine import volumes as v

FACTS = DetectedFacts(full_hostname="ep.example.org", cpus=2, cores=2, physical_cpus=2,
                      memory_mb=4096)


def knobs(values: dict[str, str]) -> Config:
    return Config.from_mapping(values, source="condor_config", detected=FACTS,
                               subsystem="STARTD")


def test_defaults_are_htcondors() -> None:
    s = v.lvm_settings(knobs({"SPOOL": "/var/spool/x"}))
    assert not s.enforce and s.volume_group is None and s.thinpool is None
    assert not s.thin and s.hide_mount is v.HideMount.AUTO
    assert s.backing_file == "/var/spool/x/startd_disk.img"
    assert s.backing_file_mb == 10240 and s.thin_extra_mb == 2000
    assert s.thick_margin == 0.98 and s.timeout_s == 120.0
    assert not s.encrypt_all and not s.encryption_disabled
    assert s.automatic


def test_knobs_become_settings() -> None:
    s = v.lvm_settings(knobs({
        "STARTD_ENFORCE_DISK_LIMITS": "True", "LVM_VOLUME_GROUP_NAME": "condor_vg",
        "LVM_THINPOOL_NAME": "htcondor", "LVM_USE_THIN_PROVISIONING": "true",
        "LVM_HIDE_MOUNT": "false", "ENCRYPT_EXECUTE_DIRECTORY": "true"}))
    assert s.enforce and s.volume_group == "condor_vg" and s.thinpool == "htcondor"
    assert s.thin and s.hide_mount is v.HideMount.NEVER and s.encrypt_all
    assert not s.automatic
    # thin without a pool: the startd makes its own store
    assert v.lvm_settings(knobs({"LVM_VOLUME_GROUP_NAME": "vg",
                                 "LVM_USE_THIN_PROVISIONING": "true"})).automatic


def test_bad_knob_names_its_line() -> None:
    with pytest.raises(ConfigError, match="LVM_THICK_LV_MARGIN"):
        v.lvm_settings(knobs({"LVM_THICK_LV_MARGIN": "1.5"}))
    with pytest.raises(ConfigError, match="LVM_BACKING_FILE_SIZE_MB"):
        v.lvm_settings(knobs({"LVM_BACKING_FILE_SIZE_MB": "0"}))


@pytest.mark.parametrize("text,want", [("True", v.HideMount.ALWAYS),
                                       ("False", v.HideMount.NEVER),
                                       ("AUTO", v.HideMount.AUTO), (None, v.HideMount.AUTO)])
def test_hide_mount(text: str | None, want: v.HideMount) -> None:
    assert v.parse_hide_mount(text) is want


def test_encryption_wanted_by_machine_or_job_unless_disabled() -> None:
    job = {"EncryptExecuteDirectory": True}
    assert v.LvmSettings().wants_encryption(job)
    assert not v.LvmSettings().wants_encryption({})
    assert v.LvmSettings(encrypt_all=True).wants_encryption({})
    assert not v.LvmSettings(encrypt_all=True, encryption_disabled=True).wants_encryption(job)


def test_names() -> None:
    assert v.lv_name("slot1_1", 812, 3) == "slot1_1+812_3"
    assert v.mapper_path("condor-vg", "a-b") == "/dev/mapper/condor--vg-a--b"
    assert v.mapper_path("vg", "slot1+2_3", True) == "/dev/mapper/vg-slot1+2_3-enc"


def test_sizes_in_kib() -> None:
    thick, thin = v.LvmSettings(), v.LvmSettings(thin=True)
    assert v.volume_size_kb(100_000, thick) == 100_000
    assert v.volume_size_kb(10, thick) == v.EXTENT_KB          # one extent at least
    assert v.volume_size_kb(100_000, thin) == 100_000 + 2000 * 1024
    assert v.hold_limit_bytes(100_000, thin) == 100_000 * 1024
    assert v.hold_limit_bytes(100_000, thick) == int(100_000 * 1024 * 0.98)


def test_command_lines() -> None:
    thick = v.lvcreate_argv("vg", "lv", 8192, thinpool=None, encrypted=True)
    assert thick[0] == "lvcreate" and thick[1:3] == ("--config", v.LVM_CONFIG)
    assert "udev_sync = 0" in v.LVM_CONFIG and "udev_rules = 0" in v.LVM_CONFIG
    assert thick[-4:] == ("--yes", "-L", "8192k", "vg")
    assert ("--addtag", "htcondor_lv") == thick[thick.index("--addtag"):][:2]
    assert "lv_is_encrypted" in thick
    thin = v.lvcreate_argv("vg", "lv", 8192, thinpool="pool", encrypted=False)
    assert thin[-4:] == ("-V", "8192k", "-T", "vg/pool") and "lv_is_encrypted" not in thin
    assert v.lvremove_argv("vg", "lv")[-1] == "vg/lv"
    assert v.mkfs_argv("/dev/x")[:1] == ("mke2fs",) and "^has_journal" in v.mkfs_argv("/dev/x")
    opened = v.crypt_open_argv("vg", "lv")
    # the key comes on stdin, never on the command line or from a file
    assert opened[opened.index("--key-file") + 1] == "-"
    assert opened[-2:] == ("/dev/mapper/vg-lv", "vg-lv-enc")
    assert v.crypt_close_argv("vg", "lv") == ("cryptsetup", "close", "vg-lv-enc")
    store = v.auto_store_argvs("/dev/loop3", "condor_STARTD", "condor_STARTD_THINPOOL")
    assert [a[0] for a in store] == ["pvcreate", "vgcreate", "lvcreate"]
    assert "thin-pool" in store[2]


SEP = v.REPORT_SEPARATOR


def _line(vg: str, lv: str, pool: str, tags: str, size: str, data: str) -> str:
    return SEP.join([f"  LVM2_VG_NAME='{vg}'", f"LVM2_LV_NAME='{lv}'",
                     f"LVM2_POOL_LV='{pool}'", f"LVM2_LV_TAGS='{tags}'",
                     f"LVM2_LV_SIZE='{size}'", f"LVM2_DATA_PERCENT='{data}'",
                     "LVM2_VG_EXTENT_SIZE='4194304B'"])


LVS = "\n".join([
    _line("vg", "pool", "", "", "1073741824B", "12.50"),
    _line("vg", "slot1_1+9_1", "pool", "htcondor_lv", "8388608B", "3.00"),
    _line("vg", "slot1_2+9_2", "pool", "htcondor_lv,lv_is_encrypted", "8388608B", ""),
    _line("vg", "home", "", "", "4194304B", ""),
    "garbage line",
    "",
])


def test_parse_lvs() -> None:
    records = v.parse_lvs(LVS)
    assert [r.name for r in records] == ["pool", "slot1_1+9_1", "slot1_2+9_2", "home"]
    pool, one, two, home = records
    assert pool.size_bytes == 1 << 30 and pool.data_percent == 12.5 and not pool.ours
    assert one.ours and not one.encrypted and one.pool == "pool"
    assert two.encrypted and two.data_percent is None and two.extent_bytes == 4 << 20
    assert not home.ours
    assert [r.name for r in v.leaked(records, "vg", live=["slot1_1+9_1"])] == ["slot1_2+9_2"]


def test_back_off_is_htcondors() -> None:
    due = [i for i in range(1, 200) if v.retry_due(i)]
    assert due == [1, 2, 4, 8, 16, 32, 120, 180]
    assert v.retry_due(60 * 24 * 2) and not v.retry_due(60 * 24 + 60)


def test_leaked_volumes_retried_on_the_back_off() -> None:
    book = v.LeakedVolumes()
    failure = v.VolumeRemovalFailed("vg", "lv", False, "lvremove: busy", slot="slot1_1")
    book.add(failure)
    book.add(failure)          # once only
    tried = [i for i in range(1, 10) if book.due()]
    assert tried == [1, 2, 4, 8] and len(book) == 1
    book.removed("lv")
    assert len(book) == 0 and failure.device == "/dev/mapper/vg-lv"


def test_slot_attributes() -> None:
    s = v.LvmSettings(enforce=True, volume_group="vg", thinpool="pool", thin=True)
    attrs = v.slot_attributes(s, loopback=False, ready=True)
    assert attrs == {"IsEnforcingDiskUsage": True, "LvmBackingStore": "vg/pool",
                     "DiskQuantum": 4096, "HasEncryptExecuteDirectory": True,
                     "LvmIsThinProvisioning": True}
    auto = v.slot_attributes(v.LvmSettings(enforce=True), loopback=True, ready=True)
    assert auto["LvmUsingLoopback"] is True and auto["LvmBackingStore"] == "condor_STARTD"
    assert v.slot_attributes(v.LvmSettings(), loopback=False, ready=True) == {}
    # enforcement configured but the store could not be made: no claim of enforcing
    assert "IsEnforcingDiskUsage" not in v.slot_attributes(
        v.LvmSettings(enforce=True), loopback=False, ready=False)


class FakeRunner:
    def __init__(self, fail: dict[str, tuple[int, str]] | None = None,
                 out: dict[str, str] | None = None) -> None:
        self.calls: list[tuple[tuple[str, ...], bytes | None]] = []
        self.fail = fail or {}
        self.out = out or {}

    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float) -> v.CommandResult:
        self.calls.append((tuple(argv), stdin))
        if argv[0] in self.fail:
            status, err = self.fail[argv[0]]
            return v.CommandResult(status, "", err)
        return v.CommandResult(0, self.out.get(argv[0], ""), "")


def _manager(runner: FakeRunner, tmp_path: object, **kw: object) -> v.VolumeManager:
    settings = v.LvmSettings(enforce=True, volume_group="vg", **kw)  # type: ignore[arg-type]
    return v.VolumeManager(settings, runner, mounts_file=str(tmp_path) + "/mounts",
                           random_bytes=lambda n: b"k" * n)


def test_create_encrypted_passes_the_key_on_stdin(tmp_path: object) -> None:
    runner = FakeRunner()
    mgr = _manager(runner, tmp_path)
    mount = f"{tmp_path}/dir_1"
    os.mkdir(mount)
    vol = mgr.create("slot1_1+9_1", 20_000, mount, encrypt=True)
    names = [c[0][0] for c in runner.calls]
    assert names == ["lvcreate", "cryptsetup", "mke2fs", "mount"]
    crypt = runner.calls[1]
    assert crypt[1] == b"k" * 32 and b"k" * 32 not in " ".join(crypt[0]).encode()
    assert runner.calls[2][0][-1] == "/dev/mapper/vg-slot1_1+9_1-enc"
    assert vol.size_kb == 20_000 and vol.limit_bytes == int(20_000 * 1024 * 0.98)
    assert vol.device == "/dev/mapper/vg-slot1_1+9_1-enc"


def test_a_failed_step_removes_what_was_made_and_names_the_command(tmp_path: object) -> None:
    runner = FakeRunner(fail={"mke2fs": (1, "mke2fs: no space")})
    mgr = _manager(runner, tmp_path)
    with pytest.raises(MachineError) as err:
        mgr.create("lv", 8192, str(tmp_path), encrypt=False)
    assert "mke2fs" in str(err.value) and "no space" in str(err.value)


def test_removal_failure_is_a_record(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os.path, "exists", lambda p: p == "/dev/mapper/vg-lv")
    runner = FakeRunner(fail={"lvremove": (5, "  Logical volume vg/lv in use.")})
    failure = _manager(runner, tmp_path).remove_named("lv", False, slot="slot1_1")
    assert isinstance(failure, v.VolumeRemovalFailed)
    assert failure.slot == "slot1_1" and "lvremove" in failure.reason
    assert "in use" in failure.reason
    # gone already: nothing to do, no failure
    runner = FakeRunner(fail={"lvremove": (5, "  Failed to find logical volume \"vg/lv\"")})
    assert _manager(runner, tmp_path).remove_named("lv", False) is None


def test_sweep_removes_leaked_and_unmounts_them(tmp_path: object,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os.path, "exists", lambda p: p.startswith("/dev/mapper/"))
    with open(f"{tmp_path}/mounts", "w") as f:
        f.write("/dev/mapper/vg-slot1_2+9_2-enc /var/lib/condorpy/execute/dir_7 ext4 rw 0 0\n")
    runner = FakeRunner(out={"lvs": LVS})
    assert _manager(runner, tmp_path).sweep(live=["slot1_1+9_1"]) == []
    cmds = [c[0] for c in runner.calls]
    assert cmds[1] == ("umount", "--lazy", "/var/lib/condorpy/execute/dir_7")
    assert cmds[2] == ("cryptsetup", "close", "vg-slot1_2+9_2-enc")
    assert cmds[3][0] == "lvremove" and cmds[3][-1] == "vg/slot1_2+9_2"
    assert len(cmds) == 4      # the live one, the pool and the foreign LV are left


def test_subprocess_runner_reports_a_missing_command() -> None:
    done = v.SubprocessRunner().run(["condorpy-no-such-command"], timeout=5)
    assert done.status == 127 and "not found" in done.stderr
