"""condor_q / condor_history / condor_who layouts and the shared argument handling.

The expected text is written from HTCondor 25.x's format definitions, not from condorpy:
* condor_q: src/condor_q.V6/queue.cpp (jobDefault_, jobHold_, jobRuntime_,
  jobProgress_PrintFormat, reduce_results, standard_summary2/3, print_full_header),
  column joining in src/condor_utils/ad_printmask.cpp (a space before each column but
  NOPREFIX ones, headings left-aligned to the width), dates in format_time.cpp
  (format_date "%2d/%-2d %02d:%02d", format_time "%3d+%02d:%02d:%02d").
* condor_history: src/condor_tools/history.cpp defaultJob_PrintFormat.
* condor_who: src/condor_who/who.cpp standard_who_table_format and banner.
"""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import ClassAdSyntaxError, CondorpyError
from condorpy.queue.query import JobId, QueryArgumentError, parse_query
from condorpy.queue.formats import (ScheddLabel, format_date, format_duration,
                                          render_autoformat, render_history, render_json,
                                          render_long, render_queue, render_who)

NOW = 1718000000          # 2024-06-10 06:13:20 UTC
TZ = 7200                 # the schedd's zone: UTC+2
SCHEDD = ScheddLabel("condorpy@ep1", "/run/condorpy/control.sock")
TITLE = "\n\n-- Schedd: condorpy@ep1 : /run/condorpy/control.sock @ 06/10/24 08:13:20\n"


def job(cluster: int, proc: int, owner: str, status: int, **extra: object) -> ClassAd:
    attrs: dict[str, object] = dict(
        ClusterId=cluster, ProcId=proc, Owner=owner, JobStatus=status, QDate=NOW - 3600,
        RemoteUserCpu=0.0, RemoteWallClockTime=0.0, JobPrio=0, ImageSize=1000,
        Cmd=f"/home/{owner}/sleep.sh", Arguments="60", TotalSubmitProcs=3)
    attrs.update(extra)
    return ClassAd({k: v for k, v in attrs.items() if v is not None})


# idle, running, held (with a reason), suspended, completed; two owners, a named batch
# spanning two clusters, one of them without TotalSubmitProcs
QUEUE = [
    job(12, 0, "alice", 2, ShadowBday=NOW - 100, MemoryUsage=2),
    job(12, 1, "alice", 1),
    job(12, 2, "alice", 5, HoldReason="Error from slot1: boom", HoldReasonCode=12,
        HoldReasonSubCode=2, EnteredCurrentStatus=NOW - 60),
    job(13, 0, "bob", 7, ShadowBday=NOW - 4000, RemoteWallClockTime=30.0),
    job(14, 0, "bob", 4, CompletionDate=NOW - 10, JobBatchName="sweep"),
    job(15, 0, "bob", 1, JobBatchName="sweep", TotalSubmitProcs=None),
]

TOTALS = (
    # every line but the last ends in a space (the next line's newline is in its field)
    "Total for query: 6 jobs; 1 completed, 0 removed, 2 idle, 1 running, 1 held, 1 suspended \n"
    "Total for all users: 6 jobs; 1 completed, 0 removed, 2 idle, 1 running, 1 held, 1 suspended\n")


def test_time_formats_follow_format_time_cpp() -> None:
    assert format_date(NOW, 0) == " 6/10 06:13"
    assert format_date(NOW - 86400 * 3, 0) == " 6/7  06:13"
    assert format_date(-1, 0) == "    ???    "
    assert format_date(NOW, lambda t: -3600 * 7) == " 6/9  23:13"
    assert format_duration(0) == "  0+00:00:00"
    assert format_duration(86400 * 12 + 3661) == " 12+01:01:01"


