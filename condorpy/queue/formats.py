"""condor_q, condor_history and condor_who layouts of job and slot ads: ClassAds in, text out.

Nothing here reads a clock, a terminal or a file: the caller passes the query time and
the local zone's offset (``Clock.time()`` and ``Clock.utc_offset``), so the same ads
always give the same text.

The layouts follow HTCondor 25.x's sources (condor_q.V6/queue.cpp,
condor_tools/history.cpp, condor_who/who.cpp, condor_utils/ad_printmask.cpp,
print_format_tables.cpp, format_time.cpp), rendered as those tools render when their
output is not a terminal: rows are never cut to a console width. In that mode condor_q
also strips the trailing blanks of each job row (not of the heading or the totals), and
columns never truncate a value that is wider than the column; it pushes the rest of
the row right instead, as HTCondor does.

Which job attributes each layout reads:

* RUN_TIME (condor_q): wall clock, ``RemoteWallClockTime`` (earlier runs) plus, for a
  running, suspended or transferring job, ``now - ShadowBday`` (condorpy has no shadow,
  so ``JobCurrentStartDate`` stands in when ``ShadowBday`` is absent). As in HTCondor the
  cell is blank when the ad has no ``RemoteUserCpu``.
* SIZE: ``MemoryUsage`` (MB), else ``ImageSize`` (KB) / 1024, one decimal.
* CMD: ``(JobDescription)`` if set, else the basename of ``Cmd`` and ``Arguments`` (or
  ``Args``).
* ST: ``JobStatus`` letter (I R X C H > S F B P); ``TransferringInput``,
  ``TransferringOutput``, ``TransferQueued`` and ``JobCoolDownExpiration`` change it as
  condor_q does.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Callable, Literal, Mapping, Sequence

from condorpy.classad import ClassAd, Undefined, format_value
from condorpy.slots.status_format import render_autoformat, render_json, render_long

__all__ = [
    "ScheddLabel", "QueueLayout", "Offset", "render_queue", "render_history",
    "render_who", "render_long", "render_json", "render_autoformat", "format_date",
    "format_duration", "status_letters", "job_counts", "JobCounts", "QueueTable",
    "QUEUE_ATTRS", "layout_attrs",
]

# Job states, as HTCondor numbers them.
IDLE, RUNNING, REMOVED, COMPLETED, HELD, TRANSFERRING_OUTPUT, SUSPENDED = 1, 2, 3, 4, 5, 6, 7
_STATUS_CHARS = " IRXCH>SFBP"

QueueLayout = Literal["batch", "nobatch", "hold", "run", "totals"]

# The local zone's offset east of UTC: a fixed number of seconds, or Clock.utc_offset.
Offset = int | Callable[[float], int]


@dataclass(frozen=True)
class ScheddLabel:
    """Who answers the query, for condor_q's ``-- Schedd: NAME : ADDRESS @ DATE`` line.

    condorpy's local queue calls itself ``condorpy@<host>`` and gives its control socket
    path as the address. An address with a ``?`` (a sinful string with parameters) is
    shortened to ``<...?...>`` as condor_q does.
    """

    name: str
    address: str


# --- values -------------------------------------------------------------------------

def _offset_at(offset: Offset, epoch: float) -> int:
    return offset(epoch) if callable(offset) else offset


def _local(epoch: float, offset: Offset) -> datetime:
    return (datetime(1970, 1, 1, tzinfo=timezone.utc)
            + timedelta(seconds=int(epoch) + _offset_at(offset, epoch)))


def format_date(epoch: float, offset: Offset) -> str:
    """HTCondor's format_date: ``M/D HH:MM``, month right- and day left-aligned in two
    characters (`` 6/7  00:07``, ``12/31 23:59``); a negative time is ``    ???    ``."""
    if epoch < 0:
        return "    ???    "
    t = _local(epoch, offset)
    return f"{t.month:2d}/{t.day:<2d} {t.hour:02d}:{t.minute:02d}"


def format_duration(seconds: float) -> str:
    """HTCondor's format_time: ``%3d+%02d:%02d:%02d`` (days, hours, minutes, seconds)."""
    s = int(seconds)
    return f"{s // 86400:3d}+{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _int(ad: ClassAd, attr: str) -> int | None:
    # HTCondor's LookupInteger: an integer, or a real cut to one; never a boolean.
    value = ad.evaluate(attr)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _real(ad: ClassAd, attr: str) -> float | None:
    value = ad.evaluate(attr)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _str(ad: ClassAd, attr: str) -> str | None:
    value = ad.evaluate(attr)
    return value if isinstance(value, str) else None


