"""The daemon's q cuts each stored row's text to what the output reads without parsing
the ad (TextProjector): what it sends reads back as project() cuts the parsed ad."""

from __future__ import annotations

import time
from pathlib import Path

from condorpy.classad import ClassAd
from condorpy.queue.jobstore import JobStore
from condorpy.queue.projection import TextProjector, project, projected_chunks, q_projection
from condorpy.queue.query import parse_query
from condorpy.queue.records import ad_text

BASE = """\
ClusterId = 7
ProcId = 0
Owner = "alice"
JobStatus = 1
Cmd = "/bin/sleep"
RequestMemory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage, 128)
MemoryUsage = ((ResidentSetSize + 1023) / 1024)
ResidentSetSize = 2048
Unrelated = "x"
"""


def _same(text: str, names: list[str]) -> None:
    cut = TextProjector(names).project(text)
    want = project(ClassAd.parse_old(text), names)
    got = ClassAd.parse_old(cut)
    assert [(n, str(e)) for n, e in got.items()] == [(n, str(e)) for n, e in want.items()]


def test_the_cut_text_is_the_cut_ad_references_followed() -> None:
    _same(BASE, ["requestmemory", "owner"])
    _same(BASE, ["clusterid", "procid", "missing"])
    _same(BASE, ["REQUESTMEMORY"])


def test_a_later_line_wins_in_the_first_line_s_place() -> None:
    text = BASE + 'ProcId = 3\nOwner = "bob"\n'
    _same(text, ["procid", "owner", "clusterid"])
    assert TextProjector(["procid", "owner"]).project(text) == 'ProcId = 3\nOwner = "bob"\n'


def test_rows_sharing_the_first_ad_s_text_are_cut_alike() -> None:
    projector = TextProjector(["procid", "requestmemory", "cmd"])
    first = projector.project(BASE)
    second = projector.project(BASE + "ProcId = 1\nResidentSetSize = 4096\n")
    assert first == ('ProcId = 0\nCmd = "/bin/sleep"\nRequestMemory = ifThenElse(MemoryUsage '
                     '=!= undefined, MemoryUsage, 128)\nMemoryUsage = ((ResidentSetSize + '
                     '1023) / 1024)\nResidentSetSize = 2048\n')
    assert second == first.replace("ProcId = 0", "ProcId = 1").replace("= 2048", "= 4096")
    # a difference that refers to more than the first ad did
    third = projector.project(BASE + "Cmd = Unrelated\n")
    assert ClassAd.parse_old(third).evaluate("Cmd") == "x"


def test_a_call_that_names_attributes_at_run_time_sends_the_whole_text() -> None:
    text = BASE + 'Indirect = eval("Unre" + "lated")\n'
    assert TextProjector(["indirect"]).project(text) == text


def test_a_name_written_quoted_is_found_by_parsing() -> None:
    ad = ClassAd.parse_old(BASE)
    ad.set_expr("Odd Name", "ResidentSetSize * 2")
    ad.set_expr("Uses", "'Odd Name' + 1")
    text = ad.to_old()
    assert "'Odd Name' = " in text
    for names in (["odd name"], ["uses"]):
        cut = ClassAd.parse_old(TextProjector(names).project(text))
        assert cut.evaluate("Uses") == 4097 or names == ["odd name"]
        assert cut.evaluate("Odd Name") == 4096


def test_new_format_rows_are_cut_through_the_parsed_ad() -> None:
    ad = ClassAd.parse_old(BASE)
    ad["Note"] = "a\\b"
    text = ad_text(ad)
    assert text.startswith("[")
    cut = ClassAd.parse_old(TextProjector(["note", "owner"]).project(text))
    assert cut.evaluate("Note") == "a\\b" and cut.evaluate("Owner") == "alice"


def test_projected_chunks_select_limit_and_cut(tmp_path: Path) -> None:
    with JobStore(tmp_path / "spool") as store:
        first = ClassAd.parse_old(BASE)
        ads = []
        for i in range(5):
            ad = first.copy()
            ad["ProcId"] = i
            ad["ResidentSetSize"] = 1024 * (i + 1)
            ads.append(ad)
        store.submit(ads)
        query = parse_query(["-nobatch", "-constraint", "RequestMemory > 2"], "q")
        names = q_projection(query)
        assert names is not None and "requestmemory" in names
        assert query.constraints
        parts = list(projected_chunks(store.row_chunks(), names, query.constraints[0],
                                      path=store.path, clock=time.time, limit=2))
        got = [ClassAd.parse_old(t) for part in parts for t in part]
        assert [ad.evaluate("ProcId") for ad in got] == [2, 3]
        assert "Unrelated" not in got[0]
        assert got[0].evaluate("RequestMemory") == 3


def test_q_projection_reads_what_each_layout_prints() -> None:
    for argv in (["-long"], ["-json"], ["-analyze"]):
        assert q_projection(parse_query(argv, "q")) is None, argv
    wanted = {"-batch": {"jobbatchname", "totalsubmitprocs", "qdate"},
              "-nobatch": {"cmd", "arguments", "jobprio", "imagesize", "memoryusage"},
              "-hold": {"holdreason", "holdreasoncode", "enteredcurrentstatus"},
              "-run": {"remotehost", "remoteusercpu", "jobcurrentstartdate"},
              "-totals": set()}
    for arg, more in wanted.items():
        names = q_projection(parse_query([arg], "q"))
        assert names is not None, arg
        assert {"clusterid", "procid", "owner", "jobstatus"} | more <= set(names), arg
    assert "cmd" not in (q_projection(parse_query(["-totals"], "q")) or ["cmd"])
    fmt = q_projection(parse_query(["-format", "%d\\n", "RequestMemory + 1"], "q"))
    assert fmt is not None and "requestmemory" in fmt
