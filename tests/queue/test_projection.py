"""Projections: the daemon sends only what -af prints and the selection reads, with
everything those attributes refer to, so the output is the same as with whole ads."""

from __future__ import annotations

from pathlib import Path

from condorpy.classad import ClassAd
from condorpy.queue.projection import af_projection, project
from condorpy.queue.query import parse_query
from condorpy.slots.status_format import render_autoformat

AD = ClassAd.parse_old("""\
ClusterId = 3
ProcId = 0
Owner = "alice"
JobStatus = 2
Cmd = "/bin/sleep"
RequestMemory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage, 128)
MemoryUsage = ((ResidentSetSize + 1023) / 1024)
ResidentSetSize = 2048
Unrelated = "x"
Environment = "A=1 B=2"
""")


def test_af_projection_names_what_the_output_and_selection_read() -> None:
    query = parse_query(["-af", "Cmd", "RequestMemory * 2", "-constraint", "Foo > 1"], "q")
    assert af_projection(query) == sorted({"clusterid", "procid", "owner", "jobstatus",
                                           "cmd", "requestmemory", "foo"})


def test_other_layouts_ask_for_whole_ads() -> None:
    for argv in ([], ["-long"], ["-json"], ["-nobatch"], ["-run"], ["-hold"]):
        assert af_projection(parse_query(argv, "q")) is None, argv


def test_project_keeps_what_the_names_refer_to_transitively() -> None:
    cut = project(AD, ["requestmemory", "cmd"])
    assert sorted(cut.keys()) == ["Cmd", "MemoryUsage", "RequestMemory", "ResidentSetSize"]
    assert cut.evaluate("RequestMemory") == AD.evaluate("RequestMemory") == 2


def test_project_sends_the_whole_ad_for_a_call_that_names_attributes_at_run_time() -> None:
    ad = AD.copy()
    ad.set_expr("Indirect", 'eval("Unre" + "lated")')
    assert project(ad, ["indirect"]) is ad


def test_af_output_is_the_same_from_the_projected_ads() -> None:
    query = parse_query(["-af", "Owner", "RequestMemory", "MemoryUsage + 1", "Missing"], "q")
    names = af_projection(query)
    assert names is not None
    cut = [project(AD, names)]
    assert render_autoformat(cut, query.attrs) == render_autoformat([AD], query.attrs)
    assert query.select(cut) == cut and query.select([AD]) == [AD]


def test_q_and_history_af_against_a_daemon(tmp_path: Path) -> None:
    from tests.startd.daemon_helpers import Daemon, submit, wait_for
    d = Daemon(tmp_path / "d")
    d.start()
    try:
        work = tmp_path / "work"
        work.mkdir()
        submit(d, "executable = /bin/true\n+Bar = 2\n+Foo = Bar + 1\nhold = true\nqueue\n",
               work)
        out = d.cli("q", "-af", "Foo", "Owner").stdout.split()
        assert out[0] == "3"
        got = d.call("q", projection=["foo"])
        assert len(got["ads"]) == 1
        sent = ClassAd.parse_old(got["ads"][0])
        assert sorted(n.lower() for n in sent.keys()) == ["bar", "foo"]
        d.cli("rm", "-all")
        wait_for(lambda: d.call("history")["ads"] != [], 30, d.output)
        assert d.cli("history", "-af", "Foo").stdout.split() == ["3"]
        sent = ClassAd.parse_old(d.call("history", projection=["foo"])["ads"][0])
        assert sorted(n.lower() for n in sent.keys()) == ["bar", "foo"]
    finally:
        d.stop()
        d.kill_leftovers()
