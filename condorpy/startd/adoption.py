"""Re-adoption at start-up: the starters a previous daemon left behind are taken back
(their handles re-created as launched, their claims rebuilt in the engine without a
launch), the ends of those that finished meanwhile are recorded, jobs whose starter
vanished go back to the queue, and a pool job whose shadow cannot come back is stopped.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Protocol

from condorpy.clock import Clock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import StartJob
from condorpy.queue.jobstore import JobId, JobStatus, JobStore, StarterRecord
from condorpy.startd import pool_restart
from condorpy.startd.results import read_result
from condorpy.startd.forkserver_wire import Launched
from condorpy.startd.journal import fields
from condorpy.startd.metrics import MetricsStats
from condorpy.startd.resources import ResourceManager
from condorpy.startd.starter_handle import LocalJob, PoolClaim, StarterHandle

log = logging.getLogger("condorpy.startd")


class Adopted(Protocol):
    """What the pool side made of a pool job's starter (its ``PoolAdoption``)."""

    @property
    def eid(self) -> str: ...

    @property
    def slot(self) -> str: ...

    @property
    def job_name(self) -> str: ...

    @property
    def final(self) -> dict[str, Any] | None: ...

    @property
    def gone(self) -> bool: ...


class PoolAdopting(Protocol):
    def adopt_starter(self, number: int, execute_dir: str, alive: bool) -> Adopted | None: ...

    def adopt_rest(self) -> None: ...


class Requeue(Protocol):
    def set_status(self, job_id: JobId, status: JobStatus, **why: Any) -> None: ...


def launched_of(srec: StarterRecord) -> Launched:
    """The starter a row of the store names, as its launch reported it."""
    return Launched(str(srec.job_id), srec.pid, srec.process_start, srec.boot_id,
                    srec.socket_path, str(Path(srec.execute_dir) / "final.ad"), "")


