"""The shipped etc/condor_config and etc/config.d examples load and mean what they say."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from condorpy.config import Config, load_config
from tests.config.helpers import FACTS

ETC = Path(__file__).resolve().parents[2] / "etc"
MAIN = (ETC / "condor_config").read_text()
EXAMPLES = sorted((ETC / "config.d").glob("*.example"))


def _with(example: str) -> Config:
    return Config.from_text(MAIN + "\n" + example, source="shipped", detected=FACTS)


def test_default_config_is_a_single_partitionable_slot_running_jobs_always() -> None:
    c = Config.from_text(MAIN, source="condor_config", detected=FACTS)
    assert c.get_int("NUM_SLOTS_TYPE_1") == 1
    assert c.get_bool("SLOT_TYPE_1_PARTITIONABLE") is True
    assert c.get("SLOT_TYPE_1") == "100%"
    assert c.get_bool("START") is True and c.get_bool("PREEMPT") is False
    assert c.get_int("MaxJobRetirementTime") == 2147483647
    assert c.get("EXECUTE") == "/var/lib/condorpy/execute"
    assert c.get("LOG") == "/var/log/condorpy"
    assert c.get("LOCAL_CONFIG_DIR") == "/etc/condorpy/config.d"
    assert "STARTD" in c.get_list("DAEMON_LIST")


def test_there_are_examples_for_desktop_static_slots_and_gpus() -> None:
    names = " ".join(p.name for p in EXAMPLES)
    assert "desktop" in names and "static" in names and "gpus" in names


def test_desktop_example() -> None:
    c = _with((ETC / "config.d" / "20-desktop-policy.example").read_text())
    start = c.get("START") or ""
    assert "KeyboardIdle > 10 * 60" in start
    assert c.get("CpuBusy") == "((LoadAvg - CondorLoadAvg) >= 0.6)"
    assert (c.get("MaxJobRetirementTime") or "").startswith("ifthenelse(")
    assert "MEMORY_EXCEEDED" not in (c.get("PREEMPT") or "")  # expanded, not referenced
    assert "MemoryUsage > Memory" in (c.get("PREEMPT") or "")


def test_static_slots_example() -> None:
    c = _with((ETC / "config.d" / "30-static-slots.example").read_text())
    assert c.get_int("NUM_SLOTS_TYPE_1") == c.get_int("NUM_CPUS") - 1
    assert c.get_bool("SLOT_TYPE_1_PARTITIONABLE") is False
    assert c.get("SLOT_TYPE_1") == "cpus=auto, memory=auto, disk=auto"
    assert c.slot_get("START", 5, 2) == c.get("SLOT_TYPE_2_START")
    assert c.slot_get("START", 1, 1) == "True"


def test_gpus_example() -> None:
    c = _with((ETC / "config.d" / "40-gpus.example").read_text())
    assert c.get("MACHINE_RESOURCE_INVENTORY_GPUs") == (
        "/usr/libexec/condor_gpu_discovery  -properties -extra")
    assert "GPUs_MONITOR" in c.get_list("STARTD_CRON_JOBLIST")
    assert (c.get("START") or "").startswith("True && ")


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_are_not_read_from_the_config_dir_until_renamed(
        example: Path, tmp_path: Path) -> None:
    confdir = tmp_path / "config.d"
    confdir.mkdir()
    shutil.copy(example, confdir / example.name)
    main = tmp_path / "condor_config"
    main.write_text(MAIN.replace("/etc/condorpy/config.d", str(confdir)))
    before = load_config(str(main), env={}, detected=FACTS)
    assert str(confdir / example.name) not in before.files
    (confdir / example.name).rename(confdir / example.stem)
    after = load_config(str(main), env={}, detected=FACTS)
    assert str(confdir / example.stem) in after.files
