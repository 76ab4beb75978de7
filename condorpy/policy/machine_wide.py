"""Machine-wide policy: draining, shutdown and hibernation.

These act on every slot at once, so they live beside the per-slot state machine and
drive it through its own moves (retire, evict, vacate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from condorpy.errors import PolicyError
from condorpy.policy.evaluation import Backend, is_true
from condorpy.policy.records import (Action, CancelRefused, DrainCancelled, DrainComplete,
                                     DrainRefused, DrainStarted, EvictWhy, Exit, Hibernate,
                                     Job, Retirement, Slot)
from condorpy.policy.settings import PolicySettings
from condorpy.policy.states import Activity, State


class SlotMoves(Protocol):
    """What the machine-wide policy may do to the slots: the engine's public moves.

    Draining and shutting down act on every slot at once, through the same moves a
    single slot's own policy makes, and nothing else of the engine."""

    @property
    def now(self) -> float: ...
    @property
    def slots(self) -> dict[str, Slot]: ...
    @property
    def backend(self) -> Backend: ...
    @property
    def settings(self) -> PolicySettings: ...

    def emit(self, action: Action) -> None: ...
    def put(self, slot: Slot, name: str, value: Any) -> None: ...
    def put_expr(self, slot: Slot, name: str, text: str) -> None: ...
    def go(self, slot: Slot, state: State, activity: Activity, key: str,
           reason: str) -> None: ...
    def retire(self, slot: Slot, why: EvictWhy, reason: str, *,
               override: float | None = None) -> None: ...
    def retirement_left(self, slot: Slot) -> float: ...
    def retire_claim(self, slot: Slot, why: EvictWhy, reason: str, *,
                     override: float | None = None) -> None: ...
    def evict(self, slot: Slot, why: EvictWhy, reason: str, *, retire: bool = True,
              fast: bool = False) -> None: ...
    def kill(self, slot: Slot, key: str, reason: str) -> None: ...
    def vacate_slot(self, slot: Slot, fast: bool, reason: str,
                    why: EvictWhy = EvictWhy.OWNER) -> None: ...
    def publish_requirements(self, slot: Slot) -> None: ...


S, A = State, Activity
DRAIN_HOW = ("graceful", "quick", "fast")
DRAIN_DONE = ("resume", "nothing", "exit")
OFF_HOW = ("graceful", "fast", "peaceful")
_HIBERNATE_LEVELS = {"NONE": 0, "0": 0, "S1": 1, "1": 1, "S2": 2, "2": 2, "S3": 3, "3": 3,
                     "RAM": 3, "S4": 4, "4": 4, "DISK": 4, "S5": 5, "5": 5, "SHUTDOWN": 5}
_LEVEL_NAMES = {1: "S1", 2: "S2", 3: "RAM", 4: "DISK", 5: "SHUTDOWN"}


@dataclass
class Drain:
    how: str
    on_completion: str
    reason: str
    request_id: str
    started: float
    start_expr: str | None
    done: bool = False