class Adopter:
    def __init__(self, rm: ResourceManager, engine: PolicyEngine, store: JobStore,
                 clock: Clock, stats: MetricsStats, queue: Requeue,
                 pool: PoolAdopting | None, started_at: float) -> None:
        self.rm = rm
        self.engine = engine
        self.store = store
        self.clock = clock
        self.stats = stats
        self.queue = queue
        self.pool = pool
        self.started_at = started_at

    def adopt(self) -> None:
        """Take back every starter the previous daemon left running; record the ends of
        those that finished meanwhile; requeue jobs whose starter vanished."""
        for srec in self.store.starters.all():
            launched = launched_of(srec)
            alive = self.rm.launcher.alive(launched)
            number = pool_restart.number_of_row(srec.job_id)
            if number is not None:
                self._pool_job(srec, number, launched, alive)
            elif self.store.job(srec.job_id) is None:
                self.store.starters.forget(srec.job_id)
            else:
                self._local_job(srec, launched, alive)
        if self.pool is not None:
            self.pool.adopt_rest()
        # Claims the store holds for jobs that never got a starter recorded.
        for c in self.store.claims.all():
            if c.job_id is None or not self.rm.is_running(c.job_id):
                self.store.claims.release(c.claim_id)
        for rec in self.store.jobs_with_status(JobStatus.RUNNING, JobStatus.SUSPENDED):
            if not self.rm.is_running(rec.job_id):
                self.queue.set_status(rec.job_id, JobStatus.IDLE)

    def _local_job(self, srec: StarterRecord, launched: Launched, alive: bool) -> None:
        h = self.take_back(srec, launched)
        self._settle_local(srec, launched, alive, h)

    def take_back(self, srec: StarterRecord, launched: Launched | None, *,
                  fresh: bool = False) -> StarterHandle:
        """The handle of a local job the store says runs, and its claim rebuilt in the
        engine. Without ``launched`` the handle waits (its starter is neither reached
        nor seen ended) until :meth:`StarterHandle.on_adopted` is called. ``fresh``:
        under a new claim id, recorded in place of the stored one (an engine that has
        seen that claim end refuses it again)."""
        rec = self.store.job(srec.job_id)
        assert rec is not None
        stored = next((c.claim_id for c in self.store.claims.all()
                       if c.job_id == srec.job_id), None)
        claim_id = (stored if not fresh else None) or \
            f"<condorpy>#{int(self.started_at)}#{os.urandom(12).hex()}"
        h = StarterHandle(LocalJob(srec.job_id), claim_id, srec.slot)
        if launched is not None:
            h.on_adopted(launched, self.clock.monotonic())
        # Rebuild the claim in the engine as the job had it, without launching.
        self.rm.adopt(h)
        target = srec.slot.split("_")[0]
        # A fresh time for each call: applying one (benchmarks) may move the engine on.
        self.rm.apply([o for o in self.engine.request_claim(
            self.clock.time(), claim_id, rec.ad, target, client=self.engine.hostname)
                       if not isinstance(o, StartJob)])
        if self.engine.has_claim(claim_id):
            h.slot = self.rm.slot_of(claim_id)
            self.rm.apply([o for o in self.engine.activate(self.clock.time(), claim_id)
                           if not isinstance(o, StartJob)])
            if fresh:
                with self.store.deferred():
                    if stored is not None:
                        self.store.claims.release(stored)
                    self.store.claims.record(claim_id, h.slot, "claimed", srec.job_id)
        return h

    def _settle_local(self, srec: StarterRecord, launched: Launched, alive: bool,
                      h: StarterHandle) -> None:
        claim_id = h.claim_id
        if alive:
            log.info("job %s: re-adopted starter %d in %s", srec.job_id, srec.pid,
                     h.slot, extra=fields(event="job_adopted", job_id=srec.job_id,
                                          slot=h.slot, claim_id=claim_id,
                                          starter_pid=srec.pid))
            self.stats.adopted("adopted")
            return
        result = Path(launched.result_path)
        if result.exists():
            log.info("job %s: its starter %d ended while the daemon was away",
                     srec.job_id, srec.pid)
            self.stats.adopted("finished")
            self.rm.finish(h, read_result(result))
        else:
            log.warning("job %s: its starter %d vanished; the job goes back to "
                        "the queue", srec.job_id, srec.pid)
            h.evicted = True
            self.stats.adopted("lost")
            self.rm.finish(h, None)

    def _pool_job(self, srec: StarterRecord, number: int, launched: Launched,
                  alive: bool) -> None:
        got = self.pool.adopt_starter(number, srec.execute_dir, alive) \
            if self.pool is not None else None
        if got is None:
            if alive:
                self.stop_orphan(number, launched, srec.slot)
            else:
                self.store.starters.forget(srec.job_id)
            return
        if got.gone:
            self.store.starters.forget(srec.job_id)
            return
        h = StarterHandle(PoolClaim(got.eid, number), got.eid, got.slot or srec.slot)
        h.on_adopted(launched, self.clock.monotonic())
        self.rm.adopt(h)
        if alive:
            log.info("job %s: re-adopted the starter %d of pool job %s in %s; waiting for "
                     "its shadow to reconnect", h.name, srec.pid, got.job_name, h.slot)
            self.stats.adopted("adopted")
        else:
            log.info("job %s: pool job %s ended while the daemon was away; its exit is "
                     "kept for its shadow", h.name, got.job_name)
            self.stats.adopted("finished")
            self.rm.finish(h, got.final)

    def stop_orphan(self, number: int, launched: Launched, slot: str) -> None:
        """A pool job whose starter outlived a killed daemon: its shadow cannot take it
        back (pool_restart.py), so it is stopped; its end is recorded as any job's."""
        eid = f"<orphan>#{os.urandom(12).hex()}"
        h = StarterHandle(PoolClaim(eid, number), eid, slot)
        log.warning("job %s: its shadow's connection died with the previous daemon; "
                    "starter %d is stopped", h.name, launched.pid)
        h.on_adopted(launched, self.clock.monotonic())
        h.on_kill()             # queued until its socket is reached
        self.rm.adopt(h)