def _bool(ad: ClassAd, attr: str) -> bool:
    return ad.evaluate(attr) is True


def status_letters(ad: ClassAd, now: float | None = None) -> str | None:
    """condor_q's two-character ST cell; ``now`` given, a future
    ``JobCoolDownExpiration`` marks the job ``c`` (condor_history passes none)."""
    status = _int(ad, "JobStatus")
    if status is None:
        return None
    first = _STATUS_CHARS[status] if 1 <= status <= 10 else " "
    second = " "
    queued = _bool(ad, "TransferQueued")
    if _bool(ad, "TransferringInput"):
        first, second = "<", "q" if queued else " "
    if _bool(ad, "TransferringOutput") or status == TRANSFERRING_OUTPUT:
        first, second = "q" if queued else " ", ">"
    if now is not None:
        cooldown = _int(ad, "JobCoolDownExpiration")
        if cooldown is not None and cooldown > now:
            second = "c"
    return first + second


def _description(ad: ClassAd) -> str | None:
    cmd = _str(ad, "Cmd")
    if cmd is None:
        return None
    described = _str(ad, "MATCH_EXP_JobDescription") or _str(ad, "JobDescription")
    if described:
        return f"({described})"
    args = _str(ad, "Arguments")
    if args is None:
        args = _str(ad, "Args")
    base = posixpath.basename(cmd)
    return f"{base} {args}" if args else base


def _memory_mb(ad: ClassAd) -> float | None:
    usage = _int(ad, "MemoryUsage")
    if usage is not None:
        return float(usage)
    image = _int(ad, "ImageSize")
    return image / 1024.0 if image is not None else None


def _wall_time(ad: ClassAd, now: float, shadowless: bool = False) -> float | None:
    """condor_q's RUN_TIME seconds (job_time in queue.cpp); None leaves the cell blank.
    ``shadowless``: ads read from a file, whose ShadowBday nothing stands in for."""
    if _real(ad, "RemoteUserCpu") is None:
        return None
    total = _real(ad, "RemoteWallClockTime") or 0.0
    started = _int(ad, "ShadowBday")
    if started is None and not shadowless:
        started = _int(ad, "JobCurrentStartDate")
    if _int(ad, "JobStatus") in (RUNNING, TRANSFERRING_OUTPUT, SUSPENDED) and started:
        total += int(now) - started
    return total


# --- columns ------------------------------------------------------------------------
# A small model of HTCondor's AttrListPrintMask: a heading padded to the column width
# (left-aligned), cells aligned to it, a space before every column but the first unless
# the column says otherwise, nothing cut.

@dataclass(frozen=True)
class _Col:
    heading: str
    width: int
    left: bool = False
    auto: bool = False      # widen to the widest cell
    prefix: bool = True     # a space before this column
    alt: str = ""           # a cell with no value: "" blank, "?" one mark, "??" [???] wide


def _alt_text(alt: str, width: int) -> str:
    if alt == "??":
        if width < 3:
            return "?" if width else ""
        return "[" + "?" * (width - 2) + "]"
    return alt


