"""watch-q's core: job event logs read into job states, tallied and drawn as
condor_watch_q draws them, and its -exit conditions (condorpy/queue/watch.py). The
expected screens are what HTCondor 23.9.6's condor_watch_q (the reference pool's)
printed for the same logs."""

from __future__ import annotations

import pytest

from condorpy.queue import watch
from condorpy.queue.watch import ExitCondition, State


def _ev(code: int, job: str, text: str = "") -> str:
    cluster, proc = job.split(".")
    return (f"{code:03d} ({int(cluster):03d}.{int(proc):03d}.000) 2026-11-26 10:00:00 "
            f"{text}\n    detail\n...\n")


LOG = (_ev(0, "7.0", "Job submitted from host: <127.0.0.1:0>")
       + _ev(0, "7.1", "Job submitted from host: <127.0.0.1:0>")
       + _ev(0, "7.2", "Job submitted from host: <127.0.0.1:0>")
       + _ev(1, "7.0", "Job executing on host: <127.0.0.1:0>")
       + _ev(6, "7.0", "Image size of job updated: 100")
       + _ev(1, "7.1", "Job executing on host: <127.0.0.1:0>")
       + _ev(5, "7.1", "Job terminated.")
       + _ev(12, "7.2", "Job was held."))


def test_events_are_taken_only_once_complete() -> None:
    p = watch.EventParser()
    cut = LOG.index("...") + 2          # in the middle of the first terminator
    first = p.feed(LOG[:cut])
    assert first == []
    rest = p.feed(LOG[cut:])
    assert [(e.code, e.cluster, e.proc) for e in rest][:2] == [(0, 7, 0), (0, 7, 1)]
    assert len(rest) == 8
    assert p.feed("garbage line\n...\n") == []


def test_states_follow_the_last_event_of_each_job() -> None:
    t = watch.Tracker(batch_names={7: None})
    t.add("/x/log", watch.EventParser().feed(LOG))
    c = t.clusters[7]
    assert c.jobs == {0: State.RUN, 1: State.DONE, 2: State.HELD}
    assert c.batch_name == "ID: 7"
    t.add("/x/log", watch.EventParser().feed(
        _ev(13, "7.2", "Job was released.") + _ev(9, "7.0", "Job was aborted.")))
    assert c.jobs == {0: State.REMOVED, 1: State.DONE, 2: State.IDLE}


def test_clusters_filtered_by_id_and_larger_than() -> None:
    events = watch.EventParser().feed(_ev(0, "3.0") + _ev(0, "8.0") + _ev(0, "9.0"))
    only = watch.Tracker(only=[8])
    only.add("l", events)
    assert list(only.clusters) == [8]
    since = watch.Tracker(since=8)
    since.add("l", events)
    assert sorted(since.clusters) == [8, 9]


ORACLE_LOG = "".join(_ev(*e) for e in [
    (0, "7.0"), (0, "7.1"), (0, "7.2"), (0, "8.0"), (0, "12.0"), (1, "7.0"), (1, "7.1"),
    (12, "7.2", "Job was held."), (9, "8.0", "Job was aborted.")])
# condor_watch_q -files LOG -exit any,held -no-color, COLUMNS=100, not on a terminal
ORACLE = """\
BATCH    REMOVED  HELD  IDLE  RUN  DONE  TOTAL  JOB_IDS
ID: 7         -     1     -    2     -      3   7.0 ... 7.2 [==========================!!!!!!!!!!!!]
ID: 8         1     -     -    -     -      1               [!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!]
ID: 12        -     -     1    -     -      1   12.0        [--------------------------------------]

[================================---------------!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!]

Total: 5 jobs; 1 removed, 1 idle, 2 running, 1 held

Updated at 2026-11-26 10:44:05"""


def test_the_screen_is_condor_watch_qs() -> None:
    t = watch.Tracker()
    t.add("/x/log", watch.EventParser().feed(ORACLE_LOG))
    assert watch.screen(t, "batch", watch.Display(), 100, "2026-11-26 10:44:05") == ORACLE
    short = watch.screen(t, "batch", watch.Display(), 100, "now", rows=6)
    assert short.splitlines()[-1] == "Insufficient terminal height to display full output!"
    assert len(short.splitlines()) == 5


def test_columns_always_shown_and_the_others_when_some_row_has_them() -> None:
    t = watch.Tracker(batch_names={7: "mybatch"})
    t.add("/x/log", watch.EventParser().feed(LOG))
    text = watch.screen(t, "batch", watch.Display(row_progress=False), 80, "now")
    lines = text.splitlines()
    assert lines[0].split() == ["BATCH", "HELD", "IDLE", "RUN", "DONE", "TOTAL", "JOB_IDS"]
    assert lines[1].split() == ["mybatch", "1", "-", "1", "1", "3", "7.0,", "7.2"]
    assert lines[5] == "Total: 3 jobs; 1 completed, 1 running, 1 held"


def test_job_ids_of_more_than_two_active_jobs_are_a_range() -> None:
    t = watch.Tracker()
    t.add("l", watch.EventParser().feed("".join(_ev(0, f"5.{i}") for i in range(4))))
    row = watch.tally(t, "cluster").rows[0]
    assert row[watch.JOB_IDS] == "5.0 ... 5.3" and row["CLUSTER"] == "5"


def test_progress_bar_gives_the_remainder_to_the_longest_part() -> None:
    bar = watch.progress_bar({watch.TOTAL: 3, State.DONE: 1, State.IDLE: 2}, 80)
    assert len(bar) == 79 and bar == "[" + "#" * 25 + "-" * 52 + "]"
    # nothing to show: the first part takes the whole bar, as condor_watch_q draws it
    assert watch.progress_bar({watch.TOTAL: 0}, 30) == "[" + "#" * 28 + "]"


def test_summary_shortens_words_to_fit_and_percentages() -> None:
    totals = {watch.TOTAL: 4, State.DONE: 1, State.RUN: 1, State.HELD: 2}
    assert watch.summary(totals, 20).startswith("Total: 4 jobs; 1 co")
    assert watch.summary(totals, 80, percentages=True) == (
        "Total: 4 jobs; 25% completed, 0% removed, 0% idle, 25% running, 50% held, "
        "0% suspended")


def test_exit_conditions() -> None:
    c = ExitCondition.parse("all,done")
    assert (c.grouper, c.status, c.code, str(c)) == ("all", "done", 0, "all done")
    assert c.met([State.DONE, State.DONE]) and not c.met([State.DONE, State.RUN])
    held = ExitCondition.parse("any,held,3")
    assert held.code == 3 and held.met([State.RUN, State.HELD])
    assert ExitCondition.parse("none,active").met([State.DONE, State.REMOVED])
    for bad, why in [("all", "invalid -exit"), ("some,done", "invalid GROUPER"),
                     ("all,gone", "invalid JOB_STATUS"), ("all,done,x", "integer")]:
        with pytest.raises(ValueError, match=why):
            ExitCondition.parse(bad)


def test_nice_path() -> None:
    assert watch.nice_path("/home/a/w/log", "/home/a", "/home/a/w") == "./log"
    assert watch.nice_path("/home/a/x/log", "/home/a", "/tmp") == "~/x/log"
    assert watch.nice_path("/l", "/home/a", "/tmp") == "/l"
