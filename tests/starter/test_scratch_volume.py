"""The starter's side of per-job volumes, without lvm: when the mount is hidden, and
when a job on its volume is held (the real volumes: tests/starter/test_vm_disk.py)."""

from __future__ import annotations

import pytest

from condorpy.errors import StarterError
from condorpy.machine import volumes as v
from condorpy.machine.volumes import HideMount
from condorpy.starter.holds import HoldCode
from condorpy.starter.meter import UsageMeter
from condorpy.starter.scratch_volume import ScratchVolume, VolumeWatch, hide_mount_wanted


def test_hide_mount_decision() -> None:
    assert hide_mount_wanted(HideMount.NEVER, True) is False
    assert hide_mount_wanted(HideMount.AUTO, True) is True
    assert hide_mount_wanted(HideMount.ALWAYS, True) is True
    # a starter sharing its process (tests, threads) cannot have a namespace
    assert hide_mount_wanted(HideMount.AUTO, False) is False
    assert hide_mount_wanted(HideMount.ALWAYS, False) is None


def test_always_hidden_refused_in_a_shared_process() -> None:
    vol = ScratchVolume(v.LvmSettings(enforce=True, hide_mount=HideMount.ALWAYS),
                        own_process=False, say=lambda _t: None)
    with pytest.raises(StarterError, match="LVM_HIDE_MOUNT"):
        vol.enter_namespace()


VOLUME = v.JobVolume("vg", "slot1+1", "/nowhere", 8192, 8000 * 1024, False)


def watch(monkeypatch: pytest.MonkeyPatch, used: int, free: int) -> VolumeWatch:
    monkeypatch.setattr(v, "volume_usage", lambda _m: (used, 3, free))
    return VolumeWatch(VOLUME, 5.0, lambda: 100.0)


def test_under_the_limit_is_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    w = watch(monkeypatch, used=1 << 20, free=6 << 20)
    reading = w.tick()
    assert reading is not None and reading.kb == 1024 and not w.over(reading.kb)
    assert w.due == 105.0


def test_over_the_limit_or_full_is_held_34_104(monkeypatch: pytest.MonkeyPatch) -> None:
    w = watch(monkeypatch, used=8000 * 1024, free=100 << 10)
    reading = w.tick()
    assert reading is not None and w.over(reading.kb)
    hold = w.hold(reading, "1.0")
    assert hold.code is HoldCode.JOB_OUT_OF_RESOURCES and hold.hold_subcode == 104
    assert "request_disk" in hold.reason
    # a small volume whose metadata keeps its files under the limit: full is over
    w = watch(monkeypatch, used=7000 * 1024, free=0)
    reading = w.tick()
    assert reading is not None and w.over(reading.kb)


def test_a_job_that_filled_its_volume_and_exited_is_held(
        monkeypatch: pytest.MonkeyPatch) -> None:
    meter = UsageMeter()
    meter.disk = watch(monkeypatch, used=7000 * 1024, free=0)
    meter.final_disk("1.0")
    assert meter.disk_hold is not None and meter.disk_hold.hold_subcode == 104


def test_encryption_asked_for_but_disabled_is_refused() -> None:
    vol = ScratchVolume(v.LvmSettings(enforce=True, encryption_disabled=True),
                        own_process=False, say=lambda _t: None)
    with pytest.raises(StarterError, match="DISABLE_EXECUTE_DIRECTORY_ENCRYPTION"):
        vol.make("lv", 8192, "/nowhere", {"EncryptExecuteDirectory": True}, None)
