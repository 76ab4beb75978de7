"""`policy explain` shows resource amounts as an administrator reads them (issue #23):
exact numbers in the attribute's unit, binary units beside them, never 1.04858e+06."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.cli.main import main as condorpy_main
from condorpy.policy.explain import show_amount
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_to_json

MACHINE = MachineInventory(cpus=4, memory_mb=8192, disk_kb=4_194_304, hostname="n1",
                           facts={"Arch": "X86_64", "OpSys": "LINUX"})


def test_amounts_are_exact_with_their_unit() -> None:
    assert show_amount(1048576, "KB") == "1048576 KB (1 GiB)"
    assert show_amount(1048576.0, "KB") == "1048576 KB (1 GiB)"
    assert show_amount(5_000_000, "KB") == "5000000 KB (4.768 GiB)"
    assert show_amount(1536, "MB") == "1536 MB (1.5 GiB)"
    assert show_amount(1000, "MB") == "1000 MB"
    assert show_amount(2) == "2" and show_amount(0.5) == "0.5"


def _explain(tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str,
             job: str) -> str:
    conf = tmp_path / "c"
    conf.write_text(config)
    inv = tmp_path / "machine.json"
    inv.write_text(inventory_to_json(MACHINE))
    ad = tmp_path / "job.ad"
    ad.write_text('Owner = "alice"\nRequirements = true\n' + job)
    rc = condorpy_main(["policy", "explain", "-config", str(conf), "--inventory", str(inv),
                        "--job", str(ad)])
    out, _ = capsys.readouterr()
    assert rc == 0
    return out


def test_pslot_fit_shows_the_dslot_in_exact_units(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = _explain(tmp_path, capsys, "", "RequestCpus = 1\nRequestMemory = 2048\n"
                   "RequestDisk = 1048576\n")
    assert ("slot1: the request fits = true (a d-slot of 1 Cpus, 2048 MB (2 GiB) memory, "
            "1048576 KB (1 GiB) disk)") in out
    assert "e+0" not in out


def test_static_slot_shortfall_in_exact_units(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = _explain(tmp_path, capsys, "NUM_SLOTS = 1\n", "RequestCpus = 1\n"
                   "RequestMemory = 9000\nRequestDisk = 8388608\n")
    assert ("slot1: the request fits = false (RequestMemory 9000 MB (8.789 GiB) > "
            "Memory 8192 MB (8 GiB); RequestDisk 8388608 KB (8 GiB) > "
            "Disk 4194304 KB (4 GiB))") in out
