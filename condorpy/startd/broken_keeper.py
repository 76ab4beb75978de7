"""Slots broken by what a job's end left behind: the startd's side of a starter's
clean-up report (condorpy/starter/exit_report.py).

When a starter is reaped, its report (if any) is read: whether each thing it names is
still there is looked at here (a leftover process is the same live process, the job's
volume is still waiting to be removed, its cgroup still exists), and
:func:`condorpy.slots.broken.cleanup_cause` decides whether that breaks the slot.
A broken slot is recorded in the job store (``store.broken``), so that a restarted
daemon breaks it again while its cause holds, and is looked at again every
STARTD_CLEANUP_REMINDER_TIMER_INTERVAL: once the cause has gone it is mended.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from condorpy.config import KnobReader
from condorpy.errors import CondorpyError, StartdError
from condorpy.machine.volumes import VolumeRemovalFailed
from condorpy.queue.broken_rows import BrokenSlotRows
from condorpy.slots.broken import (BreakRules, BrokenCause, BrokenCode, BrokenItem,
                                   LeftBehind, cleanup_cause, still_broken)
from condorpy.slots.resources import Resources
from condorpy.startd.forkserver import same_process
from condorpy.startd.journal import fields
from condorpy.startd.resources import ResourceManager
from condorpy.startd.volume_keeper import VolumeKeeper
from condorpy.starter.exit_report import CleanupReport, report_path, take_report

log = logging.getLogger("condorpy.startd")


class BrokenPort(Protocol):
    """What the keeper breaks, restores and mends slots through (:class:`ManagerPort`
    in the daemon)."""

    def report_broken(self, slot: str, cause: BrokenCause,
                      context: Mapping[str, Any] | None = None) -> None: ...

    def restore_broken(self, item: BrokenItem) -> None: ...

    def mend(self, slot: str, code: BrokenCode | None = None) -> None: ...

    def broken_item(self, slot: str) -> BrokenItem | None: ...

    def slot_of_claim(self, claim_id: str) -> str | None: ...


class ManagerPort:
    """The port through which the daemon's parts break and mend slots: the resource
    manager's engine, its log and its queue (see :mod:`condorpy.slots.broken`)."""

    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm

    def report_broken(self, slot: str, cause: BrokenCause,
                      context: Mapping[str, Any] | None = None) -> None:
        """Break ``slot``; a slot already broken keeps its first cause."""
        log.error("slot %s is broken: %s", slot, cause.reason,
                  extra=fields(event="slot_broken", slot=slot, broken_code=int(cause.code)))
        rm = self.rm
        rm.apply(rm.engine.report_broken(rm.clock.time(), slot, cause, context))

    def restore_broken(self, item: BrokenItem) -> None:
        self.rm.apply(self.rm.engine.restore_broken(self.rm.clock.time(), item))

    def mend(self, slot: str, code: BrokenCode | None = None) -> None:
        """The cause of ``slot``'s breakage (of ``code``, when given) has gone."""
        rm = self.rm
        if rm.engine.broken.get(slot) is None:
            return
        log.info("slot %s is mended", slot, extra=fields(event="slot_mended", slot=slot))
        rm.apply(rm.engine.mend(rm.clock.time(), slot, code))
        rm.queue.wake()       # its resources may take work again

    def broken_item(self, slot: str) -> BrokenItem | None:
        return self.rm.engine.broken.get(slot)

    def slot_of_claim(self, claim_id: str) -> str | None:
        try:
            return self.rm.slot_of(claim_id)
        except StartdError:
            return None


@dataclass(frozen=True)
class Evidence:
    """What a broken slot's cause is looked for by: the processes (pid, start ticks)
    of boot ``boot_id``, the job's volume, its cgroup."""

    boot_id: str = ""
    processes: tuple[tuple[int, int], ...] = ()
    volume: str | None = None
    cgroup: str | None = None

    @staticmethod
    def of(report: CleanupReport) -> Evidence:
        return Evidence(report.boot_id, tuple((x.pid, x.start_ticks)
                                              for x in report.leftovers),
                        report.volume, report.cgroup)