def _table(cols: Sequence[_Col], rows: Sequence[Sequence[str | None]], *, trim: bool
           ) -> tuple[str, list[str]]:
    widths = []
    for i, col in enumerate(cols):
        w = col.width
        if col.auto:
            w = max([w] + [len(cell) for r in rows if (cell := r[i]) is not None])
        widths.append(w)

    def join(cells: Sequence[str]) -> str:
        out = ""
        for i, (col, cell) in enumerate(zip(cols, cells)):
            if i and col.prefix:
                out += " "
            out += cell
        return out

    heading = join([c.heading.ljust(w) if w else c.heading for c, w in zip(cols, widths)])
    lines = []
    for row in rows:
        cells = []
        for col, w, value in zip(cols, widths, row):
            text = _alt_text(col.alt, w) if value is None else value
            if w and len(text) < w:
                text = text.ljust(w) if col.left else text.rjust(w)
            cells.append(text)
        line = join(cells)
        lines.append(line.rstrip() if trim else line)
    return heading, lines


def _title(schedd: ScheddLabel, now: float, offset: Offset) -> str:
    address = schedd.address
    if "?" in address:
        address = address[:address.index("?")] + "?..."
    stamp = _local(now, offset).strftime("%m/%d/%y %H:%M:%S")
    # condor_q starts its output with two empty lines before the schedd line.
    return f"\n\n-- Schedd: {schedd.name} : {address} @ {stamp}\n"


# --- totals ---------------------------------------------------------------------------

@dataclass(frozen=True)
class JobCounts:
    jobs: int = 0
    completed: int = 0
    removed: int = 0
    idle: int = 0
    running: int = 0
    held: int = 0
    suspended: int = 0

    def line(self, who: str) -> str:
        return (f"Total for {who}: {self.jobs} jobs; {self.completed} completed, "
                f"{self.removed} removed, {self.idle} idle, {self.running} running, "
                f"{self.held} held, {self.suspended} suspended")


class _Counter:
    """The schedd's summary counts (count_job in queue.cpp), a job at a time:
    transferring output counts as running."""

    def __init__(self) -> None:
        self.n = [0] * 8
        self.jobs = 0

    def add(self, status: int) -> None:
        self.jobs += 1
        if status == TRANSFERRING_OUTPUT:
            status = RUNNING
        if 1 <= status <= SUSPENDED and status != TRANSFERRING_OUTPUT:
            self.n[status] += 1

    def counts(self) -> JobCounts:
        n = self.n
        return JobCounts(self.jobs, n[COMPLETED], n[REMOVED], n[IDLE], n[RUNNING], n[HELD],
                         n[SUSPENDED])


def job_counts(ads: Sequence[ClassAd]) -> JobCounts:
    """The schedd's summary counts of ``ads``."""
    counter = _Counter()
    for ad in ads:
        counter.add(_int(ad, "JobStatus") or 0)
    return counter.counts()


# --- condor_q -------------------------------------------------------------------------

# What the condor_q layouts read of a job ad (and so what the daemon sends of it): the
# totals read JobStatus and Owner of every job; the rest, each layout's columns.
_TOTALS_ATTRS = ("ClusterId", "ProcId", "Owner", "JobStatus")
_RUN_TIME_ATTRS = ("QDate", "RemoteUserCpu", "RemoteWallClockTime", "ShadowBday",
                   "JobCurrentStartDate")
_LAYOUT_ATTRS: dict[str, tuple[str, ...]] = {
    "totals": (),
    "batch": ("JobBatchName", "QDate", "TotalSubmitProcs"),
    "nobatch": (*_RUN_TIME_ATTRS, "TransferQueued", "TransferringInput",
                "TransferringOutput", "JobCoolDownExpiration", "JobPrio", "MemoryUsage",
                "ImageSize", "Cmd", "MATCH_EXP_JobDescription", "JobDescription",
                "Arguments", "Args"),
    "hold": ("EnteredCurrentStatus", "HoldReasonCode", "HoldReasonSubCode", "HoldReason"),
    "run": (*_RUN_TIME_ATTRS, "RemoteHost"),
}
QUEUE_ATTRS = tuple(dict.fromkeys(
    _TOTALS_ATTRS + tuple(a for attrs in _LAYOUT_ATTRS.values() for a in attrs)))


