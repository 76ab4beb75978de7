"""condor_status's layouts of `condorpy status`, against HTCondor 23.9.6's own output:
data/condor_status/slots.ads are slot ads of the reference pool (a partitionable slot
with one dynamic slot, and three static slots made from it on a second machine), and
each *.out is what `condor_status -ads slots.ads OPTIONS` printed for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.queue.status_layouts import (StatusView, platform, render_format,
                                           render_status, select, slot_matches, unescape)

DATA = Path(__file__).parent / "data" / "condor_status"


def slots() -> list[ClassAd]:
    text = (DATA / "slots.ads").read_text()
    return [ClassAd.parse_old(block) for block in text.split("\n\n") if block.strip()]


CASES = {
    "default": StatusView(),
    "wide": StatusView(wide=True),
    "compact": StatusView(compact=True),
    "compact-wide": StatusView(compact=True, wide=True),
    "claimed": StatusView(claimed=True),
    "claimed-wide": StatusView(claimed=True, wide=True),
    "avail": StatusView(avail=True),
    "avail-compact": StatusView(avail=True, compact=True),
    "total": StatusView(totals_only=True),
    "total-claimed": StatusView(totals_only=True, claimed=True),
    "avail-total": StatusView(totals_only=True, avail=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_layout_is_condor_status_s(case: str) -> None:
    ads = slots()
    view = CASES[case]
    got = render_status(select(ads, view), ads, 0.0, view)
    assert got == (DATA / f"{case}.out").read_text()


def test_format_is_printf_as_condor_status_s() -> None:
    items = [(r"[%-12s]", "Name"), ("%5d|", "Memory"), ("%x|", "Cpus"),
             ("%.2f|", "LoadAvg"), ("%V|", "State"),
             # a value that does not convert prints nothing of its -format
             ("[%d]", "Name"), ("%s|", "HasFileTransfer"), (r"%d\n", "HasFileTransfer")]
    assert render_format(slots(), items) == (DATA / "format.out").read_text()


def test_format_details() -> None:
    (ad,) = [a for a in slots() if a.evaluate("Name") == "slot1@vm"]
    assert render_format([ad], [("%s", "NoSuchAttr")]) == ""
    assert render_format([ad], [("no conversion\n", "Name")]) == "no conversion\n"
    assert render_format([ad], [("%d%%\n", "Cpus * 50")]) == "50%\n"
    assert render_format([ad], [("%v ", "LoadAvg"), ("%s\n", "State")]) == "1.0 Unclaimed\n"
    assert unescape(r"a\tb\\n\n") == "a\tb\\n\n"


def test_names_on_the_command_line() -> None:
    ads = slots()
    chosen = [str(a.evaluate("Name")) for a in ads if slot_matches(a, "slot1_1")]
    assert chosen == ["slot1_1@vm"]
    assert [str(a.evaluate("Name")) for a in ads if slot_matches(a, "static.host")] == \
        ["slot1@static.host", "slot2@static.host", "slot3@static.host"]
    assert [str(a.evaluate("Name")) for a in ads if slot_matches(a, "slot2@static.host")] \
        == ["slot2@static.host"]


def test_platform_and_empty_selection() -> None:
    ads = slots()
    assert platform(ads[0]) == "x64/Debian13"
    view = StatusView(claimed=True)
    assert render_status(select([ads[1]], view), ads, 0.0, view) == ""
    assert render_status([], ads, 0.0, StatusView(totals_only=True)) == ""
