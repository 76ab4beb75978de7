"""The startd's side of per-job scratch volumes (STARTD_ENFORCE_DISK_LIMITS): the
backing store made at start, the volumes a crash left behind removed (those of
starters still running, re-adopted, are kept), and those that could not be removed
retried on HTCondor's back-off, one tick every STARTD_CLEANUP_REMINDER_TIMER_INTERVAL.

The records of volumes still waiting (:class:`VolumeRemovalFailed`) are what a broken
slot is made of; :meth:`VolumeKeeper.waiting` hands them out.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from condorpy.classad import parse_expr
from condorpy.config import KnobReader
from condorpy.machine.volumes import LeakedVolumes, LvmSettings, SubprocessRunner, \
    VolumeError, VolumeManager, VolumeRemovalFailed, lvm_settings

log = logging.getLogger("condorpy.startd")


def starter_alive(volume: str, alive: Callable[[int], bool] | None = None) -> bool:
    """A volume is named ``<slot>+<tag>``, the tag the pid of the starter that made it:
    is that starter still running?"""
    tag = volume.rpartition("+")[2]
    if not tag.isdigit():
        return False
    return (alive or _pid_alive)(int(tag))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reminder_interval_s(cfg: KnobReader) -> float:
    """STARTD_CLEANUP_REMINDER_TIMER_INTERVAL: the tick of every clean-up retry (the
    volumes here, broken slots' causes in broken_keeper.py)."""
    return cfg.knob_float("STARTD_CLEANUP_REMINDER_TIMER_INTERVAL")


class VolumeKeeper:
    def __init__(self, settings: LvmSettings, manager: VolumeManager,
                 interval_s: float) -> None:
        self.settings = settings
        self.manager = manager
        self.interval_s = interval_s
        self.leaked = LeakedVolumes()
        self.due_at: float | None = None

    @classmethod
    def from_config(cls, cfg: KnobReader) -> VolumeKeeper | None:
        settings = lvm_settings(cfg)
        if not settings.enforce:
            return None
        return cls(settings, VolumeManager(settings, SubprocessRunner()),
                   reminder_interval_s(cfg))

    def start(self, now: float, alive: Callable[[int], bool] | None = None) -> None:
        """The backing store made (or found), and leftovers removed. A store that
        cannot be made stops the start (VolumeError), as HTCondor's startd stops."""
        self.manager.set_up()
        records = self.manager.list_volumes()
        live = [r.name for r in records if r.ours and starter_alive(r.name, alive)]
        for failure in self.manager.sweep(live):
            log.warning("a volume left by an earlier startd could not be removed; "
                        "retrying later: %s", failure.reason)
            self.leaked.add(failure)
        self.due_at = now + self.interval_s
        store = self.manager.volume_group + (f"/{self.manager.thinpool}"
                                             if self.manager.thinpool else "")
        log.info("per-job scratch volumes in %s%s", store,
                 f" (loop device {self.manager.loop_device} over "
                 f"{self.settings.backing_file})" if self.manager.loop_device else "")

    def keep(self, failure: VolumeRemovalFailed) -> None:
        """A volume a starter could not remove, to be retried (the next tick also finds
        it by itself once its starter is gone)."""
        self.leaked.add(failure)

    def waiting(self) -> list[VolumeRemovalFailed]:
        return [failure for failure, _ in self.leaked.waiting.values()]

    def cleanup_counts(self) -> dict[str, object]:
        """HTCondor's ``CleanupCategoryCounts`` for the daemon ad: how many things wait
        for another removal, by kind (here volumes only); none while nothing waits."""
        if not self.leaked.waiting:
            return {}
        return {"CleanupCategoryCounts":
                parse_expr(f"[ LogicalVolumes = {len(self.leaked.waiting)} ]")}

    def next_due(self) -> float | None:
        return self.due_at if self.interval_s > 0 else None

    def step(self, now: float) -> None:
        """The event loop's tick."""
        self.tick(now)

    def tick(self, now: float, alive: Callable[[int], bool] | None = None
             ) -> list[VolumeRemovalFailed]:
        """One reminder tick: volumes of starters gone found (a starter that could not
        remove its own, or died first) and the volumes due retried; returns those
        removed at this tick."""
        if self.due_at is None or now < self.due_at or self.interval_s <= 0:
            return []
        removed = []
        try:
            records = self.manager.list_volumes()
        except VolumeError as exc:
            log.warning("%s", exc)
            records = []
        for record in records:
            if record.ours and record.name not in self.leaked.waiting \
                    and not starter_alive(record.name, alive):
                failure = self.manager.remove_named(record.name, record.encrypted)
                if failure is None:
                    removed.append(VolumeRemovalFailed(record.vg, record.name,
                                                       record.encrypted, "left by its starter"))
                else:
                    self.leaked.add(failure)
        for failure in self.leaked.due():
            again = self.manager.remove_named(failure.volume, failure.encrypted)
            if again is None:
                log.info("volume %s/%s removed on retry", failure.volume_group,
                         failure.volume)
                self.leaked.removed(failure.volume)
                removed.append(failure)
        self.due_at = now + self.interval_s
        return removed