def layout_attrs(layout: str) -> tuple[str, ...]:
    """The job attributes a condor_q layout (:data:`QueueLayout`) reads."""
    return _TOTALS_ATTRS + _LAYOUT_ATTRS.get(layout, QUEUE_ATTRS)


def _job_key(ad: ClassAd) -> tuple[int, int]:
    return (_int(ad, "ClusterId") or 0, _int(ad, "ProcId") or 0)


def render_queue(ads: Sequence[ClassAd], *, schedd: ScheddLabel | str, now: float,
                 utc_offset: Offset, layout: QueueLayout = "batch",
                 all_ads: Sequence[ClassAd] | None = None, me: str | None = None,
                 width: int | None = None) -> str:
    """condor_q's table: the schedd line, the layout's heading and rows, then the totals.

    ``ads`` are the jobs the query selected, ``all_ads`` the whole queue (for
    ``Total for all users``; ``ads`` when not given). ``me`` adds condor_q's
    ``Total for ME`` line, as condor_q prints it for a query of the caller's own jobs.
    Layouts: ``batch`` (the default), ``nobatch``, ``hold``, ``run`` (no totals, as
    condor_q -run) and ``totals`` (the schedd line and the totals only).

    ``schedd`` given as text is where the jobs were read from instead of a schedd
    (``Userlog: FILE``, as condor_q -userlog says): the totals are then the query's
    alone, and a running job's RUN_TIME counts only what the ads record (no shadow's
    start time, and no stand-in for it). ``width`` is a terminal's: the heading and
    job rows are cut to one character less, as condor_q cuts them without -wide (its
    -hold layout is never cut). :class:`QueueTable` makes the same text a job at a
    time.
    """
    table = QueueTable(schedd=schedd, now=now, utc_offset=utc_offset, layout=layout,
                       me=me, width=width)
    for ad in (ads if all_ads is None else all_ads):
        table.count(ad)
    for ad in sorted(ads, key=_job_key):
        table.add(ad)
    return table.title() + table.finish()


