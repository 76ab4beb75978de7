"""`policy simulate`: drive the engine through a JSON-lines timeline on a virtual clock.

The simulator plays the daemon and the jobs: it runs a policy cycle every
POLLING_INTERVAL/UPDATE_INTERVAL, feeds timeline lines to the engine in time order,
and answers the engine's actions the way real processes would (a job exits at once on
a hard kill, and ``SimVacateSeconds`` after a soft kill; benchmarks and the backfill
client start and stop at once).
"""

from __future__ import annotations

import heapq
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from condorpy.errors import CondorpyError, TimelineError
from condorpy.inputs import loads_json
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.evaluation import json_attr
from condorpy.policy.records import (Action, HardKill, KillBackfill, KillStarter, Output,
                                     RunBenchmarks, SoftKill, StartBackfill)

# The longest stretch a timeline may cover: ten years of virtual time. Beyond it a
# time is almost certainly a typo (milliseconds for seconds), and refusing it keeps
# every run short.
MAX_SIM_SECONDS = 10 * 365 * 86400

# After this many policy cycles in a row that change nothing, the simulator jumps to
# the last cycle before the next timeline line, job exit or --until (docs/policy.md,
# "Quiet stretches"): a long idle gap costs as much as a short one.
QUIET_CYCLES = 10_000

EVENTS = ("snapshot", "match", "request_claim", "activate", "job_exit", "starter_reaped",
          "release", "alive",
          "vacate", "drain", "cancel_drain", "off", "backfill_exit", "job_update")


@dataclass(frozen=True)
class TimelineEntry:
    t: float
    line: int
    set: dict[str, Any] | None = None
    event: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


def parse_timeline(lines: Iterable[str], source: str) -> list[TimelineEntry]:
    """Timeline entries, stably sorted by time; TimelineError names file and line."""
    entries: list[TimelineEntry] = []
    for n, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            obj = loads_json(text)
        except json.JSONDecodeError as exc:
            raise TimelineError(f"not JSON: {exc.msg}", file=source, line=n) from None
        if not isinstance(obj, dict):
            raise TimelineError("a timeline line must be a JSON object", file=source, line=n)
        t = obj.get("t")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= \
                MAX_SIM_SECONDS:   # also refuses NaN and Infinity, which json accepts
            raise TimelineError(f"'t' must be a number of seconds from 0 to {MAX_SIM_SECONDS} "
                                f"(ten years), not {t!r}", file=source, line=n)
        has_set, has_event = "set" in obj, "event" in obj
        if has_set == has_event:
            raise TimelineError("a line needs exactly one of 'set' and 'event'",
                                file=source, line=n)
        args = {k: v for k, v in obj.items() if k not in ("t", "set", "event")}
        if has_set:
            if not isinstance(obj["set"], dict) or not obj["set"]:
                raise TimelineError("'set' must be a non-empty object", file=source, line=n)
            entries.append(TimelineEntry(float(t), n, set=obj["set"], args=args))
            continue
        ev = obj["event"]
        if ev not in EVENTS:
            raise TimelineError(f"unknown event {ev!r} (expected one of {', '.join(EVENTS)})",
                                file=source, line=n)
        need = {"request_claim": ("id", "job"), "activate": ("id",),
                "job_exit": ("id",), "starter_reaped": ("id",), "job_update": ("id", "attrs")}.get(ev, ())
        for key in need:
            if key not in args:
                raise TimelineError(f"event {ev!r} needs {key!r}", file=source, line=n)
        if ev == "request_claim" and not isinstance(args["job"], dict):
            raise TimelineError("'job' must be a JSON object", file=source, line=n)
        if ev == "job_update" and not isinstance(args["attrs"], dict):
            raise TimelineError("'attrs' must be a JSON object", file=source, line=n)
        if "job" in args and args["job"] == {}:
            raise TimelineError("'job': the job ad is empty: no attributes", file=source,
                                line=n)
        if "slot" in args and not isinstance(args["slot"], str):
            raise TimelineError("'slot' must be a string", file=source, line=n)
        entries.append(TimelineEntry(float(t), n, event=ev, args=args))
    entries.sort(key=lambda e: e.t)
    return entries


def _num(t: float) -> int | float:
    return int(t) if float(t).is_integer() else t


