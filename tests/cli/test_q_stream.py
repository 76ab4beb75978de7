"""``condorpy q`` streams its answer without holding up anyone else (issue 25).

The client prints as the answer comes (cli/q_output.QueuePrinter): what it prints
a part at a time is what the whole answer printed at once gives, byte for byte. The
daemon produces the answer only as fast as the reader takes it: a reader that stops
leaves the reply paused (nothing more is read from the store for it), and every other
request is answered meanwhile.
"""

from __future__ import annotations

import io
import json
import os
import selectors
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from condorpy.classad import ClassAd
from condorpy.cli.q_output import QueuePrinter
from condorpy.queue.formats import ScheddLabel, render_queue
from condorpy.queue.printf import render_format
from condorpy.queue.projection import TextProjector, q_projection
from condorpy.queue.query import parse_query
from condorpy.slots.status_format import render_autoformat, render_json, render_long
from condorpy.startd import control
from condorpy.startd.client import stream
from condorpy.startd.control_socket import ControlSocket

SCHEDD = ScheddLabel("condorpy@host", "/run/sock")
NOW = 1_700_000_500


def _job(cluster: int, proc: int, owner: str, status: int, **more: Any) -> ClassAd:
    ad = ClassAd.parse_old(
        f'ClusterId = {cluster}\nProcId = {proc}\nOwner = "{owner}"\nJobStatus = {status}\n'
        f'QDate = 1700000000\nCmd = "/bin/sleep"\nArguments = "{proc}"\nJobPrio = 0\n'
        f'ImageSize = 2048\nRemoteUserCpu = 0.0\nRemoteWallClockTime = 0.0\n'
        f'EnteredCurrentStatus = 1700000100\nTotalSubmitProcs = 4\n'
        f'Requirements = (TARGET.Memory >= RequestMemory)\nRequestMemory = 128\n'
        f'Environment = "A=1"\n')
    for name, value in more.items():
        ad[name] = value
    return ad


QUEUE = [_job(1, p, "alice", 1 + (p == 1)) for p in range(4)] + \
    [_job(2, 0, "bob", 5, HoldReason="held by test", HoldReasonCode=1,
          HoldReasonSubCode=0),
     _job(3, 0, "alice", 2, RemoteHost="slot1_1@host", JobBatchName="nightly",
          JobCurrentStartDate=1700000300, ShadowBday=1700000310, MemoryUsage=12,
          TransferQueued=True, TransferringOutput=True, JobDescription="nightly run"),
     _job(4, 0, "bob", 6, JobCoolDownExpiration=1700009999, RemoteWallClockTime=60.0,
          JobBatchName="nightly"),
     _job(12345, 1000, "carol", 1)]


def _whole(argv: list[str], me: str | None) -> str:
    """What q printed before it streamed: every ad at once, whole."""
    query = parse_query(argv, "q")
    chosen = query.select([ad for ad in QUEUE if me is None or ad.evaluate("Owner") == me])
    if query.output == "long":
        return render_long(chosen)
    if query.output == "json":
        return render_json(chosen)
    if query.output == "af":
        return render_autoformat(chosen, query.attrs)
    if query.output == "format":
        return render_format(chosen, query.formats)
    layout = query.output if query.output in ("nobatch", "hold", "run", "totals") \
        else "batch"
    return render_queue(chosen, schedd=SCHEDD, now=NOW, utc_offset=0,
                        layout=layout, all_ads=QUEUE, me=me)  # type: ignore[arg-type]


def _streamed(argv: list[str], me: str | None, part: int) -> tuple[str, list[str]]:
    """The output of the streaming printer fed the projected ads ``part`` at a
    time, and what it had written after each part."""
    query = parse_query(argv, "q")
    names = q_projection(query)
    projector = TextProjector(names) if names else None
    texts = [projector.project(ad.to_old()) if projector else ad.to_old() for ad in QUEUE]
    out = io.StringIO()
    layout = query.output if query.output in ("nobatch", "hold", "run", "totals") \
        else "batch"
    printer = QueuePrinter(query, out, schedd=SCHEDD, now=NOW, utc_offset=0,
                           layout=layout, me=me, width=None)  # type: ignore[arg-type]
    seen = [out.getvalue()]
    for i in range(0, len(texts), part):
        printer.take([ClassAd.parse_old(t) for t in texts[i:i + part]])
        seen.append(out.getvalue())
    printer.finish()
    return out.getvalue(), seen


LAYOUTS = [[], ["-nobatch"], ["-hold"], ["-run"], ["-totals"], ["-idle"], ["-long"],
           ["-json"], ["-af", "Owner", "RequestMemory * 2"],
           ["-format", "%d.", "ClusterId", "-format", "%d\\n", "ProcId"],
           ["-nobatch", "-constraint", "RequestMemory > 100", "-limit", "3"],
           ["alice", "-nobatch"], ["2", "-long"], ["-json", "-constraint", "false"]]


