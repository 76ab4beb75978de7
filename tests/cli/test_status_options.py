"""`condorpy status` options as condor_status has them, through the command line:
-total, -compact, -avail, -claimed, -wide, -format, slot names, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_status import run

STATIC = "NUM_SLOTS = 2\n"


def test_total_prints_only_the_totals(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(tmp_path, capsys, STATIC, "-total")
    assert rc == 0
    assert out.splitlines() == [
        "",
        "               Total Owner Claimed Unclaimed Matched Preempting  Drain Backfill BkIdle",
        "",
        "  X86_64/LINUX     2     0       0         2       0          0      0        0      0",
        "",
        "         Total     2     0       0         2       0          0      0        0      0"]


def test_compact_is_one_row_per_machine(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(tmp_path, capsys, STATIC, "-compact")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].split() == ["Machine", "Platform", "Slots", "Cpus", "Gpus", "TotalGb",
                                "FreCpu", "FreeGb", "CpuLoad", "ST", "Jobs/Min",
                                "MaxSlotGb"]
    row = lines[2].split()
    # two static slots of 5 cpus and 5 GB: the row shows the first slot's size, the
    # free cpus and memory of both, and the largest slot (Gpus is blank: static slots
    # publish no TotalSlotGPUs)
    assert row[:7] == ["node1.example.org", "x64/Debian12", "2S", "5", "5.00", "10",
                       "10.00"]
    assert row[-1] == "5.00"
    assert lines[6].split()[0] == "x64/Debian12"


def test_avail_claimed_and_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(tmp_path, capsys, STATIC, "-avail", "-af", "Name")
    assert (rc, out.split()) == (0, ["slot1@node1.example.org", "slot2@node1.example.org"])
    # nothing claimed: nothing at all is printed, and that is no error
    rc, out, _ = run(tmp_path, capsys, STATIC, "-claimed")
    assert (rc, out) == (0, "")
    rc, out, _ = run(tmp_path, capsys, STATIC, "slot2", "-af", "Name")
    assert (rc, out) == (0, "slot2@node1.example.org\n")
    rc, out, _ = run(tmp_path, capsys, STATIC, "slot1@node1.example.org", "-af", "Name")
    assert (rc, out) == (0, "slot1@node1.example.org\n")
    rc, out, _ = run(tmp_path, capsys, STATIC, "node1.example.org", "-af", "Name")
    assert out.split() == ["slot1@node1.example.org", "slot2@node1.example.org"]
    # a slot of this machine that is not there now: nothing, as for a host with no ads
    rc, out, _ = run(tmp_path, capsys, STATIC, "slot1_9@node1.example.org")
    assert (rc, out) == (0, "")


def test_unknown_names_and_bad_options_exit_1(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(tmp_path, capsys, STATIC, "nosuch")
    assert (rc, out) == (1, "") and "unknown host or slot 'nosuch'" in err
    rc, _, err = run(tmp_path, capsys, STATIC, "-nosuchoption")
    assert rc == 1 and "usage: condorpy status" in err
    rc, _, err = run(tmp_path, capsys, STATIC, "-format", "%s")
    assert rc == 1
    rc, _, err = run(tmp_path, capsys, STATIC, "-avail", "-claimed")
    assert rc == 1


def test_format_and_wide(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(tmp_path, capsys, STATIC, "-format", "%s ", "Name",
                     "-format", r"%d\n", "Cpus")
    assert (rc, out) == (0, "slot1@node1.example.org 5\nslot2@node1.example.org 5\n")
    rc, out, _ = run(tmp_path, capsys, STATIC, "-wide")
    lines = out.splitlines()
    assert lines[0].startswith("Name" + " " * 31 + "OpSys") and \
        lines[0].endswith("Mem  ActivityTime")
    assert lines[7].startswith("X86_64/LINUX     2")