def rules_from(cfg: KnobReader) -> BreakRules:
    return BreakRules(leftover_procs=cfg.knob_bool("STARTD_LEFTOVER_PROCS_BREAK_SLOTS"),
                      volume_failure=cfg.knob_bool("LVM_CLEANUP_FAILURE_MAKES_BROKEN_SLOT"))


class BrokenKeeper:
    def __init__(self, port: BrokenPort, rows: BrokenSlotRows, rules: BreakRules, *,
                 volumes: Callable[[], VolumeKeeper | None] = lambda: None,
                 interval_s: float = 62.0, proc_root: str = "/proc") -> None:
        self.port = port
        self.rows = rows
        self.rules = rules
        self.volumes = volumes
        self.interval_s = interval_s
        self.proc_root = proc_root
        self.watched: dict[str, Evidence] = {}
        # the cgroups of leftover processes that broke nothing: removed once they end
        self.stray: list[Evidence] = []
        self.due_at: float | None = None

    # ------------------------------------------------------------------ looking
    def look(self, code: int, ev: Evidence) -> LeftBehind:
        return LeftBehind(code, processes=any(
            same_process(pid, ticks, ev.boot_id, proc_root=self.proc_root)
            for pid, ticks in ev.processes),
            volume=self._volume_there(ev.volume), cgroup=self._cgroup_there(ev))

    def _volume_there(self, volume: str | None) -> bool:
        if volume is None:
            return False
        keeper = self.volumes()
        if keeper is None:      # no keeper to retry it: it is there until a restart
            return True
        return any(f.volume == volume for f in keeper.waiting())

    def _cgroup_there(self, ev: Evidence) -> bool:
        if ev.cgroup is None or not os.path.isdir(ev.cgroup):
            return False
        if not any(same_process(pid, ticks, ev.boot_id, proc_root=self.proc_root)
                   for pid, ticks in ev.processes):
            _remove_tree(ev.cgroup)     # what held it has gone: the startd removes it
        return os.path.isdir(ev.cgroup)

    # ------------------------------------------------------------------ events
    def starter_gone(self, claim_id: str, socket_path: str) -> None:
        """The starter of ``claim_id`` has ended (it was listening on ``socket_path``):
        its report read, and the slot broken if what it left calls for it (before the
        claim goes, so that the slot is not lent again meanwhile)."""
        try:
            report = take_report(report_path(socket_path))
        except CondorpyError as exc:
            log.error("%s", exc)
            return
        if report is not None:      # (most starters leave none: no slot looked up)
            self.reported(self.port.slot_of_claim(claim_id), report)

    def reported(self, slot: str | None, report: CleanupReport) -> None:
        """What the starter of ``slot`` (None: gone too) left behind."""
        for text in report.problems:
            log.warning("job %s: clean-up incomplete: %s", report.job_id, text)
        keeper = self.volumes()
        if report.volume is not None and report.volume_group is not None \
                and keeper is not None:
            keeper.keep(VolumeRemovalFailed(report.volume_group, report.volume,
                                            report.volume_encrypted,
                                            "left by its starter", slot))
        ev = Evidence.of(report)
        cause = cleanup_cause(self.look(int(report.code), ev), self.rules)
        if cause is None:
            if ev.cgroup is not None and self._cgroup_there(ev):
                self.stray.append(ev)
            if report.leftovers:
                log.warning("job %s left %d process(es) the final kill could not end; "
                            "STARTD_LEFTOVER_PROCS_BREAK_SLOTS is false: slot %s is "
                            "not broken", report.job_id, len(report.leftovers), slot)
            return
        if slot is None:
            log.error("job %s: %s, but its slot is gone", report.job_id, cause.reason)
            return
        self.port.report_broken(slot, cause, {"JobId": report.job_id})
        self._keep(slot, ev)

    def _keep(self, slot: str, ev: Evidence) -> None:
        item = self.port.broken_item(slot)
        if item is None:
            return
        self.watched[slot] = ev
        try:
            self.rows.put(slot, _record(item, ev))
        except CondorpyError as exc:     # still broken; a restart would not know it
            log.error("slot %s: cannot record it broken: %s", slot, exc)

    def restore(self, now: float) -> None:
        """At start-up: the slots an earlier daemon left broken break again while
        their cause holds; the others are forgotten."""
        for slot, text in self.rows.all():
            try:
                item, ev = _parse(text)
            except (ValueError, KeyError, TypeError) as exc:
                log.error("slot %s: unreadable broken-slot record dropped: %s", slot, exc)
                self._forget(slot)
                continue
            if still_broken(item.cause.code, self.look(_code_of(item), ev)):
                self.port.restore_broken(item)
            if self.port.broken_item(slot) is not None:
                log.warning("slot %s is still broken: %s", slot, item.cause.reason)
                self.watched[slot] = ev
            else:
                log.info("slot %s: what broke it has gone; not broken", slot)
                self._forget(slot)
        self.due_at = now + self.interval_s

    def next_due(self) -> float | None:
        if not (self.watched or self.stray) or self.interval_s <= 0:
            return None
        return self.due_at if self.due_at is not None else 0.0    # None: not yet looked

    def step(self, now: float) -> None:
        if self.due_at is None or now >= self.due_at:
            self.check()
            self.due_at = now + self.interval_s

    def check(self) -> None:
        """Each broken slot looked at again; mended where its cause has gone."""
        self.stray = [ev for ev in self.stray if self._cgroup_there(ev)]
        for slot, ev in list(self.watched.items()):
            item = self.port.broken_item(slot)
            if item is not None and still_broken(item.cause.code,
                                                 self.look(_code_of(item), ev)):
                continue
            if item is not None:
                log.info("slot %s: what broke it (%s) has gone", slot, item.cause.reason)
                self.port.mend(slot, item.cause.code)
            del self.watched[slot]
            self._forget(slot)

    def _forget(self, slot: str) -> None:
        try:
            self.rows.forget(slot)
        except CondorpyError as exc:
            log.error("slot %s: %s", slot, exc)