class QueueTable:
    """condor_q's output made as the jobs come: :meth:`title` at once, :meth:`add` for
    each selected job (in id order, as the daemon sends them), :meth:`count` for every
    job of the queue (the totals for the caller and for all users), then
    :meth:`finish` for the rest. The rows wait for :meth:`finish`, as condor_q's do:
    their columns are as wide as the widest of the selected jobs needs. Only the
    facts each row needs are kept, not the ads."""

    def __init__(self, *, schedd: ScheddLabel | str, now: float, utc_offset: Offset,
                 layout: QueueLayout = "batch", me: str | None = None,
                 width: int | None = None, stream: bool = False) -> None:
        self.schedd, self.now, self.offset = schedd, now, utc_offset
        self.layout, self.me, self.width = layout, me, width
        self.from_file = isinstance(schedd, str)
        self.query, self.mine, self.everyone = _Counter(), _Counter(), _Counter()
        self._rows: list[_JobRow] = []
        self._batches = _Batches(utc_offset)
        # condor_q -stream-results: each job's row as it comes, columns never widened
        self.stream = stream and layout in ("nobatch", "hold", "run")
        self._trim = width is None or layout == "hold"

    def title(self) -> str:
        """The schedd line; with ``stream``, the heading too."""
        if isinstance(self.schedd, str):
            title = _title_of(self.schedd, self.now, self.offset)
        else:
            title = _title(self.schedd, self.now, self.offset)
        if self.stream:
            title += self._cut(_table(_job_cols(self.layout, fixed=True), [],
                                      trim=self._trim)[0]) + "\n"
        return title

    def _cut(self, line: str) -> str:
        if self.width is not None and self.layout != "hold":
            return line[:self.width - 1]
        return line

    def count(self, ad: ClassAd) -> None:
        """A job of the queue, selected or not."""
        status = _int(ad, "JobStatus") or 0
        self.everyone.add(status)
        if self.me is not None and _str(ad, "Owner") == self.me:
            self.mine.add(status)

    def add(self, ad: ClassAd) -> str:
        """A job the query selected; with ``stream``, its row (else the rows wait for
        :meth:`finish`, and this is empty)."""
        self.query.add(_int(ad, "JobStatus") or 0)
        if self.layout == "batch":
            self._batches.add(ad)
        elif self.layout != "totals":
            row = _job_row(ad, self.layout, self.now, self.offset, self.from_file)
            if self.stream:
                return self._cut(_job_line(row, self.layout, trim=self._trim)) + "\n"
            self._rows.append(row)
        return ""

    def totals(self) -> str:
        if self.from_file:
            # condor_q's summary of jobs read from a file: the all-users fields, which
            # a file cannot fill, print as blanks after the query's line; an empty line
            # ends it
            return self.query.counts().line("query") + " " * 51 + "\n\n"
        # Each line but the last ends in a space: condor_q puts the next line's newline
        # in that line's first field, after the usual field separator.
        lines = [self.query.counts().line("query")]
        if self.me is not None:
            lines.append(self.mine.counts().line(self.me))
        lines.append(self.everyone.counts().line("all users"))
        return " \n".join(lines) + "\n"

    def finish(self) -> str:
        """Everything after the title: the heading and rows, then the totals."""
        if self.layout == "totals":
            return self.totals()
        if self.stream:
            return "" if self.layout == "run" else "\n" + self.totals()
        if self.layout == "batch":
            heading, lines = self._batches.table()
        else:
            heading, lines = _job_table(self._rows, self.layout, trim=self._trim)
        out = "".join(self._cut(line) + "\n" for line in (heading, *lines))
        if self.layout != "run":
            out += "\n" + self.totals()
        return out


def _title_of(label: str, now: float, offset: Offset) -> str:
    stamp = _local(now, offset).strftime("%m/%d/%y %H:%M:%S")
    return f"\n\n-- {label} @ {stamp}\n"


@dataclass(frozen=True)
class _JobRow:
    cluster: int
    proc: int
    owner_len: int
    size: float | None
    cells: list[str | None]     # after the id columns


def _job_row(ad: ClassAd, layout: str, now: float, offset: Offset,
             shadowless: bool) -> _JobRow:
    cluster, proc = _job_key(ad)
    owner = _str(ad, "Owner")
    size = _memory_mb(ad)
    row: list[str | None] = [owner]
    qdate = _int(ad, "QDate")
    submitted = format_date(qdate, offset) if qdate is not None else None
    wall = _wall_time(ad, now, shadowless)
    run_time = format_duration(wall) if wall is not None else None
    if layout == "hold":
        since = _int(ad, "EnteredCurrentStatus")
        code, sub = _int(ad, "HoldReasonCode"), _int(ad, "HoldReasonSubCode")
        row += [format_date(since, offset) if since is not None else None,
                f"{code:4d}" if code is not None else None,
                # condor_q cuts this one to the column: '/%-3d' TRUNCATE
                f"/{sub:<3d}"[:4] if sub is not None else None,
                _str(ad, "HoldReason")]
    elif layout == "run":
        row += [submitted, run_time, _str(ad, "RemoteHost")]
    else:
        prio = _int(ad, "JobPrio")
        row += [submitted, run_time, status_letters(ad, now),
                str(prio) if prio is not None else None,
                f"{size:.1f}" if size is not None else None, _description(ad)]
    return _JobRow(cluster, proc, len(owner or ""), size, row)


