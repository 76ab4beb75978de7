"""A restarted daemon takes back the pool jobs the previous one left running (or that
ended while it was away): each stored claim is re-created in the policy engine (the
same request ad carves the same d-slot) and in the claim table (claim id, session, a
job with no shadow connection), for its shadow to reconnect to. The daemon re-adopts
the starter itself; it asks here what became of the pool's side."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from condorpy.classad import ClassAd
from condorpy.errors import ClassAdError
from condorpy.policy.records import StartJob
from condorpy.pool import claims
from condorpy.queue.claim_rows import PoolClaimRows
from condorpy.startd.poolside.claims import ClaimTable, PoolJob, client_host
from condorpy.startd.poolside.claimstore import StoredClaim, stored
from condorpy.startd.results import read_result

log = logging.getLogger("condorpy.startd.pool")


@dataclass(frozen=True)
class PoolAdoption:
    """What became of a pool job's claim while the daemon was away."""

    eid: str                            # the engine's claim id
    slot: str                           # the slot the job runs (ran) in
    job_name: str                       # the pool's cluster.proc
    final: dict[str, Any] | None        # the result it left, if it ended meanwhile
    gone: bool = False                  # vanished with no result: the claim is dropped


def _exit_code(final: dict[str, Any]) -> int | None:
    code = final.get("ExitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _name_in(job_ad: str) -> str:
    try:
        ad = ClassAd.parse_old(job_ad, source="a stored claim")
    except ClassAdError:
        return "?"
    return f"{ad.get('ClusterId')}.{ad.get('ProcId')}"


class Adopter:
    def __init__(self, table: ClaimTable, store_of: Callable[[], PoolClaimRows | None],
                 skip_numbers: Callable[[int], None]) -> None:
        self.table = table
        self.store_of = store_of
        self.skip_numbers = skip_numbers
        self._pending: dict[int, StoredClaim] | None = None

    def pending(self) -> dict[int, StoredClaim]:
        """The claims the previous daemon stored, read once, at the first asking."""
        if self._pending is None:
            store = self.store_of()
            self._pending = stored(store) if store is not None else {}
        return self._pending

    def _forget(self, rec: StoredClaim) -> None:
        rec.drop_scratch()
        self.table.rows.forget(rec.eid)

    def adopt_starter(self, number: int, execute_dir: str, alive: bool
                      ) -> PoolAdoption | None:
        """The pool job ``number`` whose starter the daemon found (``alive``: still
        running) with ``execute_dir``. None: no stored claim, or it cannot be
        re-created; the daemon stops the job."""
        rec = self.pending().pop(number, None)
        if rec is None:
            return None
        result = Path(execute_dir) / "final.ad"
        if not alive and not result.exists():
            log.warning("pool: job %s of %s vanished with no result while the daemon was "
                        "away; its shadow will hear it is gone", _name_in(rec.job_ad),
                        rec.eid)
            self._forget(rec)
            return PoolAdoption(rec.eid, rec.slot, _name_in(rec.job_ad), None, gone=True)
        job = self._recreate(rec)
        if job is None:
            self._forget(rec)
            return None
        if alive:
            log.info("pool: job %s of %s waits for its shadow to reconnect", job.name,
                     job.eid)
            return PoolAdoption(job.eid, job.slot or rec.slot, job.name, None)
        log.info("pool: job %s of %s ended while the daemon was away; its exit is kept "
                 "for its shadow", job.name, job.eid)
        return PoolAdoption(job.eid, job.slot or rec.slot, job.name, read_result(result))

    def adopt_rest(self) -> None:
        """Stored claims with no starter left: a job whose exit its shadow has not heard
        is kept for it; the rest are dropped."""
        for number, rec in sorted(self.pending().items()):
            if rec.final is not None:
                job = self._recreate(rec)
                if job is not None:
                    job.ended = True
                    job.final = dict(rec.final)
                    engine = self.table.engine
                    self.table.apply(engine.job_exit(self.table.clock.time(), job.eid,
                                                     _exit_code(rec.final)))
                    log.info("pool: the exit of job %s of %s is kept for its shadow",
                             job.name, job.eid)
                    continue
            self._forget(rec)
        self._pending = {}

    def _recreate(self, rec: StoredClaim) -> PoolJob | None:
        """The claim in the engine (carving its d-slot again) and in the table."""
        eid = rec.eid
        try:
            request = ClassAd.parse_old(rec.request_ad, source=f"the stored claim {eid}")
            job_ad = ClassAd.parse_old(rec.job_ad, source=f"the stored claim {eid}")
        except ClassAdError as exc:
            log.error("pool: the stored claim %s is damaged: %s", eid, exc)
            return None
        engine, apply, clock = self.table.engine, self.table.apply, self.table.clock
        if rec.target not in engine.slots:
            log.error("pool: the stored claim %s names slot %s, which this configuration "
                      "lacks", eid, rec.target)
            return None
        # no StartJob: the starter runs already (or has ended)
        apply([o for o in engine.request_claim(clock.time(), eid, request, rec.target,
                                               client=client_host(rec.schedd))
               if not isinstance(o, StartJob)])
        if not engine.has_claim(eid):
            log.error("pool: the claim %s could not be re-created in %s", eid, rec.target)
            return None
        apply([o for o in engine.activate(clock.time(), eid, job_ad)
               if not isinstance(o, StartJob)])
        slot = next((s.name for s in engine.slots.values()
                     if s.claim is not None and s.claim.id == eid), rec.slot)
        self.table.grant(rec.claim_id, claims.RequestClaim(
            rec.claim_id, request, rec.schedd, rec.alive_interval))
        self.table.publish_claimed(slot, eid)
        job = PoolJob(eid, job_ad, slot=slot)
        job.number, job.lease, job.last_contact = rec.number, rec.lease, rec.last_contact
        job.files, job.transfer_session = rec.files(), rec.session()
        for attr, v in (("TransferSocket", rec.transfer_socket),
                        ("TransferKey", rec.transfer_key)):
            if v:
                job.ad[attr] = v
        if rec.scratch and job.files is None:
            log.warning("pool: the scratch directory of %s is gone: its outputs are lost",
                        eid)
        job.peer = rec.shadow
        self.table.set_job(eid, job)
        self.table.adopt_row(eid, dataclasses.replace(rec, slot=slot))
        self.skip_numbers(rec.number)
        log.info("pool: claim %s of %s re-created in %s (job %s)", eid, rec.schedd, slot,
                 job.name)
        return job


class WithoutPool:
    """The pool side of a daemon configured without a pool (no COLLECTOR_HOST): claims
    an earlier daemon stored for a pool are gone with the pool, so their rows and
    scratch directories go at start, and a pool job's starter found running is
    stopped by the daemon."""

    def __init__(self, store: PoolClaimRows) -> None:
        self.store = store

    def adopt_starter(self, number: int, execute_dir: str, alive: bool
                      ) -> PoolAdoption | None:
        return None

    def adopt_rest(self) -> None:
        for rec in stored(self.store).values():
            log.info("pool: the stored claim %s is dropped: no pool is configured",
                     rec.eid)
            rec.drop_scratch()
            self.store.forget(rec.eid)
