"""The startd policy engine: the slot state machine driven by events.

Pure: every entry point takes the clock value ``now`` and returns the state changes
and actions the daemon must carry out; the daemon reports what happened to them
through further events (``job_exit``, ``benchmarks_done``, ``backfill_exited``).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from condorpy.errors import PolicyError
from condorpy.classad import ClassAd
from condorpy.policy.evaluation import Undefined, is_true, load_ad, number, plain
from condorpy.policy.records import (ActivationRefused, Claim, ClaimAccepted, ClaimEnded,
                                     ClaimRefused, ClaimUnknown, CoalesceRefused, CreateSlot,
                                     EvictWhy, Job, JobExited, MatchIgnored, Output, Slot,
                                     StartBackfill, StartJob, StopBenchmarks)
from condorpy.policy.slot_machine import SlotMachine
from condorpy.policy.states import Activity, State
from condorpy.slots.ads import SlotStatus
from condorpy.slots.model import Refusal

S, A = State, Activity


class PolicyEngine(SlotMachine):
    """All slots of one startd, and the events of claims, jobs and administrators."""

    # ------------------------------------------------------------------ claims
    def match(self, now: float, slot_name: str | None = None) -> list[Output]:
        """The negotiator matched a slot (C/6, or L/32 from Backfill)."""
        self._advance(now)
        slot = self._pick_slot(slot_name, (S.UNCLAIMED, S.BACKFILL))
        self._refresh(now, slot)
        if slot.state is S.UNCLAIMED:
            if slot.activity is A.BENCHMARKING:
                self.emit(StopBenchmarks(self.now, slot.name))
            slot.matched_since = now
            self.go(slot, S.MATCHED, A.IDLE, "6", "matched by the negotiator")
        elif slot.state is S.BACKFILL:
            self._stop_backfill(slot, "matched", "matched by the negotiator")
        else:
            # The negotiator's view was stale (the slot is the owner's or busy).
            self.emit(MatchIgnored(self.now, slot.name, reason=f"slot is {slot.state.value}/{slot.activity.value}"))
        return self.take_output()

    def _pick_slot(self, name: str | None, states: Iterable[State]) -> Slot:
        if name is not None:
            return self._slot(name)
        wanted = tuple(states)
        for slot in self.slots.values():
            if not slot.deleted and not slot.leaving and slot.kind != "dynamic" \
                    and slot.state in wanted:
                return slot
        return next(s for s in self.slots.values() if not s.deleted)

    def request_claim(self, now: float, claim_id: str, job: Mapping[str, Any] | ClassAd,
                      slot_name: str | None = None) -> list[Output]:
        """A schedd asks for a claim with ``job`` as its request ad."""
        self._advance(now)
        if claim_id in self._claims:
            raise PolicyError(f"claim id {claim_id!r} is already in use")
        job_ad = job if isinstance(job, ClassAd) else load_ad(self.backend, job,
                                                               f"claim {claim_id}")
        slot = self._pick_slot(slot_name, (S.MATCHED, S.UNCLAIMED, S.BACKFILL))
        self._refresh(now, slot)
        ok, why = self._acceptable(slot, job_ad)
        if not ok:
            self.emit(ClaimRefused(self.now, slot.name, claim=claim_id, reason=why))
            return self.take_output()
        rank = number(self.backend.evaluate(slot.ad, "RANK", job_ad)) or 0.0
        claim = Claim(claim_id, job_ad, now, rank, now, self._lease(job_ad))
        if slot.kind == "partitionable":
            self._carve(slot, claim, job_ad)
        elif slot.state in (S.UNCLAIMED, S.MATCHED):
            key = "9" if slot.state is S.MATCHED else "5"
            if slot.activity is A.BENCHMARKING:
                self.emit(StopBenchmarks(self.now, slot.name))
            self._install_claim(slot, claim)
            self.emit(ClaimAccepted(self.now, slot.name, claim=claim_id))
            self.go(slot, S.CLAIMED, A.IDLE, key, f"claimed by {claim_id}")
        elif slot.state is S.BACKFILL:
            self.emit(ClaimAccepted(self.now, slot.name, claim=claim_id))
            self._stop_backfill(slot, "claimed", f"claimed by {claim_id}", claim)
        elif slot.state is S.CLAIMED and slot.claim is not None and rank > slot.claim.rank \
                and slot.pending is None and slot.retirement is None:
            slot.pending = claim
            self._claims[claim_id] = slot.name
            self.emit(ClaimAccepted(self.now, slot.name, claim=claim_id, preempting=slot.claim.id))
            if slot.activity is A.IDLE:
                slot.evict_why = EvictWhy.RANK
                self._preempt(slot, "10", f"better claim {claim_id} (RANK {rank:g})")
            else:
                self.retire(slot, EvictWhy.RANK, f"better claim {claim_id} (RANK {rank:g})")
        else:
            self.emit(ClaimRefused(self.now, slot.name, claim=claim_id,
                      reason=f"slot is {slot.state.value}/{slot.activity.value}"))
        self._settle_one(slot)
        return self.take_output()

    def coalesce(self, now: float, claim_ids: Iterable[str], new_claim_id: str,
                 job: Mapping[str, Any] | ClassAd) -> list[Output]:
        """condor_now: a schedd's idle claims on d-slots of one partitionable slot end,
        their resources go back to it, and one d-slot is carved from it for ``job``,
        claimed at once by ``new_claim_id``. As HTCondor's startd does
        (``command_coalesce_slots``), START and RANK are not asked again: the schedd
        holds these resources already; a drain or a shutdown refuses."""
        self._advance(now)
        if new_claim_id in self._claims:
            raise PolicyError(f"claim id {new_claim_id!r} is already in use")
        job_ad = job if isinstance(job, ClassAd) else load_ad(self.backend, job,
                                                               f"claim {new_claim_id}")

        def refuse(reason: str, retry: bool = False, where: str = "") -> list[Output]:
            self.emit(CoalesceRefused(self.now, where, claim=new_claim_id, reason=reason,
                                      retry=retry))
            return self.take_output()

        victims: list[Slot] = []
        parent: str | None = None
        for cid in dict.fromkeys(claim_ids):
            slot = self.slots.get(self._claims.get(cid, ""))
            if slot is None or slot.deleted or slot.claim is None or slot.claim.id != cid:
                return refuse("can't find slot with given claim ID")
            self._refresh(now, slot)
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
        if self.machine.draining or self.machine.shutting_down:
            return refuse("machine is " + ("draining" if self.machine.draining
                                           else "shutting down"), where=parent)
        for slot in victims:
            slot.evict_why = EvictWhy.RELEASE
            self._preempt(slot, "10", f"coalesced into a slot for claim {new_claim_id}")
            self._settle_one(slot)
        pslot = self._slot(parent)
        claim = Claim(new_claim_id, job_ad, now, 0.0, now, self._lease(job_ad))
        self._carve(pslot, claim, job_ad)
        self._settle_one(pslot)
        return self.take_output()

    def _acceptable(self, slot: Slot, job_ad: Any) -> tuple[bool, str]:
        if self.machine.shutting_down:
            return False, "startd is shutting down"
        if slot.leaving:
            return False, "the slot leaves the layout (reconfig)"
        b = self.backend
        if self.machine.draining:
            start = self.machine.drain_start
            if start is None or not is_true(b.eval_compiled(b.compile(start), slot.ad, job_ad)):
                return False, "machine is draining"
        elif not is_true(b.evaluate(slot.ad, "START", job_ad)):
            return False, "START is not True for this job"
        req = b.evaluate(job_ad, "Requirements", slot.ad)
        if req is not Undefined and not is_true(req):
            return False, "the job's Requirements are not True for this slot"
        return True, ""

    def _lease(self, job_ad: Any) -> float:
        d = number(self._job_attr(job_ad, "JobLeaseDuration"))
        if d is not None and d > 0:
            return d
        return float(self.settings.max_claim_alives_missed * self.settings.alive_interval)

    def _carve(self, pslot: Slot, claim: Claim, job_ad: Any) -> None:
        # The slot layer sizes the d-slot (request defaults, MODIFY_REQUEST_EXPR_* rounding,
        # consumption policies), hands out devices (Require<name>) and builds its ad.
        layer = self.layout.carve(pslot.layer, job_ad, self.now, pslot.ad)
        if isinstance(layer, Refusal):
            self.emit(ClaimRefused(self.now, pslot.name, claim=claim.id, reason=layer.reason))
            return
        self._refresh_resources(pslot)
        sized = layer.resources
        created: dict[str, Any] = {"Cpus": sized.cpus, "Memory": sized.memory_mb,
                                   "Disk": sized.disk_kb}
        for res, amount in sized.custom.items():
            if amount:
                created[res] = amount
        for res, ids in sized.devices.items():
            if ids:
                created[f"Assigned{res}"] = ",".join(ids)
        emitted = len(self._out)
        self.emit(CreateSlot(self.now, pslot.name, name=layer.name,
                             resources=tuple(created.items())))
        try:
            ad = self.layout.new_slot_ad(layer, self.now,
                                         SlotStatus("Claimed", "Idle", self.now),
                                         self._measurements())
            d = self._add_slot(layer, ad, parent=pslot.name, state=S.CLAIMED,
                               transition="5",
                               reason=f"carved from {pslot.name} for claim {claim.id}")
        except Exception:
            # The d-slot never came to be: its resources go back to the p-slot and
            # nothing about it is reported (a failed carve once kept them until restart).
            self.slots.pop(layer.name, None)
            self._slot_measured.pop(layer.name, None)
            self.layout.release(layer)
            del self._out[emitted:]
            self._refresh_resources(pslot)
            raise
        for attr in self.settings.latch_exprs:
            if attr in pslot.latched:
                d.latched[attr] = pslot.latched[attr]
                self.put(d, f"{attr}Value", pslot.latched[attr])
                self.put(d, f"{attr}Time", int(self.now))
        d.claim = claim
        claim.rank = number(self.backend.evaluate(d.ad, "RANK", job_ad)) or 0.0
        self._claims[claim.id] = d.name
        self._publish_state(d)
        self.emit(ClaimAccepted(self.now, d.name, claim=claim.id))

    def activate(self, now: float, claim_id: str,
                 job: Mapping[str, Any] | ClassAd | None = None) -> list[Output]:
        """The shadow starts a job on an idle claim (11)."""
        if claim_id in self._ended:
            return self._late(now, claim_id, "activate")
        slot = self._claim_slot(claim_id)
        self._refresh(now, slot)
        claim = slot.claim
        if claim is None or claim.id != claim_id or slot.state is not S.CLAIMED \
                or slot.activity is not A.IDLE:
            self.emit(ActivationRefused(self.now, slot.name, claim=claim_id, reason="claim is not idle"))
            return self.take_output()
        if claim.jobs_run > 0 and self._worklife_over(slot, claim):
            self.emit(ActivationRefused(self.now, slot.name, claim=claim_id,
                      reason="CLAIM_WORKLIFE expired"))
            self.evict(slot, EvictWhy.WORKLIFE, "CLAIM_WORKLIFE expired")
            return self.take_output()
        if job is not None:
            claim.ad = job if isinstance(job, ClassAd) else load_ad(
                self.backend, job, f"claim {claim_id}")
            claim.lease = self._lease(claim.ad)
            claim.universe = None
        claim.job = Job(claim.ad, now, self._universe(claim))
        claim.jobs_run += 1
        claim.last_alive = now
        self.emit(StartJob(self.now, slot.name, claim=claim_id))
        self.go(slot, S.CLAIMED, A.BUSY, "11", "claim activated")
        self._settle(slot)
        return self.take_output()

    def job_exit(self, now: float, claim_id: str, exit_code: int | None = None
                 ) -> list[Output]:
        """The starter of ``claim_id`` exited."""
        if claim_id in self._ended:
            return self._late(now, claim_id, "job_exit")
        self._advance(now)
        slot = self._claim_slot(claim_id)
        self._measure(slot)
        claim = slot.claim
        if claim is None or claim.id != claim_id or claim.job is None:
            return self.take_output()
        job = claim.job
        if slot.activity is A.SUSPENDED and job.suspended_since is not None:
            job.suspended_total += now - job.suspended_since
            job.suspended_since = None
        self.machine.job_ended(self, slot, job, evicted=slot.state is S.PREEMPTING)
        claim.run_total += job.run_time(now)
        claim.suspend_total += job.suspended_total
        claim.job = None
        code = {} if exit_code is None else {"exit_code": exit_code}
        self.emit(JobExited(self.now, slot.name, claim=claim_id, **code))
        if slot.state is S.PREEMPTING:
            self._leave_preempting(slot)
        elif slot.activity is A.RETIRING or (slot.retirement is not None):
            self._preempt(slot, "18", "job exited during retirement")
        else:
            self.go(slot, S.CLAIMED, A.IDLE, "12", "job exited")
        if not slot.deleted:
            self._settle(slot)
        self.machine.after_cycle(self)
        return self.take_output()

    def release(self, now: float, claim_id: str) -> list[Output]:
        """The schedd releases a claim (or withdraws a pending better claim)."""
        if claim_id in self._ended:
            return self._late(now, claim_id, "release")
        slot = self._claim_slot(claim_id)
        self._refresh(now, slot)
        if slot.pending is not None and slot.pending.id == claim_id:
            slot.pending = None
            self._forget_claim(claim_id)
            self.emit(ClaimEnded(self.now, slot.name, claim=claim_id, why="release"))
            self._settle(slot)
            return self.take_output()
        self.evict(slot, EvictWhy.RELEASE, "claim released by the schedd")
        self._settle_one(slot)
        return self.take_output()

    def alive(self, now: float, claim_id: str) -> list[Output]:
        """A keep-alive from the schedd renews the claim lease."""
        if claim_id in self._ended:
            return self._late(now, claim_id, "alive")
        self._advance(now)
        slot = self._claim_slot(claim_id)
        for c in (slot.claim, slot.pending):
            if c is not None and c.id == claim_id:
                c.last_alive = now
        return self.take_output()

    def vacate(self, now: float, slot_name: str | None = None, fast: bool = False
               ) -> list[Output]:
        """condor_vacate: give slots back to the owner, no retirement."""
        self._cycle(now)
        targets = [self._slot(slot_name)] if slot_name else \
            [s for s in self.slots.values() if not s.deleted]
        for slot in targets:
            self.vacate_slot(slot, fast, "condor_vacate")
        self._settle_all()
        return self.take_output()

    def benchmarks_done(self, now: float, slot_name: str) -> list[Output]:
        self._advance(now)
        slot = self._slot(slot_name)
        # Never 0: RUNBENCHMARKS is usually "LastBenchmark == 0" and a virtual clock
        # may well start at 0.
        self.put(slot, "LastBenchmark", max(int(now), 1))
        if slot.state is S.UNCLAIMED and slot.activity is A.BENCHMARKING:
            self.go(slot, S.UNCLAIMED, A.IDLE, "4", "benchmarks done")
        return self.take_output()

    def backfill_started(self, now: float, slot_name: str) -> list[Output]:
        self._advance(now)
        slot = self._slot(slot_name)
        if slot.state is S.BACKFILL and slot.activity is A.IDLE and slot.backfill_next is None:
            self.go(slot, S.BACKFILL, A.BUSY, "26", "backfill client running")
        return self.take_output()

    def backfill_exited(self, now: float, slot_name: str) -> list[Output]:
        self._advance(now)
        slot = self._slot(slot_name)
        self._measure(slot)
        if slot.state is S.BACKFILL:
            if slot.activity is A.KILLING:
                self.go(slot, S.BACKFILL, A.IDLE, "29", "backfill client gone")
                self._settle(slot)
            elif slot.activity is A.BUSY:
                self.go(slot, S.BACKFILL, A.IDLE, "27", "backfill client exited")
                self.emit(StartBackfill(self.now, slot.name))
        return self.take_output()

    # ------------------------------------------------------ machine-wide hooks
    def drain(self, now: float, how: str = "graceful", on_completion: str = "resume",
              reason: str | None = None, request_id: str | None = None,
              check: str | None = None, start: str | None = None) -> list[Output]:
        self._cycle(now)
        self.machine.begin_drain(self, how, on_completion, reason, request_id, check, start)
        self._settle_all()
        return self.take_output()

    def cancel_drain(self, now: float, request_id: str | None = None) -> list[Output]:
        self._cycle(now)
        self.machine.cancel_drain(self, request_id)
        self._settle_all()
        return self.take_output()

    def off(self, now: float, how: str = "graceful") -> list[Output]:
        self._cycle(now)
        self.machine.begin_shutdown(self, how)
        self._settle_all()
        return self.take_output()

    # ---------------------------------------------------------------- reading
    def _late(self, now: float, claim_id: str, event: str) -> list[Output]:
        """An event for a claim that has ended (the schedd had not heard yet): noted,
        otherwise ignored, as the startd does."""
        self._advance(now)
        self.emit(ClaimUnknown(now, self._ended[claim_id], claim=claim_id, event=event))
        return self.take_output()

    def claim_ids(self) -> list[str]:
        """Ids of every live claim (including better claims waiting), oldest first."""
        return list(self._claims)

    def has_claim(self, claim_id: str) -> bool:
        return claim_id in self._claims

    def has_running_job(self, claim_id: str) -> bool:
        """Whether the claim ``claim_id`` exists and has a job running."""
        name = self._claims.get(claim_id)
        slot = self.slots.get(name or "")
        return slot is not None and slot.claim is not None and slot.claim.id == claim_id \
            and slot.claim.job is not None

    def ads(self) -> list[ClassAd]:
        """Every live slot's ad as it would be advertised now (copies)."""
        out = []
        self._cross_slot_attrs([s for s in self.slots.values() if not s.deleted])
        for slot in self.slots.values():
            if slot.deleted:
                continue
            self._measure(slot)
            self._publish_counters(slot)
            self.put(slot, "MyCurrentTime", int(self.now))
            out.append(slot.ad.copy())
        return out

    def snapshot(self, names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """Every live slot's ad as plain values (expressions evaluated in the slot)."""
        out: dict[str, dict[str, Any]] = {}
        b = self.backend
        self._cross_slot_attrs([s for s in self.slots.values() if not s.deleted])
        for slot in self.slots.values():
            if slot.deleted:
                continue
            self._measure(slot)
            self._publish_counters(slot)
            self.put(slot, "MyCurrentTime", int(self.now))
            keys = list(names) if names is not None else list(b.names(slot.ad))
            out[slot.name] = {k: plain(b.evaluate(slot.ad, k, None)) for k in keys}
        return out