def _job_table(jobs: Sequence[_JobRow], layout: str, *, trim: bool = True
               ) -> tuple[str, list[str]]:
    # condor_q widens the id columns for clusters of five digits or more and procs of
    # four or more, and then (only then) widens SIZE to its widest value; an owner
    # longer than 14 characters also sets this off.
    max_cluster = max([j.cluster for j in jobs], default=0)
    max_proc = max([j.proc for j in jobs], default=0)
    longest_owner = max([j.owner_len for j in jobs], default=0)
    cw, pw, size_w = 4, 3, 4
    if max_cluster >= 9999 or max_proc >= 999 or longest_owner > 14:
        if 4 < len(str(max_cluster)) <= 9:
            cw = len(str(max_cluster))
        if 3 < len(str(max_proc)) <= 9:
            pw = len(str(max_proc))
        biggest = max([j.size for j in jobs if j.size is not None], default=0.0)
        size_w = max(size_w, len(f"{biggest:.1f}"))

    cols = _job_cols(layout, cw, pw, size_w)
    rows = [[f"{j.cluster:{cw}d}.", f"{j.proc:<{pw}d}", *j.cells] for j in jobs]
    return _table(cols, rows, trim=trim)


def _job_cols(layout: str, cw: int = 4, pw: int = 3, size_w: int = 4, *,
              fixed: bool = False) -> list[_Col]:
    """The columns of a job table; ``fixed``: none widens to its cells (condor_q
    -stream-results, which prints each row before it sees the next)."""
    auto = not fixed
    cols = [_Col(" ID", cw + 1), _Col(" ", pw, left=True, prefix=False),
            _Col("OWNER", 14, left=True, alt="??" if layout in ("hold", "run") else "")]
    if layout == "hold":
        cols += [_Col("HELD_SINCE", 11, alt="??"), _Col("CODE", 4, left=True, auto=auto, alt="?"),
                 _Col("/SUB", 4, left=True, auto=auto, prefix=False),
                 _Col("HOLD_REASON", 0)]
    elif layout == "run":
        cols += [_Col("  SUBMITTED", 11, alt="??"), _Col("    RUN_TIME", 12, alt="??"),
                 _Col("HOST(S)", 0, alt="??")]
    else:
        cols += [_Col("  SUBMITTED", 11), _Col("    RUN_TIME", 12), _Col("ST", 2, left=True),
                 _Col("PRI", 3, left=True, auto=auto), _Col("SIZE", size_w),
                 _Col("CMD", 0)]
    return cols


def _job_line(job: _JobRow, layout: str, *, trim: bool) -> str:
    """One job's row as condor_q -stream-results prints it: the columns as wide as
    their headings, never widened (a wider cell pushes the rest of the row right)."""
    cells = [f"{job.cluster:4d}.", f"{job.proc:<3d}", *job.cells]
    return _table(_job_cols(layout, fixed=True), [cells], trim=trim)[1][0]


@dataclass
class _Batch:
    owner: str
    name: str
    qdate: int | None
    first: tuple[int, int]
    last: tuple[int, int]
    counts: list[int]               # by JobStatus
    clusters: dict[int, int]        # cluster -> jobs of it in the queue
    totals: dict[int, int | None]   # cluster -> TotalSubmitProcs


