"""What the daemon does when a turn's writes are lost uncommitted (a full or unwritable
spool): its memory had run ahead of the store, and is brought back to what the store
holds, as a restarted daemon would see it.

- A start the store did not keep: its held starter was killed when the commit failed
  (resources.py, ``_released``); its handle goes, its claim is released and the job is
  idle again, as the store has it.
- An end the store did not keep: the job is still running there, so its handle is
  taken back (as at start-up, :mod:`condorpy.startd.adoption`) and its slot claimed
  again; its starter is looked at again after a pause, growing while the commits keep
  failing, so a lasting fault does not spin the loop, and its end is recorded anew
  from the result file once the store takes writes again.
"""

from __future__ import annotations

import logging
from typing import Protocol

from condorpy.clock import Clock
from condorpy.policy.engine import PolicyEngine
from condorpy.queue.jobstore import JobId, JobRecord, JobStatus, JobStore, StarterRecord
from condorpy.startd import pool_restart
from condorpy.startd.adoption import launched_of
from condorpy.startd.forkserver_wire import Launched
from condorpy.startd.resources import ResourceManager
from condorpy.startd.starter_handle import LocalJob, StarterHandle

log = logging.getLogger("condorpy.startd")

FIRST_PAUSE_S = 1.0
LONGEST_PAUSE_S = 60.0


class TakingBack(Protocol):
    """The start-up adopter's part that re-creates a running job's handle."""

    def take_back(self, srec: StarterRecord, launched: Launched | None, *,
                  fresh: bool = False) -> StarterHandle: ...


class Requeued(Protocol):
    def job_back(self, rec: JobRecord) -> None: ...

    def wake(self) -> None: ...


class Reconciler:
    def __init__(self, rm: ResourceManager, engine: PolicyEngine, store: JobStore,
                 clock: Clock, adopter: TakingBack, queue: Requeued) -> None:
        self.rm = rm
        self.engine = engine
        self.store = store
        self.clock = clock
        self.adopter = adopter
        self.queue = queue
        self.waiting: list[tuple[StarterHandle, Launched]] = []
        self.due: float | None = None
        self.pause = FIRST_PAUSE_S

    def after_turn(self, rollbacks_before: int) -> None:
        """Called once a turn is over with the store's rollback count at its start."""
        if self.store.rollbacks == rollbacks_before:
            if not self.waiting:
                self.pause = FIRST_PAUSE_S
            return
        self.take_back()

    def take_back(self) -> None:
        durable: dict[JobId, StarterRecord] = {
            s.job_id: s for s in self.store.starters.all()
            if pool_restart.number_of_row(s.job_id) is None}
        undone = 0
        for h in list(self.rm.handles.values()):
            if isinstance(h.origin, LocalJob) and h.launched is not None and \
                    h.origin.job_id not in durable:
                self._drop(h)
                undone += 1
        taken = 0
        now = self.clock.monotonic()
        for job_id, srec in durable.items():
            if self.rm.is_running(job_id) or self.store.job(job_id) is None:
                continue
            h = self.adopter.take_back(srec, None, fresh=True)
            self.waiting.append((h, launched_of(srec)))
            taken += 1
        # the pause doubles per re-check that finds the fault still there, not per lost
        # turn: a daemon that keeps losing turns (a match each loop) would otherwise put
        # the re-check 60 s off after a fault of a few seconds
        if taken:
            self.due = now + self.pause
            self.pause = min(LONGEST_PAUSE_S, self.pause * 2)
        log.error("job store %s: the writes of the daemon's last turn were not committed "
                  "(the spool %s is full or not writable); the daemon goes back to what "
                  "the store holds: %d start(s) undone, %d ended job(s) still running "
                  "there, their ends recorded again once it takes writes",
                  self.store.path, self.store.spool, undone, taken)
        if undone:
            self.queue.wake()

    def _drop(self, h: StarterHandle) -> None:
        """A start the store did not keep (its starter already killed)."""
        assert isinstance(h.origin, LocalJob)
        del self.rm.handles[h.origin]
        self.rm.by_claim.pop(h.claim_id, None)
        self.rm.channel.close(h.origin)
        if self.engine.has_claim(h.claim_id):
            # as any job's end: its slot is idle again, then the claim goes
            self.rm.apply(self.engine.job_exit(self.clock.time(), h.claim_id, None))
        if self.engine.has_claim(h.claim_id):
            self.rm.apply(self.engine.release(self.clock.time(), h.claim_id))
        rec = self.store.job(h.origin.job_id)
        if rec is not None and rec.status is JobStatus.IDLE:
            self.queue.job_back(rec)

    # as a source of the daemon's loop
    def next_deadline(self) -> float | None:
        return self.due if self.waiting else None

    def tick(self, now: float) -> None:
        if not self.waiting or self.due is None or now < self.due:
            return
        waiting, self.waiting = self.waiting, []
        for h, launched in waiting:
            if self.rm.handles.get(h.origin) is h:
                # seen at the starters' next tick: reached if it runs, its end read
                # from its result file if not
                h.on_adopted(launched, now)
