"""One policy step per state: what a slot in Owner, Unclaimed, Matched, Claimed,
Preempting, Backfill or Drained does at ``now``, given its policy expressions.

A step makes at most one move (through :class:`condorpy.policy.moves.Moves`, checked
against the manual's transitions); :meth:`StateSteps.settle` repeats steps until the
slot stays where it is.
"""

from __future__ import annotations

from typing import Callable

from condorpy.policy.engine_state import EngineState
from condorpy.policy.evaluation import Error, is_true
from condorpy.policy.moves import Moves
from condorpy.policy.quiet import QuietSlots
from condorpy.policy.reads import ClockReads
from condorpy.policy.records import (Claim, EvictWhy, KillStarter, RunBenchmarks, Slot,
                                     StartBackfill, StopBenchmarks)
from condorpy.policy.slot_eval import SlotEval
from condorpy.policy.states import Activity, State

S, A = State, Activity
_MAX_SETTLE = 12                            # transitions one slot may take in one cycle
# Enum members bound once: reading State.CLAIMED costs a descriptor call each time, and
# the cycle's per-slot path tests these for every slot.
_CLAIMED, _IDLE, _BUSY = S.CLAIMED, A.IDLE, A.BUSY


class StateSteps:
    """The per-state steps of the slot state machine."""

    def __init__(self, st: EngineState, ev: SlotEval, moves: Moves,
                 quiet: QuietSlots | None = None) -> None:
        self._st = st
        # without one, every busy slot is evaluated every cycle
        self._quiet = self.quiet = quiet or QuietSlots(ClockReads(lambda: st.now), False)
        self._ev = ev
        self._moves = moves
        # step by state, looked up once per step instead of an if-chain
        self._steps: dict[State, Callable[[Slot], None]] = {
            S.OWNER: self.owner, S.UNCLAIMED: self.unclaimed, S.MATCHED: self.matched,
            S.CLAIMED: self.claimed, S.PREEMPTING: self.preempting,
            S.BACKFILL: self.backfill, S.DRAINED: self.drained}

    def settle(self, slot: Slot) -> None:
        """Step ``slot`` until it stays (at most _MAX_SETTLE moves)."""
        # The first step outside the loop: most slots do not move in a cycle.
        st, ac = slot.state, slot.activity
        if st is _CLAIMED:  # the common case, without hashing an Enum (Python code)
            self.claimed(slot)
        else:
            self._steps[st](slot)
        if slot.deleted or (slot.state is st and slot.activity is ac):
            return
        steps = self._steps
        for _ in range(_MAX_SETTLE - 1):
            st, ac = slot.state, slot.activity
            if st is _CLAIMED:
                self.claimed(slot)
            else:
                steps[st](slot)
            if slot.deleted or (slot.state is st and slot.activity is ac):
                return

    # ------------------------------------------------------------------ steps
    def owner(self, slot: Slot) -> None:
        machine = self._st.machine
        if machine.draining and slot.kind != "dynamic":
            self._moves.go(slot, S.DRAINED, A.RETIRING, "36", "draining")
        elif not self._ev.is_owner(slot) and not machine.shutting_down:
            self._moves.go(slot, S.UNCLAIMED, A.IDLE, "1", "IS_OWNER is not True")

    def matched(self, slot: Slot) -> None:
        st = self._st
        if self._ev.start_locally_false(slot):
            self._moves.to_owner_from_matched(slot, "START is locally False")
        elif slot.matched_since is not None and \
                st.now - slot.matched_since >= st.settings.match_timeout:
            self._moves.to_owner_from_matched(slot, "MATCH_TIMEOUT expired")

    def drained(self, slot: Slot) -> None:
        """Drained slots move together: MachineWide.after_cycle finishes draining."""

    def unclaimed(self, slot: Slot) -> None:
        st, ev, go = self._st, self._ev, self._moves.go
        machine = st.machine
        if machine.draining and slot.kind != "dynamic":
            go(slot, S.DRAINED, A.RETIRING, "37", "draining")
        elif ev.is_owner(slot) or machine.shutting_down:
            if slot.activity is A.BENCHMARKING:
                st.emit(StopBenchmarks(st.now, slot.name))
            go(slot, S.OWNER, A.IDLE, "2", "IS_OWNER is True")
        elif slot.activity is A.IDLE:
            if is_true(ev.eval(slot, "RUNBENCHMARKS", False)):
                go(slot, S.UNCLAIMED, A.BENCHMARKING, "3", "RUNBENCHMARKS is True")
                st.emit(RunBenchmarks(st.now, slot.name))
            elif st.settings.enable_backfill and slot.kind != "dynamic" and \
                    is_true(ev.eval(slot, "START_BACKFILL", False)):
                go(slot, S.BACKFILL, A.IDLE, "7", "START_BACKFILL is True")
                st.emit(StartBackfill(st.now, slot.name))

    def claimed(self, slot: Slot) -> None:
        claim = slot.claim
        assert claim is not None
        ac = slot.activity
        if ac is A.CLEANING:
            return      # no policy moves a slot whose starter is winding down
        moves = self._moves
        if self._st.now - claim.last_alive > claim.lease:
            moves.evict(slot, EvictWhy.LEASE, "claim lease expired", retire=False)
            return
        ev = self._ev
        if ac is _IDLE:
            if ev.start_locally_false(slot):
                moves.evict(slot, EvictWhy.OWNER, "START is locally False")
            elif ev.worklife_over(slot, claim) and claim.jobs_run > 0:
                moves.evict(slot, EvictWhy.WORKLIFE, "CLAIM_WORKLIFE expired")
            return
        if ac is _BUSY:
            names = ev.plain_lc if not ev.has_vanilla else ev.names_for(slot)
            quiet = self._quiet
            if not quiet.enabled:
                self._act(slot, claim, self._busy(slot, claim, names))
                return
            now = self._st.now
            if quiet.still_quiet(slot, claim, slot.quiet, now):
                return
            rec = quiet.start(slot, claim)
            try:
                move = self._busy(slot, claim, names)
            finally:
                if rec is not None:
                    rec.close()
            if move is None and rec is not None:
                quiet.keep(slot, claim, names, rec, now)
            else:
                slot.quiet = None
                self._act(slot, claim, move)
            return
        if ac is A.RETIRING:
            self._retiring(slot)
        elif ac is A.SUSPENDED:
            self._suspended(slot)

    def _busy(self, slot: Slot, claim: Claim, names: dict[str, str]) -> str | None:
        """What a busy slot does now, evaluated without moving it (so that what the
        evaluations read can be recorded): "suspend", "preempt", "error" (nothing,
        but an expression was ERROR, which is counted) or None (nothing)."""
        # eval and is_true inline for the common case: every busy slot, every cycle
        # (a job's attribute these read that runs out of its budget is an ERROR)
        ev = self._ev
        allowance = ev.allowance
        spent = allowance.exceeded
        erred = False
        v = ev.evaluate(slot.ad, names["WANT_SUSPEND"], claim.ad)
        if v is Error or allowance.exceeded != spent:
            v = ev.error("WANT_SUSPEND")
            erred = True
        if v is True or (v is not False and is_true(v)):
            v = ev.eval(slot, "SUSPEND")
            if is_true(v):
                return "suspend"
            return "error" if erred or v is Error else None
        v = ev.evaluate(slot.ad, names["PREEMPT"], claim.ad)
        if v is Error or allowance.exceeded != spent:
            v = ev.error("PREEMPT")
            erred = True
        if v is True or (v is not False and is_true(v)):
            return "preempt"
        return "error" if erred else None

    def _act(self, slot: Slot, claim: Claim, move: str | None) -> None:
        if move == "suspend":
            self._moves.suspend(slot, "14", "SUSPEND is True")
        elif move == "preempt":
            if claim.job is not None:
                claim.job.preempt_was_true = True
            self._moves.retire(slot, EvictWhy.OWNER, "PREEMPT is True")

    def _retiring(self, slot: Slot) -> None:
        ev, moves = self._ev, self._moves
        r = slot.retirement
        if r is not None and r.why is EvictWhy.RANK and slot.pending is None:
            slot.retirement = None
            moves.go(slot, S.CLAIMED, A.BUSY, "19", "preempting claim went away")
            return
        job = slot.claim.job if slot.claim is not None else None
        if job is not None and not job.preempt_was_true and is_true(ev.eval(slot, "PREEMPT")):
            # retiring for another reason (a drain): PREEMPT turning true now still
            # decides whether the eviction is a hold (WANT_HOLD), as in HTCondor
            job.preempt_was_true = True
        # Retirement's end first, as HTCondor's startd checks it: a slot whose
        # retirement is over is vacated even if SUSPEND has just become true.
        if moves.retirement_over(slot):
            moves.preempt(slot, "18", "retirement time over")
            return
        if is_true(ev.eval(slot, "WANT_SUSPEND")) and is_true(ev.eval(slot, "SUSPEND")):
            moves.suspend(slot, "20", "SUSPEND is True")

    def _suspended(self, slot: Slot) -> None:
        ev, moves = self._ev, self._moves
        r = slot.retirement
        # A retirement for a better claim that has gone away no longer counts.
        retiring = r is not None and (r.why is not EvictWhy.RANK or slot.pending is not None)
        # The order of HTCondor's startd: retirement over (17, resuming the job on the
        # way out); PREEMPT, unless it has already been true for this claim (16:
        # resumed to retire, even with no retirement time left, which 18 then ends);
        # then CONTINUE.
        if retiring and moves.retirement_over(slot):
            moves.preempt(slot, "17", "retirement time over while suspended")
        elif (r is None or r.why is not EvictWhy.OWNER) and \
                is_true(ev.eval(slot, "PREEMPT")):
            if slot.claim is not None and slot.claim.job is not None:
                slot.claim.job.preempt_was_true = True
            moves.retire_claim(slot, EvictWhy.OWNER, "PREEMPT is True")
        elif is_true(ev.eval(slot, "CONTINUE")):
            if retiring:
                moves.go(slot, S.CLAIMED, A.RETIRING, "16", "CONTINUE is True")
            else:
                slot.retirement = None
                moves.go(slot, S.CLAIMED, A.BUSY, "15", "CONTINUE is True")

    def preempting(self, slot: Slot) -> None:
        st, moves = self._st, self._moves
        claim = slot.claim
        if claim is None or claim.job is None:
            moves.leave_preempting(slot)
            return
        if slot.activity is A.VACATING:
            if is_true(self._ev.eval(slot, "KILL")):
                moves.kill(slot, "21", "KILL is True")
                return
            if not claim.job.hard_killed and slot.vacate_deadline is not None and \
                    st.now >= slot.vacate_deadline:
                moves.escalate(slot)
                return
        if claim.job.hard_killed:
            if not slot.starter_killed and slot.killing_since is not None and \
                    st.now - slot.killing_since >= st.settings.killing_timeout:
                slot.starter_killed = True
                st.emit(KillStarter(st.now, slot.name, claim=claim.id,
                                    reason="KILLING_TIMEOUT expired"))

    def backfill(self, slot: Slot) -> None:
        st, moves = self._st, self._moves
        if slot.activity is A.BUSY:
            if st.machine.draining or st.machine.shutting_down:
                moves.stop_backfill(slot, "owner", "machine is draining or shutting down")
            elif is_true(self._ev.eval(slot, "EVICT_BACKFILL", False)):
                moves.stop_backfill(slot, "owner", "EVICT_BACKFILL is True")
        elif slot.activity is A.IDLE:
            nxt = slot.backfill_next
            if nxt == "owner":
                slot.backfill_next = None
                moves.go(slot, S.OWNER, A.IDLE, "30", "backfill client gone")
            elif nxt == "matched":
                slot.backfill_next = None
                slot.matched_since = st.now
                moves.go(slot, S.MATCHED, A.IDLE, "32", "matched; backfill client gone")
            elif nxt == "claimed" and slot.backfill_claim is not None:
                claim, slot.backfill_claim, slot.backfill_next = slot.backfill_claim, None, None
                moves.install_claim(slot, claim)
                moves.go(slot, S.CLAIMED, A.IDLE, "31", "claimed; backfill client gone")