def test_batch_layout_one_row_per_cluster_or_batch_name() -> None:
    # RUN counts running (+transferring), IDLE idle + suspended (reduce_results);
    # DONE is TotalSubmitProcs less the jobs still queued; a cluster without
    # TotalSubmitProcs makes DONE and TOTAL "_"; the HOLD column shows when a job is held.
    assert render_queue(QUEUE, schedd=SCHEDD, now=NOW, utc_offset=TZ) == TITLE + (
        "OWNER BATCH_NAME    SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS\n"
        "alice ID: 12       6/10 07:13      _      1      1      1      3 12.0-2\n"
        "bob   ID: 13       6/10 07:13      2      _      1      _      3 13.0\n"
        "bob   sweep        6/10 07:13      _      _      1      _      _ 14.0 ... 15.0\n"
        "\n") + TOTALS


def test_batch_layout_hides_hold_and_widens_short_owners_to_eight() -> None:
    ads = [job(7, 0, "al", 1), job(7, 1, "al", 2, ShadowBday=NOW)]
    out = render_queue(ads, schedd=SCHEDD, now=NOW, utc_offset=0, me="al")
    assert out.splitlines()[3:6] == [
        "OWNER    BATCH_NAME    SUBMITTED   DONE   RUN    IDLE  TOTAL JOB_IDS",
        "al       ID: 7        6/10 05:13      1      1      1      3 7.0-1",
        ""]
    # condor_q's own-jobs query adds "Total for ME" between the two
    assert out.splitlines()[7] == ("Total for al: 2 jobs; 0 completed, 0 removed, 1 idle, "
                                   "1 running, 0 held, 0 suspended ")


def test_batch_layout_of_an_empty_queue_keeps_the_unfitted_heading() -> None:
    # as the manual's and many sites' empty condor_q outputs show
    assert render_queue([], schedd=SCHEDD, now=NOW, utc_offset=TZ) == TITLE + (
        "OWNER BATCH_NAME      SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS\n\n"
        "Total for query: 0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, "
        "0 suspended \n"
        "Total for all users: 0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, "
        "0 suspended\n")


def test_nobatch_layout() -> None:
    # SIZE: MemoryUsage MB, else ImageSize KB / 1024; RUN_TIME: RemoteWallClockTime plus
    # now - ShadowBday while running or suspended; CMD: basename and arguments
    assert render_queue(QUEUE, schedd=SCHEDD, now=NOW, utc_offset=TZ,
                        layout="nobatch") == TITLE + (
        " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD\n"
        "  12.0   alice           6/10 07:13   0+00:01:40 R  0    2.0 sleep.sh 60\n"
        "  12.1   alice           6/10 07:13   0+00:00:00 I  0    1.0 sleep.sh 60\n"
        "  12.2   alice           6/10 07:13   0+00:00:00 H  0    1.0 sleep.sh 60\n"
        "  13.0   bob             6/10 07:13   0+01:07:10 S  0    1.0 sleep.sh 60\n"
        "  14.0   bob             6/10 07:13   0+00:00:00 C  0    1.0 sleep.sh 60\n"
        "  15.0   bob             6/10 07:13   0+00:00:00 I  0    1.0 sleep.sh 60\n"
        "\n") + TOTALS


def test_nobatch_widens_ids_and_size_for_big_clusters() -> None:
    ads = [job(123456, 1000, "carol", 1, MemoryUsage=20480, Arguments=None)]
    lines = render_queue(ads, schedd=SCHEDD, now=NOW, utc_offset=0,
                         layout="nobatch").splitlines()
    assert lines[3:5] == [
        " ID         OWNER            SUBMITTED     RUN_TIME ST PRI SIZE    CMD",
        "123456.1000 carol           6/10 05:13   0+00:00:00 I  0   20480.0 sleep.sh"]


def test_nobatch_status_letters_for_transfers() -> None:
    ads = [job(1, 0, "u", 2, TransferringInput=True, TransferQueued=True),
           job(1, 1, "u", 6), job(1, 2, "u", 1, JobCoolDownExpiration=NOW + 5)]
    rows = render_queue(ads, schedd=SCHEDD, now=NOW, utc_offset=0,
                        layout="nobatch").splitlines()[4:7]
    assert [r[49:51] for r in rows] == ["<q", " >", "Ic"]