class Simulation:
    """One run of the engine over a timeline; :meth:`run` yields JSON-able records."""

    def __init__(self, engine: PolicyEngine, entries: list[TimelineEntry], source: str,
                 until: float | None = None) -> None:
        self.engine = engine
        self.entries = entries
        self.source = source
        if until is not None and not -math.inf < until <= MAX_SIM_SECONDS:
            raise TimelineError(f"--until must be a number of seconds up to {MAX_SIM_SECONDS} "
                                f"(ten years), not {until!r}")
        self.until = until if until is not None else max((e.t for e in entries), default=0.0)
        self._jobs: dict[str, dict[str, Any]] = {}     # claim id -> job attributes
        self._pending: list[tuple[float, int, str, str]] = []   # (t, seq, kind, claim/slot)
        self._seq = 0
        self._records: list[dict[str, Any]] = []

    def run(self) -> Iterator[dict[str, Any]]:
        eng = self.engine
        self._emit(eng.take_output())
        next_cycle = eng.now   # the first cycle comes after the lines at time 0
        i = 0
        quiet = 0              # cycles in a row that produced nothing
        while True:
            candidates = [next_cycle]
            if i < len(self.entries):
                candidates.append(self.entries[i].t)
            if self._pending:
                candidates.append(self._pending[0][0])
            now = min(candidates)
            if now > self.until:
                break
            if self._pending and self._pending[0][0] == now:
                _, _, kind, key = heapq.heappop(self._pending)
                self._feedback(now, kind, key)
            elif i < len(self.entries) and self.entries[i].t == now:
                entry = self.entries[i]
                i += 1
                try:
                    self._apply(entry)
                except TimelineError:
                    raise
                except CondorpyError as exc:   # e.g. an unknown claim id: name the line
                    raise TimelineError(str(exc), file=self.source, line=entry.line) from None
                # A claim or match shortens the polling interval at once, as in the startd.
                next_cycle = min(next_cycle, now + eng.poll_interval())
                quiet = 0
            else:
                self._emit(eng.cycle(now))
                interval = eng.poll_interval()
                next_cycle = now + interval
                quiet = 0 if self._records else quiet + 1
                if quiet >= QUIET_CYCLES:
                    next_cycle = self._skip_quiet(now, next_cycle, interval, i)
                    quiet = 0
            yield from self._drain_records()
        yield from self._drain_records()

    def _skip_quiet(self, now: float, next_cycle: float, interval: float, i: int) -> float:
        """The next cycle after a quiet stretch: the last one on the polling grid before
        whatever comes next, so that the grid, and what happens at the next line, are
        those of a run that simulated every cycle."""
        upcoming = [self.until]
        if i < len(self.entries):
            upcoming.append(self.entries[i].t)
        if self._pending:
            upcoming.append(self._pending[0][0])
        target = min(upcoming)
        if interval <= 0 or target <= next_cycle:
            return next_cycle
        steps = math.floor((target - next_cycle) / interval)
        if steps < 1:
            return next_cycle
        skipped_to = next_cycle + steps * interval
        self._records.append({"t": _num(now), "quiet_until": _num(skipped_to),
                              "reason": f"nothing changed in {QUIET_CYCLES} policy cycles; "
                                        f"{steps} cycles skipped"})
        return skipped_to

    def _drain_records(self) -> Iterator[dict[str, Any]]:
        out, self._records = self._records, []
        yield from out

    def _apply(self, e: TimelineEntry) -> None:
        eng, a = self.engine, e.args
        if e.set is not None:
            eng.set(e.t, e.set, a.get("slot"))
            return
        ev = e.event
        if ev == "snapshot":
            names = a.get("attrs")
            if names is not None and not (isinstance(names, list) and
                                          all(isinstance(n, str) for n in names)):
                raise TimelineError("'attrs' must be a list of names", file=self.source,
                                    line=e.line)
            self._emit(eng.cycle(e.t))
            for slot, ad in eng.snapshot(names).items():
                if a.get("slot") in (None, slot):
                    self._records.append({"t": _num(e.t), "slot": slot, "ad": ad})
            return
        calls: dict[str, Callable[[], list[Output]]] = {
            "match": lambda: eng.match(e.t, a.get("slot")),
            "request_claim": lambda: self._claim(e.t, a),
            "activate": lambda: self._activate(e.t, a),
            "job_exit": lambda: eng.job_exit(e.t, str(a["id"]), a.get("exit_code"),
                                             bool(a.get("cleaning", False))),
            "starter_reaped": lambda: eng.starter_reaped(e.t, str(a["id"])),
            "job_update": lambda: eng.job_update(
                e.t, str(a["id"]), {k: json_attr(v) for k, v in a["attrs"].items()}),
            # Without "id": every claim (the schedd releasing or renewing all it holds).
            "release": lambda: self._each_claim(e.t, a, eng.release),
            "alive": lambda: self._each_claim(e.t, a, eng.alive),
            "vacate": lambda: eng.vacate(e.t, a.get("slot"), bool(a.get("fast", False))),
            "drain": lambda: eng.drain(e.t, str(a.get("how", "graceful")),
                                       str(a.get("on_completion", "nothing")), a.get("reason"),
                                       _opt(a.get("request_id")), a.get("check"),
                                       a.get("start")),
            "cancel_drain": lambda: eng.cancel_drain(e.t, _opt(a.get("request_id"))),
            "off": lambda: eng.off(e.t, str(a.get("how", "graceful"))),
            "backfill_exit": lambda: eng.backfill_exited(e.t, str(a.get("slot", "slot1"))),
        }
        assert ev is not None
        self._emit(calls[ev]())

    def _each_claim(self, t: float, a: dict[str, Any],
                    call: Callable[[float, str], list[Output]]) -> list[Output]:
        if "id" in a:
            return call(t, str(a["id"]))
        out: list[Output] = []
        for cid in self.engine.claim_ids():
            if self.engine.has_claim(cid):
                out.extend(call(t, cid))
        return out

    def _claim(self, t: float, a: dict[str, Any]) -> list[Output]:
        cid = str(a["id"])
        self._jobs[cid] = dict(a["job"])
        return self.engine.request_claim(t, cid, a["job"], a.get("slot"))

    def _activate(self, t: float, a: dict[str, Any]) -> list[Output]:
        cid = str(a["id"])
        job = a.get("job")
        if job is not None:
            if not isinstance(job, dict):
                raise CondorpyError("'job' must be a JSON object")
            self._jobs[cid] = dict(job)
        return self.engine.activate(t, cid, job)

    def _feedback(self, now: float, kind: str, key: str) -> None:
        eng = self.engine
        if kind == "job_exit":
            if eng.has_running_job(key):
                self._emit(eng.job_exit(now, key, None))
        elif kind == "benchmarks_done" and key in eng.slots:
            self._emit(eng.benchmarks_done(now, key))
        elif kind == "backfill_started" and key in eng.slots:
            self._emit(eng.backfill_started(now, key))
        elif kind == "backfill_exited" and key in eng.slots:
            self._emit(eng.backfill_exited(now, key))

    def _later(self, t: float, kind: str, key: str) -> None:
        self._seq += 1
        heapq.heappush(self._pending, (t, self._seq, kind, key))

    def _emit(self, outputs: list[Output]) -> None:
        for o in outputs:
            rec = o.as_json()
            rec["t"] = _num(o.t)
            self._records.append(rec)
            if isinstance(o, Action):
                self._react(o)

    def _react(self, o: Action) -> None:
        if isinstance(o, (HardKill, KillStarter)):
            self._later(o.t, "job_exit", o.claim)
        elif isinstance(o, SoftKill):
            secs = self._jobs.get(o.claim, {}).get("SimVacateSeconds")
            if secs is None:
                self._later(o.t, "job_exit", o.claim)
            elif isinstance(secs, (int, float)) and not isinstance(secs, bool) and secs >= 0:
                self._later(o.t + secs, "job_exit", o.claim)
        elif isinstance(o, RunBenchmarks):
            self._later(o.t, "benchmarks_done", o.slot)
        elif isinstance(o, StartBackfill):
            self._later(o.t, "backfill_started", o.slot)
        elif isinstance(o, KillBackfill):
            self._later(o.t, "backfill_exited", o.slot)


def _opt(v: Any) -> str | None:
    return None if v is None else str(v)


def simulate(engine: PolicyEngine, lines: Iterable[str], source: str,
             until: float | None = None) -> list[dict[str, Any]]:
    """Every output record of a timeline, in time order."""
    entries = parse_timeline(lines, source)
    return list(Simulation(engine, entries, source, until).run())
