"""The local schedd's running side: the matchmaker that offers idle jobs to free slots,
and the job's own policy (periodic_hold/release/remove, on_exit_*, the SYSTEM_PERIODIC_*
knobs) that the schedd evaluates.

It claims a slot through the engine's claim request, as a pool's schedd does, and
activates the claim through the :class:`Execute` port (the daemon's resource manager),
so it never imports :mod:`condorpy.startd`.
"""

from __future__ import annotations

import enum
import logging
import os
from typing import Any, Callable, Iterable, Iterator, Protocol

from condorpy.classad import Allowance, Budget, CallContext, ClassAd
from condorpy.clock import Clock
from condorpy.policy import job_policy
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import ClaimRefused, Output
from condorpy.policy.states import State
from condorpy.queue.autocluster import (IdleIndex, Keyer, References, Signature,
                                        significant_from_config, slot_significant)
from condorpy.queue.records import JobRow, number_of, record_of
from condorpy.queue.jobstore import JobId, JobRecord, JobStatus, JobStore
from condorpy.slots.model import Refusal

log = logging.getLogger("condorpy.startd")

MATCH_BATCH = 64            # jobs started per matchmaking pass before yielding
FILL_ROWS = 5000            # idle jobs read from the store per turn, after a start
DEFAULT_VACATE_S = 600.0    # JobMaxVacateTime when the job says nothing

Outcome = tuple[JobStatus, str, int, int]     # status, reason, hold code, hold subcode

_DECIDED = {job_policy.JobAction.HOLD: JobStatus.HELD,
            job_policy.JobAction.REMOVE: JobStatus.REMOVED,
            job_policy.JobAction.REQUEUE: JobStatus.IDLE,
            job_policy.JobAction.RELEASE: JobStatus.IDLE}


class Execute(Protocol):
    """What the schedd asks of the side that runs jobs."""

    def apply(self, outputs: list[Output]) -> None: ...

    def activate(self, job_id: JobId, claim_id: str, slot: str) -> bool: ...

    def slot_of(self, claim_id: str) -> str: ...

    def is_running(self, job_id: JobId) -> bool: ...

    def leaving(self, job_id: JobId) -> bool: ...

    def stop_running(self, job_id: JobId, status: JobStatus, reason: str, code: int,
                     subcode: int, grace_s: float) -> bool: ...


class JobEvents(Protocol):
    """The job's user log, for the events the schedd writes."""

    def stopped(self, ad: ClassAd, status: JobStatus, reason: str, code: int,
                subcode: int = 0) -> None: ...

    def released(self, ad: ClassAd, reason: str) -> None: ...


class Offer(enum.Enum):
    """What came of offering a job to the free slots."""
    STARTED = "started"
    NO_SLOT = "no slot"            # no free slot took it: nor would one take its likes
    HELD = "held"                  # its expressions ran out of their budget
    NOT_STARTED = "not started"    # a slot took it but it did not start (its own trouble)


def new_claim_id(started_at: float) -> str:
    # secrets.token_hex's own source; the secrets module loads OpenSSL (3 MB resident)
    return f"<condorpy>#{int(started_at)}#{os.urandom(12).hex()}"


