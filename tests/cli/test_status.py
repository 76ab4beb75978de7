"""`condorpy status --offline`: the ads this machine would advertise, with a pinned machine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from condorpy.cli.main import main as condorpy_main
from condorpy.classad import ClassAd
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.inventory_json import inventory_to_json

MACHINE = MachineInventory(
    cpus=10, memory_mb=10240, disk_kb=5_000_000, swap_kb=1_000_000, detected_cpus=10,
    detected_memory_mb=10240, hostname="node1.example.org",
    facts={"Arch": "X86_64", "OpSys": "LINUX", "OpSysAndVer": "Debian12"},
    total_load_avg=0.25)


def gpu_machine() -> MachineInventory:
    ids = ["GPU-6a96bd13", "GPU-11111111", "GPU-22222222", "GPU-33333333"]
    caps = [7.5, 8.0, 6.1, 8.0]
    return MachineInventory(
        cpus=24, memory_mb=96000, disk_kb=10_000_000, hostname="gpu1",
        facts={"Arch": "X86_64", "OpSys": "LINUX"},
        custom={"GPUs": CustomResource("GPUs", tuple(ids), 4,
                                       {i: {"Capability": c} for i, c in zip(ids, caps)})})


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, *args: str,
        machine: MachineInventory = MACHINE) -> tuple[int, str, str]:
    cfg = tmp_path / "condor_config"
    cfg.write_text(config)
    inventory = tmp_path / "machine.json"
    inventory.write_text(inventory_to_json(machine))
    rc = condorpy_main(["status", "--offline", "-config", str(cfg), "--inventory",
                        str(inventory), *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_default_table_is_one_partitionable_slot(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(tmp_path, capsys, "")
    assert rc == 0, err
    lines = out.splitlines()
    # HTCondor's default RUNBENCHMARKS (LastBenchmark == 0) starts the benchmarks at the
    # first evaluation, so a fresh startd shows Unclaimed/Benchmarking.
    assert lines[0] == ("Name                    OpSys      Arch   State     Activity     "
                        "LoadAv Mem    ActvtyTime")
    assert lines[1] == ""
    # LoadAv is CondorLoadAvg, the load of the jobs (none here), as condor_status
    # shows it; the machine's 0.25 is LoadAvg
    assert re.fullmatch(r"slot1@node1\.example\.org LINUX      X86_64 Unclaimed Benchmarking  "
                        r"0\.000 10240  0\+00:00:0\d", lines[2]), lines[2]
    assert lines[4] == ("               Total Owner Claimed Unclaimed Matched Preempting  "
                        "Drain Backfill BkIdle")
    assert lines[6] == ("  X86_64/LINUX     1     0       0         1       0          0"
                        "      0        0      0")
    assert lines[8] == ("         Total     1     0       0         1       0          0"
                        "      0        0      0")


def test_autoformat_static_slots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(tmp_path, capsys, "NUM_SLOTS = 4\n", "-af", "Name", "Cpus", "Memory",
                     "SlotType", "NoSuchAttr")
    assert rc == 0
    # 10 cpus over 4 slots: the 2 left over go to the first slots
    assert out.splitlines() == [f"slot{i}@node1.example.org {c} 2560 Static undefined"
                                for i, c in zip(range(1, 5), (3, 3, 2, 2))]


def test_constraint_and_long(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = ("SLOT_TYPE_1 = cpus=2, mem=25%\nNUM_SLOTS_TYPE_1 = 2\n"
              "SLOT_TYPE_2 = auto\nSLOT_TYPE_2_PARTITIONABLE = TRUE\nNUM_SLOTS_TYPE_2 = 1\n"
              'Color = "blue"\nSLOT3_Color = "red"\nSTARTD_ATTRS = Color\n'
              "STARTD_SLOT_ATTRS = State\n")
    rc, out, _ = run(tmp_path, capsys, config, "-l", "-constraint", "PartitionableSlot")
    assert rc == 0
    ads = [ClassAd.parse_old(block) for block in out.strip().split("\n\n")]
    assert len(ads) == 1
    ad = ads[0]
    assert (ad["Name"], ad["Cpus"], ad["Memory"], ad["SlotTypeID"]) == \
        ("slot3@node1.example.org", 6, 5120, 2)
    assert ad["Color"] == "red" and ad["slot1_State"] == "Unclaimed"
    names = [line.split(" = ")[0] for line in out.strip().splitlines()]
    assert names == sorted(names, key=str.lower)


def test_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(tmp_path, capsys, "NUM_SLOTS = 2\n", "-json")
    assert rc == 0
    ads = json.loads(out)
    assert [a["Name"] for a in ads] == ["slot1@node1.example.org", "slot2@node1.example.org"]
    assert ads[0]["MyType"] == "Machine" and ads[0]["Requirements"] == "/Expr(START)/"
    assert out.startswith("[\n{\n") and "}\n,\n{" in out


def test_manual_gpu_layout_through_the_cli(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = """
SLOT_TYPE_1 @=slot
   GPUs = 2 : Capability >= 8.0
   90%
