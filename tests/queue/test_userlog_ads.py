"""``q -userlog FILE``: jobs rebuilt from a job event log print as condor_q -userlog
prints them. The logs in data/htcondor23 were written by HTCondor 23.9.6's shadow
(job.log: 1.0 ran and was removed, 1.1 was held; short.log: 2.0 ran to completion); the
expected texts are what condor_q -userlog printed for them, the same in 23.9.6 and
25.14.1, with the clock and zone fixed (the pool ran in UTC)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.cli.main import main
from condorpy.queue.formats import render_queue
from condorpy.queue.query import parse_query
from condorpy.queue.userlog_ads import read_events, userlog_ads

DATA = Path(__file__).parent / "data" / "htcondor23"
NOW = 1795689531            # 11/26/26 10:38:51 UTC
SUM = "                                                   \n\n"
TITLE = "\n\n-- Userlog: /home/alice/job.log @ 11/26/26 10:38:51\n"


def _before_rm() -> str:
    # the log as it was before condor_rm 1.0 (its evict and abort events)
    text = (DATA / "job.log").read_text()
    return text[:text.index("004 (001.000.000) 2026-11-26 10:38:51")]


def _ads(text: str, path: str = "/home/alice/job.log") -> list[ClassAd]:
    return userlog_ads(text, path=path, owner="root", now=NOW, utc_offset=0)


def _q(text: str, *args: str) -> str:
    query = parse_query(list(args), "q")
    layout = query.output if query.output != "batch" else "batch"
    return render_queue(query.select(_ads(text)), schedd="Userlog: /home/alice/job.log",
                        now=NOW, utc_offset=0, layout=layout)  # type: ignore[arg-type]


def test_events_are_read_with_their_times_and_bodies() -> None:
    events = list(read_events((DATA / "short.log").read_text(), utc_offset=0, now=NOW))
    assert [(e.number, e.cluster, e.proc, e.time) for e in events] == [
        (0, 2, 0, 1795689492), (1, 2, 0, 1795689517), (6, 2, 0, 1795689518),
        (5, 2, 0, 1795689518)]
    assert events[3].body[0] == "(1) Normal termination (return value 0)"
    # a zone east of UTC moves the same local time earlier
    east = list(read_events((DATA / "short.log").read_text(), utc_offset=3600, now=NOW))
    assert east[0].time == 1795689492 - 3600


def test_the_batch_and_nobatch_tables() -> None:
    assert _q(_before_rm()) == (
        TITLE + "OWNER    BATCH_NAME    SUBMITTED   DONE   RUN    IDLE   HOLD  TOTAL JOB_IDS\n"
        "root     ID: 1       11/26 10:38      _      1      _      1      _ 1.0-1\n\n"
        "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 1 running, 1 held, "
        "0 suspended" + SUM)
    assert _q(_before_rm(), "-nobatch") == (
        TITLE + " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD\n"
        "   1.0   root           11/26 10:38   0+00:00:00 R  0    2.5 ???\n"
        "   1.1   root           11/26 10:38   0+00:00:00 H  0    0.0 ???\n\n"
        "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 1 running, 1 held, "
        "0 suspended" + SUM)


def test_after_the_removal_and_the_totals_and_hold_layouts() -> None:
    text = (DATA / "job.log").read_text()
    assert _q(text, "-nobatch").splitlines()[4:6] == [
        "   1.0   root           11/26 10:38   0+00:00:00 X  0    2.5 ???",
        "   1.1   root           11/26 10:38   0+00:00:00 H  0    0.0 ???"]
    assert _q(_before_rm(), "-totals") == (
        TITLE + "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 1 running, "
        "1 held, 0 suspended" + SUM)
    assert _q(_before_rm(), "-hold") == (
        TITLE + " ID      OWNER          HELD_SINCE  CODE/SUB HOLD_REASON\n"
        "   1.1   root           11/26 10:38    1/0   via condor_hold (by user alice)\n\n"
        "Total for query: 1 jobs; 0 completed, 0 removed, 0 idle, 0 running, 1 held, "
        "0 suspended" + SUM)


def test_the_run_layout_shows_the_execute_host_as_the_log_gives_it() -> None:
    # condor_q looks the address up in DNS (localhost, here); the ads keep the address
    lines = _q(_before_rm(), "-run").splitlines()
    assert lines[3:] == [" ID      OWNER            SUBMITTED     RUN_TIME HOST(S)",
                         "   1.0   root           11/26 10:38   0+00:00:00 "
                         "<127.0.0.1:18569?addrs=127.0.0.1-18569&alias=vm>"]


def test_a_completed_job_has_the_attributes_condor_q_long_shows() -> None:
    (ad,) = _ads((DATA / "short.log").read_text(), "/home/alice/short.log")
    shown = {name: str(expr) for name, expr in ad.items()}
    assert shown == {
        "MyType": '"Job"', "TargetType": '"Machine"', "ClusterId": "2", "ProcId": "0",
        "UserLog": '"/home/alice/short.log"', "QDate": "1795689492",
        "EnteredCurrentStatus": "1795689518", "GlobalJobId": '"localhost#2.0#1795689492"',
        "ServerTime": str(NOW),
        "SubmitHost": '"<127.0.0.1:30347?addrs=127.0.0.1-30347&alias=vm>"',
        "JobStatus": "4", "LastJobStatus": "2", "Owner": '"root"', "JobPrio": "0",
        "ImageSize": "45", "Cmd": '"???"', "LastSuspensionTime": "0",
        "CompletionDate": "1795689518", "NumJobStarts": "1", "TotalSuspensions": "0",
        "NumSystemHolds": "0", "LocalUserCpu": "0.0", "RemoteUserCpu": "0.0",
        "LocalSysCpu": "0.0", "RemoteSysCpu": "0.0", "RemoteWallClockTime": "1.0",
        "JobCurrentStartDate": "1795689517",
        "StartdIpAddr": '"<127.0.0.1:18569?addrs=127.0.0.1-18569&alias=vm>"',
        "LastRemoteHost": '"<127.0.0.1:18569?addrs=127.0.0.1-18569&alias=vm>"',
        "ResidentSetSize": "4560", "ProportionalSetSize": "-1", "ExitBySignal": "false",
        "ExitCode": "0", "LastLocalUserCpu": "0.0", "LastRemoteUserCpu": "0.0",
        "LastLocalSysCpu": "0.0", "LastRemoteSysCpu": "0.0",
        "LastRemoteWallClockTime": "1.0"}


def test_held_and_evicted_jobs_keep_why() -> None:
    held = _ads(_before_rm())[1]
    assert held.evaluate("HoldReason") == "via condor_hold (by user alice)"
    assert (held.evaluate("HoldReasonCode"), held.evaluate("HoldReasonSubCode")) == (1, 0)
    assert (held.evaluate("LastVacateReason"), held.evaluate("LastVacateTime")) == (
        "", 1795689517)
    removed = _ads((DATA / "job.log").read_text())[0]
    assert removed.evaluate("JobStatus") == 3
    assert removed.evaluate("RemoveReason") == "via condor_rm (by user alice)"


def test_events_of_a_job_without_its_submit_event_are_skipped() -> None:
    text = (DATA / "short.log").read_text()
    assert _ads(text[text.index("001 ("):]) == []


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def test_the_command_reads_the_log_without_a_daemon(tmp_path: Path) -> None:
    rc, out, err = _cli("q", "-config", str(tmp_path / "none"), "-userlog",
                        str(DATA / "short.log"), "-af", "ClusterId", "JobStatus", "Cmd")
    assert (rc, out, err) == (0, "2 4 ???\n", "")
    rc, out, _ = _cli("q", "-u", str(DATA / "job.log"), "1.1", "-nobatch")
    assert rc == 0 and f"-- Userlog: {DATA / 'job.log'} @ " in out
    assert "   1.1   " in out and "   1.0   " not in out


def test_a_missing_log_exits_1(tmp_path: Path) -> None:
    rc, out, err = _cli("q", "-userlog", str(tmp_path / "missing.log"))
    assert (rc, out) == (1, "")
    assert err == f"\nCan't open user log: {tmp_path / 'missing.log'}\n"


@pytest.mark.parametrize("layout", ["-nobatch", "-run"])
def test_a_terminal_width_cuts_rows_and_wide_does_not(layout: str) -> None:
    ads = _ads(_before_rm())
    full = render_queue(ads, schedd="Userlog: x", now=NOW, utc_offset=0,
                        layout=layout[1:])  # type: ignore[arg-type]
    cut = render_queue(ads, schedd="Userlog: x", now=NOW, utc_offset=0,
                       layout=layout[1:], width=40)  # type: ignore[arg-type]
    assert all(len(line) <= 39 for line in cut.splitlines()[3:-2])
    assert any(len(line) > 39 for line in full.splitlines())
    # condor_q -wide:40 -nobatch cut the heading so
    if layout == "-nobatch":
        assert cut.splitlines()[3] == " ID      OWNER            SUBMITTED    "


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_cuts_q_output_unless_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    log = str(DATA / "short.log")
    monkeypatch.setenv("COLUMNS", "40")

    def rows(*argv: str) -> list[str]:
        out = _Terminal()
        with contextlib.redirect_stdout(out):
            assert main(["q", "-userlog", log, "-nobatch", *argv]) == 0
        return out.getvalue().splitlines()[3:5]

    # condor_q cuts the heading and each job's row to one less than the width
    assert rows()[0] == " ID      OWNER            SUBMITTED    "
    assert [len(r) for r in rows()] == [39, 39]
    assert rows("-wide")[0] == " ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"
    assert len(rows("-wide:30")[0]) == 29
    # not a terminal: never cut, as condor_q writing to a pipe
    assert _cli("q", "-userlog", log, "-nobatch")[1].splitlines()[3].endswith(" CMD")


def test_old_dates_and_zoned_times() -> None:
    text = ("000 (007.003.000) 11/26 10:38:12 Job submitted from host: <10.0.0.1:9618>\n"
            "...\n"
            "001 (007.003.000) 2026-11-26 10:38:32+01:00 Job executing on host: <h:1>\n"
            "...\n"
            "012 (007.003.000) 2026-11-26 09:40:00Z Job was held.\n"
            "\tdisk full\n\tCode 21 Subcode 28\n"
            "...\n"
            "013 (007.003.000) 2026-11-26 09:41:00 Job was released.\n")
    # the last event has no "..." yet: it is still being written
    events = list(read_events(text, utc_offset=0, now=NOW))
    # the old M/D form takes the reader's year
    assert [e.time for e in events] == [1795689492, 1795689512 - 3600, 1795686000]
    (ad,) = _ads(text)
    assert (ad.evaluate("ClusterId"), ad.evaluate("ProcId")) == (7, 3)
    assert ad.evaluate("SubmitHost") == "<10.0.0.1:9618>"
    assert (ad.evaluate("JobStatus"), ad.evaluate("HoldReason"),
            ad.evaluate("HoldReasonCode"), ad.evaluate("NumSystemHolds")) == (
        5, "disk full", 21, 1)
    assert ad.evaluate("LastVacateReason") == "disk full"   # it was running


def test_an_evicted_event_with_codes_gives_the_vacate_reason() -> None:
    # HTCondor 24.3 on: the code and subcode on the headline, the reason in the body
    text = (
        "000 (002.000.000) 2026-11-26 10:38:12 Job submitted from host: <127.0.0.1:1>\n"
        "...\n"
        "001 (002.000.000) 2026-11-26 10:38:32 Job executing on host: <127.0.0.1:2>\n"
        "...\n"
        "004 (002.000.000) 2026-11-26 10:38:37 Job was evicted. Code 1011 Subcode 0\n"
        "\t(0) CPU times\n"
        "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n"
        "\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n"
        "\t0  -  Run Bytes Sent By Job\n"
        "\t0  -  Run Bytes Received By Job\n"
        "\tReason: PREEMPT expression evaluated to True\n"
        "...\n")
    ad = _ads(text)[0]
    assert ad.evaluate("VacateReasonCode") == 1011
    assert ad.evaluate("VacateReasonSubCode") == 0
    assert ad.evaluate("VacateReason") == "PREEMPT expression evaluated to True"
    assert ad.evaluate("LastVacateReason") == "PREEMPT expression evaluated to True"
