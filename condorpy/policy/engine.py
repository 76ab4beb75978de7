"""The startd policy engine: the slot state machine driven by events.

Pure: every entry point takes the clock value ``now`` and returns the state changes
and actions the daemon must carry out; the daemon reports what happened to them
through further events (``job_exit``, ``benchmarks_done``, ``backfill_exited``).

:class:`PolicyEngine` is the composition root of small parts that share one
:class:`~condorpy.policy.engine_state.EngineState`:

- :mod:`~condorpy.policy.readings`: load, idle times and other readings, as prepared
  literals per clock value;
- :mod:`~condorpy.policy.slot_eval`: policy expressions of a slot (_VANILLA variants,
  latches);
- :mod:`~condorpy.policy.publish`: the engine's state written into the slot ads, and
  the ads read out;
- :mod:`~condorpy.policy.roster`: the slots as the slot layer lays them out (d-slots,
  reconfigured layouts);
- :mod:`~condorpy.policy.moves`: every move, checked against the manual's transitions
  (:mod:`~condorpy.policy.states`);
- :mod:`~condorpy.policy.steps`: one step per state;
- :mod:`~condorpy.policy.cycle`: the clock and the cycle over every slot;
- :mod:`~condorpy.policy.claims`: claims and activations;
- :mod:`~condorpy.policy.machine_wide`: draining, shutdown, hibernation.

``time()`` anywhere in an expression reads the engine's clock, through the ClassAd
library's :class:`~condorpy.classad.CallContext`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from condorpy.classad import Allowance, CallContext, ClassAd
from condorpy.policy.broken_slots import BrokenSlots
from condorpy.policy.claims import ClaimHandling
from condorpy.policy.cycle import Cycle
from condorpy.policy.engine_state import EngineState
from condorpy.policy.evaluation import Backend, default_backend
from condorpy.policy.machine_wide import MachineWide
from condorpy.policy.moves import Moves
from condorpy.policy.publish import AdPublisher
from condorpy.policy.quiet import QuietSlots
from condorpy.policy.reads import ClockReads
from condorpy.policy.readings import Readings
from condorpy.policy.records import (Action, EvictWhy, Output, Slot, StartBackfill)
from condorpy.policy.roster import SlotRoster
from condorpy.policy.settings import PolicySettings
from condorpy.policy.slot_eval import SlotEval
from condorpy.policy.states import Activity, State
from condorpy.policy.steps import StateSteps
from condorpy.slots.ads import Measurements
from condorpy.slots.broken import BrokenCause, BrokenCode, BrokenItem, BrokenLedger
from condorpy.slots.manager import LayoutChange, SlotManager

S, A = State, Activity


class PolicyEngine:
    """All slots of one startd, and the events of claims, jobs and administrators."""

    def __init__(self, settings: PolicySettings, layout: SlotManager, *, now: float = 0.0,
                 measurements: Measurements | None = None, backend: Backend | None = None,
                 utc_offset: Callable[[float], int] | None = None,
                 incremental: bool = True) -> None:
        self.hostname = layout.settings.hostname
        offset = utc_offset or (lambda _t: 0)
        # Every evaluation reads the engine's clock and zone, nested eval() included.
        # Each evaluation gets its own budget of CONDORPY_EVAL_STEP_LIMIT steps; the
        # allowance counts those that ran out (a claim refused, a job held, say why).
        # The clock notes when it is read: a busy step that did not read it is not
        # evaluated again while its other inputs stay (``incremental``, quiet.py).
        clock = ClockReads(lambda: self._st.now)
        self.ctx = CallContext(now=clock, tz_offset=offset,
                               allowance=Allowance(settings.eval_step_limit))
        self.quiet = QuietSlots(clock, incremental)
        st = self._st = EngineState(settings, layout, backend or default_backend(self.ctx),
                                    self.ctx, now)
        self._readings = Readings(st, measurements or Measurements(), offset)
        self._eval = SlotEval(st, self._readings)
        self._publisher = AdPublisher(st, self._readings)
        self._roster = SlotRoster(st, self._readings, self._publisher)
        # The steps move slots through the moves, and a move may settle a slot at once.
        self._moves = Moves(st, self._eval, self._publisher, self._roster,
                            settle=lambda slot: self._steps.settle(slot))
        self._steps = StateSteps(st, self._eval, self._moves, self.quiet)
        self._cycle = Cycle(st, self._readings, self._eval, self._publisher, self._roster,
                            self._steps, self._moves)
        self._claims = ClaimHandling(st, self._cycle, self._readings, self._eval,
                                     self._moves, self._roster, self._publisher)
        self._broken = BrokenSlots(st, self._cycle, self._moves, self._roster,
                                   self._publisher)
        self._roster.build()

    # ------------------------------------------------------------ shared state
    @property
    def now(self) -> float:
        return self._st.now

    @property
    def settings(self) -> PolicySettings:
        """The policy knobs in force (POLLING_INTERVAL, UPDATE_INTERVAL,
        KILLING_TIMEOUT, ...): read them here rather than from the configuration."""
        return self._st.settings

    @property
    def layout(self) -> SlotManager:
        return self._st.layout

    @property
    def backend(self) -> Backend:
        return self._st.backend

    @property
    def slots(self) -> dict[str, Slot]:
        return self._st.slots

    def evaluation_errors(self) -> dict[str, int]:
        """How often each policy expression evaluated to ERROR (a copy)."""
        return dict(self._eval.errors)

    @property
    def machine(self) -> MachineWide:
        return self._st.machine

    # ------------------------------------------------------------------ claims
    def match(self, now: float, slot_name: str | None = None) -> list[Output]:
        """The negotiator matched a slot (C/6, or L/32 from Backfill)."""
        return self._claims.match(now, slot_name)

    def request_claim(self, now: float, claim_id: str, job: Mapping[str, Any] | ClassAd,
                      slot_name: str | None = None, client: str | None = None
                      ) -> list[Output]:
        """A schedd asks for a claim with ``job`` as its request ad; ``client`` is the
        host it asks from (the slot's ClientMachine while claimed)."""
        return self._claims.request_claim(now, claim_id, job, slot_name, client)

    def coalesce(self, now: float, claim_ids: Iterable[str], new_claim_id: str,
                 job: Mapping[str, Any] | ClassAd, client: str | None = None
                 ) -> list[Output]:
        """condor_now: a schedd's idle claims on d-slots of one partitionable slot end,
        their resources go back to it, and one d-slot is carved from it for ``job``,
        claimed at once by ``new_claim_id``. As HTCondor's startd does
        (``command_coalesce_slots``), START and RANK are not asked again: the schedd
        holds these resources already; a drain or a shutdown refuses."""
        return self._claims.coalesce(now, claim_ids, new_claim_id, job, client)

    def activate(self, now: float, claim_id: str,
                 job: Mapping[str, Any] | ClassAd | None = None) -> list[Output]:
        """The shadow starts a job on an idle claim (11)."""
        return self._claims.activate(now, claim_id, job)

    def job_update(self, now: float, claim_id: str, attrs: Mapping[str, Any]
                   ) -> list[Output]:
        """The starter updated the running job's ad (its usage): merged into the
        claim's job ad, which the slot's policy reads; the slot is evaluated at once."""
        return self._claims.job_update(now, claim_id, attrs)

    def job_exit(self, now: float, claim_id: str, exit_code: int | None = None,
                 cleaning: bool = False) -> list[Output]:
        """The job of ``claim_id`` ended. With ``cleaning`` its starter is still
        removing the sandbox and processes: the slot waits in Claimed/Cleaning until
        :meth:`starter_reaped`; without, the starter is already gone."""
        return self._claims.job_exit(now, claim_id, exit_code, cleaning)

    def starter_reaped(self, now: float, claim_id: str) -> list[Output]:
        """The starter of a job that ended with ``cleaning`` is gone."""
        return self._claims.starter_reaped(now, claim_id)

    # ------------------------------------------------------------ broken slots
    def report_broken(self, now: float, slot: str, cause: BrokenCause,
                      context: Mapping[str, Any] | None = None) -> list[Output]:
        """``slot`` is broken (leftover processes, a cleanup or volume removal that
        failed): it matches nothing, its idle claim is given up, and a dynamic slot's
        resources stay lost to its parent once it goes. The first cause is kept."""
        return self._broken.report(now, slot, cause, context)

    def restore_broken(self, now: float, item: BrokenItem) -> list[Output]:
        """A slot an earlier daemon left broken, whose cause still holds (a restart
        re-checks it): broken again, a dynamic one's resources lost to its parent."""
        return self._broken.restore(now, item)

    def mend(self, now: float, slot: str, code: BrokenCode | None = None) -> list[Output]:
        """The cause of ``slot``'s breakage has gone (only a cause of ``code``, when
        given): its resources are offered again."""
        return self._broken.mend(now, slot, code)

    @property
    def broken(self) -> BrokenLedger:
        """The broken slots (read only: break and mend through the engine)."""
        return self._st.broken

    def release(self, now: float, claim_id: str) -> list[Output]:
        """The schedd releases a claim (or withdraws a pending better claim)."""
        return self._claims.release(now, claim_id)

    def alive(self, now: float, claim_id: str) -> list[Output]:
        """A keep-alive from the schedd renews the claim lease."""
        return self._claims.alive(now, claim_id)

    def claim_ids(self) -> list[str]:
        """Ids of every live claim (including better claims waiting), oldest first."""
        return list(self._st.claims)

    def has_claim(self, claim_id: str) -> bool:
        return claim_id in self._st.claims

    def vacate_reason(self, claim_id: str) -> tuple[str, int, int] | None:
        """Why the job of ``claim_id`` is being interrupted (VacateReason, Code,
        SubCode), once the policy has decided to; None while it runs undisturbed."""
        st = self._st
        slot = st.slots.get(st.claims.get(claim_id) or "")
        if slot is None or slot.claim is None or slot.claim.id != claim_id or \
                slot.claim.job is None:
            return None
        return slot.claim.job.vacate

    def has_running_job(self, claim_id: str) -> bool:
        """Whether the claim ``claim_id`` exists and has a job running."""
        st = self._st
        slot = st.slots.get(st.claims.get(claim_id) or "")
        return slot is not None and slot.claim is not None and slot.claim.id == claim_id \
            and slot.claim.job is not None

    # ---------------------------------------------------- slot-level events
    def vacate(self, now: float, slot_name: str | None = None, fast: bool = False
               ) -> list[Output]:
        """condor_vacate: give slots back to the owner. Graceful, as HTCondor's startd
        does it: a claimed slot's job retires first (irreversibly), then is vacated;
        ``fast``: the job is killed at once."""
        self._cycle.run(now)
        st = self._st
        targets = [st.slot(slot_name)] if slot_name else st.live()
        for slot in targets:
            if slot.state is State.CLAIMED and not fast:
                self._moves.retire_claim(slot, EvictWhy.OWNER, "condor_vacate")
            else:
                self._moves.vacate_slot(slot, fast, "condor_vacate")
        self._cycle.settle_all()
        return st.take_output()

    def benchmarks_done(self, now: float, slot_name: str) -> list[Output]:
        self._cycle.advance(now)
        slot = self._st.slot(slot_name)
        # Never 0: RUNBENCHMARKS is usually "LastBenchmark == 0" and a virtual clock
        # may well start at 0.
        self._st.put(slot, "LastBenchmark", max(int(now), 1))
        if slot.state is S.UNCLAIMED and slot.activity is A.BENCHMARKING:
            self._moves.go(slot, S.UNCLAIMED, A.IDLE, "4", "benchmarks done")
        return self._st.take_output()

    def backfill_started(self, now: float, slot_name: str) -> list[Output]:
        self._cycle.advance(now)
        slot = self._st.slot(slot_name)
        if slot.state is S.BACKFILL and slot.activity is A.IDLE and slot.backfill_next is None:
            self._moves.go(slot, S.BACKFILL, A.BUSY, "26", "backfill client running")
        return self._st.take_output()

    def backfill_exited(self, now: float, slot_name: str) -> list[Output]:
        st = self._st
        self._cycle.advance(now)
        slot = st.slot(slot_name)
        self._readings.measure(slot)
        if slot.state is S.BACKFILL:
            if slot.activity is A.KILLING:
                self._moves.go(slot, S.BACKFILL, A.IDLE, "29", "backfill client gone")
                self._steps.settle(slot)
            elif slot.activity is A.BUSY:
                self._moves.go(slot, S.BACKFILL, A.IDLE, "27", "backfill client exited")
                st.emit(StartBackfill(st.now, slot.name))
        return st.take_output()

    # ------------------------------------------------------ machine-wide hooks
    def drain(self, now: float, how: str = "graceful", on_completion: str = "nothing",
              reason: str | None = None, request_id: str | None = None,
              check: str | None = None, start: str | None = None) -> list[Output]:
        self._cycle.run(now)
        self.machine.begin_drain(self._moves, how, on_completion, reason, request_id,
                                 check, start)
        self._cycle.settle_all()
        return self._st.take_output()

    def cancel_drain(self, now: float, request_id: str | None = None) -> list[Output]:
        self._cycle.run(now)
        self.machine.cancel_drain(self._moves, request_id)
        self._cycle.settle_all()
        return self._st.take_output()

    def off(self, now: float, how: str = "graceful") -> list[Output]:
        self._cycle.run(now)
        self.machine.begin_shutdown(self._moves, how)
        self._cycle.settle_all()
        return self._st.take_output()

    # ------------------------------------------------- cycle and measurements
    def cycle(self, now: float) -> list[Output]:
        """One policy evaluation of every slot at ``now``."""
        self._cycle.run(now)
        return self._st.take_output()

    def set(self, now: float, attrs: Mapping[str, Any], slot: str | None = None) -> None:
        """New measurements for the machine or for one slot.

        Machine-wide, ``KeyboardIdle`` and ``ConsoleIdle`` are the machine's raw idle
        times (each slot sees them as SLOTS_CONNECTED_TO_KEYBOARD/CONSOLE say),
        ``LoadAvg`` (or ``TotalLoadAvg``) is the machine's total load, split among the
        slots as the slot layer does, and ``CondorLoadAvg`` is the load of each slot's
        job; any other attribute is copied into every slot ad. For one slot, every
        attribute (CondorLoadAvg: its job's load) is that slot's own."""
        self._cycle.advance(now)
        if slot is not None:
            self._st.slot(slot)
        self._readings.set(attrs, slot)

    def poll_interval(self) -> int:
        """POLLING_INTERVAL while any slot is claimed or in Owner, UPDATE_INTERVAL
        otherwise. HTCondor's startd polls only while a slot is claimed and evaluates
        an Owner slot every UPDATE_INTERVAL; condorpy re-evaluates IS_OWNER and START of
        an Owner slot every POLLING_INTERVAL, so that the slot leaves Owner within one
        POLLING_INTERVAL of START turning true."""
        settings = self._st.settings
        if any(s.state in (S.CLAIMED, S.PREEMPTING, S.MATCHED, S.OWNER)
               for s in self._st.slots.values() if not s.deleted):
            return settings.polling_interval
        return settings.update_interval

    # ----------------------------------------------------------- reconfiguring
    def relayout(self, new: SlotManager) -> LayoutChange:
        """A reconfigured slot layout. Slots it drops or redefines take no new claim
        and leave as they become free; its new slots come once every slot leaving is
        gone, so the machine is never promised twice. Running jobs are not touched."""
        self.quiet.invalidate()
        return self._roster.relayout(new)

    @property
    def layout_pending(self) -> LayoutChange | None:
        return self._roster.pending

    def reconfigure(self, settings: PolicySettings) -> None:
        """New policy knobs (a reconfig): every slot's policy expressions are replaced
        and take effect at the next evaluation; claims and jobs are untouched. Settings
        with an expression that does not compile are refused before anything changes."""
        st = self._st
        for text in (*settings.exprs.values(), *settings.extra_attrs.values(),
                     *(t for table in settings.slot_exprs.values() for t in table.values())):
            st.backend.compile(text)
        st.settings = settings
        if self.ctx.allowance is not None:
            self.ctx.allowance.resize(settings.eval_step_limit)
        self._eval.reconfigure(settings)
        self.quiet.invalidate()
        for slot in st.live():
            self._roster.put_policy(slot, settings)

    # ------------------------------------------------------------------ reading
    def ads(self) -> list[ClassAd]:
        """Every live slot's ad as it would be advertised now (copies)."""
        return self._publisher.ads()

    def snapshot(self, names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """Every live slot's ad as plain values (expressions evaluated in the slot)."""
        return self._publisher.snapshot(names)

    # -------------------------------------- the moves, for callers that drive
    # slots directly (policy tests, the machine-wide policy's protocol)
    def emit(self, action: Action) -> None:
        """Queue an action for the daemon (returned by the entry point that caused it)."""
        self._st.emit(action)

    def take_output(self) -> list[Output]:
        return self._st.take_output()

    def go(self, slot: Slot, state: State, activity: Activity, key: str, reason: str) -> None:
        """Move ``slot`` along transition ``key`` of the manual's diagrams; a move the
        table does not list is a bug, and raises."""
        self._moves.go(slot, state, activity, key, reason)

    def put(self, slot: Slot, name: str, value: Any) -> None:
        self._st.put(slot, name, value)

    def put_expr(self, slot: Slot, name: str, text: str) -> None:
        self._st.put_expr(slot, name, text)

    def publish_requirements(self, slot: Slot) -> None:
        self._publisher.publish_requirements(slot)

    def retire(self, slot: Slot, why: EvictWhy, reason: str, *,
               override: float | None = None) -> None:
        self._moves.retire(slot, why, reason, override=override)

    def retirement_left(self, slot: Slot) -> float:
        return self._moves.retirement_left(slot)

    def retire_claim(self, slot: Slot, why: EvictWhy, reason: str, *,
                     override: float | None = None) -> None:
        self._moves.retire_claim(slot, why, reason, override=override)

    def evict(self, slot: Slot, why: EvictWhy, reason: str, *, retire: bool = True,
              fast: bool = False) -> None:
        self._moves.evict(slot, why, reason, retire=retire, fast=fast)

    def kill(self, slot: Slot, key: str, reason: str) -> None:
        self._moves.kill(slot, key, reason)

    def vacate_slot(self, slot: Slot, fast: bool, reason: str,
                    why: EvictWhy = EvictWhy.OWNER) -> None:
        self._moves.vacate_slot(slot, fast, reason, why)
