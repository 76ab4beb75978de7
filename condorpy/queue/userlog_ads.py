"""Job ads rebuilt from a job event log (the ``log =`` file), as ``condor_q -userlog``
rebuilds them without asking any daemon. Pure: the log's text in, ads out.

Each job starts with its submit event (events of a job whose submit event is not in the
log are skipped) and each later event changes what the log can tell: the status and
when it was entered, where the job runs, its image size, how it ended, why it was held,
released, evicted or removed. What a log cannot tell is filled in as HTCondor fills it
in: ``Owner`` is the user reading the log, ``Cmd`` is ``???``, the counters start at 0.
The ads come ordered by job id. Only the text format of the log is read (HTCondor's
default; not its XML or JSON forms); the events are split as ``watch-q`` splits them.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from condorpy.classad import ClassAd, parse_expr
from condorpy.errors import CondorpyError
from condorpy.queue.formats import Offset
from condorpy.queue.watch import EventParser

IDLE, RUNNING, REMOVED, COMPLETED, HELD, SUSPENDED = 1, 2, 3, 4, 5, 7

_WHEN = re.compile(r"^(\d{4}-\d\d-\d\d|\d\d?/\d\d?) (\d\d?:\d\d:\d\d)(?:\.\d+)?"
                   r"(Z|[+-]\d\d:?\d\d)?$")
_USAGE = re.compile(r"Usr (\d+) (\d+):(\d+):(\d+), Sys (\d+) (\d+):(\d+):(\d+)\s+-\s+(.*)$")
# what a job-ad-information event repeats of its own header
_EVENT_ATTRS = {"mytype", "cluster", "proc", "subproc", "eventtypenumber", "eventtime",
                "triggereventtypenumber", "triggereventtypename"}


@dataclass(frozen=True)
class Event:
    number: int
    cluster: int
    proc: int
    subproc: int
    time: int
    headline: str
    body: tuple[str, ...] = field(default=())


def _epoch(date: str, clock: str, zone: str | None, offset: Offset, now: float) -> int:
    if "-" in date:
        year, month, day = (int(x) for x in date.split("-"))
    else:   # the old form, M/D, has no year: the reader's
        month, day = (int(x) for x in date.split("/"))
        year = time.gmtime(now).tm_year
    h, m, s = (int(x) for x in clock.split(":"))
    naive = calendar.timegm((year, month, day, h, m, s, 0, 0, 0))
    if zone:
        if zone == "Z":
            return naive
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        return naive - sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    if callable(offset):
        # the zone's offset at that moment (found from a first guess)
        return naive - offset(naive - offset(naive))
    return naive - offset


def read_events(text: str, *, utc_offset: Offset, now: float) -> Iterator[Event]:
    """The events of a log's text, in order (split as ``watch-q`` splits them: an event
    not yet ended by its ``...`` line is left out, as is one whose time is unreadable)."""
    for ev in EventParser().feed(text if text.endswith("\n") else text + "\n"):
        m = _WHEN.match(ev.when)
        if m is None:
            continue
        headline, *body = ev.text.split("\n")
        yield Event(ev.code, ev.cluster, ev.proc, 0,
                    _epoch(m.group(1), m.group(2), m.group(3), utc_offset, now),
                    headline, tuple(body))


def _usage(body: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in body:
        m = _USAGE.search(line)
        if m:
            n = [int(x) for x in m.groups()[:8]]
            user = n[0] * 86400 + n[1] * 3600 + n[2] * 60 + n[3]
            system = n[4] * 86400 + n[5] * 3600 + n[6] * 60 + n[7]
            out[m.group(9).strip() + " user"] = float(user)
            out[m.group(9).strip() + " sys"] = float(system)
    return out


def _first_text(body: Sequence[str]) -> str | None:
    return body[0].strip() if body else None


def _status(ad: ClassAd, status: int, at: int) -> None:
    ad["LastJobStatus"] = ad.evaluate("JobStatus")
    ad["JobStatus"] = status
    ad["EnteredCurrentStatus"] = at


def _bump(ad: ClassAd, attr: str) -> None:
    value = ad.evaluate(attr)
    ad[attr] = value + 1 if isinstance(value, int) and not isinstance(value, bool) else 1


def _submitted(ev: Event, path: str, owner: str, now: float) -> ClassAd:
    ad = ClassAd()
    host = ev.headline.split("host:", 1)[1].strip() if "host:" in ev.headline else ""
    for name, value in (
            ("MyType", "Job"), ("TargetType", "Machine"), ("ClusterId", ev.cluster),
            ("ProcId", ev.proc), ("UserLog", path), ("QDate", ev.time),
            ("EnteredCurrentStatus", ev.time),
            ("GlobalJobId", f"localhost#{ev.cluster}.{ev.proc}#{ev.time}"),
            ("ServerTime", int(now)), ("SubmitHost", host), ("JobStatus", IDLE),
            ("LastJobStatus", 0), ("Owner", owner), ("JobPrio", 0), ("ImageSize", 0),
            ("Cmd", "???"), ("LastSuspensionTime", 0), ("CompletionDate", 0),
            ("NumJobStarts", 0), ("TotalSuspensions", 0), ("NumSystemHolds", 0),
            ("LocalUserCpu", 0.0), ("RemoteUserCpu", 0.0), ("LocalSysCpu", 0.0),
            ("RemoteSysCpu", 0.0), ("RemoteWallClockTime", 0.0)):
        ad[name] = value
    return ad


def _apply(ad: ClassAd, ev: Event) -> None:
    n = ev.number
    if n == 1:      # executing
        _status(ad, RUNNING, ev.time)
        ad["JobCurrentStartDate"] = ev.time
        _bump(ad, "NumJobStarts")
        host = ev.headline.split("host:", 1)[1].strip() if "host:" in ev.headline else ""
        ad["StartdIpAddr"] = host
        ad["RemoteHost"] = host
    elif n == 5:    # terminated
        _terminated(ad, ev)
    elif n == 10:   # suspended
        _status(ad, SUSPENDED, ev.time)
        ad["LastSuspensionTime"] = ev.time
        _bump(ad, "TotalSuspensions")
    elif n == 11:   # unsuspended
        _status(ad, RUNNING, ev.time)
    elif n in (4, 7, 24):   # evicted, shadow exception, reconnect failed
        started = ad.evaluate("NumJobStarts")
        _status(ad, IDLE, ev.time)
        if n != 7 or (isinstance(started, int) and started > 0):
            ad["LastVacateTime"] = ev.time
        reason = _evicted(ad, ev) if n == 4 else _first_text(ev.body)
        if reason is not None and (n == 4 or reason):
            ad["LastVacateReason"] = reason
    elif n == 12:   # held
        _held(ad, ev)
    elif n == 13:   # released
        _status(ad, IDLE, ev.time)
        reason = _first_text(ev.body)
        if reason:
            ad["ReleaseReason"] = reason
    elif n == 9:    # aborted
        _status(ad, REMOVED, ev.time)
        reason = _first_text(ev.body)
        if reason:
            ad["RemoveReason"] = reason
    elif n == 6:    # image size
        _image_size(ad, ev)
    elif n == 28:   # job ad information
        for line in ev.body:
            name, eq, value = line.strip().partition(" = ")
            if eq and name.lower() not in _EVENT_ATTRS:
                try:
                    ad[name] = parse_expr(value)
                except CondorpyError:
                    continue


def _evicted(ad: ClassAd, ev: Event) -> str:
    """An evicted event's reason: HTCondor (24.3 on) heads it ``Job was evicted. Code N
    Subcode M`` and gives the reason on a ``Reason:`` line; the job's VacateReason and
    codes are read back from them."""
    m = re.search(r"Code (-?\d+) Subcode (-?\d+)", ev.headline)
    reason = next((line.strip()[len("Reason:"):].strip() for line in ev.body
                   if line.strip().startswith("Reason:")), "")
    if m:
        ad["VacateReasonCode"] = int(m.group(1))
        ad["VacateReasonSubCode"] = int(m.group(2))
    if reason:
        ad["VacateReason"] = reason
    return reason


def _terminated(ad: ClassAd, ev: Event) -> None:
    _status(ad, COMPLETED, ev.time)
    host = ad.lookup("RemoteHost")
    if host is not None:
        del ad["RemoteHost"]
        ad["LastRemoteHost"] = host
    ad["CompletionDate"] = ev.time
    head = ev.body[0] if ev.body else ""
    normal = re.search(r"\(return value (-?\d+)\)", head)
    signal = re.search(r"\(signal (\d+)\)", head)
    if normal:
        ad["ExitBySignal"] = False
        ad["ExitCode"] = int(normal.group(1))
    elif signal:
        ad["ExitBySignal"] = True
        ad["ExitSignal"] = int(signal.group(1))
    use = _usage(ev.body)
    for attr, key in (("LastLocalUserCpu", "Run Local Usage user"),
                      ("LastRemoteUserCpu", "Run Remote Usage user"),
                      ("LastLocalSysCpu", "Run Local Usage sys"),
                      ("LastRemoteSysCpu", "Run Remote Usage sys")):
        ad[attr] = use.get(key, 0.0)
    started = ad.evaluate("JobCurrentStartDate")
    if isinstance(started, int):
        ad["LastRemoteWallClockTime"] = float(ev.time - started)
    for attr, key in (("LocalUserCpu", "Total Local Usage user"),
                      ("RemoteUserCpu", "Total Remote Usage user"),
                      ("LocalSysCpu", "Total Local Usage sys"),
                      ("RemoteSysCpu", "Total Remote Usage sys")):
        ad[attr] = use.get(key, 0.0)
    wall, last = ad.evaluate("RemoteWallClockTime"), ad.evaluate("LastRemoteWallClockTime")
    if isinstance(wall, float) and isinstance(last, float):
        ad["RemoteWallClockTime"] = wall + last


def _held(ad: ClassAd, ev: Event) -> None:
    before = ad.evaluate("JobStatus")
    _status(ad, HELD, ev.time)
    reason = _first_text(ev.body)
    if before != IDLE:
        ad["LastVacateTime"] = ev.time
        if reason:
            ad["LastVacateReason"] = reason
    if reason is not None:
        ad["HoldReason"] = reason
    code, sub = 0, 0
    for line in ev.body[1:]:
        m = re.search(r"Code (-?\d+) Subcode (-?\d+)", line)
        if m:
            code, sub = int(m.group(1)), int(m.group(2))
    ad["HoldReasonCode"] = code
    ad["HoldReasonSubCode"] = sub
    if code != 1:
        _bump(ad, "NumSystemHolds")


def _image_size(ad: ClassAd, ev: Event) -> None:
    m = re.search(r"(-?\d+)\s*$", ev.headline)
    if m:
        ad["ImageSize"] = int(m.group(1))
    rss, pss = -1, -1
    for line in ev.body:
        found = re.match(r"\s*(-?\d+)\s+-\s+(ResidentSetSize|ProportionalSetSize)", line)
        if found and found.group(2) == "ResidentSetSize":
            rss = int(found.group(1))
        elif found:
            pss = int(found.group(1))
    ad["ResidentSetSize"] = rss
    ad["ProportionalSetSize"] = pss


def userlog_ads(text: str, *, path: str, owner: str, now: float, utc_offset: Offset
                ) -> list[ClassAd]:
    """The jobs recorded in a log's ``text`` (read from ``path``), as of its last
    event, ordered by job id."""
    jobs: dict[tuple[int, int, int], ClassAd] = {}
    for ev in read_events(text, utc_offset=utc_offset, now=now):
        key = (ev.cluster, ev.proc, ev.subproc)
        if ev.number == 0:
            jobs[key] = _submitted(ev, path, owner, now)
        elif key in jobs:
            _apply(jobs[key], ev)
    return [jobs[k] for k in sorted(jobs)]
