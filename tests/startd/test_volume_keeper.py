"""The startd's side of per-job scratch volumes, over a fake command runner: leftovers
of dead starters removed at start, live (re-adopted) ones kept, failures retried on
the back-off, and the slot ad's IsEnforcingDiskUsage."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config, DetectedFacts
from condorpy.machine import volumes as v
from condorpy.machine.containment import containment_facts
from condorpy.machine.roots import HostRoots
from condorpy.startd.volume_keeper import VolumeKeeper, starter_alive

SEP = v.REPORT_SEPARATOR


def _line(lv: str, tags: str = "htcondor_lv") -> str:
    return SEP.join(["LVM2_VG_NAME='vg'", f"LVM2_LV_NAME='{lv}'", "LVM2_POOL_LV=''",
                     f"LVM2_LV_TAGS='{tags}'", "LVM2_LV_SIZE='4194304B'",
                     "LVM2_DATA_PERCENT=''", "LVM2_VG_EXTENT_SIZE='4194304B'"])


class Runner:
    def __init__(self, lvs: list[str], busy: set[str]) -> None:
        self.lvs = lvs
        self.busy = busy
        self.removed: list[str] = []

    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float) -> v.CommandResult:
        if argv[0] == "lvs":
            return v.CommandResult(0, "\n".join(_line(n) for n in self.lvs), "")
        if argv[0] == "lvremove":
            name = argv[-1].split("/")[1]
            if name in self.busy:
                return v.CommandResult(5, "", f"Logical volume vg/{name} in use.")
            self.removed.append(name)
            self.lvs.remove(name)
        return v.CommandResult(0, "", "")


def keeper(runner: Runner, tmp_path: object) -> VolumeKeeper:
    settings = v.LvmSettings(enforce=True, volume_group="vg")
    mgr = v.VolumeManager(settings, runner, mounts_file=f"{tmp_path}/none")
    return VolumeKeeper(settings, mgr, interval_s=62)


def test_starter_alive_reads_the_tag() -> None:
    assert starter_alive("slot1_1+123", lambda pid: pid == 123)
    assert not starter_alive("slot1_1+124", lambda pid: pid == 123)
    assert not starter_alive("slot1_1+x", lambda pid: True)


def test_start_removes_dead_starters_volumes_and_retries_busy_ones(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os.path, "exists", lambda p: p.startswith("/dev/mapper/vg-"))
    runner = Runner(["slot1_1+100", "slot1_2+200", "slot1_3+300"], busy={"slot1_3+300"})
    k = keeper(runner, tmp_path)
    k.start(0.0, alive=lambda pid: pid == 200)      # 200 re-adopted
    assert runner.removed == ["slot1_1+100"]
    assert [f.volume for f in k.waiting()] == ["slot1_3+300"]
    assert k.next_due() == 62.0
    assert k.tick(10.0) == []                        # not due yet
    runner.busy.clear()
    removed = k.tick(62.0, alive=lambda pid: pid == 200)
    assert [f.volume for f in removed] == ["slot1_3+300"] and k.waiting() == []
    assert runner.lvs == ["slot1_2+200"]
    # a starter gone since: its volume is found and removed at the next tick
    removed = k.tick(124.0, alive=lambda pid: False)
    assert [f.volume for f in removed] == ["slot1_2+200"] and runner.lvs == []


def test_slot_ad_says_is_enforcing_disk_usage(tmp_path: object) -> None:
    facts = DetectedFacts(full_hostname="ep", cpus=1, cores=1, physical_cpus=1,
                          memory_mb=1024)
    cfg = Config.from_mapping({"STARTD_ENFORCE_DISK_LIMITS": "true",
                               "LVM_VOLUME_GROUP_NAME": "condor_vg"},
                              source="condor_config", detected=facts, subsystem="STARTD")
    ad = containment_facts(cfg, HostRoots(), euid=1000)
    assert ad["IsEnforcingDiskUsage"] is True and ad["LvmBackingStore"] == "condor_vg"
    plain = Config.from_mapping({}, source="condor_config", detected=facts,
                                subsystem="STARTD")
    assert "IsEnforcingDiskUsage" not in containment_facts(plain, HostRoots(), euid=1000)


def test_cleanup_category_counts_say_how_many_volumes_wait(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os.path, "exists", lambda p: p.startswith("/dev/mapper/vg-"))
    runner = Runner(["slot1_1+100", "slot1_2+200"], busy={"slot1_1+100", "slot1_2+200"})
    k = keeper(runner, tmp_path)
    assert k.cleanup_counts() == {}
    k.start(0.0, alive=lambda pid: False)
    ad = ClassAd()
    for name, value in k.cleanup_counts().items():
        ad[name] = value
    assert ad.eval_expr("CleanupCategoryCounts.LogicalVolumes") == 2
    runner.busy.clear()
    k.tick(62.0, alive=lambda pid: False)
    assert k.cleanup_counts() == {}