def test_hold_layout_has_25x_code_and_subcode() -> None:
    held = parse_query(["-hold"], "q").select(QUEUE)
    assert render_queue(held, schedd=SCHEDD, now=NOW, utc_offset=TZ, layout="hold",
                        all_ads=QUEUE) == TITLE + (
        " ID      OWNER          HELD_SINCE  CODE/SUB HOLD_REASON\n"
        "  12.2   alice           6/10 08:12   12/2   Error from slot1: boom\n"
        "\n"
        "Total for query: 1 jobs; 0 completed, 0 removed, 0 idle, 0 running, 1 held, "
        "0 suspended \n"
        "Total for all users: 6 jobs; 1 completed, 0 removed, 2 idle, 1 running, 1 held, "
        "1 suspended\n")


def test_run_layout_has_no_totals() -> None:
    running = parse_query(["-run"], "q").select(QUEUE)
    assert render_queue(running, schedd=SCHEDD, now=NOW, utc_offset=TZ,
                        layout="run") == TITLE + (
        " ID      OWNER            SUBMITTED     RUN_TIME HOST(S)\n"
        "  12.0   alice           6/10 07:13   0+00:01:40\n"
        "  13.0   bob             6/10 07:13   0+01:07:10\n")


def test_totals_layout_and_sinful_address_shortened() -> None:
    schedd = ScheddLabel("condorpy@ep1", "<10.0.0.1:9618?addrs=10.0.0.1-9618&alias=ep1>")
    assert render_queue(QUEUE, schedd=schedd, now=NOW, utc_offset=TZ,
                        layout="totals") == (
        "\n\n-- Schedd: condorpy@ep1 : <10.0.0.1:9618?... @ 06/10/24 08:13:20\n" + TOTALS)


def test_long_json_and_af_reuse_the_status_renderers() -> None:
    ad = job(3, 0, "dave", 1)
    assert render_long([ad]).startswith('Arguments = "60"\nClusterId = 3\n')
    assert render_long([ad]).endswith("TotalSubmitProcs = 3\n\n")
    assert render_json([ad]).startswith("[\n{\n")
    assert render_autoformat(QUEUE[:2], ["ClusterId", "Owner", "ImageSize / 1000"]) == (
        "12 alice 1\n12 alice 1\n")


def test_history_layout() -> None:
    # newest first as given; RUN_TIME is RemoteWallClockTime; ST as condor_q; rows keep
    # their trailing blanks (condor_history does not trim them)
    ads = [job(14, 0, "bob", 4, CompletionDate=NOW - 10, RemoteWallClockTime=3300.0),
           job(9, 3, "alice", 3, CompletionDate=0, Arguments=None, Args="-v 1"),
           job(8, 0, "erin", 4, JobDescription="nightly", CompletionDate=NOW)]
    assert render_history(ads, utc_offset=TZ) == (
        " ID          OWNER            SUBMITTED   RUN_TIME   ST   COMPLETED CMD\n"
        "14.0         bob             6/10 07:13   0+00:55:00 C   6/10 08:13 sleep.sh 60\n"
        "9.3          alice           6/10 07:13   0+00:00:00 X   1/1  02:00 sleep.sh -v 1\n"
        "8.0          erin            6/10 07:13   0+00:00:00 C   6/10 08:13 (nightly)\n")