def _code_of(item: BrokenItem) -> int:
    """The starter exit status a broken code stands for (what look() is told)."""
    return {BrokenCode.UNCLEAN_VOLUME: 15, BrokenCode.HUNG_PROCESSES: 16,
            BrokenCode.HUNG_CGROUP: 18}.get(item.cause.code, 0)


def _remove_tree(path: str) -> None:
    for root, dirs, _files in os.walk(path, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


# --- the stored record ------------------------------------------------------------------

def _record(item: BrokenItem, ev: Evidence) -> str:
    r = item.resources
    return json.dumps({
        "slot": item.slot, "parent": item.parent, "code": int(item.cause.code),
        "reason": item.cause.reason, "since": item.since,
        "context": {k: v for k, v in item.context.items()
                    if isinstance(v, (str, int, float, bool))},
        "resources": {"cpus": r.cpus, "memory_mb": r.memory_mb, "disk_kb": r.disk_kb,
                      "swap_kb": r.swap_kb, "custom": dict(r.custom),
                      "devices": {k: list(v) for k, v in r.devices.items()}},
        "boot_id": ev.boot_id, "processes": [list(p) for p in ev.processes],
        "volume": ev.volume, "cgroup": ev.cgroup}, sort_keys=True)


def _parse(text: str) -> tuple[BrokenItem, Evidence]:
    d = json.loads(text)
    r = d["resources"]
    res = Resources(int(r["cpus"]), int(r["memory_mb"]), int(r["disk_kb"]),
                    int(r.get("swap_kb", 0)),
                    {str(k): float(v) for k, v in r.get("custom", {}).items()},
                    {str(k): tuple(str(i) for i in v)
                     for k, v in r.get("devices", {}).items()})
    item = BrokenItem(str(d["slot"]), d["parent"] if d["parent"] is None else str(d["parent"]),
                      BrokenCause(BrokenCode(int(d["code"])), str(d["reason"])), res,
                      int(d["since"]), dict(d.get("context", {})))
    ev = Evidence(str(d.get("boot_id", "")),
                  tuple((int(p), int(t)) for p, t in d.get("processes", ())),
                  d.get("volume"), d.get("cgroup"))
    return item, ev