class LocalSchedd:
    def __init__(self, engine: PolicyEngine, store: JobStore, clock: Clock,
                 execute: Execute, events: JobEvents, *, started_at: float,
                 knob: Callable[[str], str | None],
                 periodic_interval: Callable[[], int] = lambda: 60,
                 stats_held: Callable[[int], None] = lambda code: None) -> None:
        self.engine = engine
        self.store = store
        self.clock = clock
        self.execute = execute
        self.events = events
        self.started_at = started_at
        self.knob = knob                      # the configuration, for SYSTEM_PERIODIC_*
        self.periodic_interval = periodic_interval
        self.stats_held = stats_held
        self.need_match = True
        self.next_periodic = 0.0
        # The idle jobs by autocluster (:mod:`.autocluster`): per job its id and its
        # bucket, all that ordering the matches needs. The ads stay in the store and
        # are read as a job is tried, so the daemon's memory does not grow with the
        # number of jobs waiting. Built from the store when first needed, and again
        # when the slot side's significant attributes change.
        self._index: IdleIndex | None = None
        self._filling: Iterator[JobRow] | None = None    # the store's rows still to read
        self._gone: set[JobId] = set()          # jobs no longer idle since it began
        self._refs = References()
        self._keyer = Keyer(frozenset(), self._refs)
        self._given = False         # its significant attributes are the administrator's
        self._walk: Iterator[bool] | None = None     # a periodic walk under way
        self.overruns = job_policy.Overruns()   # held jobs' expressions too costly

    # ------------------------------------------------------------------ the queue
    def index(self) -> IdleIndex:
        """The idle jobs by autocluster, read from the store once (a chunk at a time)
        and then kept by every change the daemon makes (its only writer)."""
        while not self._filled(None):
            pass
        assert self._index is not None
        return self._index

    def _filled(self, rows: int | None) -> bool:
        """Read (up to ``rows`` more of) the idle jobs from the store into the index;
        whether it holds them all. Between turns the daemon serves others: a job
        changed meanwhile is kept by the index as always, and its row, when read, is
        read as it is then."""
        if self._index is None:
            self._significant_now()
            self._index = IdleIndex()
            self._filling = self.store.rows_with_status(JobStatus.IDLE)
        if self._filling is None:
            return True
        for row in self._filling:
            # (the store hands its rows a few hundred at a time: one read before the
            # job changed is passed over)
            if not self._gone or JobId(row[0], row[1]) not in self._gone:
                self._add_row(row)
            if rows is not None:
                rows -= 1
                if rows <= 0:
                    return False
        self._filling = None
        self._gone.clear()
        return True

    def _add_row(self, row: JobRow) -> None:
        assert self._index is not None
        got = self._keyer.of_text(row[4])
        if got is None or got[1] is None:
            # the new format, or a JobPrio that is an expression: the ad is read
            self._add(record_of(row, self.store.path))
        else:
            self._index.add(JobId(row[0], row[1]), got[0], got[1])

    def _add(self, rec: JobRecord) -> None:
        if self._index is not None:
            self._index.add(rec.job_id, self._keyer.of_ad(rec.ad), _prio(rec))

    def autocluster(self, job_id: JobId) -> tuple[int, str] | None:
        """An idle job's AutoClusterId and AutoClusterAttrs, as HTCondor's schedd puts
        them in the job's ad; None for a job not idle (or not indexed yet)."""
        if self._index is None:
            return None
        ac = self._index.cluster_of(job_id)
        return None if ac is None else (ac, self._index.attrs_of(ac))

    def _significant_now(self) -> None:
        """Re-key the idle jobs (lazily: the index is read again from the store when
        next needed) once the slot side's significant attributes changed: a reconfig,
        a new layout, a cron or hook that publishes an expression."""
        sig, given = significant_from_config(
            self.knob, lambda: slot_significant(
                (s.ad for s in self.engine.slots.values() if not s.deleted),
                self.engine.layout.carve_texts(), self._refs))
        was = self._keyer.significant
        if sig is None or was is None or given or self._given:
            self._given = given
            if sig != was:
                self._keyer = Keyer(sig, self._refs)
                self._index = self._filling = None
                self._gone.clear()
        elif not sig <= was:
            # merged, as HTCondor's schedd merges what its negotiator sends: an
            # attribute no slot reads any more only splits clusters more finely, and
            # a set that comes and goes (a slot's ad as its state changes) does not
            # make the whole queue be read again each time
            self._keyer = Keyer(sig | was, self._refs)
            self._index = self._filling = None
            self._gone.clear()

    def wake(self) -> None:
        self.need_match = True

    def job_back(self, rec: JobRecord) -> None:
        """A job is idle again (its run ended, it was released or submitted)."""
        self._add(rec)
        self.need_match = True

    def submitted(self, records: Iterable[JobRecord]) -> None:
        for rec in records:
            if rec.status is JobStatus.IDLE:
                self._add(rec)
        self.need_match = True

    def queued_row(self, row: JobRow) -> None:
        """A job submitted idle, by its stored row (its ad unparsed: its signature is
        read off the text)."""
        if self._index is not None and row[2] == JobStatus.IDLE:
            self._add_row(row)
        self.need_match = True

    def set_status(self, job_id: JobId, status: JobStatus, **why: Any) -> None:
        rec = self.store.set_status(job_id, status, **why)
        if status is JobStatus.IDLE:
            self._add(rec)
            self._gone.discard(job_id)
            self.need_match = True
        elif self._index is not None:
            self._index.remove(job_id)
            if self._filling is not None:
                self._gone.add(job_id)

    def stop_job(self, rec: JobRecord, status: JobStatus, reason: str, code: int,
                 subcode: int = 0) -> None:
        """Hold or remove a job. A running one is stopped as the shadow does: a soft
        kill with the job's KillSig, then a hard kill once the vacate time (the job's
        JobMaxVacateTime, else 600 s) has passed; it becomes ``status`` once it ended."""
        grace = number_of(rec.ad.evaluate("JobMaxVacateTime"), DEFAULT_VACATE_S)
        if self.execute.stop_running(rec.job_id, status, reason, code, subcode, grace):
            return
        self.set_status(rec.job_id, status, reason=reason, code=code or None,
                        subcode=subcode or None)
        self.events.stopped(rec.ad, status, reason, code, subcode)
        if status is JobStatus.HELD:
            self.stats_held(code)

    def release(self, rec: JobRecord, reason: str) -> None:
        self.set_status(rec.job_id, JobStatus.IDLE)
        self.events.released(rec.ad, reason)

    # ------------------------------------------------------------- matchmaking
    def match(self) -> None:
        """Offer idle jobs to slots, priority then submission order, through the engine's
        claim request and activation (what a pool's schedd does). The pass walks the
        autoclusters: the first job of each is offered, and an autocluster whose job
        no free slot takes is passed over for the rest of the pass (its other jobs
        would be refused alike), so a pass costs one offer per autocluster however
        many of its jobs wait. A refusal is not remembered between passes: each pass
        asks again, as a slot's state, the clock or a load may have changed."""
        self.need_match = False
        if self.engine.machine.draining or self.engine.machine.shutting_down:
            return
        if not self.free_slots():
            return
        self._significant_now()
        if not self._filled(FILL_ROWS):
            # a long queue is read a part a turn, the daemon serving others between;
            # matching waits for all of it, so priorities hold across the whole queue
            self.need_match = True
            return
        index = self.index()
        started = 0
        rejected: set[int] = set()
        aside: list[tuple[JobId, Signature | None, float]] = []
        for ac, job_id in index.heads(rejected):
            if started >= MATCH_BATCH:
                self.need_match = True
                break
            if not self.free_slots():
                break
            if self.execute.is_running(job_id):
                self._set_aside(index, job_id, aside)
                continue
            rec = self.store.job(job_id)
            if rec is None or rec.status is not JobStatus.IDLE:
                index.remove(job_id)     # gone or changed behind the index
                continue
            got = self.offer(rec)
            if got is Offer.STARTED:
                started += 1
                index.remove(job_id)
            elif got is Offer.NOT_STARTED:
                # a claim was had but the job did not start: its own trouble, not its
                # autocluster's; the next of its jobs is offered
                self._set_aside(index, job_id, aside)
            else:
                rejected.add(ac)
        for job_id, sig, prio in aside:
            back = self.store.job(job_id)
            if self._index is index and back is not None and back.status is JobStatus.IDLE:
                index.add(job_id, sig, prio)

    @staticmethod
    def _set_aside(index: IdleIndex, job_id: JobId,
                   aside: list[tuple[JobId, Signature | None, float]]) -> None:
        """Out of this pass, back in the index once it is over."""
        entry = index.entry(job_id)
        if entry is not None:
            aside.append((job_id, *entry))
        index.remove(job_id)

    def free_slots(self) -> list[str]:
        out = []
        for s in self.engine.slots.values():
            if s.deleted or s.leaving or s.kind == "dynamic" or s.state is not State.UNCLAIMED:
                continue
            if s.kind == "partitionable" and s.resources.get("Cpus", 0) <= 0:
                continue        # nothing left to carve a job from
            out.append(s.name)
        return out

    def try_start(self, rec: JobRecord) -> bool:
        return self.offer(rec) is Offer.STARTED

    def offer(self, rec: JobRecord) -> Offer:
        """Offer one idle job to the free slots; what came of it."""
        now = self.clock.time()
        candidates = []
        # The job's Requirements and Rank are the user's: against every free slot
        # together they get one evaluation's default budget, not one per slot.
        ctx = self.job_ctx()
        ctx.budget = budget = Budget(self.engine.settings.eval_step_limit,
                                     clock=self.clock.monotonic)
        for name in self.free_slots():
            slot = self.engine.slots[name]
            req = rec.ad.evaluate("Requirements", slot.ad, ctx)
            if budget.exceeded:
                break
            if req is not True:
                continue
            # A partitionable slot that cannot carve this job is not asked: no claim,
            # nothing written.
            if slot.kind == "partitionable" and \
                    isinstance(self.engine.layout.sized(slot.layer, rec.ad, slot.ad), Refusal):
                continue
            rank = number_of(rec.ad.evaluate("Rank", slot.ad, ctx), 0.0)
            if budget.exceeded:
                break
            candidates.append((-rank, slot.slot_id, name))
        if budget.exceeded:
            # Held rather than left idle: an idle job would cost this again on every
            # match cycle, and its owner would never learn why it does not run.
            reason = ("the job's Requirements and Rank exceeded their evaluation budget "
                      f"({budget.steps} steps, {budget.seconds:g} s) when matched")
            log.warning("job %s: %s: held", rec.job_id, reason)
            self.stop_job(rec, JobStatus.HELD, reason, job_policy.HOLD_SYSTEM_POLICY)
            return Offer.HELD
        outcome = Offer.NO_SLOT
        for _, _, name in sorted(candidates):
            claim_id = new_claim_id(self.started_at)
            # this queue is the machine's own schedd: the claim's client is this host
            outputs = self.engine.request_claim(now, claim_id, rec.ad, name,
                                                client=self.engine.hostname)
            self.execute.apply(outputs)
            if not self.engine.has_claim(claim_id):
                over = next((o for o in outputs
                             if isinstance(o, ClaimRefused) and o.over_budget), None)
                if over is not None:
                    # as a Requirements overrun: offered again, it would cost as much
                    # on every pass
                    log.warning("job %s: %s: held", rec.job_id, over.reason)
                    self.stop_job(rec, JobStatus.HELD, over.reason,
                                  job_policy.HOLD_SYSTEM_POLICY)
                    return Offer.HELD
                continue
            # The claim is on disk before the job is started on it.
            # (committed with the job's start, or with the loop's turn: group commit)
            with self.store.deferred():
                self.store.claims.record(claim_id, self.execute.slot_of(claim_id),
                                         "claimed", rec.job_id)
            if not self.execute.activate(rec.job_id, claim_id, name):
                outcome = Offer.NOT_STARTED
                continue    # not activated: the claim went back, the job stays idle
            return Offer.STARTED
        return outcome

    # ------------------------------------------------------------ job policy
    def system_policy(self) -> job_policy.SystemPolicy:
        return job_policy.SystemPolicy.from_config(self.knob)

    def job_ctx(self) -> CallContext:
        # each evaluation of a job's expression under CONDORPY_EVAL_STEP_LIMIT, counted
        # so that job_policy can hold a job whose expression ran out
        return CallContext(now=self.clock.time, tz_offset=self.clock.utc_offset,
                           allowance=Allowance(self.engine.settings.eval_step_limit,
                                               clock=self.clock.monotonic))

    def at_exit(self, ad: ClassAd) -> Outcome | None:
        """The job's on_exit_hold / on_exit_remove (and the system's) once it ended."""
        got = job_policy.at_exit(ad, int(JobStatus.RUNNING), self.system_policy(),
                                 self.job_ctx(), self.clock.time())
        if got is None:
            return None
        return _DECIDED[got.action], got.reason, got.code, got.subcode

    def periodic(self) -> None:
        """The jobs' periodic_hold, periodic_release and periodic_remove (and the
        SYSTEM_PERIODIC_* knobs), every PERIODIC_EXPR_INTERVAL as the schedd does. A
        chunk of the queue per call: while a walk is under way it is due again at once,
        so the loop serves others between chunks of a long queue; once the walk is
        done, the next one is an interval later."""
        if self._walk is None:
            self._walk = self._periodic_walk()
        if next(self._walk, None) is None:
            self._walk = None
            self.next_periodic = self.clock.monotonic() + max(1, self.periodic_interval())
        else:
            self.next_periodic = self.clock.monotonic()

    def _periodic_walk(self) -> Iterator[bool]:
        for chunk in self.store.chunks():
            system, ctx, now = self.system_policy(), self.job_ctx(), self.clock.time()
            for rec in chunk:
                if rec.status in (JobStatus.COMPLETED, JobStatus.REMOVED):
                    if not self.store.left_in_queue(rec):
                        self.store.to_history(rec.job_id)
                    continue
                self._periodic_one(rec, system, ctx, now)
            # each chunk is read when its turn comes: a job changed while others were
            # served is seen as it is then
            yield True
        self.overruns.sweep()

    def job_updated(self, job_id: JobId) -> None:
        """A running job's ad was updated (its usage): its periodic expressions are
        evaluated again at once, as HTCondor's shadow does after a starter's update."""
        rec = self.store.job(job_id)
        if rec is not None and rec.status not in (JobStatus.COMPLETED, JobStatus.REMOVED):
            self._periodic_one(rec, self.system_policy(), self.job_ctx(), self.clock.time())

    def _periodic_one(self, rec: JobRecord, system: job_policy.SystemPolicy,
                      ctx: CallContext, now: float) -> None:
        if self.execute.leaving(rec.job_id):
            return          # already on its way out
        got, costly = job_policy.periodic_remembering(
            rec.ad, int(rec.status), system, ctx, now, job=rec.job_id,
            overruns=self.overruns, running=self.execute.is_running(rec.job_id))
        for over in costly:     # once per version of the ad: not evaluated again
            log.warning("job %s (held): %s; not evaluated again until the job's ad "
                        "changes (condorpy qedit, release)", rec.job_id, over.reason)
        if got is None:
            return
        log.info("job %s: %s (%s)", rec.job_id, got.action.value, got.reason)
        if got.action is job_policy.JobAction.RELEASE:
            self.release(rec, got.reason)
        elif got.action is job_policy.JobAction.HOLD and rec.status is not JobStatus.HELD:
            self.stop_job(rec, JobStatus.HELD, got.reason, got.code, got.subcode)
        elif got.action is job_policy.JobAction.REMOVE:
            self.stop_job(rec, JobStatus.REMOVED, got.reason, 0)


def _prio(rec: JobRecord) -> float:
    return number_of(rec.ad.evaluate("JobPrio"), 0)
