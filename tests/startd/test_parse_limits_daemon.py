"""Issue 25 through a real daemon: text too big to parse (a submitted ad, a submission
part of too many lines, a qedit value) is refused with an error naming where it came
from, and the daemon answers everyone throughout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.queue.submit_parts import PART_LINES, parts
from condorpy.classad import ClassAd
from condorpy.startd.client import Connection, RequestRefused
from tests.startd.daemon_helpers import Daemon, running

COMMON = 'MyType = "Job"\nCmd = "/bin/true"\nJobUniverse = 5\n'


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("parselimits"), extra="START = False\n")
    with running(d):
        yield d


def _part(d: Daemon, common: str, procs: list[str]) -> None:
    cluster = d.call("new_cluster")
    with Connection(d.socket) as conn:
        conn.call("submit", {"cluster": cluster, "common": common, "procs": procs,
                             "first": 0, "total": len(procs), "more": False})


@pytest.mark.parametrize("value, says", [
    ("(" * 100_000 + "1" + ")" * 100_000, "more than 50000 tokens"),
    ("(" * 5_000 + "1" + ")" * 5_000, "nested too deeply"),
    ("+".join(["a"] * 1_000_000), "more than 50000 tokens"),
    ("{" + ",".join(["1"] * 1_000_000) + "}", "more than 50000 tokens"),
    ('"' + "a" * 5_000_000 + '"', "characters, more than the 4194304"),
])
def test_a_job_ad_too_big_to_parse_is_refused_naming_it(daemon: Daemon, value: str,
                                                        says: str) -> None:
    with pytest.raises(RequestRefused) as info:
        _part(daemon, COMMON, ["A = 1", f"Requirements = {value}"])
    said = str(info.value)
    assert says in said and "submitted job ad 1" in said and "Requirements" in said, \
        said[:400]
    assert len(said) < 1000
    with pytest.raises(RequestRefused) as info:
        _part(daemon, COMMON + f"Rank = {value}\n", ["A = 1"])
    said = str(info.value)
    assert says in said and "the submission's common ad" in said and "Rank" in said, \
        said[:400]
    assert daemon.call("status")["ads"]


def test_a_part_of_too_many_lines_is_refused_before_it_is_parsed(daemon: Daemon) -> None:
    procs = ["\n".join(f"X{i}_{k} = {k}" for k in range(100)) for i in range(PART_LINES // 100 + 1)]
    with pytest.raises(RequestRefused, match=f"lines of job ads, more than {PART_LINES}"):
        _part(daemon, COMMON, procs)
    assert daemon.call("status")["ads"]


def test_condorpy_submits_parts_stay_under_the_line_limit() -> None:
    ads = [ClassAd({"Cmd": "/bin/true", **{f"X{k}": i * k for k in range(50)}})
           for i in range(1000)]
    got = list(parts(1, len(ads), ads))
    assert len(got) > 1 and sum(len(p["procs"]) for p in got) == 1000
    assert all(sum(t.count("\n") + 1 for t in p["procs"]) <= PART_LINES for p in got)


def test_a_qedit_value_too_big_to_parse_is_refused_naming_it(daemon: Daemon,
                                                            tmp_path: Path) -> None:
    (tmp_path / "j.sub").write_text("executable = /bin/true\nqueue\n")
    out = daemon.cli("submit", "j.sub", cwd=tmp_path).stdout
    cluster = out.strip().rstrip(".").split()[-1]
    # qedit takes values of up to 64 KiB: as many tokens as characters fit
    for value, says in (("+".join(["a"] * 1_000_000), "longer than 65536 characters"),
                        ("+".join(["a"] * 32_000), "more than 50000 tokens"),
                        ("(" * 1000 + "1" + ")" * 1000, "nested too deeply")):
        with pytest.raises(RequestRefused) as info:
            daemon.call("qedit", ids=[f"{cluster}.0"], attrs=["Foo"], values=[value])
        said = str(info.value)
        assert says in said and "Foo" in said, said[:400]
        assert len(said) < 1000
    assert daemon.call("status")["ads"]