@slot
SLOT_TYPE_1_PARTITIONABLE = TRUE
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_2 @=slot
   GPUs = 1 : "GPU-6a96bd13"
   CPUs = 1
   Memory = 10
@slot
SLOT_TYPE_2_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_2 = 1
SLOT_TYPE_3 = auto
SLOT_TYPE_3_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_3 = 2
"""
    rc, out, err = run(tmp_path, capsys, config, "-af", "Name", "SlotType", "Cpus", "GPUs",
                       "AssignedGPUs", machine=gpu_machine())
    assert rc == 0, err
    assert out.splitlines() == [
        "slot1@gpu1 Partitionable 21 2 GPU-11111111,GPU-33333333",
        "slot2@gpu1 Static 1 1 GPU-6a96bd13",
        "slot3@gpu1 Static 1 1 GPU-22222222",
        "slot4@gpu1 Static 1 0 ",
    ]


def test_is_owner_shows_owner_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(tmp_path, capsys, "NUM_SLOTS = 2\nIS_OWNER = SlotID == 2\n",
                     "-af", "Name", "State")
    assert out.splitlines() == ["slot1@node1.example.org Unclaimed",
                                "slot2@node1.example.org Owner"]


def test_impossible_layout_is_one_line(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(tmp_path, capsys, "SLOT_TYPE_1 = cpus=12\nNUM_SLOTS_TYPE_1 = 1\n")
    assert rc == 1 and out == ""
    assert err == ("condorpy status: error: impossible slot layout: Cpus: the slot types ask "
                   "for 12 (SLOT_TYPE_1: 1 x 12) but the machine has 10\n")


def test_live_status_without_a_daemon(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "c"
    cfg.write_text(f"LOCAL_DIR = {tmp_path}\nLOCK = {tmp_path}\n")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert condorpy_main(["status", "-config", str(cfg)]) == 1
    err = capsys.readouterr().err
    assert "not running" in err and "--offline" in err and len(err.strip().splitlines()) == 1


def test_inventory_from_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = tmp_path / "m.json"
    inventory.write_text(inventory_to_json(MACHINE))
    cfg = tmp_path / "c"
    cfg.write_text("")
    monkeypatch.setenv("CONDORPY_INVENTORY", str(inventory))
    assert condorpy_main(["status", "--offline", "-config", str(cfg), "-af", "TotalCpus"]) == 0
    assert capsys.readouterr().out == "10\n"
    inventory.write_text('{"cpus": 1, "bogus": 2}')
    assert condorpy_main(["status", "--offline", "-config", str(cfg)]) == 1
    assert "unknown key(s) bogus" in capsys.readouterr().err


def test_real_probes_of_this_machine(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    monkeypatch.delenv("CONDORPY_INVENTORY", raising=False)
    cfg = tmp_path / "c"
    cfg.write_text("NUM_SLOTS = 1\n")
    assert condorpy_main(["status", "--offline", "-config", str(cfg), "-af", "TotalCpus",
                          "SlotType", "Cpus"]) == 0
    total, kind, cpus = capsys.readouterr().out.split()
    # one static slot holds every cpu the probes found (at most what the OS reports)
    assert 1 <= int(total) == int(cpus) <= (os.cpu_count() or 1) and kind == "Static"


@pytest.mark.parametrize("config, message", [
    ("NUM_SLOTS = 100000000\n",
     "impossible slot layout: Cpus: 100000000 static slot(s) share cpus automatically "
     "but only 10 of the machine's 10 cpus are left"),
    ("SLOT_TYPE_1 = cpus=1\nNUM_SLOTS_TYPE_1 = 100000000\n",
     "impossible slot layout: Cpus: the slot types ask for 100000000 "
     "(SLOT_TYPE_1: 100000000 x 1) but the machine has 10"),
    ("SLOT_TYPE_1 = cpus=0, memory=0\nNUM_SLOTS_TYPE_1 = 100000000\n",
     "100000000 slots (SLOT_TYPE_1: 100000000) are more than the 100000 condorpy can lay out"),
])
def test_an_impossible_slot_count_is_refused_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, message: str) -> None:
    import time
    started = time.monotonic()
    rc, out, err = run(tmp_path, capsys, config)
    assert rc == 1 and out == ""
    assert message in err, err
    assert time.monotonic() - started < 5


def test_autoformat_takes_expressions(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(tmp_path, capsys, "NUM_SLOTS = 2\n", "-af", "Name", "Cpus * 2",
                       "Memory / 1024.0", 'strcat(SlotType, "-", SlotID)', "NoSuchAttr")
    assert rc == 0, err
    assert out.splitlines() == ["slot1@node1.example.org 10 5.0 Static-1 undefined",
                                "slot2@node1.example.org 10 5.0 Static-2 undefined"]


def test_autoformat_shows_reals_as_condor_status(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """issue #23: reals at condor_status's 16 significant digits, not 17."""
    rc, out, err = run(tmp_path, capsys, "NUM_SLOTS = 1\n", "-af", "0.1 + 0.2",
                       "123456789012345678.0", "TotalLoadAvg", "Cpus / 4.0")
    assert rc == 0, err
    assert out.splitlines() == ["0.3 1.234567890123457E+17 0.25 2.5"]


