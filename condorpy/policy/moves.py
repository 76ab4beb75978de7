"""The moves of a slot: every change of state or activity goes through :meth:`Moves.go`,
checked against the manual's transitions (:func:`condorpy.policy.states.check_move`),
and the compound moves built on it: retirement, eviction, preemption (vacate, then
kill), leaving Preempting, and stopping a backfill client.

The per-state steps, the claim events and the machine-wide policy
(:mod:`condorpy.policy.machine_wide`, through its :class:`SlotMoves` protocol, which
this class satisfies) all move slots through here.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from condorpy.policy import vacate_reasons
from condorpy.policy.engine_state import EngineState
from condorpy.policy.evaluation import Backend, is_false, is_true, number
from condorpy.policy.publish import AdPublisher
from condorpy.policy.records import (Action, Claim, ClaimEnded, ClaimRefused, Continue,
                                     EvictWhy, HardKill, Job, KillBackfill, Retirement,
                                     Slot, SoftKill, Suspend)
from condorpy.policy.roster import SlotRoster
from condorpy.policy.settings import PolicySettings
from condorpy.policy.slot_eval import SlotEval
from condorpy.policy.states import Activity, State, check_move

S, A = State, Activity
_SUSPENDED = A.SUSPENDED


class Moves:
    """Moves slots between states and activities, emitting the actions each needs."""

    def __init__(self, st: EngineState, ev: SlotEval, publisher: AdPublisher,
                 roster: SlotRoster, settle: Callable[[Slot], None]) -> None:
        self._st = st
        self._ev = ev
        self._publisher = publisher
        self._roster = roster
        # The per-state steps, which themselves move slots through here: a backfill
        # slot told to stop while its client is already gone moves on at once.
        self._settle = settle

    # ---------------------------------------- what the machine-wide policy reads
    @property
    def now(self) -> float:
        return self._st.now

    @property
    def slots(self) -> dict[str, Slot]:
        return self._st.slots

    @property
    def backend(self) -> Backend:
        return self._st.backend

    @property
    def settings(self) -> PolicySettings:
        return self._st.settings

    def emit(self, action: Action) -> None:
        self._st.out.append(action)

    def put(self, slot: Slot, name: str, value: Any) -> None:
        self._st.put(slot, name, value)

    def put_expr(self, slot: Slot, name: str, text: str) -> None:
        self._st.put_expr(slot, name, text)

    def publish_requirements(self, slot: Slot) -> None:
        self._publisher.publish_requirements(slot)

    # ------------------------------------------------------------------- go
    def go(self, slot: Slot, state: State, activity: Activity, key: str, reason: str) -> None:
        """Move ``slot`` along transition ``key`` of the manual's diagrams; a move the
        table does not list is a bug, and raises."""
        check_move(key, slot.state, slot.activity, state, activity, slot.name)
        st = self._st
        now = st.now
        prev = f"{slot.state.value}{slot.activity.value}"
        slot.totals[prev] = slot.totals.get(prev, 0.0) + now - slot.entered_activity
        claim = slot.claim
        job = claim.job if claim else None
        if job is not None and slot.activity is _SUSPENDED and activity is not _SUSPENDED:
            # Every way out of Suspended resumes the job first (HTCondor's startd does
            # so on leaving the activity, whatever comes next): the starter, and through
            # it the shadow, hear of it before any eviction.
            assert claim is not None
            st.emit(Continue(now, slot.name, claim=claim.id))
            if job.suspended_since is not None:
                job.suspended_total += now - job.suspended_since
                job.suspended_since = None
        if state is not slot.state:
            slot.entered_state = now
        slot.state, slot.activity, slot.entered_activity = state, activity, now
        if job is not None and activity is _SUSPENDED:
            job.suspended_since = now
        if job is not None and claim is not None and \
                (state is S.PREEMPTING or activity is A.RETIRING):
            self._note_vacate(slot, claim, job, reason)
        self._publisher.publish_state(slot)
        self._publisher.publish_requirements(slot)
        st.emit_state(slot, key, reason)

    def _note_vacate(self, slot: Slot, claim: Claim, job: Job, reason: str) -> None:
        """Record why the job is being interrupted, as HTCondor's startd does when it
        decides to: the latest cause wins, and a move that only carries an
        interruption on (KILL, retirement over) keeps the cause already recorded."""
        r = slot.retirement
        why = r.why if slot.activity is A.RETIRING and r is not None else \
            (slot.evict_why or (r.why if r is not None else None))
        pending = slot.pending
        v = vacate_reasons.for_eviction(
            why, reason, rank_higher=None if pending is None else pending.rank > claim.rank)
        if v is not None and (job.vacate is None or v is not vacate_reasons.KILL):
            job.vacate = (v.reason, int(v.code), v.subcode)

    def install_claim(self, slot: Slot, claim: Claim) -> None:
        slot.claim = claim
        slot.matched_since = None
        self._st.claims[claim.id] = slot.name

    # ------------------------------------------------------------ retirement
    def _max_retirement(self, slot: Slot) -> float:
        claim = slot.claim
        if claim is None or claim.job is None:
            return 0.0
        r = slot.retirement
        if r is not None and r.override is not None:
            return r.override
        machine = number(self._ev.eval(slot, "MAXJOBRETIREMENTTIME"))
        mret = max(machine or 0.0, 0.0)
        own = number(self._st.backend.evaluate(claim.ad, "MaxJobRetirementTime", slot.ad))
        if own is not None and own < mret:
            mret = max(own, 0.0)
        return mret

    def retirement_left(self, slot: Slot) -> float:
        claim = slot.claim
        if claim is None or claim.job is None:
            return 0.0
        r = slot.retirement
        if r is not None and r.deadline is not None:
            return r.deadline - self._st.now
        return self._max_retirement(slot) - claim.job.run_time(self._st.now)

    def vacate_grant(self, slot: Slot) -> float:
        """Seconds of soft-kill time: MachineMaxVacateTime, the job's JobMaxVacateTime,
        and retirement time converted to vacate time."""
        claim = slot.claim
        if claim is None:
            return 0.0
        machine = number(self._ev.eval(slot, "MachineMaxVacateTime")) or 0.0
        job = number(self._st.backend.evaluate(claim.ad, "JobMaxVacateTime", slot.ad))
        if job is None:
            return machine
        if job <= machine:
            return max(job, 0.0)
        left = self.retirement_left(slot) if slot.state is S.CLAIMED else 0.0
        if math.isinf(left):
            return job
        return max(machine, min(job, left))

    def retirement_over(self, slot: Slot) -> bool:
        """No retirement time left beyond what vacating grants."""
        return self.retirement_left(slot) <= self.vacate_grant(slot)

    # ------------------------------------------------------------------ moves
    def suspend(self, slot: Slot, key: str, reason: str) -> None:
        assert slot.claim is not None
        self.emit(Suspend(self._st.now, slot.name, claim=slot.claim.id))
        self.go(slot, S.CLAIMED, A.SUSPENDED, key, reason)

    def retire(self, slot: Slot, why: EvictWhy, reason: str, *,
               override: float | None = None) -> None:
        """Claimed/Busy -> Claimed/Retiring (13); other activities handled in place."""
        if slot.retirement is None or slot.retirement.why is EvictWhy.RANK:
            slot.retirement = Retirement(why, self._st.now, override=override)
        elif override is not None:
            slot.retirement.override = override
        if slot.activity is A.BUSY:
            self.go(slot, S.CLAIMED, A.RETIRING, "13", reason)

    def retire_claim(self, slot: Slot, why: EvictWhy, reason: str, *,
                     override: float | None = None) -> None:
        """Irreversible retirement of a claimed slot (PREEMPT, graceful condor_vacate, a
        quick drain with ``override`` 0): a busy job retires (13), a suspended one is
        resumed to retire (16), and once no retirement time is left beyond the vacate
        time the job is vacated (18). An idle claim has nothing to retire and is
        vacated at once (10)."""
        if slot.state is not S.CLAIMED or slot.claim is None:
            return
        if slot.claim.job is None:
            self.evict(slot, why, reason)
            return
        self.retire(slot, why, reason, override=override)
        if slot.activity is _SUSPENDED:
            self.go(slot, S.CLAIMED, A.RETIRING, "16", reason)
        if slot.activity is A.RETIRING and self.retirement_over(slot):
            self.preempt(slot, "18", f"{reason}; no retirement time left")

    def evict(self, slot: Slot, why: EvictWhy, reason: str, *, retire: bool = True,
              fast: bool = False) -> None:
        """Take the claim away: through retirement when a job runs and ``retire``."""
        slot.evict_why = why if why is not EvictWhy.RANK else slot.evict_why
        if slot.state is not S.CLAIMED:
            return
        if slot.activity is A.CLEANING:
            # absorbed: the starter's reaping vacates the claim (evict_why is set)
            if why is EvictWhy.RANK:
                slot.evict_why = why
            return
        job = slot.claim.job if slot.claim else None
        if job is None:
            self.preempt(slot, "10", reason, fast=fast)
        elif fast:
            self.preempt(slot, "Hk", reason, fast=True)
        elif retire:
            self.retire(slot, why, reason)
            if slot.activity is A.RETIRING and self.retirement_over(slot):
                self.preempt(slot, "18", reason)
        else:
            self.preempt(slot, "H", reason)

    def preempt(self, slot: Slot, key: str, reason: str, fast: bool = False) -> None:
        """Enter Preempting: Vacating when WANT_VACATE, else Killing."""
        now = self._st.now
        claim = slot.claim
        if slot.evict_why is None:
            r = slot.retirement
            slot.evict_why = r.why if r is not None else EvictWhy.OWNER
        job = claim.job if claim else None
        grant = self.vacate_grant(slot) if job else 0.0
        want_vacate = not fast and (job is None or
                                    is_true(self._ev.eval(slot, "WANT_VACATE")))
        if want_vacate:
            self.go(slot, S.PREEMPTING, A.VACATING, key, reason)
            if job is not None and claim is not None:
                slot.vacate_deadline = now + grant
                job.soft_killed = True
                hold = self._hold(slot, job)
                self.emit(SoftKill(now, slot.name, claim=claim.id,
                                   signal=self._kill_sig(claim), timeout=grant,
                                   hold_reason=hold[0] if hold else None,
                                   hold_subcode=hold[1] if hold else None))
        else:
            self.go(slot, S.PREEMPTING, A.KILLING, key if key != "H" else "Hk", reason)
            self._hard_kill(slot)

    def _hold(self, slot: Slot, job: Job) -> tuple[str, int] | None:
        """Whether this eviction holds the job: PREEMPT was true while it ran and
        WANT_HOLD is true now (HTCondor evaluates it on entering Preempting). The
        reason is WANT_HOLD_REASON, or what HTCondor's startd says without one; the
        subcode is WANT_HOLD_SUBCODE, else 0."""
        if job.hold is not None or not job.preempt_was_true:
            return job.hold
        if not is_true(self._ev.eval(slot, "WANT_HOLD")):
            return None
        reason = self._ev.eval(slot, "WANT_HOLD_REASON")
        if not isinstance(reason, str) or not reason:
            text = self._st.settings.expr_for("WANT_HOLD", slot.slot_id) or "False"
            reason = ("The startd put this job on hold.  (At preemption time, WANT_HOLD "
                      f"evaluated to true: WANT_HOLD = {text})")
        sub = number(self._ev.eval(slot, "WANT_HOLD_SUBCODE"))
        job.hold = (reason, int(sub) if sub is not None else 0)
        return job.hold

    def _kill_sig(self, claim: Claim) -> str:
        sig = self._ev.job_attr(claim.ad, "KillSig")
        return sig if isinstance(sig, str) else "SIGTERM"

    def kill(self, slot: Slot, key: str, reason: str) -> None:
        self.go(slot, S.PREEMPTING, A.KILLING, key, reason)
        self._hard_kill(slot)

    def escalate(self, slot: Slot) -> None:
        """The vacate time is over: hard-kill the job, the slot staying in
        Preempting/Vacating. HTCondor's startd leaves that escalation to the starter's
        own timer; only KILL moves the slot to Killing (21)."""
        self._hard_kill(slot)

    def _hard_kill(self, slot: Slot) -> None:
        claim = slot.claim
        slot.killing_since = self._st.now
        slot.starter_killed = False
        if claim is not None and claim.job is not None:
            claim.job.hard_killed = True
            hold = self._hold(slot, claim.job)
            self.emit(HardKill(self._st.now, slot.name, claim=claim.id, signal="SIGKILL",
                               hold_reason=hold[0] if hold else None,
                               hold_subcode=hold[1] if hold else None))

    def leave_preempting(self, slot: Slot) -> None:
        """The job is gone: the better claim takes the slot, else the owner does."""
        st = self._st
        killing = slot.activity is A.KILLING
        old = slot.claim
        if old is not None:
            st.forget_claim(old.id)
            self.emit(ClaimEnded(st.now, slot.name, claim=old.id,
                                 why=(slot.evict_why or EvictWhy.OWNER).value))
        slot.claim = None
        slot.retirement = None
        slot.vacate_deadline = slot.killing_since = None
        nxt = slot.pending
        slot.pending = None
        why = slot.evict_why
        slot.evict_why = None
        # The better claim takes over whatever ended the current one (PREEMPT, a
        # vacate, the lease), unless START refuses its job (HTCondor's startd asks only
        # whether START is false for it) or a drain or a shutdown takes the slot.
        refusal = ""
        if nxt is not None:
            if why in (EvictWhy.DRAIN, EvictWhy.SHUTDOWN) or st.machine.draining \
                    or st.machine.shutting_down:
                refusal = f"the slot was taken back ({(why or EvictWhy.OWNER).value})"
            elif is_false(st.backend.evaluate(slot.ad, "START", nxt.ad)):
                refusal = "START is False for its job"
        if nxt is not None and not refusal:
            self.install_claim(slot, nxt)
            self.go(slot, S.CLAIMED, A.IDLE, "24" if killing else "23",
                    f"preempted for the better claim {nxt.id}")
            return
        if nxt is not None:
            st.forget_claim(nxt.id)
            self.emit(ClaimRefused(st.now, slot.name, claim=nxt.id, reason=refusal))
        self.go(slot, S.OWNER, A.IDLE, "25" if killing else "22",
                f"claim ended ({(why or EvictWhy.OWNER).value})")
        if slot.kind == "dynamic":
            self._roster.delete_dslot(slot)

    def to_owner_from_matched(self, slot: Slot, reason: str) -> None:
        slot.matched_since = None
        self.go(slot, S.OWNER, A.IDLE, "8", reason)

    def stop_backfill(self, slot: Slot, nxt: str, reason: str,
                      claim: Claim | None = None) -> None:
        """Backfill ends; ``nxt`` (owner, matched, claimed) once the client is gone."""
        slot.backfill_next = nxt
        slot.backfill_claim = claim
        if slot.activity is A.BUSY:
            self.go(slot, S.BACKFILL, A.KILLING, "28", reason)
            self.emit(KillBackfill(self._st.now, slot.name))
        elif slot.activity is A.IDLE:
            self._settle(slot)

    def vacate_slot(self, slot: Slot, fast: bool, reason: str,
                    why: EvictWhy = EvictWhy.OWNER) -> None:
        """Give the slot back to its owner, without retirement."""
        if slot.state is S.MATCHED:
            self.to_owner_from_matched(slot, reason)
        elif slot.state is S.BACKFILL:
            self.stop_backfill(slot, "owner", reason)
        elif slot.state is S.CLAIMED:
            self.evict(slot, why, reason, retire=False, fast=fast)
        elif slot.state is S.PREEMPTING and fast and slot.activity is A.VACATING:
            self.kill(slot, "21", reason)
