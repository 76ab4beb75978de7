"""Claims and activations: a negotiator's match, a schedd's claim request (a better
claim preempting by RANK, a d-slot carved from a partitionable slot), condor_now's
coalescing, activation, the job's exit, release and keep-alives.

Each handler brings only the slots it touches up to date (:meth:`Cycle.refresh`), not
every slot: events come one at a time, and a burst of claims must stay linear.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from condorpy.classad import ClassAd
from condorpy.errors import PolicyError
from condorpy.policy.cycle import Cycle
from condorpy.policy.engine_state import EngineState
from condorpy.policy.evaluation import Error, Undefined, is_true, load_ad, number
from condorpy.policy.moves import Moves
from condorpy.policy.publish import AdPublisher
from condorpy.policy.readings import Readings
from condorpy.policy.records import (ActivationRefused, Claim, ClaimAccepted, ClaimEnded,
                                     ClaimRefused, ClaimUnknown, CoalesceRefused, CreateSlot,
                                     EvictWhy, Job, JobExited, MatchIgnored, Output,
                                     Retirement, Slot, StartJob, StopBenchmarks)
from condorpy.policy.roster import SlotRoster
from condorpy.policy.slot_eval import SlotEval
from condorpy.policy.states import Activity, State
from condorpy.slots.ads import SlotStatus

# The arrow into Claimed/Cleaning from each activity a job runs in.
_INTO_CLEANING = {Activity.BUSY: "C1", Activity.RETIRING: "C2", Activity.SUSPENDED: "C3"}
from condorpy.slots.model import Refusal

S, A = State, Activity

# What a claimed slot evaluates against its job while the claim lasts (besides START and
# RANK, checked first): each is tried once against the job when it asks for the claim.
CLAIM_POLICY = ("WANT_SUSPEND", "SUSPEND", "CONTINUE", "PREEMPT", "WANT_VACATE", "KILL",
                "MAXJOBRETIREMENTTIME", "MachineMaxVacateTime", "WANT_HOLD")


class ClaimHandling:
    """The claim and activation events of PolicyEngine (which documents each)."""

    def __init__(self, st: EngineState, cycle: Cycle, readings: Readings, ev: SlotEval,
                 moves: Moves, roster: SlotRoster, publisher: AdPublisher) -> None:
        self._st = st
        self._cycle = cycle
        self._readings = readings
        self._ev = ev
        self._moves = moves
        self._roster = roster
        self._publisher = publisher

    # ------------------------------------------------------------------ match
    def match(self, now: float, slot_name: str | None) -> list[Output]:
        st, moves = self._st, self._moves
        self._cycle.advance(now)
        slot = self._pick_slot(slot_name, (S.UNCLAIMED, S.BACKFILL))
        self._cycle.refresh(now, slot)
        if slot.state is S.UNCLAIMED:
            if slot.activity is A.BENCHMARKING:
                st.emit(StopBenchmarks(st.now, slot.name))
            slot.matched_since = now
            moves.go(slot, S.MATCHED, A.IDLE, "6", "matched by the negotiator")
        elif slot.state is S.BACKFILL:
            moves.stop_backfill(slot, "matched", "matched by the negotiator")
        else:
            # The negotiator's view was stale (the slot is the owner's or busy).
            st.emit(MatchIgnored(st.now, slot.name, reason=f"slot is {slot.state.value}/{slot.activity.value}"))
        return st.take_output()

    def _pick_slot(self, name: str | None, states: Iterable[State]) -> Slot:
        st = self._st
        if name is not None:
            return st.slot(name)
        wanted = tuple(states)
        for slot in st.slots.values():
            if not slot.deleted and not slot.leaving and slot.kind != "dynamic" \
                    and slot.state in wanted:
                return slot
        return next(s for s in st.slots.values() if not s.deleted)

    def _job_ad(self, job: Mapping[str, Any] | ClassAd, claim_id: str) -> Any:
        return job if isinstance(job, ClassAd) else load_ad(self._st.backend, job,
                                                            f"claim {claim_id}")

    # ---------------------------------------------------------------- request
    def request_claim(self, now: float, claim_id: str, job: Mapping[str, Any] | ClassAd,
                      slot_name: str | None, client: str | None = None) -> list[Output]:
        st, moves = self._st, self._moves
        self._cycle.advance(now)
        if claim_id in st.claims:
            raise PolicyError(f"claim id {claim_id!r} is already in use")
        job_ad = self._job_ad(job, claim_id)
        slot = self._pick_slot(slot_name, (S.MATCHED, S.UNCLAIMED, S.BACKFILL))
        self._cycle.refresh(now, slot)
        broken = st.broken.get(slot.name)
        if broken is not None:
            st.emit(ClaimRefused(st.now, slot.name, claim=claim_id,
                                 reason=f"slot is broken: {broken.cause.reason}"))
            return st.take_output()
        allowance = st.ctx.allowance
        before = 0 if allowance is None else allowance.exceeded
        ok, why = self._acceptable(slot, job_ad)
        if not ok:
            over_budget = allowance is not None and allowance.exceeded > before
            st.emit(ClaimRefused(st.now, slot.name, claim=claim_id, reason=why,
                                 over_budget=over_budget))
            return st.take_output()
        spent = 0 if allowance is None else allowance.exceeded
        rank = number(st.backend.evaluate(slot.ad, "RANK", job_ad)) or 0.0
        over = self._over_budget(spent, "RANK") or self._policy_over_budget(slot, job_ad)
        if over:
            st.emit(ClaimRefused(st.now, slot.name, claim=claim_id, reason=over,
                                 over_budget=True))
            return st.take_output()
        claim = Claim(claim_id, job_ad, now, rank, now, self._lease(job_ad), client=client)
        if slot.kind == "partitionable":
            self._carve(slot, claim, job_ad)
        elif slot.state in (S.UNCLAIMED, S.MATCHED):
            key = "9" if slot.state is S.MATCHED else "5"
            if slot.activity is A.BENCHMARKING:
                st.emit(StopBenchmarks(st.now, slot.name))
            moves.install_claim(slot, claim)
            st.emit(ClaimAccepted(st.now, slot.name, claim=claim_id))
            moves.go(slot, S.CLAIMED, A.IDLE, key, f"claimed by {claim_id}")
        elif slot.state is S.BACKFILL:
            st.emit(ClaimAccepted(st.now, slot.name, claim=claim_id))
            moves.stop_backfill(slot, "claimed", f"claimed by {claim_id}", claim)
        elif slot.state is S.CLAIMED and slot.claim is not None and rank > slot.claim.rank \
                and slot.pending is None and slot.retirement is None:
            self._preempt_by_rank(slot, claim, rank)
        else:
            st.emit(ClaimRefused(st.now, slot.name, claim=claim_id,
                    reason=f"slot is {slot.state.value}/{slot.activity.value}"))
        self._cycle.settle_one(slot)
        return st.take_output()

    def _preempt_by_rank(self, slot: Slot, claim: Claim, rank: float) -> None:
        """A better claim waits for the current one: at once when idle, else through
        retirement."""
        st, moves = self._st, self._moves
        assert slot.claim is not None
        slot.pending = claim
        st.claims[claim.id] = slot.name
        st.emit(ClaimAccepted(st.now, slot.name, claim=claim.id, preempting=slot.claim.id))
        reason = f"better claim {claim.id} (RANK {rank:g})"
        if slot.activity is A.IDLE:
            slot.evict_why = EvictWhy.RANK
            moves.preempt(slot, "10", reason)
        elif slot.activity is A.BUSY and moves.retirement_over(slot):
            # a job whose retirement time is already used up is vacated at once, not
            # retired first: HTCondor's startd checks retirement's end before anything
            # else once a preempting claim is there
            slot.retirement = Retirement(EvictWhy.RANK, st.now)
            moves.preempt(slot, "H", f"{reason}; no retirement time left")
        else:
            moves.retire(slot, EvictWhy.RANK, reason)

    def _acceptable(self, slot: Slot, job_ad: Any) -> tuple[bool, str]:
        machine = self._st.machine
        if machine.shutting_down:
            return False, "startd is shutting down"
        if slot.leaving:
            return False, "the slot leaves the layout (reconfig)"
        b = self._st.backend
        # The job's ad is the claimant's (a pool's schedd, a hook, a user): an expression
        # of it too costly to evaluate refuses the claim and says so, rather than
        # reading as a plain "not True".
        allowance = self._st.ctx.allowance
        spent = 0 if allowance is None else allowance.exceeded
        # An overrun refuses even where the expression came out True: its Error can
        # turn true through =!= or isError() (START = TARGET.x =!= 0).
        if machine.draining:
            start = machine.drain_start
            ok = start is not None and is_true(b.eval_compiled(b.compile(start), slot.ad,
                                                               job_ad))
            over = self._over_budget(spent, "the drain's START")
            if over or not ok:
                return False, over or "machine is draining"
        else:
            start_v = b.evaluate(slot.ad, "START", job_ad)
            if start_v is Error:
                self._ev.error("START")
            over = self._over_budget(spent, "START")
            if over or not is_true(start_v):
                return False, over or "START is not True for this job"
        spent = 0 if allowance is None else allowance.exceeded
        req = b.evaluate(job_ad, "Requirements", slot.ad)
        over = self._over_budget(spent, "the job's Requirements")
        if over or (req is not Undefined and not is_true(req)):
            return False, over or "the job's Requirements are not True for this slot"
        return True, ""

    def _policy_over_budget(self, slot: Slot, job_ad: Any) -> str:
        """Why the claim is refused when one of the policy expressions the slot will
        evaluate against the job during the claim (:data:`CLAIM_POLICY`, the _VANILLA
        variant where it applies) runs out of its budget against it (an attribute the
        job set that the administrator's PREEMPT reads); else ""."""
        if self._st.ctx.allowance is None:
            return ""
        ev = self._ev
        names = ev.claim_names(slot, job_ad)
        for name in CLAIM_POLICY:
            lc = names.get(name) or name.lower()
            spent = ev.allowance.exceeded
            ev.evaluate(slot.ad, lc, job_ad)
            over = self._over_budget(spent, name if lc == name.lower() else f"{name}_VANILLA")
            if over:
                return over
        return ""

    def _over_budget(self, before: int, what: str) -> str:
        """The refusal's reason when an evaluation since ``before`` ran out of its
        budget, else ""."""
        allowance = self._st.ctx.allowance
        if allowance is None or allowance.exceeded == before:
            return ""
        return (f"{what} exceeded the evaluation budget ({allowance.describe()}) "
                "against this job")

    def _lease(self, job_ad: Any) -> float:
        d = number(self._ev.job_attr(job_ad, "JobLeaseDuration"))
        if d is not None and d > 0:
            return d
        settings = self._st.settings
        return float(settings.max_claim_alives_missed * settings.alive_interval)

    def _carve(self, pslot: Slot, claim: Claim, job_ad: Any) -> None:
        # The slot layer sizes the d-slot (request defaults, MODIFY_REQUEST_EXPR_* rounding,
        # consumption policies), hands out devices (Require<name>) and builds its ad.
        st, roster = self._st, self._roster
        layer = st.layout.carve(pslot.layer, job_ad, st.now, pslot.ad)
        if isinstance(layer, Refusal):
            st.emit(ClaimRefused(st.now, pslot.name, claim=claim.id, reason=layer.reason))
            return
        roster.refresh_resources(pslot)
        sized = layer.resources
        created: dict[str, Any] = {"Cpus": sized.cpus, "Memory": sized.memory_mb,
                                   "Disk": sized.disk_kb}
        for res, amount in sized.custom.items():
            if amount:
                created[res] = amount
        for res, ids in sized.devices.items():
            if ids:
                created[f"Assigned{res}"] = ",".join(ids)
        emitted = len(st.out)
        st.emit(CreateSlot(st.now, pslot.name, name=layer.name,
                           resources=tuple(created.items())))
        try:
            ad = st.layout.new_slot_ad(layer, st.now,
                                       SlotStatus("Claimed", "Idle", st.now),
                                       self._readings.current())
            d = roster.add(layer, ad, parent=pslot.name, state=S.CLAIMED, transition="5",
                           reason=f"carved from {pslot.name} for claim {claim.id}")
        except Exception:
            # The d-slot never came to be: its resources go back to the p-slot and
            # nothing about it is reported (a failed carve once kept them until restart).
            roster.discard(layer)
            del st.out[emitted:]
            roster.refresh_resources(pslot)
            raise
        for attr in st.settings.latch_exprs:
            if attr in pslot.latched:
                d.latched[attr] = pslot.latched[attr]
                st.put(d, f"{attr}Value", pslot.latched[attr])
                st.put(d, f"{attr}Time", int(st.now))
        d.claim = claim
        claim.rank = number(st.backend.evaluate(d.ad, "RANK", job_ad)) or 0.0
        st.claims[claim.id] = d.name
        self._publisher.publish_state(d)
        st.emit(ClaimAccepted(st.now, d.name, claim=claim.id))

    # --------------------------------------------------------------- coalesce
    def coalesce(self, now: float, claim_ids: Iterable[str], new_claim_id: str,
                 job: Mapping[str, Any] | ClassAd, client: str | None = None
                 ) -> list[Output]:
        st = self._st
        self._cycle.advance(now)
        if new_claim_id in st.claims:
            raise PolicyError(f"claim id {new_claim_id!r} is already in use")
        job_ad = self._job_ad(job, new_claim_id)

        def refuse(reason: str, retry: bool = False, where: str = "") -> list[Output]:
            st.emit(CoalesceRefused(st.now, where, claim=new_claim_id, reason=reason,
                                    retry=retry))
            return st.take_output()

        victims: list[Slot] = []
        parent: str | None = None
        for cid in dict.fromkeys(claim_ids):
            slot = st.slots.get(st.claims.get(cid, ""))
            if slot is None or slot.deleted or slot.claim is None or slot.claim.id != cid:
                return refuse("can't find slot with given claim ID")
            self._cycle.refresh(now, slot)
            if slot.state is not S.CLAIMED:
                return refuse("given slot is not claimed", where=slot.name)
            if slot.activity is not A.IDLE:
                # the job may still be on its way out: the schedd asks again
                return refuse("given slot is not idle", retry=True, where=slot.name)
            if slot.kind != "dynamic" or slot.parent is None:
                return refuse("given slot is not dynamic", where=slot.name)
            if parent is not None and slot.parent != parent:
                return refuse("all slots must have the same parent", where=slot.name)
            parent = slot.parent
            victims.append(slot)
        if parent is None:
            return refuse("Unable to coalesce any slots")
        if st.machine.draining or st.machine.shutting_down:
            return refuse("machine is " + ("draining" if st.machine.draining
                                           else "shutting down"), where=parent)
        for slot in victims:
            slot.evict_why = EvictWhy.RELEASE
            self._moves.preempt(slot, "10", f"coalesced into a slot for claim {new_claim_id}")
            self._cycle.settle_one(slot)
        pslot = st.slot(parent)
        claim = Claim(new_claim_id, job_ad, now, 0.0, now, self._lease(job_ad),
                      client=client)
        self._carve(pslot, claim, job_ad)
        self._cycle.settle_one(pslot)
        return st.take_output()

    # ------------------------------------------------------------- activation
    def activate(self, now: float, claim_id: str,
                 job: Mapping[str, Any] | ClassAd | None) -> list[Output]:
        st, ev = self._st, self._ev
        if claim_id in st.ended:
            return self.late(now, claim_id, "activate")
        slot = st.claim_slot(claim_id)
        self._cycle.refresh(now, slot)
        claim = slot.claim
        if claim is None or claim.id != claim_id or slot.state is not S.CLAIMED \
                or slot.activity is not A.IDLE:
            st.emit(ActivationRefused(st.now, slot.name, claim=claim_id, reason="claim is not idle"))
            return st.take_output()
        broken = st.broken.get(slot.name)
        if broken is not None:
            st.emit(ActivationRefused(st.now, slot.name, claim=claim_id,
                                      reason=f"slot is broken: {broken.cause.reason}"))
            return st.take_output()
        if claim.jobs_run > 0 and ev.worklife_over(slot, claim):
            st.emit(ActivationRefused(st.now, slot.name, claim=claim_id,
                    reason="CLAIM_WORKLIFE expired"))
            self._moves.evict(slot, EvictWhy.WORKLIFE, "CLAIM_WORKLIFE expired")
            return st.take_output()
        if job is not None:
            claim.ad = self._job_ad(job, claim_id)
            claim.lease = self._lease(claim.ad)
            claim.universe = None
        claim.job = Job(claim.ad, now, ev.universe(claim))
        claim.jobs_run += 1
        claim.last_alive = now
        st.emit(StartJob(st.now, slot.name, claim=claim_id))
        self._moves.go(slot, S.CLAIMED, A.BUSY, "11", "claim activated")
        self._cycle.settle(slot)
        return st.take_output()

    def job_update(self, now: float, claim_id: str, attrs: Mapping[str, Any]) -> list[Output]:
        """The starter's update of the running job's ad (usage: MemoryUsage,
        ResidentSetSize, DiskUsage, RemoteUserCpu ...), merged into the claim's copy
        of the job ad as HTCondor's startd merges it; the slot's policy (PREEMPT,
        WANT_HOLD, KILL over those attributes) is evaluated again at once."""
        st = self._st
        if claim_id in st.ended or claim_id not in st.claims:
            return []           # the job has gone: a late update changes nothing
        slot = st.claim_slot(claim_id)
        claim = slot.claim
        if claim is None or claim.id != claim_id or claim.job is None:
            return []
        for name, value in attrs.items():
            st.backend.set_value(claim.ad, name, value)
        self._publisher.publish_job_attrs(slot)     # the slot's copies (MY.MemoryUsage)
        self._cycle.refresh(now, slot)
        return st.take_output()

    def job_exit(self, now: float, claim_id: str, exit_code: int | None,
                 cleaning: bool = False) -> list[Output]:
        st, moves = self._st, self._moves
        if claim_id in st.ended:
            return self.late(now, claim_id, "job_exit")
        self._cycle.advance(now)
        slot = st.claim_slot(claim_id)
        self._readings.measure(slot)
        claim = slot.claim
        if claim is None or claim.id != claim_id or claim.job is None:
            return st.take_output()
        job = claim.job
        if slot.activity is A.SUSPENDED and job.suspended_since is not None:
            job.suspended_total += now - job.suspended_since
            job.suspended_since = None
        st.machine.job_ended(moves, slot, job, evicted=slot.state is S.PREEMPTING)
        claim.run_total += job.run_time(now)
        claim.suspend_total += job.suspended_total
        claim.job = None
        code = {} if exit_code is None else {"exit_code": exit_code}
        st.emit(JobExited(st.now, slot.name, claim=claim_id, **code))
        if slot.state is S.PREEMPTING:
            moves.leave_preempting(slot)
        elif cleaning and slot.activity in _INTO_CLEANING:
            # the starter is still winding down: the slot waits in Claimed/Cleaning,
            # and what follows (idle claim, or the eviction that retirement or a
            # preempt asked for) happens once it is reaped
            moves.go(slot, S.CLAIMED, A.CLEANING, _INTO_CLEANING[slot.activity],
                     "job exited; starter cleaning up")
        elif slot.activity is A.RETIRING or (slot.retirement is not None):
            moves.preempt(slot, "18", "job exited during retirement")
        else:
            moves.go(slot, S.CLAIMED, A.IDLE, "12", "job exited")
        self._cycle.settle_one(slot)
        return st.take_output()

    def starter_reaped(self, now: float, claim_id: str) -> list[Output]:
        """The starter of ``claim_id`` is gone (sandbox removed, no process left):
        a slot in Claimed/Cleaning goes back to Claimed/Idle, and a claim that was
        retiring, released or preempted meanwhile is vacated from there."""
        st, moves = self._st, self._moves
        if claim_id in st.ended or claim_id not in st.claims:
            return []
        self._cycle.advance(now)
        slot = st.claim_slot(claim_id)
        if slot.state is not S.CLAIMED or slot.activity is not A.CLEANING:
            return st.take_output()
        moves.go(slot, S.CLAIMED, A.IDLE, "C4", "starter reaped")
        why = slot.evict_why
        if why is not None or slot.retirement is not None:
            # the eviction the slot absorbed while cleaning: an idle claim vacates (10)
            moves.evict(slot, why or EvictWhy.OWNER, "starter reaped; the claim was "
                        "evicted while it cleaned up")
        self._cycle.settle_one(slot)
        return st.take_output()

    # -------------------------------------------------------- release, alive
    def release(self, now: float, claim_id: str) -> list[Output]:
        st = self._st
        if claim_id in st.ended:
            return self.late(now, claim_id, "release")
        slot = st.claim_slot(claim_id)
        self._cycle.refresh(now, slot)
        if slot.pending is not None and slot.pending.id == claim_id:
            slot.pending = None
            st.forget_claim(claim_id)
            st.emit(ClaimEnded(st.now, slot.name, claim=claim_id, why="release"))
            self._cycle.settle(slot)
            return st.take_output()
        self._moves.evict(slot, EvictWhy.RELEASE, "claim released by the schedd")
        self._cycle.settle_one(slot)
        return st.take_output()

    def alive(self, now: float, claim_id: str) -> list[Output]:
        st = self._st
        if claim_id in st.ended:
            return self.late(now, claim_id, "alive")
        self._cycle.advance(now)
        slot = st.claim_slot(claim_id)
        for c in (slot.claim, slot.pending):
            if c is not None and c.id == claim_id:
                c.last_alive = now
        return st.take_output()

    def late(self, now: float, claim_id: str, event: str) -> list[Output]:
        """An event for a claim that has ended (the schedd had not heard yet): noted,
        otherwise ignored, as the startd does."""
        st = self._st
        self._cycle.advance(now)
        st.emit(ClaimUnknown(now, st.ended[claim_id], claim=claim_id, event=event))
        return st.take_output()
