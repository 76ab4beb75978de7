"""The one path: `status --offline`, a `policy simulate` snapshot at t=0 and `policy
explain` see the same slots with the same values, for the same configuration and
machine, because they run the same code (issue "One core before the daemon")."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from condorpy.classad import format_value
from condorpy.classad.formats import from_json_many
from condorpy.cli.main import main as condorpy_main
from condorpy.config import Config
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.policy.evaluation import plain
from condorpy.slots.inventory import CustomResource, MachineInventory
from condorpy.slots.inventory_json import inventory_to_json

# Attributes whose value is the clock's, not the configuration's or the machine's.
TIME_DEPENDENT = {"mycurrenttime", "enteredcurrentstate", "enteredcurrentactivity",
                  "clockmin", "clockday", "cpubusytime"}  # CpuBusyTime: when the latch last changed

MACHINE = MachineInventory(
    cpus=4, memory_mb=8192, disk_kb=4_000_000, hostname="node7.example.org",
    detected_cpus=4, detected_memory_mb=8192, total_load_avg=0.0,
    keyboard_idle=4000, console_idle=4000,
    facts={"Arch": "X86_64", "OpSys": "LINUX", "Machine": "node7.example.org"},
    custom={"GPUs": CustomResource("GPUs", ("GPU-0", "GPU-1"), 2,
                                   {"GPU-0": {"Capability": 8.0}, "GPU-1": {"Capability": 7.5}}),
            "Licenses": CustomResource("Licenses", (), 3)})

CONFIGS = {
    "default": "",
    "num_slots": "NUM_SLOTS = 2\n",
    "static_types_with_start": (
        "SLOT_TYPE_1 = cpus=1, memory=1024\nNUM_SLOTS_TYPE_1 = 2\n"
        "SLOT_TYPE_2 = cpus=2, memory=2048\nNUM_SLOTS_TYPE_2 = 1\n"
        "SLOT_TYPE_2_START = Owner == \"alice\"\nSLOT1_RANK = 5\n"),
    "feature_static_slots": "use FEATURE : StaticSlots\n",
    "pslot_gpus_custom": (
        "SLOT_TYPE_1 = 100%\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1_PARTITIONABLE = True\n"
        "STARTD_ATTRS = $(STARTD_ATTRS) Color\nColor = \"blue\"\n"),
    "desktop_policy": "use POLICY : Desktop\nNUM_SLOTS = 2\n",
}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    rc = condorpy_main(argv)
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def _status(conf: Path, inventory: Path, capsys: pytest.CaptureFixture[str]
            ) -> dict[str, dict[str, Any]]:
    out = _run(["status", "--offline", "-config", str(conf), "--inventory", str(inventory),
                "-json"], capsys)
    ads = from_json_many(out)
    return {str(ad["Name"]).split("@")[0]: {k.lower(): ad.evaluate(k) for k in ad.keys()}
            for ad in ads}


def _simulate(conf: Path, inventory: Path | None, tmp: Path,
              capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    tl = tmp / "snapshot.jsonl"
    tl.write_text('{"t": 0, "event": "snapshot"}\n')
    argv = ["policy", "simulate", "-config", str(conf), "--timeline", str(tl)]
    if inventory is not None:
        argv += ["--inventory", str(inventory)]
    out = _run(argv, capsys)
    recs = [json.loads(line) for line in out.splitlines()]
    return {r["slot"]: {k.lower(): v for k, v in r["ad"].items()} for r in recs if "ad" in r}


def _explain(conf: Path, inventory: Path, names: list[str],
             capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    out = _run(["policy", "explain", "-config", str(conf), "--inventory", str(inventory),
                *names], capsys)
    got: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        m = re.fullmatch(r"(slot\S+): (\S+) = (.*)", line)
        if m:
            got.setdefault(m.group(1), {})[m.group(2).lower()] = m.group(3)
    return got


def _comparable(ad: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ad.items() if k not in TIME_DEPENDENT}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_status_simulate_and_explain_agree(name: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "condor_config"
    conf.write_text(CONFIGS[name])
    inventory = tmp_path / "machine.json"
    inventory.write_text(inventory_to_json(MACHINE))

    status = _status(conf, inventory, capsys)
    simulated = _simulate(conf, inventory, tmp_path, capsys)
    assert sorted(status) == sorted(simulated)
    for slot, ad in status.items():
        mine = _comparable({k: plain(v) for k, v in ad.items()})
        theirs = _comparable(simulated[slot])
        assert set(mine) == set(theirs), (slot, set(mine) ^ set(theirs))
        diff = {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]}
        assert not diff, (slot, diff)

    names = sorted({k for ad in status.values() for k in ad} - TIME_DEPENDENT)
    explained = _explain(conf, inventory, names, capsys)
    assert sorted(explained) == sorted(status)
    for slot, ad in status.items():
        shown = {k: format_value(v) for k, v in ad.items() if k not in TIME_DEPENDENT}
        diff = {k: (shown[k], explained[slot].get(k)) for k in shown
                if shown[k] != explained[slot].get(k)}
        assert not diff, (slot, diff)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_simulate_virtual_host_is_the_same_path(name: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """simulate's virtual host is only a pinned machine: status on that machine shows
    what the simulation starts from."""
    text = CONFIGS[name] + "NUM_CPUS = 4\nMEMORY = 4096\nMACHINE_RESOURCE_Widgets = 3\n"
    conf = tmp_path / "condor_config"
    conf.write_text(text)
    cfg = Config.from_text(text, source=str(conf), env={}, detected=VIRTUAL_DETECTED)
    inventory = tmp_path / "virtual.json"
    inventory.write_text(inventory_to_json(virtual_inventory(cfg)))
    status = _status(conf, inventory, capsys)
    simulated = _simulate(conf, None, tmp_path, capsys)
    assert sorted(status) == sorted(simulated)
    for slot, ad in status.items():
        mine = _comparable({k: plain(v) for k, v in ad.items()})
        assert mine == _comparable(simulated[slot]), slot
    assert all(ad["totalwidgets"] == 3 for ad in simulated.values())


def test_issue_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The disagreements the issue reported, now gone."""
    conf = tmp_path / "c"
    # No slot configuration: one partitionable slot everywhere, so a second job fits.
    conf.write_text("NUM_CPUS = 10\nRUNBENCHMARKS = False\n")
    tl = tmp_path / "t.jsonl"
    job = '{"RequestCpus": 2, "RequestMemory": 100, "RequestDisk": 1000}'
    tl.write_text(f'{{"t": 0, "event": "request_claim", "id": "a", "job": {job}}}\n'
                  f'{{"t": 0, "event": "request_claim", "id": "b", "job": {job}}}\n'
                  '{"t": 1, "event": "snapshot", "attrs": ["Cpus", "PartitionableSlot"]}\n')
    recs = [json.loads(x) for x in _run(["policy", "simulate", "-config", str(conf),
                                         "--timeline", str(tl)], capsys).splitlines()]
    assert not [r for r in recs if r.get("action") == "claim_refused"]
    assert {r["slot"]: r["ad"] for r in recs if "ad" in r}["slot1"] == \
        {"Cpus": 6, "PartitionableSlot": True}
    # 4 CPUs, NUM_SLOTS = 2: the machine's totals and the slot's share, as status says.
    conf.write_text("NUM_CPUS = 4\nNUM_SLOTS = 2\n")
    tl.write_text('{"t": 0, "event": "snapshot", "slot": "slot1", "attrs": '
                  '["TotalCpus", "TotalSlotCpus", "TotalMemory", "PartitionableSlot"]}\n')
    recs = [json.loads(x) for x in _run(["policy", "simulate", "-config", str(conf),
                                         "--timeline", str(tl)], capsys).splitlines()]
    assert [r["ad"] for r in recs if "ad" in r] == [
        {"TotalCpus": 4, "TotalSlotCpus": 2, "TotalMemory": 1024, "PartitionableSlot": None}]
