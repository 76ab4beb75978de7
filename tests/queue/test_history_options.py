"""``history -file/-forwards/-match`` and the options q and history took from condor_q
and condor_history (-wide, -format, -allusers, -userlog), as they read them: each
option shortened as far as HTCondor's tools allow. data/htcondor23/history is HTCondor
23.9.6's own history file (2.0 finished first, then 1.0 was removed)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from condorpy.cli.main import main
from condorpy.cli.queue_cmds import only_my_jobs
from condorpy.config import Config
from condorpy.queue.history_file import history_ads
from condorpy.queue.printf import FormatItem
from condorpy.queue.query import QueryArgumentError, parse_query

DATA = Path(__file__).parent / "data" / "htcondor23"
HISTORY = str(DATA / "history")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def test_a_history_file_holds_its_ads_oldest_first() -> None:
    ads = history_ads((DATA / "history").read_text(), source="h")
    assert [(a.evaluate("ClusterId"), a.evaluate("JobStatus")) for a in ads] == [(2, 4), (1, 3)]
    # an ad still being written (no banner yet) counts; blank stretches do not
    assert len(history_ads("A = 1\n*** x\n\n*** y\nB = 2\n", source="h")) == 2


def test_history_file_newest_first_forwards_and_match() -> None:
    # condor_history -file printed 1.0 then 2.0; -forwards 2.0 then 1.0
    assert _cli("history", "-file", HISTORY, "-af", "ClusterId", "ProcId")[1] == "1 0\n2 0\n"
    assert _cli("history", "-file", HISTORY, "-forwards", "-af", "ClusterId",
                "ProcId")[1] == "2 0\n1 0\n"
    assert _cli("history", "-fi", HISTORY, "-forw", "-m", "1", "-af",
                "ClusterId")[1] == "2\n"
    assert _cli("history", "-file", HISTORY, "-match", "1", "-af", "ClusterId")[1] == "1\n"
    assert _cli("history", "-file", HISTORY, "-forwards", "-backwards", "-af",
                "ClusterId")[1] == "1\n2\n"
    rc, out, _ = _cli("history", "-file", HISTORY, "2", "-format", "%d\\n", "ExitCode")
    assert (rc, out) == (0, "0\n")


def test_history_file_table() -> None:
    rc, out, err = _cli("history", "-file", HISTORY)
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(" ID ") and len(lines) == 3
    assert lines[1].startswith("1.0 ") and " X " in lines[1]
    assert lines[2].startswith("2.0 ") and " C " in lines[2]


def test_a_missing_history_file_prints_the_heading_and_exits_1(tmp_path: Path) -> None:
    # condor_history: the heading, then "Error opening history file ...", status 1
    rc, out, err = _cli("history", "-file", str(tmp_path / "gone"))
    assert rc == 1 and out.startswith(" ID ") and len(out.splitlines()) == 1
    assert err == f"Error opening history file {tmp_path / 'gone'}: No such file or directory\n"
    assert _cli("history", "-file", str(tmp_path / "gone"), "-af", "X")[1] == ""


@pytest.mark.parametrize("argv,field,value", [
    (["-wide"], "wide", True),
    (["-w"], "wide", True),
    (["-wide:40"], "width", 40),
    (["-allusers"], "all_users", True),
    (["-all"], "all_users", True),
    (["-al"], "all_users", True),
    (["-all-users"], "all_users", True),
    (["-userlog", "f.log"], "userlog", "f.log"),
    (["-u", "f.log"], "userlog", "f.log"),
    (["-m", "3"], "limit", 3),
    (["-f", "%d", "ProcId"], "formats", (FormatItem("%d", "ProcId"),)),
])
def test_q_options_as_condor_q_shortens_them(argv: list[str], field: str,
                                             value: object) -> None:
    assert getattr(parse_query(argv, "q"), field) == value


@pytest.mark.parametrize("argv,field,value", [
    (["-file", "h"], "history_file", "h"),
    (["-fi", "h"], "history_file", "h"),
    (["-forwards"], "forwards", True),
    (["-forw"], "forwards", True),
    (["-b"], "forwards", False),
    (["-fo", "%s", "Owner"], "formats", (FormatItem("%s", "Owner"),)),
])
def test_history_options_as_condor_history_shortens_them(argv: list[str], field: str,
                                                         value: object) -> None:
    assert getattr(parse_query(argv, "history"), field) == value


def test_format_and_af_keep_their_order_and_bad_arguments_are_named() -> None:
    q = parse_query(["-af", "A", "-format", "%d", "B", "-af", "C"], "q")
    assert q.output == "format"
    assert q.formats == (FormatItem(None, "A"), FormatItem("%d", "B"), FormatItem(None, "C"))
    assert parse_query(["-af", "A"], "q").formats == ()
    for argv, arg in [(["-format", "%d"], "-format"), (["-wide:x"], "-wide:x"),
                      (["-wide:0"], "-wide:0"), (["-format", "%d", "1 +"], None),
                      (["-userlog"], "-userlog"), (["-format", "%d", "X", "-long"], "-long")]:
        with pytest.raises(Exception) as info:
            parse_query(argv, "q")
        if arg is not None:
            assert isinstance(info.value, QueryArgumentError) and info.value.argument == arg
    # rm keeps -all; history has no -userlog, q no -file
    assert parse_query(["-all"], "rm").all_jobs is True
    for argv, command in [(["-userlog", "x"], "history"), (["-file", "x"], "q")]:
        with pytest.raises(QueryArgumentError):
            parse_query(argv, command)  # type: ignore[arg-type]


def test_q_shows_only_the_callers_jobs_unless_told_otherwise() -> None:
    import getpass
    cfg = Config.from_mapping({})
    me = getpass.getuser()
    assert only_my_jobs(parse_query([], "q"), cfg) == me
    assert only_my_jobs(parse_query(["-nobatch"], "q"), cfg) == me
    for argv in (["-allusers"], ["12"], ["alice"]):
        assert only_my_jobs(parse_query(argv, "q"), cfg) is None
    off = Config.from_mapping({"CONDOR_Q_ONLY_MY_JOBS": "false"})
    assert only_my_jobs(parse_query([], "q"), off) is None


def test_history_rows_are_cut_at_1024_or_wide_n_and_never_with_wide(tmp_path: Path) -> None:
    # condor_history 23.9 on this file (a 1500-character argument): 1024, -wide 1574
    # (every character), -wide:100 100, -wide:60 60, on a terminal or not
    long = tmp_path / "history"
    long.write_text((DATA / "history").read_text().replace('Args = "1"',
                                                           f'Args = "{"x" * 1500}"'))

    def widths(*argv: str) -> list[int]:
        return [len(line) for line in _cli("history", "-file", str(long),
                                           *argv)[1].splitlines()]

    assert max(widths()) == 1024
    assert max(widths("-wide")) == len("2.0          alice          11/26 10:38   "
                                       "0+00:00:01 C  11/26 10:38 sleep ") + 1500
    assert max(widths("-wide:100")) == 100
    assert max(widths("-wide:60")) == 60