class _Batches:
    """condor_q's default: one row per batch. Jobs with the same JobBatchName and Owner
    form a batch, any other cluster is a batch of its own named ``ID: C``. Jobs come
    in id order: a batch's row is where its first job is."""

    def __init__(self, offset: Offset) -> None:
        self.offset = offset
        self.batches: dict[tuple[str, ...], _Batch] = {}

    def add(self, ad: ClassAd) -> None:
        cluster, proc = _job_key(ad)
        owner = _str(ad, "Owner")
        name = _str(ad, "JobBatchName")
        key = ("name", name, owner or "") if name is not None else ("cluster", str(cluster))
        batch = self.batches.get(key)
        if batch is None:
            batch = self.batches[key] = _Batch(owner if owner is not None else "", name or
                                               f"ID: {cluster}", _int(ad, "QDate"),
                                               (cluster, proc), (cluster, proc), [0] * 11,
                                               {}, {})
        batch.last = max(batch.last, (cluster, proc))
        batch.first = min(batch.first, (cluster, proc))
        status = _int(ad, "JobStatus") or 0
        batch.counts[status if 0 <= status <= 10 else 0] += 1
        batch.clusters[cluster] = batch.clusters.get(cluster, 0) + 1
        if cluster not in batch.totals:
            batch.totals[cluster] = _int(ad, "TotalSubmitProcs")

    def table(self) -> tuple[str, list[str]]:
        offset = self.offset
        rows: list[list[int | str]] = []
        for b in self.batches.values():
            # DONE is what left the queue: TotalSubmitProcs less the jobs still in it. A
            # cluster without TotalSubmitProcs makes both DONE and TOTAL unknown (shown _).
            known = all(t is not None for t in b.totals.values())
            total = sum(t or 0 for t in b.totals.values()) if known else 0
            done = total - sum(b.clusters.values()) if known else 0
            first, last = b.first, b.last
            if first == last:
                ids = f"{first[0]}.{first[1]}"
            elif first[0] == last[0]:
                ids = f"{first[0]}.{first[1]}-{last[1]}"
            else:
                ids = f"{first[0]}.{first[1]} ... {last[0]}.{last[1]}"
            c = b.counts
            rows.append([b.owner, b.name,
                         format_date(b.qdate, offset) if b.qdate is not None else "",
                         done, c[RUNNING] + c[TRANSFERRING_OUTPUT], c[IDLE] + c[SUSPENDED],
                         c[HELD], total, ids])

        counter_heads = ["  DONE", "  RUN ", "  IDLE", "  HOLD", " TOTAL"]
        if not rows:
            # condor_q fits the columns to the rows only when there are rows.
            owner_w, name_w, show_hold, count_w = 5, 12, True, [6] * 5
        else:
            longest = max(len(str(r[0])) for r in rows)
            owner_w = max(8, longest) if longest < 5 else longest
            name_w = max(10, max(len(str(r[1])) for r in rows))
            show_hold = any(int(r[6]) > 0 for r in rows)
            count_w = [max(6, max(len(str(r[3 + i])) for r in rows)) for i in range(5)]

        def line(cells: Sequence[str]) -> str:
            return " ".join(cell for i, cell in enumerate(cells) if show_hold or i != 6)

        heading = line(["OWNER".ljust(owner_w), "BATCH_NAME".ljust(name_w), "   SUBMITTED"]
                       + [h.ljust(w) for h, w in zip(counter_heads, count_w)] + ["JOB_IDS"])
        lines = []
        for r in rows:
            counts = [(str(r[3 + i]) if int(r[3 + i]) > 0 else "_").rjust(count_w[i])
                      for i in range(5)]
            lines.append(line([str(r[0]).ljust(owner_w), str(r[1]).ljust(name_w),
                               str(r[2]).rjust(12)] + counts + [str(r[8])]).rstrip())
        return heading, lines


# --- condor_history -----------------------------------------------------------------------

def render_history(ads: Sequence[ClassAd], *, utc_offset: Offset,
                   width: int | None = 1024) -> str:
    """condor_history's default table, ads in the order given (newest first, as
    condor_history reads backwards). Rows keep their trailing blanks, as HTCondor's.
    Each line is cut at ``width`` characters: 1024 unless told (condor_history cuts
    there, on a terminal or not), N for -wide:N, never for -wide (None)."""
    cols = [_Col(" ID         ", 12, left=True, auto=True),
            _Col("OWNER", 14, left=True, alt="??"), _Col("  SUBMITTED", 11, alt="??"),
            _Col("  RUN_TIME  ", 12), _Col("ST", 2, left=True, auto=True),
            _Col("  COMPLETED", 11), _Col("CMD", 0)]
    rows: list[list[str | None]] = []
    for ad in ads:
        cluster = _int(ad, "ClusterId")
        job_id = (f"{cluster}.{_int(ad, 'ProcId') if _int(ad, 'ProcId') is not None else -1}"
                  if cluster is not None else _str(ad, "JobId"))
        qdate, completed = _int(ad, "QDate"), _int(ad, "CompletionDate")
        # RemoteWallClockTime ?: (RemoteUserCpu ?: 0), printed with %T
        wall = _real(ad, "RemoteWallClockTime")
        if wall is None:
            wall = _real(ad, "RemoteUserCpu") or 0.0
        rows.append([job_id, _str(ad, "Owner"),
                     format_date(qdate, utc_offset) if qdate is not None else None,
                     format_duration(wall), status_letters(ad),
                     format_date(completed, utc_offset) if completed is not None else None,
                     _description(ad)])
    heading, lines = _table(cols, rows, trim=False)
    return "".join((line if width is None else line[:width]) + "\n"
                   for line in [heading, *lines])