@pytest.mark.parametrize("argv", LAYOUTS, ids=" ".join)
@pytest.mark.parametrize("me", [None, "alice"])
@pytest.mark.parametrize("part", [1, 3, 100])
def test_printing_as_the_answer_comes_prints_what_the_whole_answer_did(
        argv: list[str], me: str | None, part: int) -> None:
    assert _streamed(argv, me, part)[0] == _whole(argv, me)


@pytest.mark.parametrize("argv", [["-long"], ["-json"], ["-af", "ProcId"],
                                  ["-format", "%d\\n", "ProcId"]], ids=" ".join)
def test_an_ad_at_a_time_layouts_write_each_part_as_it_comes(argv: list[str]) -> None:
    _, seen = _streamed(argv, None, 1)
    assert seen[0] == ""
    # every ad's part adds to the output before the next part comes
    assert all(len(later) > len(earlier) for earlier, later in zip(seen, seen[1:]))


@pytest.mark.parametrize("argv", [[], ["-nobatch"], ["-hold"], ["-run"], ["-totals"]],
                         ids=" ".join)
def test_tables_write_their_schedd_line_before_any_job(argv: list[str]) -> None:
    _, seen = _streamed(argv, None, 1)
    assert seen[0].startswith("\n\n-- Schedd: condorpy@host : /run/sock @ ")
    assert seen[0].count("\n") == 3


# --- the daemon's side: a reader that stops pauses its reply -----------------------------

def _serve(ctl: ControlSocket, sel: selectors.BaseSelector, turns: int) -> None:
    for _ in range(turns):
        for key, mask in sel.select(timeout=0.01):
            kind, conn = key.data
            if kind == "listen":
                ctl.accept()
            else:
                ctl.io(conn, mask)


def test_a_reader_that_stops_pauses_the_reply_and_others_are_served(
        tmp_path: Path) -> None:
    produced = [0]

    def ads() -> Iterator[Any]:
        while True:                  # an answer without end: only the reader limits it
            produced[0] += 1
            yield "X = " + "x" * 1000
            if produced[0] % 100 == 0:
                yield control.PAUSE

    def dispatch(command: str, args: dict[str, Any], peer: control.Peer) -> Any:
        if command == "q":
            return control.Streamed({"now": 0}, "ads", ads())
        return {"pong": True}

    sel = selectors.DefaultSelector()
    path = tmp_path / "ctl.sock"
    ctl = ControlSocket(path, sel, dispatch, os.getuid(), lambda: None,
                        monotonic=time.monotonic)
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        stalled.connect(str(path))
        stalled.sendall(json.dumps({"command": "q", "args": {}, "stream": True}).encode()
                        + b"\n")
        _serve(ctl, sel, 200)
        paused_at = produced[0]
        assert paused_at > 0
        _serve(ctl, sel, 200)
        # nothing more was produced for a reader that reads nothing...
        assert produced[0] == paused_at
        # ...and what waits for it in the daemon is bounded
        conn = next(iter(ctl.conns.values()))
        assert len(conn.out) < control.MAX_UNSENT + 2 * control.STREAM_PIECE

        # another client is answered meanwhile
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        other.connect(str(path))
        other.sendall(b'{"command": "ping", "args": {}}\n')
        other.setblocking(False)
        got = b""
        for _ in range(200):
            _serve(ctl, sel, 1)
            try:
                got += other.recv(65536)
            except BlockingIOError:
                pass
            if got.endswith(b"\n"):
                break
        other.close()
        assert json.loads(got) == {"ok": True, "result": {"pong": True}}

        # the reader reads again: the reply goes on where it paused
        stalled.setblocking(False)
        taken = 0
        for _ in range(400):
            _serve(ctl, sel, 1)
            try:
                taken += len(stalled.recv(1 << 20))
            except BlockingIOError:
                pass
        assert produced[0] > paused_at and taken > 0
    finally:
        stalled.close()
        ctl.close()
        sel.close()


