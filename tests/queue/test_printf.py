"""``-format FMT EXPR`` prints what condor_history -format prints (HTCondor 23.9.6, run on
the same history file: data/htcondor23/history, two jobs of alice's, 1.0 removed and
2.0 completed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.queue.history_file import history_ads
from condorpy.queue.printf import FormatItem, collapse_escapes, render_format

DATA = Path(__file__).parent / "data" / "htcondor23"
# condor_history -file shows the newest first
ADS = history_ads((DATA / "history").read_text(), source="history")[::-1]


def _fmt(*pairs: str) -> str:
    items = []
    args = list(pairs)
    while args:
        if args[0] == "-af":
            items.append(FormatItem(None, args[1]))
        else:
            items.append(FormatItem(args[0], args[1]))
        args = args[2:]
    return render_format(ADS, items)


# (-format arguments, what condor_history -file printed)
CASES = [
    (("%d.", "ClusterId", r"%d\n", "ProcId"), "1.0\n2.0\n"),
    (("%s|", "Owner", "%v|", "JobStatus", "%f|", "RequestMemory", "<%5d>", "ProcId",
      r"[%-8s]\n", "Cmd"),
     "alice|3|2.000000|<    0>[/bin/sleep]\nalice|4|5.000000|<    0>[/bin/sleep]\n"),
    ((r"x=%v\n", "NoSuchAttr"), "x=undefined\nx=undefined\n"),
    ((r"x=%d\n", "NoSuchAttr"), ""),
    ((r"x=%s\n", "NoSuchAttr"), ""),
    ((r"%s\n", "JobStatus"), "3\n4\n"),
    ((r"%d\n", "Cmd"), ""),
    ((r"%V\n", "Cmd"), '"/bin/sleep"\n"/bin/sleep"\n'),
    ((r"%V\n", "JobStatus"), "3\n4\n"),
    ((r"%.2f\n", "ImageSize_RAW"), "2588.00\n43.00\n"),
    ((r"literal only\n", "NoSuch"), "literal only\nliteral only\n"),
    ((r"%d%%\n", "ProcId"), "0%\n0%\n"),
    ((r"%d\n", "RequestMemory >= 0"), "1\n1\n"),
    ((r"%s\n", "RequestMemory >= 0"), ""),
    ((r"%d\n", "ExitBySignal"), "1\n0\n"),
    ((r"%s\n", "ExitBySignal"), "true\nfalse\n"),
    ((r"%f\n", "ExitBySignal"), "1.000000\n0.000000\n"),
    ((r"%d\n", "RemoteWallClockTime"), "19\n1\n"),
    ((r"%s\n", "RemoteWallClockTime"), "19.0\n1.0\n"),
    ((r"%v\n", "RequestMemory"), "2\n5\n"),
    ((r"%s\n", "undefined"), ""),
    ((r"%d\n", "error"), ""),
    ((r"%s\n", 'strcat("a","b")'), "ab\nab\n"),
    ((r"[%10.3s]\n", "Owner"), "[       ali]\n[       ali]\n"),
    ((r"%v\n", "ClusterId == 1"), "true\nfalse\n"),
    # a value that does not suit its conversion prints the field's width in blanks only
    ((r"%5.1f|\n", "CompletionDate"), "     1795689518.0|\n"),
    ((r"x%-4s|\n", "NoSuch"), "        "),
    ((r"%5d|\n", "Cmd"), "          "),
    ((r"%3v|\n", "NoSuch"), "undefined|\nundefined|\n"),
    # beside -af: items separated by a space, each job's line ended
    ((r"%s\n", "Owner", "-af", "ProcId"), "alice\n 0\nalice\n 0\n"),
    (("-af", "ProcId", r"%s\n", "Owner"), "0 alice\n\n0 alice\n\n"),
]


@pytest.mark.parametrize("args,expected", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_format_prints_what_condor_history_prints(args: tuple[str, ...],
                                                  expected: str) -> None:
    assert _fmt(*args) == expected


def test_a_plain_attribute_that_is_an_expression_prints_as_written_with_s() -> None:
    # condor_history prints the formula (its unparser writes =!= where ours writes isnt)
    out = _fmt(r"%s\n", "RequestMemory").splitlines()
    assert out[0].startswith("ifthenelse(MemoryUsage ") and out[0] == out[1]
    assert out == _fmt(r"%r\n", "RequestMemory").splitlines()


def test_escapes_and_a_second_conversion() -> None:
    assert collapse_escapes(r"a\tb\\n\n") == "a\tb\\n\n"
    # only the first conversion takes the value (C would read garbage for the second)
    assert _fmt(r"%-10s|%5s|\n", "Owner") == "alice     ||\n" * 2
