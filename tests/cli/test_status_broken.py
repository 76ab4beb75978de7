"""`condorpy status -broken`: only broken slots, in condor_status's slot layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_status import run


def test_no_broken_slot_prints_nothing(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(tmp_path, capsys, "NUM_SLOTS = 2\n", "-broken")
    assert (rc, out) == (0, ""), err


def test_broken_slots_are_listed_with_code_and_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the attributes a broken slot carries, put in the ad of slot 2 by configuration
    cfg = ("NUM_SLOTS = 2\nSLOT2_SlotBrokenReason = \"job volume vg/lv could not be removed\"\n"
           "SLOT2_SlotBrokenCode = 5\nSTARTD_ATTRS = SlotBrokenReason SlotBrokenCode\n")
    rc, out, err = run(tmp_path, capsys, cfg, "-broken")
    assert rc == 0, err
    assert out.splitlines() == [
        "Name                    Code Reason",
        "slot2@node1.example.org    5 job volume vg/lv could not be removed"]
    rc, out, _ = run(tmp_path, capsys, cfg, "-broken", "-af", "Name")
    assert out == "slot2@node1.example.org\n"