# --- condor_who ---------------------------------------------------------------------------

def _slot_cell(ad: ClassAd) -> str | None:
    slot_id = _int(ad, "SlotID")
    if slot_id is None:
        return None
    # HTCondor's ATTR_SLOT_DYNAMIC: a d-slot is named for its p-slot and itself
    if ad.evaluate("DynamicSlot") is True:
        name = _str(ad, "Name")
        if name is not None and name.startswith("slot"):
            # condor_who copies the name into a 10-byte buffer: at most 9 characters.
            return name[4:13].split("@", 1)[0]
        return f"{slot_id}_?"
    return str(slot_id)


def render_who(slot_ads: Sequence[ClassAd], *, startd_pid: int | None = None,
               job_dirs: Mapping[str, str] | None = None) -> str:
    """condor_who's table of the jobs running on this execute point.

    Reads from each slot ad ``RemoteOwner`` (OWNER), ``ClientMachine`` (CLIENT),
    ``SlotID``/``DynamicSlot``/``Name`` (SLOT: ``1_2`` for a dynamic slot),
    ``JobId`` (JOB), ``TotalJobRunTime`` (RUNTIME), ``JobPid`` (PID) and, for the banner,
    ``Name`` (the host after ``@``). JOB_DIR is the job's working directory, which
    condor_who reads from /proc; here the caller passes it by JobId in ``job_dirs``.
    Slots without a JobId are left out; with none left the output is empty, as
    condor_who's. ``startd_pid`` adds `` PID N`` to the banner.
    """
    # condor_who asks the startd for slots with JobId =!= undefined
    running = [ad for ad in slot_ads if ad.evaluate("JobId") is not Undefined]
    if not running:
        return ""
    dirs = job_dirs or {}
    cols = [_Col("OWNER", 5, left=True, auto=True), _Col("CLIENT", 6, left=True, auto=True),
            _Col("SLOT", 4, left=True, auto=True), _Col("JOB", 3, left=True, auto=True),
            _Col("  RUNTIME", 9, left=True, auto=True), _Col("PID", 3, left=True, auto=True),
            _Col("JOB_DIR", 7, left=True, auto=True)]
    rows: list[list[str | None]] = []
    for ad in running:
        runtime = _real(ad, "TotalJobRunTime")
        pid = _int(ad, "JobPid")
        value = ad.evaluate("JobId")
        job_id = value if isinstance(value, str) else format_value(value)
        rows.append([_str(ad, "RemoteOwner"), _str(ad, "ClientMachine"), _slot_cell(ad),
                     job_id, format_duration(runtime) if runtime is not None else None,
                     str(pid) if pid is not None else None, dirs.get(job_id)])
    heading, lines = _table(cols, rows, trim=False)
    # splitslotname(Name ?: RemoteHost)[1]: the host part of the first slot's name
    name = _str(running[0], "Name") or _str(running[0], "RemoteHost") or ""
    host = name.split("@", 1)[1] if "@" in name else name
    banner = f"--Startd : {host}"
    if startd_pid is not None:
        banner += f" PID {startd_pid}"
    banner += f" has {len(running)} job(s) running"
    return f"\n{banner}:\n{heading}\n" + "".join(line + "\n" for line in lines) + "\n"