def test_autoformat_names_a_bad_expression(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(tmp_path, capsys, "", "-af", "Name", "Cpus *", "-constraint", "false")
    assert rc == 1 and out == ""
    assert "-af argument 2 'Cpus *'" in err and "internal error" not in err


ETC = Path(__file__).resolve().parents[2] / "etc"
SHIPPED = [None, *sorted(p.name for p in (ETC / "config.d").glob("*.example"))]
SMALL = MachineInventory(cpus=2, memory_mb=2048, disk_kb=10_000_000, swap_kb=0,
                         detected_cpus=2, detected_memory_mb=2048, hostname="small",
                         facts={"Arch": "X86_64", "OpSys": "LINUX"})


@pytest.mark.parametrize("example", SHIPPED, ids=[str(e) for e in SHIPPED])
def test_every_shipped_configuration_lays_out_on_a_small_machine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str | None) -> None:
    """etc/condor_config alone, and with each example enabled alone, on 2 cpus and 2 GB."""
    confdir = tmp_path / "config.d"
    confdir.mkdir()
    if example is not None:
        (confdir / example.removesuffix(".example")).write_text(
            (ETC / "config.d" / example).read_text())
    config = (ETC / "condor_config").read_text().replace("/etc/condorpy/config.d",
                                                         str(confdir))
    rc, out, err = run(tmp_path, capsys, config, "-af", "Name", "Cpus", "Memory",
                       machine=SMALL)
    assert rc == 0, err
    slots = [line.split() for line in out.splitlines()]
    assert slots and all(name.endswith("@small") for name, _, _ in slots)
    assert sum(int(cpus) for _, cpus, _ in slots) <= 2
    assert sum(int(memory) for _, _, memory in slots) <= 2048
    if example == "30-static-slots.example":
        assert [s[1] for s in slots] == ["1", "1"]