def test_q_stopped_by_sigstop_holds_up_no_one_and_reads_the_queue_as_it_goes(
        tmp_path: Path) -> None:
    """A real daemon and a real `condorpy q -long` that stops reading: status, ping
    and a change to a job are answered while it is stopped, and once it goes on it
    shows the last job as changed while it was stopped: the daemon had not read that
    far ahead for it (its reply paused, not buffered)."""
    from tests.startd.daemon_helpers import Daemon, running, submit
    jobs = 3000       # about 5 MB of whole ads: far more than the socket buffers hold
    d = Daemon(tmp_path / "d", extra="START = False\nMAX_JOBS_PER_SUBMISSION = 5000\n")
    with running(d):
        work = tmp_path / "work"
        work.mkdir()
        submit(d, f"executable = /bin/true\narguments = $(Process)\nqueue {jobs}\n", work)
        errors = open(tmp_path / "q.err", "wb")
        q = subprocess.Popen([*d.cli_argv(), "q", "-allusers", "-long"], env=d.env(),
                             stdout=subprocess.PIPE, stderr=errors)
        errors.close()
        assert q.stdout is not None
        try:
            first = q.stdout.readline()        # it prints as it reads: stop it there
            assert first.strip()
            os.kill(q.pid, signal.SIGSTOP)
            assert d.proc is not None and d.call("ping")["pid"] == d.proc.pid
            status = d.cli("status", "-af", "Name")
            assert status.stdout.strip()
            last = f"1.{jobs - 1}"
            d.cli("qedit", last, "ChangedWhileStopped", "42")
            assert d.cli("q", "-allusers", "-af", "ChangedWhileStopped",
                         "-constraint", f"ProcId == {jobs - 1}").stdout == "42\n"
        finally:
            os.kill(q.pid, signal.SIGCONT)
        out = q.stdout.read()
        assert q.wait(timeout=120) == 0, (tmp_path / "q.err").read_text()
        ads = ClassAd.parse_old_many((first + out).decode())
        assert [ad.evaluate("ProcId") for ad in ads] == list(range(jobs))
        assert ads[-1].evaluate("ChangedWhileStopped") == 42
        assert "ChangedWhileStopped" not in ads[0]

        # a reader that goes away early (a pager quit, `| head`) ends q quietly
        argv = " ".join([*d.cli_argv(), "q", "-allusers", "-long"])
        head = subprocess.run(["/bin/sh", "-c", f"{argv} | head -1"],
                              env=d.env(), capture_output=True, text=True, timeout=120)
        assert head.stdout.startswith("Args = ") and head.stdout.count("\n") == 1
        assert head.stderr == ""


def test_the_client_takes_a_one_line_answer_as_one_part(tmp_path: Path) -> None:
    """A daemon that answers with one line (one that predates streams) still serves
    the streaming client: its list is one part."""
    path = tmp_path / "old.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def serve() -> None:
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(json.dumps({"ok": True, "result": {"now": 1, "ads": ["A = 1\n"]}})
                     .encode() + b"\n")
        conn.close()

    t = threading.Thread(target=serve)
    t.start()
    with stream(path, "q", {}) as got:
        assert got.head == {"now": 1}
        assert list(got.parts()) == [["A = 1\n"]]
    t.join()
    srv.close()


# --- -stream-results: rows as they come, as condor_q -stream-results prints them -------

@pytest.mark.parametrize("layout", [["-nobatch"], ["-hold"], ["-run"], []], ids=" ".join)
def test_stream_results_writes_each_row_as_its_job_comes(layout: list[str]) -> None:
    out, seen = _streamed(["-stream-results", "-allusers", *layout], None, 1)
    heading = seen[0].splitlines()[-1]
    assert heading.startswith(" ID      OWNER")
    query = parse_query(["-allusers", *(layout or ["-nobatch"])], "q")
    rows = [ad for ad in QUEUE if query.matches(ad)]
    # a part with a selected job adds its row at once
    assert sum(b > a for a, b in zip(seen, seen[1:])) == len(rows)
    assert out.count("\n") == seen[0].count("\n") + len(rows) + \
        (0 if layout == ["-run"] else 3)     # an empty line, the query's and everyone's


def test_stream_results_prints_what_the_table_does_when_no_column_widens() -> None:
    narrow = [ad for ad in QUEUE if ad.evaluate("ClusterId") != 12345]
    for argv in (["-nobatch"], ["-hold"], ["-run"]):
        query = parse_query(["-stream-results", *argv], "q")
        whole = render_queue(query.select(narrow), schedd=SCHEDD, now=NOW, utc_offset=0,
                             layout=argv[0][1:], all_ads=narrow)  # type: ignore[arg-type]
        out = io.StringIO()
        printer = QueuePrinter(query, out, schedd=SCHEDD, now=NOW, utc_offset=0,
                               layout=argv[0][1:], me=None,  # type: ignore[arg-type]
                               width=None)
        printer.take(narrow)
        printer.finish()
        assert out.getvalue() == whole, argv


def test_stream_results_never_widens_a_column_and_a_wide_cell_pushes_the_row() -> None:
    out, _ = _streamed(["-stream-results", "-allusers"], None, 2)
    lines = out.splitlines()
    assert lines[3].startswith(" ID      OWNER            SUBMITTED")
    assert any(line.startswith("12345.1000 carol ") for line in lines)
    assert any(line.startswith("   1.0   alice ") for line in lines)
    whole = _whole(["-nobatch"], None)
    assert "    1.0    alice" in whole         # the table widens for 12345.1000


def test_stream_results_cannot_be_batched() -> None:
    from condorpy.queue.query import QueryArgumentError
    with pytest.raises(QueryArgumentError, match="-stream-results: cannot be combined"):
        parse_query(["-batch", "-stream-results"], "q")
    assert parse_query(["-stream"], "q").output == "nobatch"
    assert parse_query(["-st", "-hold"], "q").output == "hold"
