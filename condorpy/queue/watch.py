"""What ``condorpy watch-q`` shows: job states read from job event logs, tallied and
drawn as condor_watch_q draws them (its table, progress bar, summary and ``-exit``
conditions, as HTCondor 23.9's tool, the reference pool's, prints them). Pure: the
front end (:mod:`condorpy.cli.watch_q`) reads the files and the queue and hands the
text and ads in.

A job's state is the last event of it in its log: submitted, evicted, released,
unsuspended, a shadow exception or a failed reconnect leave it idle; executing runs
it; held, suspended, aborted (removed) and terminated (done) are what they say. A
row's TOTAL counts the jobs its logs have named.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum


class State(Enum):
    REMOVED = "REMOVED"
    HELD = "HELD"
    SUSPENDED = "SUSPENDED"
    IDLE = "IDLE"
    RUN = "RUN"
    TRANSFERRING_OUTPUT = "TRANSFERRING_OUTPUT"
    DONE = "DONE"


ORDERED = tuple(State)                      # the table's columns, left to right
ACTIVE = frozenset({State.IDLE, State.RUN, State.TRANSFERRING_OUTPUT, State.HELD,
                    State.SUSPENDED})
EXITED = frozenset({State.REMOVED, State.DONE})
ALWAYS_SHOWN = frozenset({State.IDLE, State.RUN, State.DONE})
TOTAL, JOB_IDS = "TOTAL", "JOB_IDS"
GROUP_HEADERS = {"batch": "BATCH", "log": "LOG", "cluster": "CLUSTER"}

# event number -> the state it leaves the job in
EVENT_STATES = {0: State.IDLE, 4: State.IDLE, 11: State.IDLE, 13: State.IDLE,
                7: State.IDLE, 24: State.IDLE, 5: State.DONE, 1: State.RUN,
                12: State.HELD, 10: State.SUSPENDED, 9: State.REMOVED}

_HEADER = re.compile(r"(\d{3}) \((\d+)\.(\d+)\.\d+\) (\S+ \S+) ?(.*)")


@dataclass(frozen=True)
class Event:
    code: int
    cluster: int
    proc: int
    when: str
    text: str           # the headline and the body's lines


class EventParser:
    """Splits a growing event log into events; an event is taken only once its
    ``...`` line has been written, so a log read while it is written loses nothing."""

    def __init__(self) -> None:
        self._partial = ""
        self._lines: list[str] = []

    def feed(self, text: str) -> list[Event]:
        out: list[Event] = []
        text = self._partial + text
        lines = text.split("\n")
        self._partial = lines.pop()          # the unfinished last line, or ""
        for line in lines:
            if line.rstrip() == "...":
                event = _event(self._lines)
                if event is not None:
                    out.append(event)
                self._lines = []
            else:
                self._lines.append(line)
        return out


def _event(lines: list[str]) -> Event | None:
    if not lines:
        return None
    m = _HEADER.match(lines[0].strip())
    if m is None:
        return None
    code, cluster, proc, when, head = m.groups()
    body = "\n".join([head, *(ln.strip() for ln in lines[1:])])
    return Event(int(code), int(cluster), int(proc), when, body)


def state_after(event: Event) -> State | None:
    return EVENT_STATES.get(event.code)


@dataclass
class Cluster:
    cluster_id: int
    log: str
    batch: str | None
    jobs: dict[int, State] = field(default_factory=dict)

    @property
    def batch_name(self) -> str:
        return self.batch or f"ID: {self.cluster_id}"

    def done(self) -> bool:
        return all(s in EXITED for s in self.jobs.values())


class Tracker:
    """The state of every job seen in the logs, by cluster."""

    def __init__(self, *, batch_names: Mapping[int, str | None] | None = None,
                 only: Iterable[int] | None = None, since: int | None = None) -> None:
        self.batch_names = dict(batch_names or {})
        self.only = None if only is None else set(only)
        self.since = since
        self.clusters: dict[int, Cluster] = {}

    def add(self, log: str, events: Iterable[Event]) -> None:
        for ev in events:
            if self.only is not None and ev.cluster not in self.only:
                continue
            if self.since is not None and ev.cluster < self.since:
                continue
            state = state_after(ev)
            if state is None:
                continue
            cluster = self.clusters.get(ev.cluster)
            if cluster is None:
                cluster = self.clusters[ev.cluster] = Cluster(
                    ev.cluster, log, self.batch_names.get(ev.cluster))
            cluster.jobs[ev.proc] = state

    def states(self) -> list[State]:
        return [s for c in self.clusters.values() for s in c.jobs.values()]


# --- exit conditions ----------------------------------------------------------

GROUPERS: dict[str, Callable[[Iterable[bool]], bool]] = {
    "all": all, "any": any, "none": lambda xs: not any(xs)}
CHECKS: dict[str, Callable[[State], bool]] = {
    "active": lambda s: s in ACTIVE, "done": lambda s: s is State.DONE,
    "idle": lambda s: s is State.IDLE, "held": lambda s: s is State.HELD}


@dataclass(frozen=True)
class ExitCondition:
    grouper: str
    status: str
    code: int

    @classmethod
    def parse(cls, text: str) -> ExitCondition:
        """``GROUPER,JOB_STATUS[,EXIT_STATUS]``; ValueError says what is wrong."""
        parts = text.split(",")
        if len(parts) not in (2, 3):
            raise ValueError("invalid -exit specification")
        grouper, status = parts[0], parts[1]
        if grouper not in GROUPERS:
            raise ValueError(f'invalid GROUPER "{grouper}", must be one of '
                             f'{{{", ".join(GROUPERS)}}}')
        if status not in CHECKS:
            raise ValueError(f'invalid JOB_STATUS "{status}", must be one of '
                             f'{{{", ".join(CHECKS)}}}')
        code = parts[2] if len(parts) == 3 else "0"
        try:
            return cls(grouper, status, int(code))
        except ValueError:
            raise ValueError(f'exit_status must be an integer, but was "{code}"') from None

    def met(self, states: Iterable[State]) -> bool:
        check = CHECKS[self.status]
        return GROUPERS[self.grouper](check(s) for s in states)

    def __str__(self) -> str:
        return f"{self.grouper} {self.status}"


# --- drawing ------------------------------------------------------------------

Row = dict[object, object]


def group_key(cluster: Cluster, by: str) -> str:
    if by == "log":
        return cluster.log
    if by == "cluster":
        return str(cluster.cluster_id)
    return cluster.batch_name


def _row(clusters: list[Cluster]) -> tuple[dict[State, int], int, str]:
    """A group's count of jobs by state, its total and its active jobs' ids."""
    counts = {s: 0 for s in State}
    active: list[tuple[int, int]] = []
    for c in clusters:
        for proc, state in c.jobs.items():
            counts[state] += 1
            if state in ACTIVE:
                active.append((c.cluster_id, proc))
    active.sort()
    shown = [f"{c}.{p}" for c, p in active]
    ids = " ... ".join((shown[0], shown[-1])) if len(shown) > 2 else ", ".join(shown)
    return counts, sum(counts.values()), ids


@dataclass(frozen=True)
class Tally:
    headers: list[object]
    rows: list[Row]
    totals: dict[object, int]


def tally(tracker: Tracker, by: str, nice: Callable[[str], str] = lambda p: p) -> Tally:
    key = GROUP_HEADERS[by]
    groups: dict[str, list[Cluster]] = {}
    for c in tracker.clusters.values():
        groups.setdefault(group_key(c, by), []).append(c)
    totals: dict[object, int] = {s: 0 for s in State}
    totals[TOTAL] = 0
    rows: dict[str, Row] = {}
    for name, clusters in groups.items():
        counts, total, ids = _row(clusters)
        for s, n in counts.items():
            totals[s] += n
        totals[TOTAL] += total
        row: Row = {s: n for s, n in counts.items()}
        row.update({TOTAL: total, JOB_IDS: ids, key: nice(name) if by == "log" else name})
        rows[name] = row

    def order(name: str) -> int:
        return min(c.cluster_id for c in groups[name])

    shown = [s for s in ORDERED
             if s in ALWAYS_SHOWN or any(r[s] != 0 for r in rows.values())]
    ordered = [rows[n] for n in sorted(rows, key=order)]
    for row in ordered:
        for s in State:
            if row[s] == 0 or s not in shown:
                del row[s]
    return Tally([key, *shown, TOTAL, JOB_IDS], ordered, totals)


_BAR = {State.DONE: "#", State.RUN: "=", State.IDLE: "-", State.HELD: "!",
        State.SUSPENDED: "!", State.REMOVED: "!"}
_BAR_ORDER = tuple(_BAR)
_LEFT = {"BATCH", "LOG", "CLUSTER", JOB_IDS}


def _count(counts: Mapping[object, object], key: object) -> int:
    value = counts.get(key, 0)
    return value if isinstance(value, int) else 0


def progress_bar(counts: Mapping[object, object], width: int) -> str:
    width = min(width, 79) - 2
    total = _count(counts, TOTAL)
    parts = [int(width * _count(counts, s) / total) if total else 0 for s in _BAR_ORDER]
    longest = max(range(len(parts)), key=lambda i: (parts[i], -i))
    parts[longest] += width - sum(parts)
    return "[" + "".join(_BAR[s] * n for s, n in zip(_BAR_ORDER, parts)) + "]"


def table(t: Tally, columns: int, *, row_bars: bool = True) -> list[str]:
    heads = [str(h.value if isinstance(h, State) else h) for h in t.headers]
    cells = [[str(row.get(h, "-")) + " " for h in t.headers] for row in t.rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(heads)]

    def fit(text: str, i: int) -> str:
        return text.ljust(widths[i]) if heads[i] in _LEFT else text.rjust(widths[i])

    lines = ["  ".join(fit(h, i) for i, h in enumerate(heads)).rstrip()]
    body = ["  ".join(fit(c, i) for i, c in enumerate(r)) for r in cells]
    left = columns - (len(body[0]) if body else 0)
    if row_bars and left > 10:
        body = [line + progress_bar(row, left) for line, row in zip(body, t.rows)]
    else:
        body = [line[:columns] for line in body]
    return lines + body


_SUMMARY = ((State.DONE, "completed"), (State.REMOVED, "removed"), (State.IDLE, "idle"),
            (State.RUN, "running"), (State.HELD, "held"), (State.SUSPENDED, "suspended"))


def summary(totals: Mapping[object, int], width: int, *, percentages: bool = False) -> str:
    total = totals.get(TOTAL, 0)
    counts = [(totals.get(state, 0), word) for state, word in _SUMMARY]
    if percentages:
        parts = [f"{round(100.0 * n / total) if total else 0}% {w}" for n, w in counts]
        return f"Total: {total} jobs; " + ", ".join(parts)
    cut = 10
    while True:
        text = f"Total: {total} jobs; " + ", ".join(
            f"{n} {w[:cut]}" for n, w in counts if n > 0)
        if len(text) <= width or cut <= 2:
            return text
        cut -= 1


@dataclass(frozen=True)
class Display:
    table: bool = True
    progress: bool = True
    row_progress: bool = True
    summary: bool = True
    percentages: bool = False
    updated_at: bool = True


def screen(tracker: Tracker, by: str, show: Display, columns: int, now: str,
           nice: Callable[[str], str] = lambda p: p, rows: int | None = None) -> str:
    """The display; with ``rows`` (a terminal's height) cut to fit it."""
    t = tally(tracker, by, nice)
    parts: list[str] = []
    if show.table:
        parts += table(t, columns, row_bars=show.row_progress) + [""]
    if show.progress:
        parts += [progress_bar(t.totals, columns), ""]
    if show.summary:
        parts += [summary(t.totals, columns, percentages=show.percentages), ""]
    if show.updated_at:
        parts += [f"Updated at {now}", ""]
    if rows is not None and len(parts) > rows:
        return "\n".join(parts[:rows - 2]) + \
            "\nInsufficient terminal height to display full output!"
    return "\n".join(parts[:-1])


def nice_path(path: str, home: str, cwd: str) -> str:
    """The shortest of the path, the path from ``~`` and (when below it) from the
    working directory, as condor_watch_q names a log."""
    options = [os.path.abspath(path), os.path.join("~", os.path.relpath(path, home))]
    rel = os.path.relpath(path, cwd)
    if not rel.startswith("../"):
        options.append(os.path.join(".", rel))
    return min(options, key=len)