def test_who_layout_reads_slot_ads() -> None:
    slots = [ClassAd(dict(Name="slot1_1@ep1.example.org", SlotID=1, DynamicSlot=True,
                          RemoteOwner="alice@example.org", ClientMachine="submit.example.org",
                          JobId="12.0", TotalJobRunTime=100, JobPid=4242)),
             ClassAd(dict(Name="slot1_2@ep1.example.org", SlotID=1, DynamicSlot=True,
                          RemoteOwner="bob@example.org", ClientMachine="submit.example.org",
                          JobId="13.0", TotalJobRunTime=90061)),
             ClassAd(dict(Name="slot1@ep1.example.org", SlotID=1))]
    # every column is WIDTH AUTO and left-aligned, so the last one pads with blanks
    assert render_who(slots, startd_pid=77,
                      job_dirs={"12.0": "/var/lib/condorpy/execute/dir_4241"}) == (
        "\n--Startd : ep1.example.org PID 77 has 2 job(s) running:\n"
        "OWNER             CLIENT             SLOT JOB    RUNTIME    PID  JOB_DIR"
        "                           \n"
        "alice@example.org submit.example.org 1_1  12.0   0+00:01:40 4242 "
        "/var/lib/condorpy/execute/dir_4241\n"
        "bob@example.org   submit.example.org 1_2  13.0   1+01:01:01" + " " * 40 + "\n"
        "\n")
    assert render_who(slots[2:]) == ""


# --- arguments and selection ------------------------------------------------------------

def test_positional_ids_and_owners_or_together_constraints_and() -> None:
    q = parse_query(["12.1", "13", "bob", "-const", "JobStatus != 4"], "q")
    assert q.ids == (JobId(12, 1), JobId(13))
    assert q.owners == ("bob",)
    assert [(a.evaluate("ClusterId"), a.evaluate("ProcId")) for a in q.select(QUEUE)] == [
        (12, 1), (13, 0), (15, 0)]


def test_layout_options() -> None:
    assert parse_query([], "q").output == "batch"
    assert parse_query(["-nobatch"], "q").output == "nobatch"
    assert parse_query(["-hold"], "q").output == "hold"
    assert parse_query(["-run"], "q").output == "run"
    assert parse_query(["-idle"], "q").output == "nobatch"
    assert parse_query(["-tot"], "q").output == "totals"
    assert parse_query(["-l"], "history").output == "long"
    assert parse_query(["-json", "-hold"], "q").output == "json"
    af = parse_query(["-af", "Owner", "ImageSize / 1024", "-limit", "2"], "history")
    assert (af.output, af.attrs, af.limit) == ("af", ("Owner", "ImageSize / 1024"), 2)


def test_state_options_select() -> None:
    assert [a.evaluate("JobStatus") for a in parse_query(["-run"], "q").select(QUEUE)] == [2, 7]
    assert [a.evaluate("JobStatus") for a in parse_query(["-idle"], "q").select(QUEUE)] == [1, 1]
    assert len(parse_query(["-limit", "4"], "history").select(QUEUE)) == 4


@pytest.mark.parametrize("argv, command, bad", [
    (["-bogus"], "q", "-bogus"),
    (["-hold"], "history", "-hold"),
    (["-limit"], "history", "-limit"),
    (["-limit", "0"], "q", "-limit"),
    (["-nobatch", "-l"], "q", "-l"),
    (["-hold", "-run"], "q", "-run"),
    (["-af"], "q", "-af"),
    (["12.x"], "q", "12.x"),
    ([], "rm", "condorpy rm"),
    (["-all", "12"], "release", "-all"),
])
def test_bad_arguments_are_named(argv: list[str], command: str, bad: str) -> None:
    with pytest.raises(QueryArgumentError) as err:
        parse_query(argv, command)  # type: ignore[arg-type]
    assert err.value.argument == bad
    assert isinstance(err.value, CondorpyError)
    assert str(err.value).startswith(bad + ": ")


def test_bad_expressions_are_syntax_errors_naming_the_argument() -> None:
    with pytest.raises(ClassAdSyntaxError, match="-constraint"):
        parse_query(["-constraint", "JobStatus =="], "q")
    with pytest.raises(ClassAdSyntaxError, match="-af argument"):
        parse_query(["-af", "Owner +"], "q")


def test_job_changing_commands() -> None:
    q = parse_query(["-all", "-reason", "maintenance"], "hold")
    assert q.all_jobs and q.reason == "maintenance"
    assert parse_query(["alice"], "rm").select(QUEUE) == QUEUE[:3]