class MachineWide:
    """Drain and shutdown requests with their bookkeeping."""

    def __init__(self) -> None:
        self.drain: Drain | None = None
        self.shutdown: str | None = None
        self.exited = False
        self.badput = 0.0          # TotalMachineDrainingBadput (core-seconds)
        self.unclaimed = 0.0       # TotalMachineDrainingUnclaimedTime (core-seconds)
        self._drains = 0
        self._last_hibernate: float | None = None

    @property
    def draining(self) -> bool:
        return self.drain is not None

    @property
    def drain_start(self) -> str | None:
        return self.drain.start_expr if self.drain else None

    @property
    def shutting_down(self) -> bool:
        return self.shutdown is not None

    # ------------------------------------------------------------- accounting
    def account(self, engine: SlotMoves, dt: float) -> None:
        if self.drain is None or self.drain.done or dt <= 0:
            return
        for slot in engine.slots.values():
            if slot.deleted or slot.kind == "partitionable":
                continue
            if slot.state is not S.CLAIMED or slot.activity is A.IDLE:
                self.unclaimed += dt * slot.resources.get("Cpus", 1)
        p = [s for s in engine.slots.values() if s.kind == "partitionable"]
        for slot in p:
            self.unclaimed += dt * slot.resources.get("Cpus", 0)

    def job_ended(self, engine: SlotMoves, slot: Slot, job: Job, evicted: bool) -> None:
        if evicted and self.drain is not None and not self.drain.done:
            self.badput += job.run_time(engine.now) * slot.resources.get("Cpus", 1)

    def publish(self, engine: SlotMoves) -> None:
        b = engine.backend
        for slot in engine.slots.values():
            if slot.deleted:
                continue
            engine.put(slot, "TotalMachineDrainingBadput", int(self.badput))
            engine.put(slot, "TotalMachineDrainingUnclaimedTime", int(self.unclaimed))
            d = self.drain
            engine.put(slot, "Draining", d is not None)
            if d is not None:
                engine.put(slot, "DrainReason", d.reason)
                engine.put(slot, "DrainingRequestId", d.request_id)
                engine.put(slot, "LastDrainStartTime", int(d.started))

    # ---------------------------------------------------------------- draining
    def begin_drain(self, engine: SlotMoves, how: str, on_completion: str,
                    reason: str | None, request_id: str | None, check: str | None,
                    start: str | None) -> None:
        if how not in DRAIN_HOW:
            raise PolicyError(f"drain: how must be one of {', '.join(DRAIN_HOW)}, not {how!r}")
        if on_completion not in DRAIN_DONE:
            raise PolicyError(f"drain: on_completion must be one of {', '.join(DRAIN_DONE)}, "
                              f"not {on_completion!r}")
        live = [s for s in engine.slots.values() if not s.deleted]
        if self.drain is not None:
            engine.emit(DrainRefused(engine.now, live[0].name, reason="already draining"))
            return
        if check is not None:
            b = engine.backend
            expr = b.compile(check)
            bad = [s.name for s in live if not is_true(b.eval_compiled(expr, s.ad, None))]
            if bad:
                engine.emit(DrainRefused(engine.now, live[0].name, reason=f"check expression is not True in {', '.join(bad)}"))
                return
        self._drains += 1
        rid = request_id or str(self._drains)
        self.drain = Drain(how, on_completion, reason or "by command", rid, engine.now, start)
        engine.emit(DrainStarted(engine.now, live[0].name, request_id=rid, how=how))
        self.publish(engine)
        claimed = [s for s in live if s.state is S.CLAIMED and s.claim is not None]
        if how == "graceful":
            for slot in claimed:
                if slot.claim is not None and slot.claim.job is not None:
                    engine.retire(slot, EvictWhy.DRAIN, "draining (graceful)")
            # A job that START would still take (an interruptible one) may retire
            # until the longest remaining retirement among them ends; any other keeps
            # its own retirement, which suspension does not use up (as HTCondor's
            # startd does).
            longest = max((engine.retirement_left(s) for s in claimed
                           if s.claim is not None and s.claim.job is not None), default=0.0)
            deadline = engine.now + max(longest, 0.0)
            for slot in claimed:
                if slot.retirement is not None and slot.claim is not None and \
                        is_true(engine.backend.evaluate(slot.ad, "START", slot.claim.ad)):
                    slot.retirement.deadline = deadline
            # a suspended job is resumed to retire (16); SUSPEND may take it again (20)
            for slot in claimed:
                if slot.activity is A.SUSPENDED and slot.retirement is not None:
                    engine.go(slot, S.CLAIMED, A.RETIRING, "16", "draining (graceful)")
        for slot in live:
            if start is None:
                engine.put(slot, "Requirements", False)
            else:
                engine.put_expr(slot, "Requirements", start)
            if slot.state is S.CLAIMED:
                if how == "graceful":
                    if slot.claim is not None and slot.claim.job is None:
                        engine.evict(slot, EvictWhy.DRAIN, "draining")
                elif how == "quick":
                    # HTCondor's quick drain retires the claim with no retirement time:
                    # through Claimed/Retiring, vacate time still granted
                    engine.retire_claim(slot, EvictWhy.DRAIN, "draining (quick)",
                                        override=0.0)
                else:
                    engine.vacate_slot(slot, how == "fast", f"draining ({how})", EvictWhy.DRAIN)
            elif slot.state in (S.MATCHED, S.BACKFILL):
                engine.vacate_slot(slot, False, "draining", EvictWhy.DRAIN)

    def cancel_drain(self, engine: SlotMoves, request_id: str | None) -> None:
        d = self.drain
        live = [s for s in engine.slots.values() if not s.deleted]
        if d is None or (request_id is not None and request_id != d.request_id):
            engine.emit(CancelRefused(engine.now, live[0].name, reason="no such drain request"))
            return
        self.drain = None
        for slot in live:
            engine.publish_requirements(slot)
            if slot.state is S.DRAINED:
                key = "35" if slot.activity is A.RETIRING else "34"
                engine.go(slot, S.OWNER, A.IDLE, key, "draining cancelled")
            elif slot.state is S.CLAIMED and slot.retirement is not None and \
                    slot.retirement.why is EvictWhy.DRAIN:
                slot.retirement = None
                if slot.activity is A.RETIRING:
                    engine.go(slot, S.CLAIMED, A.BUSY, "19", "draining cancelled")
        engine.emit(DrainCancelled(engine.now, live[0].name, request_id=d.request_id))
        self.publish(engine)

    def _finish_drain(self, engine: SlotMoves) -> None:
        d = self.drain
        if d is None or d.done:
            return
        live = [s for s in engine.slots.values() if not s.deleted]
        if any(s.state is not S.DRAINED for s in live):
            return
        d.done = True
        for slot in live:
            if slot.activity is A.RETIRING:
                engine.go(slot, S.DRAINED, A.IDLE, "33", "every slot drained")
        engine.emit(DrainComplete(engine.now, live[0].name, request_id=d.request_id,
                    badput=int(self.badput), unclaimed=int(self.unclaimed)))
        self.publish(engine)
        if d.on_completion == "resume":
            self.drain = None
            for slot in live:
                engine.publish_requirements(slot)
                engine.go(slot, S.OWNER, A.IDLE, "34", "draining finalized (resume)")
        elif d.on_completion == "exit":
            self._exit(engine, "draining finalized (exit)")

    # ---------------------------------------------------------------- shutdown
    def begin_shutdown(self, engine: SlotMoves, how: str) -> None:
        if how not in OFF_HOW:
            raise PolicyError(f"off: how must be one of {', '.join(OFF_HOW)}, not {how!r}")
        self.shutdown = how
        for slot in list(engine.slots.values()):
            if slot.deleted:
                continue
            engine.publish_requirements(slot)
            if slot.state is S.CLAIMED and slot.claim is not None:
                if slot.claim.job is None:
                    engine.evict(slot, EvictWhy.SHUTDOWN, f"shutdown ({how})")
                elif how == "fast":
                    engine.evict(slot, EvictWhy.SHUTDOWN, "shutdown (fast)", fast=True)
                else:
                    override = float("inf") if how == "peaceful" else None
                    if slot.retirement is None or slot.retirement.why is EvictWhy.RANK:
                        slot.retirement = Retirement(EvictWhy.SHUTDOWN, engine.now,
                                                     override=override)
                    else:
                        slot.retirement.override = override
                        slot.retirement.why = EvictWhy.SHUTDOWN
                    slot.pending = None
                    if slot.activity is A.BUSY:
                        engine.go(slot, S.CLAIMED, A.RETIRING, "13", f"shutdown ({how})")
            elif slot.state is S.PREEMPTING and how == "fast" and slot.activity is A.VACATING:
                engine.kill(slot, "21", "shutdown (fast)")
            elif slot.state in (S.MATCHED, S.BACKFILL):
                engine.vacate_slot(slot, how == "fast", f"shutdown ({how})", EvictWhy.SHUTDOWN)

    def _exit(self, engine: SlotMoves, reason: str) -> None:
        if self.exited:
            return
        self.exited = True
        live = [s for s in engine.slots.values() if not s.deleted]
        engine.emit(Exit(engine.now, live[0].name, reason=reason))

    # ------------------------------------------------------------- hibernation
    def _hibernate(self, engine: SlotMoves) -> None:
        interval = engine.settings.hibernate_check_interval
        if interval <= 0:
            return
        if self._last_hibernate is not None and engine.now - self._last_hibernate < interval:
            return
        self._last_hibernate = engine.now
        levels: list[int] = []
        for slot in engine.slots.values():
            if slot.deleted or slot.kind == "dynamic":
                continue
            if slot.state not in (S.OWNER, S.UNCLAIMED):
                return
            levels.append(_level(engine.backend.evaluate(slot.ad, "HIBERNATE", None)))
        # Every slot must want to sleep; the deepest state asked for wins.
        if levels and min(levels) > 0:
            live = [s for s in engine.slots.values() if not s.deleted]
            engine.emit(Hibernate(engine.now, live[0].name, level=_LEVEL_NAMES[max(levels)]))

    # ------------------------------------------------------------------- cycle
    def after_cycle(self, engine: SlotMoves) -> None:
        if self.drain is not None:
            self._finish_drain(engine)
            self.publish(engine)
        if self.shutdown is not None and not self.exited:
            if all(s.state not in (S.CLAIMED, S.PREEMPTING, S.BACKFILL)
                   for s in engine.slots.values() if not s.deleted):
                self._exit(engine, f"shutdown ({self.shutdown}) complete")
        elif self.shutdown is None and self.drain is None:
            self._hibernate(engine)


def _level(value: Any) -> int:
    if isinstance(value, str):
        return _HIBERNATE_LEVELS.get(value.strip().upper(), 0)
    if type(value) is int:
        return value if 0 <= value <= 5 else 0
    return 0
