"""NO_JOB_NETWORKING in the slot ads: HasJobNetworking = false, and only a job that
says WantJobNetworking = false matches (HTCondor's WithinResourceLimits clause)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from condorpy.classad import ClassAd


def slot_ads(tmp_path: Path, extra: str) -> list[ClassAd]:
    cfg = tmp_path / "condor_config"
    cfg.write_text("NUM_CPUS = 2\nMEMORY = 2048\nSTART = true\n" + extra)
    r = subprocess.run([sys.executable, "-m", "condorpy", "status", "--offline", "-config",
                        str(cfg), "-l"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return ClassAd.parse_old_many(r.stdout)


def job(**extra: object) -> ClassAd:
    ad = ClassAd({"RequestCpus": 1, "RequestMemory": 1, "RequestDisk": 1})
    for name, value in extra.items():
        ad[name] = value
    return ad


def test_only_a_job_without_network_needs_matches_a_slot_without_networking(
        tmp_path: Path) -> None:
    for layout in ("", "use FEATURE : PartitionableSlot\n"):
        (slot, *_) = slot_ads(tmp_path, "NO_JOB_NETWORKING = true\n" + layout)
        assert slot.evaluate("HasJobNetworking") is False
        assert slot.evaluate("Requirements", job(WantJobNetworking=False)) is True
        assert slot.evaluate("Requirements", job()) is False
        assert slot.evaluate("Requirements", job(WantJobNetworking=True)) is False


def test_a_slot_with_networking_matches_every_job(tmp_path: Path) -> None:
    (slot, *_) = slot_ads(tmp_path, "")
    assert "HasJobNetworking" not in slot
    assert slot.evaluate("Requirements", job()) is True
    assert slot.evaluate("Requirements", job(WantJobNetworking=False)) is True
