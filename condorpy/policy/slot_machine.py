"""The per-slot state machine of the startd policy: states, timers, retirement, moves.

Pure: every entry point takes the clock value ``now``; the machine emits the state
changes and actions (start, suspend, continue, soft/hard kill, delete a d-slot, ...)
that the daemon must carry out. :class:`condorpy.policy.engine.PolicyEngine` adds the
events that drive it (claims, job exits, vacate, drain, shutdown); machine-wide
requests live in :mod:`condorpy.policy.machine_wide`, which drives the slots through
the public moves below (:class:`condorpy.policy.machine_wide.SlotMoves`).

The slots are the slot layer's: :class:`condorpy.slots.manager.SlotManager` lays out the
machine, carves and releases d-slots and builds every ad; the engine adds what it
decides (state, activity, claim, policy expressions) and the measurements of each cycle.
``time()`` anywhere in an expression reads the engine's clock, through the ClassAd
library's :class:`~condorpy.classad.CallContext`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from condorpy.classad import CallContext, ClassAd, ast
from condorpy.errors import PolicyError
from condorpy.policy.evaluation import (Backend, Error, Undefined, default_backend, is_false,
                                        is_true, number)
from condorpy.policy.machine_wide import MachineWide
from condorpy.policy.records import (Action, Claim, ClaimEnded, ClaimRefused, Continue,
                                     DeleteSlot, EvictWhy, HardKill, KillBackfill,
                                     KillStarter, Output, Retirement, RunBenchmarks, Slot,
                                     SoftKill, StartBackfill, StateChange, StopBenchmarks,
                                     Suspend)
from condorpy.policy.settings import VANILLA_VARIANTS, PolicySettings
from condorpy.policy.states import TRANSITIONS, Activity, State, check_move
from condorpy.slots.ads import Measurements, SlotStatus, device_attr_name, put_custom_resources
from condorpy.slots.load import SlotLoadInput, distribute_load, slot_idle_times
from condorpy.slots.manager import LayoutChange, SlotManager
from condorpy.slots.model import Slot as LayerSlot

S, A = State, Activity
_AGEING = ("KeyboardIdle", "ConsoleIdle")   # measurements that grow with the clock
# Measurements the slot layer distributes per slot rather than copying to every ad.
_PER_SLOT = frozenset({"keyboardidle", "consoleidle", "loadavg", "condorloadavg",
                       "totalloadavg"})
_MAX_SETTLE = 12                            # transitions one slot may take in one cycle
_UNSET: Any = object()
# Enum members bound once: reading State.CLAIMED costs a descriptor call each time, and
# the cycle's per-slot path tests these for every slot.
_CLAIMED, _IDLE, _BUSY = S.CLAIMED, A.IDLE, A.BUSY


class SlotMachine:
    """All slots of one startd and the rules that move them between states."""

    def __init__(self, settings: PolicySettings, layout: SlotManager, *, now: float = 0.0,
                 measurements: Measurements | None = None, backend: Backend | None = None,
                 utc_offset: Callable[[float], int] | None = None) -> None:
        self.settings = settings
        self.layout = layout
        self.hostname = layout.settings.hostname
        self.now = now
        self._utc_offset = utc_offset or (lambda _t: 0)
        # Every evaluation reads the engine's clock and zone, nested eval() included.
        self.ctx = CallContext(now=lambda: self.now, tz_offset=self._utc_offset)
        self.backend = backend or default_backend(self.ctx)
        self.slots: dict[str, Slot] = {}
        self.machine = MachineWide()
        self._out: list[Output] = []
        m = measurements or Measurements()
        # Machine-wide readings: the raw idle times (each slot sees them as the slot
        # layer's SLOTS_CONNECTED_TO_* rules say) and the machine's total load.
        self._measured: dict[str, tuple[Any, float]] = {
            "KeyboardIdle": (m.keyboard_idle, now), "ConsoleIdle": (m.console_idle, now),
            "TotalLoadAvg": (m.total_load_avg, now), "CondorLoadAvg": (0.0, now)}
        self._slot_measured: dict[str, dict[str, tuple[Any, float]]] = {}
        self._inputs_cache: dict[str, Any] = {}
        self._inputs_at: float | None = None
        self._lit_values: dict[str, tuple[type, Any]] = {}
        self._inputs_changed: list[tuple[str, Any]] = []
        self._idle_batches: dict[int, tuple[tuple[Any, Any], Any]] = {}
        self._load_nonzero = m.total_load_avg != 0
        # The same two, prepared by the backend for setting in many ads at once.
        self._all_batch: Any = self.backend.literal_batch(())
        self._changed_batch: Any = self._all_batch
        self._evaluate = self.backend.evaluator()
        self._set_batch = self.backend.batch_setter()
        # _step by state, looked up once per step instead of an if-chain
        self._steps = {S.OWNER: self._step_owner, S.UNCLAIMED: self._step_unclaimed,
                       S.MATCHED: self._step_matched, S.CLAIMED: self._step_claimed,
                       S.PREEMPTING: self._step_preempting, S.BACKFILL: self._step_backfill,
                       S.DRAINED: self._step_drained}
        self._vanilla: dict[int, dict[str, str]] = {}
        self._plain_lc = {n: n.lower() for n in (*settings.exprs, *VANILLA_VARIANTS)}
        self._has_vanilla = any(f"{n}_VANILLA" in exprs for n in VANILLA_VARIANTS
                                for exprs in (settings.exprs, *settings.slot_exprs.values()))
        self._leaves: dict[tuple[int, str], frozenset[str]] = {}
        self._input_names: frozenset[str] = frozenset()
        self._gen = 0
        self._claims: dict[str, str] = {}        # claim id -> slot name
        self._ended: dict[str, str] = {}         # ended claim id -> its last slot
        self._layout_change: LayoutChange | None = None
        self._build_slots()

    # ------------------------------------------------------------------ layout
    def _build_slots(self) -> None:
        """The layout's static and partitionable slots, with the ads its builder makes;
        every slot starts in Owner/Idle, as in the startd."""
        start = SlotStatus("Owner", "Idle", self.now)
        layer = list(self.layout)
        statuses = {s.name: start for s in layer}
        ads = self.layout.ads(self.now, statuses, self._measurements())
        for lslot, ad in zip(layer, ads):
            self._add_slot(lslot, ad)

    def _measurements(self) -> Measurements:
        kb, con, load = (self._measured[k][0] for k in ("KeyboardIdle", "ConsoleIdle",
                                                        "TotalLoadAvg"))
        return Measurements(float(load) if isinstance(load, (int, float)) else 0.0,
                            int(kb) if isinstance(kb, (int, float)) else 0,
                            int(con) if isinstance(con, (int, float)) else 0)

    def _add_slot(self, layer: LayerSlot, ad: Any, parent: str | None = None,
                  state: State = S.OWNER, transition: str = "start",
                  reason: str = "startd started") -> Slot:
        kind = layer.kind.value.lower()
        avail = self.layout.available(layer)
        res: dict[str, float] = {"Cpus": avail.cpus, "Memory": avail.memory_mb,
                                 "Disk": avail.disk_kb}
        for name, amount in avail.custom.items():
            res[name] = float(amount)
        req = ad.lookup("Requirements")
        slot = Slot(name=layer.name, slot_id=layer.slot_id, ad=ad, kind=kind, parent=parent,
                    resources=res, state=state, entered_state=self.now,
                    entered_activity=self.now, layer=layer,
                    requirements=str(req) if req is not None else "START")
        self.put(slot, "LastBenchmark", 0)
        for attr, text in self.settings.extra_attrs.items():
            self.put_expr(slot, attr, text)
        for attr in self.settings.exprs:
            policy = self.settings.expr_for(attr, slot.slot_id)
            if policy is not None:
                self.put_expr(slot, attr, policy)
        self.slots[slot.name] = slot
        self._measure(slot)
        self._publish_state(slot)
        self.publish_requirements(slot)
        self._emit_state(slot, transition, reason)
        return slot

    def relayout(self, new: SlotManager) -> LayoutChange:
        """A reconfigured slot layout. Slots it drops or redefines take no new claim
        and leave as they become free; its new slots come once every slot leaving is
        gone, so the machine is never promised twice. Running jobs are not touched."""
        change = self.layout.change_to(new)
        self.layout.take_settings(new)
        self._layout_change = None if change.empty else change
        for name in change.going:
            if name in self.slots:
                self.slots[name].leaving = True
        self._relayout()
        return change

    @property
    def layout_pending(self) -> LayoutChange | None:
        return self._layout_change

    def _relayout(self) -> None:
        change = self._layout_change
        if change is None:
            return
        left = []
        for name in change.going:
            slot = self.slots.get(name)
            if slot is None:
                continue
            if slot.state in (S.OWNER, S.UNCLAIMED, S.DRAINED) \
                    and slot.activity in (A.IDLE, A.BENCHMARKING) \
                    and slot.claim is None and slot.pending is None \
                    and not self.layout.dynamic_slots(slot.layer):
                if slot.activity is A.BENCHMARKING:
                    self.emit(StopBenchmarks(self.now, slot.name))
                slot.deleted = True
                self.layout.remove_top(slot.layer)
                self._slot_measured.pop(name, None)
                self.emit(DeleteSlot(self.now, name))
                del self.slots[name]
            else:
                left.append(name)
        if left:
            self._layout_change = LayoutChange(tuple(left), change.coming)
            return
        self._layout_change = None
        status = SlotStatus("Owner", "Idle", self.now)
        for planned in change.coming:
            layer = self.layout.add_top(planned)
            ad = self.layout.new_slot_ad(layer, self.now, status, self._measurements())
            self._add_slot(layer, ad, transition="reconfig", reason="new slot layout")

    def reconfigure(self, settings: PolicySettings) -> None:
        """New policy knobs (a reconfig): every slot's policy expressions are replaced
        and take effect at the next evaluation; claims and jobs are untouched. Settings
        with an expression that does not compile are refused before anything changes."""
        for text in (*settings.exprs.values(), *settings.extra_attrs.values(),
                     *(t for table in settings.slot_exprs.values() for t in table.values())):
            self.backend.compile(text)
        self.settings = settings
        self._plain_lc = {n: n.lower() for n in (*settings.exprs, *VANILLA_VARIANTS)}
        self._has_vanilla = any(f"{n}_VANILLA" in exprs for n in VANILLA_VARIANTS
                                for exprs in (settings.exprs, *settings.slot_exprs.values()))
        self._vanilla.clear()
        self._leaves.clear()
        for slot in self.slots.values():
            if slot.deleted:
                continue
            for attr, text in settings.extra_attrs.items():
                self.put_expr(slot, attr, text)
            for attr in settings.exprs:
                policy = settings.expr_for(attr, slot.slot_id)
                if policy is not None:
                    self.put_expr(slot, attr, policy)

    # ------------------------------------------------------------- measurements
    def set(self, now: float, attrs: Mapping[str, Any], slot: str | None = None) -> None:
        """New measurements for the machine or for one slot.

        Machine-wide, ``KeyboardIdle`` and ``ConsoleIdle`` are the machine's raw idle
        times (each slot sees them as SLOTS_CONNECTED_TO_KEYBOARD/CONSOLE say),
        ``LoadAvg`` (or ``TotalLoadAvg``) is the machine's total load, split among the
        slots as the slot layer does, and ``CondorLoadAvg`` is the load of each slot's
        job; any other attribute is copied into every slot ad. For one slot, every
        attribute (CondorLoadAvg: its job's load) is that slot's own."""
        self._advance(now)
        if slot is None:
            for k, v in attrs.items():
                key = "TotalLoadAvg" if k.lower() in ("loadavg", "totalloadavg") else k
                self._measured[key] = (v, now)
            self._inputs_at = None
        else:
            self._slot(slot)
            table = self._slot_measured.setdefault(slot, {})
            for k, v in attrs.items():
                table[k] = (v, now)

    def _value(self, name: str) -> Any:
        v, at = self._measured.get(name, (0, self.now))
        if name in _AGEING and type(v) in (int, float):
            return v + int(self.now - at)
        return v

    def _inputs(self) -> tuple[int, dict[str, Any], list[tuple[str, Any]]]:
        """Machine-wide inputs at ``now`` as backend literals, built once per clock value
        and shared by every slot: (generation, all of them, those changed since the
        previous generation)."""
        if self._inputs_at == self.now:
            return self._gen, self._inputs_cache, self._inputs_changed
        b, now = self.backend, self.now
        local = int(now) + self._utc_offset(now)
        # MyCurrentTime is stamped when an ad is read (snapshot), not every cycle.
        values: dict[str, Any] = {"ClockMin": (local // 60) % 1440,
                                  "ClockDay": (local // 86400 + 4) % 7}  # 1970-01-01: Thu
        for k in self._measured:
            if k.lower() not in _PER_SLOT:
                values[k] = self._value(k)
        old = self._inputs_cache
        cache: dict[str, Any] = {}
        changed: list[tuple[str, Any]] = []
        for k, v in values.items():
            if k in old and self._lit_values.get(k) == (type(v), v):
                cache[k] = old[k]
            else:
                cache[k] = b.literal(v)
                changed.append((k, cache[k]))
            self._lit_values[k] = (type(v), v)
        self._gen += 1
        self._idle_batches = {}
        self._inputs_cache, self._inputs_at, self._inputs_changed = cache, now, changed
        self._all_batch = b.literal_batch(cache.items())
        self._changed_batch = b.literal_batch(changed)
        self._input_names = frozenset(k.lower() for k in cache) | _PER_SLOT
        return self._gen, cache, changed

    def _measure(self, slot: Slot) -> None:
        gen = self._gen if self._inputs_at == self.now else self._inputs()[0]
        if slot.inputs_gen != gen:
            # A slot that saw the previous generation needs only what changed since.
            self._set_batch(
                slot.ad, self._changed_batch if slot.inputs_gen == gen - 1 else self._all_batch)
            slot.inputs_gen = gen
            self._measure_idle(slot)
        if self._slot_measured:
            self._measure_own(slot)

    def _measure_idle(self, slot: Slot) -> None:
        """KeyboardIdle and ConsoleIdle as the slot layer gives them to this slot: the
        machine's when connected (SLOTS_CONNECTED_TO_*), else the time since start-up
        plus the boost. Computed once per SlotID and clock value (d-slots share their
        parent's) and set as one prepared batch."""
        got = self._idle_batches.get(slot.slot_id)
        if got is None:
            lay = self.layout.settings
            kb, con = self._value("KeyboardIdle"), self._value("ConsoleIdle")
            if type(kb) in (int, float) and type(con) in (int, float):
                kb, con = slot_idle_times(slot.slot_id, int(kb), int(con), lay.idle,
                                          self.now, lay.started_at)
            lit = self.backend.literal
            got = self._idle_batches[slot.slot_id] = (
                (kb, con), self.backend.literal_batch((("KeyboardIdle", lit(kb)),
                                                       ("ConsoleIdle", lit(con)))))
        pair, batch = got
        if slot.idle != pair:
            slot.idle = pair
            self._set_batch(slot.ad, batch)

    def _measure_load(self, slots: list[Slot]) -> None:
        """LoadAvg and CondorLoadAvg of every slot, split as the slot layer does."""
        total = self._value("TotalLoadAvg")
        total = float(total) if type(total) in (int, float) else 0.0
        default = self._value("CondorLoadAvg")
        default = float(default) if type(default) in (int, float) else 0.0
        own = self._slot_measured
        loads = []
        for s in slots:
            mine = own.get(s.name, {}).get("CondorLoadAvg") if own else None
            c = mine[0] if mine is not None and type(mine[0]) in (int, float) else default
            # A p-slot never runs a job itself: its d-slots carry the load.
            loads.append(SlotLoadInput(s.name, 0.0 if s.kind == "partitionable" else float(c),
                                       s.state is S.OWNER))
        nonzero = total != 0 or any(x.condor_load for x in loads)
        if not nonzero and not self._load_nonzero and not own:
            for s in slots:      # the quiet machine: every slot 0.0, set once
                if s.load != (0.0, 0.0):
                    s.load = (0.0, 0.0)
                    self.put(s, "LoadAvg", 0.0)
                    self.put(s, "CondorLoadAvg", 0.0)
            self._put_total_load(slots, total, 0.0)
            return
        self._load_nonzero = nonzero
        split = distribute_load(total, loads)
        for s, got in zip(slots, split.slots):
            pair = (round(got.load_avg, 6), round(got.condor_load_avg, 6))
            mine = own.get(s.name, {}).get("LoadAvg") if own else None
            if mine is not None and type(mine[0]) in (int, float):
                pair = (float(mine[0]), pair[1])     # the slot's own reading wins
            if s.load != pair:
                s.load = pair
                self.put(s, "LoadAvg", pair[0])
                self.put(s, "CondorLoadAvg", pair[1])
        self._put_total_load(slots, total, split.total_condor_load_avg)

    def _put_total_load(self, slots: list[Slot], total: float, condor: float) -> None:
        pair = (round(total, 6), round(condor, 6))
        for s in slots:
            if s.total_load != pair:
                s.total_load = pair
                self.put(s, "TotalLoadAvg", pair[0])
                self.put(s, "TotalCondorLoadAvg", pair[1])

    def _measure_own(self, slot: Slot) -> None:
        own = self._slot_measured.get(slot.name)
        if own:
            for k, (v, at) in own.items():
                if k in ("CondorLoadAvg", "LoadAvg"):
                    continue       # the load split puts them, the slot's own LoadAvg first
                if k in _AGEING and type(v) in (int, float):
                    v = v + int(self.now - at)
                self.put(slot, k, v)

    # ------------------------------------------------------------------- output
    def _emit_state(self, slot: Slot, key: str, reason: str) -> None:
        t = TRANSITIONS.get(key)
        self._out.append(StateChange(self.now, slot.name, slot.state, slot.activity, key,
                                     t.letter if t else None, reason))

    def emit(self, action: Action) -> None:
        """Queue an action for the daemon (returned by the entry point that caused it)."""
        self._out.append(action)

    def take_output(self) -> list[Output]:
        out, self._out = self._out, []
        return out

    def go(self, slot: Slot, state: State, activity: Activity, key: str, reason: str) -> None:
        """Move ``slot`` along transition ``key`` of the manual's diagrams; a move the
        table does not list is a bug, and raises."""
        check_move(key, slot.state, slot.activity, state, activity, slot.name)
        now = self.now
        prev = f"{slot.state.value}{slot.activity.value}"
        slot.totals[prev] = slot.totals.get(prev, 0.0) + now - slot.entered_activity
        job = slot.claim.job if slot.claim else None
        if job is not None and slot.activity is A.SUSPENDED and job.suspended_since is not None:
            job.suspended_total += now - job.suspended_since
            job.suspended_since = None
        if state is not slot.state:
            slot.entered_state = now
        slot.state, slot.activity, slot.entered_activity = state, activity, now
        if job is not None and activity is A.SUSPENDED:
            job.suspended_since = now
        self._publish_state(slot)
        self.publish_requirements(slot)
        self._emit_state(slot, key, reason)

    def put(self, slot: Slot, name: str, value: Any) -> None:
        self.backend.set_value(slot.ad, name, value)

    def put_expr(self, slot: Slot, name: str, text: str) -> None:
        self.backend.set_expr(slot.ad, name, text)

    def _publish_state(self, slot: Slot) -> None:
        self.put(slot, "State", slot.state.value)
        self.put(slot, "Activity", slot.activity.value)
        self.put(slot, "EnteredCurrentState", int(slot.entered_state))
        self.put(slot, "EnteredCurrentActivity", int(slot.entered_activity))
        for key, total in slot.totals.items():
            self.put(slot, f"TotalTime{key}", int(total))
        claim = slot.claim
        job = claim.job if claim else None
        self.put(slot, "JobStart", int(job.start) if job else Undefined)
        self.put(slot, "CurrentRank", claim.rank if claim else 0.0)
        self.put(slot, "ClaimId", claim.id if claim else Undefined)
        self.put(slot, "RemoteOwner", _attr(self, claim.ad, "Owner") if claim else Undefined)
        self.put(slot, "RemoteUser", _attr(self, claim.ad, "User") if claim else Undefined)
        self.put(slot, "JobUniverse", job.universe if job else Undefined)
        self._publish_counters(slot)

    def _publish_counters(self, slot: Slot) -> None:
        """Run and suspension times of the current job and claim, up to ``now``."""
        claim = slot.claim
        job = claim.job if claim else None
        run = job.run_time(self.now) if job else 0.0
        susp = (job.suspended_total + (self.now - job.suspended_since
                                       if job.suspended_since is not None else 0.0)
                if job else 0.0)
        self.put(slot, "TotalJobRunTime", int(run) if job else Undefined)
        self.put(slot, "TotalJobSuspendTime", int(susp) if job else Undefined)
        self.put(slot, "TotalClaimRunTime", int(claim.run_total + run) if claim else Undefined)
        self.put(slot, "TotalClaimSuspendTime",
                  int(claim.suspend_total + susp) if claim else Undefined)
        self.put(slot, "ClaimStartTime", int(claim.created) if claim else Undefined)

    def publish_requirements(self, slot: Slot) -> None:
        """Requirements as the state allows: the slot layer's (START, and for a p-slot
        the resource limits) normally; False while Matched, Preempting or shutting
        down; the drain's start expression while draining."""
        if slot.state in (S.MATCHED, S.PREEMPTING) or self.machine.shutting_down:
            self.put(slot, "Requirements", False)
        elif self.machine.draining:
            self.put_expr(slot, "Requirements", self.machine.drain_start or "False")
        else:
            self.put_expr(slot, "Requirements", slot.requirements)


    # --------------------------------------------------------------- evaluation
    def _name(self, slot: Slot, name: str) -> str:
        """``name``, or its _VANILLA variant when the claim's job is vanilla and the slot
        has one configured."""
        claim = slot.claim
        if claim is None or self._universe(claim) != 5:
            return name
        if self.settings.expr_for(f"{name}_VANILLA", slot.slot_id) is not None \
                and name in VANILLA_VARIANTS:
            return f"{name}_VANILLA"
        return name

    def _vanilla_table(self, slot_id: int) -> dict[str, str]:
        """Lower-cased names to evaluate for a vanilla job's claim on slot ``slot_id``."""
        table = dict(self._plain_lc)
        for n in VANILLA_VARIANTS:
            if self.settings.expr_for(f"{n}_VANILLA", slot_id) is not None:
                table[n] = f"{n}_VANILLA".lower()
        self._vanilla[slot_id] = table
        return table

    def _universe(self, claim: Claim) -> int:
        if claim.universe is None:
            n = number(self._job_attr(claim.ad, "JobUniverse"))
            claim.universe = int(n) if n is not None else 5
        return claim.universe

    def _names_for(self, slot: Slot) -> dict[str, str]:
        """Policy names to the lower-cased names evaluated for ``slot`` (_name's choice)."""
        claim = slot.claim
        if claim is not None and self._has_vanilla:
            u = claim.universe
            if (u if u is not None else self._universe(claim)) == 5:
                return self._vanilla.get(slot.slot_id) or self._vanilla_table(slot.slot_id)
        return self._plain_lc

    def _eval(self, slot: Slot, name: str, with_job: bool = True) -> Any:
        # _name inline, names lower-cased once: this runs for every claimed slot
        # several times a cycle
        claim = slot.claim
        table = self._plain_lc if not self._has_vanilla else self._names_for(slot)
        lc = table.get(name)
        if lc is None:
            lc = name.lower()
        return self._evaluate(slot.ad, lc, claim.ad if with_job and claim is not None
                              else None)

    def _job_attr(self, job_ad: Any, name: str) -> Any:
        return self.backend.evaluate(job_ad, name, None)

    def _start_locally_false(self, slot: Slot) -> bool:
        return is_false(self._eval(slot, "START", with_job=False))

    def _is_owner(self, slot: Slot) -> bool:
        if self.machine.draining:
            return False
        return is_true(self._eval(slot, "IS_OWNER", with_job=False))

    # ------------------------------------------------------------------- cycle
    def _advance(self, now: float) -> None:
        if now < self.now:
            raise PolicyError(f"clock went backwards: {now} < {self.now}")
        self.machine.account(self, now - self.now)
        self.now = now
        # ClockMin/ClockDay in UTC: the engine has no time zone of its own.

    def cycle(self, now: float) -> list[Output]:
        """One policy evaluation of every slot at ``now``."""
        self._cycle(now)
        return self.take_output()

    def _cycle(self, now: float) -> None:
        self._advance(now)
        if self._layout_change is not None:
            self._relayout()
        slots = [s for s in self.slots.values() if not s.deleted]
        # _measure inline, the same batches for every slot
        gen = self._inputs()[0]
        changed, full, put = self._changed_batch, self._all_batch, self._set_batch
        own = self._slot_measured
        idle = self._idle_batches
        for slot in slots:
            g = slot.inputs_gen
            if g != gen:
                put(slot.ad, changed if g == gen - 1 else full)
                slot.inputs_gen = gen
                # _measure_idle inline for the common case of a SlotID already computed
                got = idle.get(slot.slot_id)
                if got is not None and slot.idle != got[0]:
                    slot.idle = got[0]
                    put(slot.ad, got[1])
                elif got is None:
                    self._measure_idle(slot)
            if own:
                self._measure_own(slot)
        self._measure_load(slots)
        self._cross_slot_attrs(slots)
        # A latched expression that reads only machine-wide inputs (Desktop's CpuBusy
        # reads LoadAvg and CondorLoadAvg) has one value per slot type in a cycle.
        shared: dict[tuple[int, str], Any] = {}
        latch = self.settings.latch_exprs
        for slot in (slots if latch else ()):
            if not (own and slot.name in own):
                # _latch's answer, inline, when every value is shared and unchanged
                latched = slot.latched
                for name in latch:
                    v = shared.get((slot.slot_id, name), _UNSET)
                    if v is _UNSET:
                        break
                    if v is True or v is False:
                        v = int(v)
                    old = latched.get(name, _UNSET)
                    if type(old) is not type(v) or old != v:
                        break
                else:
                    continue
            self._latch(slot, shared)
        for slot in slots:
            if not slot.deleted:
                self._settle(slot)
        self.machine.after_cycle(self)

    def poll_interval(self) -> int:
        """POLLING_INTERVAL while any slot is claimed, UPDATE_INTERVAL otherwise."""
        if any(s.state in (S.CLAIMED, S.PREEMPTING, S.MATCHED) for s in self.slots.values()
               if not s.deleted):
            return self.settings.polling_interval
        return self.settings.update_interval

    def _cross_slot_attrs(self, slots: list[Slot]) -> None:
        """STARTD_SLOT_ATTRS: each slot's values copied into every ad as the slot
        layer's builder does (undefined and error values are left out)."""
        attrs = self.layout.settings.slot_attrs
        if not attrs:
            return
        values: list[tuple[str, Any]] = []
        for other in slots:
            prefix = other.name
            for attr in attrs:
                v = self.backend.evaluate(other.ad, attr, None)
                if v is not Undefined and v is not Error:
                    values.append((f"{prefix}_{attr}", v))
        for slot in slots:
            for k, v in values:
                self.put(slot, k, v)

    def _latch(self, slot: Slot, shared: dict[tuple[int, str], Any]) -> None:
        latched = slot.latched
        own = slot.name in self._slot_measured
        for name in self.settings.latch_exprs:
            key = (slot.slot_id, name)
            v = _UNSET if own else shared.get(key, _UNSET)
            if v is _UNSET:
                v = self._eval(slot, name, with_job=False)
                if self._machine_wide(slot, name):
                    shared[key] = v
            if v is True or v is False:
                v = int(v)
            old = latched.get(name, _UNSET)
            if old is _UNSET or old != v or type(old) is not type(v):
                latched[name] = v
                self.put(slot, f"{name}Value", v)
                self.put(slot, f"{name}Time", int(self.now))

    def _machine_wide(self, slot: Slot, name: str) -> bool:
        """Whether attribute ``name`` of this slot's ad reads nothing but machine-wide
        inputs (following the slot's own expressions), so every slot of its type and
        without measurements of its own gets the same value."""
        if slot.name in self._slot_measured:
            return False
        key = (slot.slot_id, name)
        leaves = self._leaves.get(key)
        if leaves is None:
            leaves = self._leaves[key] = _leaf_refs(slot.ad, name)
        return leaves is not _NOT_SHAREABLE and leaves <= self._input_names

    def _settle(self, slot: Slot) -> None:
        # The first step outside the loop: most slots do not move in a cycle.
        st, ac = slot.state, slot.activity
        if st is _CLAIMED:  # the common case, without hashing an Enum (Python code)
            self._step_claimed(slot)
        else:
            self._steps[st](slot)
        if slot.deleted or (slot.state is st and slot.activity is ac):
            return
        steps = self._steps
        for _ in range(_MAX_SETTLE - 1):
            st, ac = slot.state, slot.activity
            if st is _CLAIMED:
                self._step_claimed(slot)
            else:
                steps[st](slot)
            if slot.deleted or (slot.state is st and slot.activity is ac):
                return

    def _step(self, slot: Slot) -> None:
        self._steps[slot.state](slot)

    def _step_owner(self, slot: Slot) -> None:
        if self.machine.draining and slot.kind != "dynamic":
            self.go(slot, S.DRAINED, A.RETIRING, "36", "draining")
        elif not self._is_owner(slot) and not self.machine.shutting_down:
            self.go(slot, S.UNCLAIMED, A.IDLE, "1", "IS_OWNER is not True")

    def _step_matched(self, slot: Slot) -> None:
        if self._start_locally_false(slot):
            self._to_owner_from_matched(slot, "START is locally False")
        elif slot.matched_since is not None and \
                self.now - slot.matched_since >= self.settings.match_timeout:
            self._to_owner_from_matched(slot, "MATCH_TIMEOUT expired")

    def _step_drained(self, slot: Slot) -> None:
        """Drained slots move together: MachineWide.after_cycle finishes draining."""

    def _step_unclaimed(self, slot: Slot) -> None:
        if self.machine.draining and slot.kind != "dynamic":
            self.go(slot, S.DRAINED, A.RETIRING, "37", "draining")
        elif self._is_owner(slot) or self.machine.shutting_down:
            if slot.activity is A.BENCHMARKING:
                self.emit(StopBenchmarks(self.now, slot.name))
            self.go(slot, S.OWNER, A.IDLE, "2", "IS_OWNER is True")
        elif slot.activity is A.IDLE:
            if is_true(self._eval(slot, "RUNBENCHMARKS", False)):
                self.go(slot, S.UNCLAIMED, A.BENCHMARKING, "3", "RUNBENCHMARKS is True")
                self.emit(RunBenchmarks(self.now, slot.name))
            elif self.settings.enable_backfill and slot.kind != "dynamic" and \
                    is_true(self._eval(slot, "START_BACKFILL", False)):
                self.go(slot, S.BACKFILL, A.IDLE, "7", "START_BACKFILL is True")
                self.emit(StartBackfill(self.now, slot.name))

    def _step_claimed(self, slot: Slot) -> None:
        claim = slot.claim
        assert claim is not None
        ac = slot.activity
        if self.now - claim.last_alive > claim.lease:
            self.evict(slot, EvictWhy.LEASE, "claim lease expired", retire=False)
            return
        if ac is _IDLE:
            if self._start_locally_false(slot):
                self.evict(slot, EvictWhy.OWNER, "START is locally False")
            elif self._worklife_over(slot, claim) and claim.jobs_run > 0:
                self.evict(slot, EvictWhy.WORKLIFE, "CLAIM_WORKLIFE expired")
            return
        if ac is _BUSY:
            # _eval and is_true inline for the common case: every busy slot, every cycle
            names = self._plain_lc if not self._has_vanilla else self._names_for(slot)
            v = self._evaluate(slot.ad, names["WANT_SUSPEND"], claim.ad)
            if v is True or (v is not False and is_true(v)):
                if is_true(self._eval(slot, "SUSPEND")):
                    self._suspend(slot, "14", "SUSPEND is True")
                return
            v = self._evaluate(slot.ad, names["PREEMPT"], claim.ad)
            if v is True or (v is not False and is_true(v)):
                self.retire(slot, EvictWhy.OWNER, "PREEMPT is True")
            return
        if ac is A.RETIRING:
            r = slot.retirement
            if r is not None and r.why is EvictWhy.RANK and slot.pending is None:
                slot.retirement = None
                self.go(slot, S.CLAIMED, A.BUSY, "19", "preempting claim went away")
                return
            if is_true(self._eval(slot, "WANT_SUSPEND")) and is_true(self._eval(slot, "SUSPEND")):
                self._suspend(slot, "20", "SUSPEND is True")
                return
            if self.retirement_left(slot) <= self._vacate_grant(slot):
                self._preempt(slot, "18", "retirement time over")
            return
        if ac is A.SUSPENDED:
            if is_true(self._eval(slot, "CONTINUE")):
                self.emit(Continue(self.now, slot.name, claim=claim.id))
                if slot.retirement is not None:
                    self.go(slot, S.CLAIMED, A.RETIRING, "16", "CONTINUE is True")
                else:
                    self.go(slot, S.CLAIMED, A.BUSY, "15", "CONTINUE is True")
            elif slot.retirement is None and is_true(self._eval(slot, "PREEMPT")):
                slot.retirement = Retirement(EvictWhy.OWNER, self.now)
                if self.retirement_left(slot) <= self._vacate_grant(slot):
                    self._preempt(slot, "17", "PREEMPT is True and no retirement time left")
                else:
                    self.emit(Continue(self.now, slot.name, claim=claim.id))
                    self.go(slot, S.CLAIMED, A.RETIRING, "16", "PREEMPT is True")
            elif slot.retirement is not None and \
                    self.retirement_left(slot) <= self._vacate_grant(slot):
                self._preempt(slot, "17", "retirement time over while suspended")

    def _step_preempting(self, slot: Slot) -> None:
        if slot.activity is A.VACATING:
            claim = slot.claim
            if claim is None or claim.job is None:
                self._leave_preempting(slot)
            elif is_true(self._eval(slot, "KILL")):
                self.kill(slot, "21", "KILL is True")
            elif slot.vacate_deadline is not None and self.now >= slot.vacate_deadline:
                self.kill(slot, "21", "vacate time over")
        elif slot.activity is A.KILLING:
            if slot.claim is None or slot.claim.job is None:
                self._leave_preempting(slot)
            elif not slot.starter_killed and slot.killing_since is not None and \
                    self.now - slot.killing_since >= self.settings.killing_timeout:
                slot.starter_killed = True
                self.emit(KillStarter(self.now, slot.name, claim=slot.claim.id,
                          reason="KILLING_TIMEOUT expired"))

    def _step_backfill(self, slot: Slot) -> None:
        if slot.activity is A.BUSY:
            if self.machine.draining or self.machine.shutting_down:
                self._stop_backfill(slot, "owner", "machine is draining or shutting down")
            elif is_true(self._eval(slot, "EVICT_BACKFILL", False)):
                self._stop_backfill(slot, "owner", "EVICT_BACKFILL is True")
        elif slot.activity is A.IDLE:
            nxt = slot.backfill_next
            if nxt == "owner":
                slot.backfill_next = None
                self.go(slot, S.OWNER, A.IDLE, "30", "backfill client gone")
            elif nxt == "matched":
                slot.backfill_next = None
                slot.matched_since = self.now
                self.go(slot, S.MATCHED, A.IDLE, "32", "matched; backfill client gone")
            elif nxt == "claimed" and slot.backfill_claim is not None:
                claim, slot.backfill_claim, slot.backfill_next = slot.backfill_claim, None, None
                self._install_claim(slot, claim)
                self.go(slot, S.CLAIMED, A.IDLE, "31", "claimed; backfill client gone")

    # -------------------------------------------------------------- retirement
    def _max_retirement(self, slot: Slot) -> float:
        claim = slot.claim
        if claim is None or claim.job is None:
            return 0.0
        r = slot.retirement
        if r is not None and r.override is not None:
            return r.override
        machine = number(self._eval(slot, "MAXJOBRETIREMENTTIME"))
        mret = max(machine or 0.0, 0.0)
        own = number(self.backend.evaluate(claim.ad, "MaxJobRetirementTime", slot.ad))
        if own is not None and own < mret:
            mret = max(own, 0.0)
        return mret

    def retirement_left(self, slot: Slot) -> float:
        claim = slot.claim
        if claim is None or claim.job is None:
            return 0.0
        r = slot.retirement
        if r is not None and r.deadline is not None:
            return r.deadline - self.now
        return self._max_retirement(slot) - claim.job.run_time(self.now)

    def _vacate_grant(self, slot: Slot) -> float:
        """Seconds of soft-kill time: MachineMaxVacateTime, the job's JobMaxVacateTime,
        and retirement time converted to vacate time."""
        claim = slot.claim
        if claim is None:
            return 0.0
        machine = number(self._eval(slot, "MachineMaxVacateTime")) or 0.0
        job = number(self.backend.evaluate(claim.ad, "JobMaxVacateTime", slot.ad))
        if job is None:
            return machine
        if job <= machine:
            return max(job, 0.0)
        left = self.retirement_left(slot) if slot.state is S.CLAIMED else 0.0
        if math.isinf(left):
            return job
        return max(machine, min(job, left))

    def _worklife_over(self, slot: Slot, claim: Claim) -> bool:
        life = number(self._eval(slot, "CLAIM_WORKLIFE", False))
        return life is not None and life >= 0 and self.now - claim.created > life

    # ---------------------------------------------------------------- moves
    def _suspend(self, slot: Slot, key: str, reason: str) -> None:
        assert slot.claim is not None
        self.emit(Suspend(self.now, slot.name, claim=slot.claim.id))
        self.go(slot, S.CLAIMED, A.SUSPENDED, key, reason)

    def retire(self, slot: Slot, why: EvictWhy, reason: str, *,
                override: float | None = None) -> None:
        """Claimed/Busy -> Claimed/Retiring (13); other activities handled in place."""
        if slot.retirement is None or slot.retirement.why is EvictWhy.RANK:
            slot.retirement = Retirement(why, self.now, override=override)
        elif override is not None:
            slot.retirement.override = override
        if slot.activity is A.BUSY:
            self.go(slot, S.CLAIMED, A.RETIRING, "13", reason)

    def evict(self, slot: Slot, why: EvictWhy, reason: str, *, retire: bool = True,
               fast: bool = False) -> None:
        """Take the claim away: through retirement when a job runs and ``retire``."""
        slot.evict_why = why if why is not EvictWhy.RANK else slot.evict_why
        if slot.state is not S.CLAIMED:
            return
        job = slot.claim.job if slot.claim else None
        if job is None:
            self._preempt(slot, "10", reason, fast=fast)
        elif fast:
            self._preempt(slot, "Hk", reason, fast=True)
        elif retire:
            self.retire(slot, why, reason)
            if slot.activity is A.RETIRING and \
                    self.retirement_left(slot) <= self._vacate_grant(slot):
                self._preempt(slot, "18", reason)
        else:
            self._preempt(slot, "H", reason)

    def _preempt(self, slot: Slot, key: str, reason: str, fast: bool = False) -> None:
        """Enter Preempting: Vacating when WANT_VACATE, else Killing."""
        claim = slot.claim
        if slot.evict_why is None:
            r = slot.retirement
            slot.evict_why = r.why if r is not None else EvictWhy.OWNER
        job = claim.job if claim else None
        grant = self._vacate_grant(slot) if job else 0.0
        want_vacate = not fast and (job is None or is_true(self._eval(slot, "WANT_VACATE")))
        if want_vacate:
            self.go(slot, S.PREEMPTING, A.VACATING, key, reason)
            if job is not None and claim is not None:
                if slot.activity is A.VACATING and job.suspended_since is not None:
                    self.emit(Continue(self.now, slot.name, claim=claim.id))
                slot.vacate_deadline = self.now + grant
                job.soft_killed = True
                self.emit(SoftKill(self.now, slot.name, claim=claim.id, signal=self._kill_sig(claim),
                          timeout=grant))
        else:
            self.go(slot, S.PREEMPTING, A.KILLING, key if key != "H" else "Hk", reason)
            self._hard_kill(slot)

    def _kill_sig(self, claim: Claim) -> str:
        sig = self._job_attr(claim.ad, "KillSig")
        return sig if isinstance(sig, str) else "SIGTERM"

    def kill(self, slot: Slot, key: str, reason: str) -> None:
        self.go(slot, S.PREEMPTING, A.KILLING, key, reason)
        self._hard_kill(slot)

    def _hard_kill(self, slot: Slot) -> None:
        claim = slot.claim
        slot.killing_since = self.now
        slot.starter_killed = False
        if claim is not None and claim.job is not None:
            claim.job.hard_killed = True
            self.emit(HardKill(self.now, slot.name, claim=claim.id, signal="SIGKILL"))

    def _leave_preempting(self, slot: Slot) -> None:
        killing = slot.activity is A.KILLING
        old = slot.claim
        if old is not None:
            self._forget_claim(old.id)
            self.emit(ClaimEnded(self.now, slot.name, claim=old.id, why=(slot.evict_why or
                                                              EvictWhy.OWNER).value))
        slot.claim = None
        slot.retirement = None
        slot.vacate_deadline = slot.killing_since = None
        nxt = slot.pending
        slot.pending = None
        why = slot.evict_why
        slot.evict_why = None
        # The better claim takes over unless the owner, a drain or a shutdown took
        # the slot back.
        if nxt is not None and why not in (EvictWhy.OWNER, EvictWhy.DRAIN, EvictWhy.SHUTDOWN) \
                and not self.machine.draining and not self.machine.shutting_down:
            self._install_claim(slot, nxt)
            self.go(slot, S.CLAIMED, A.IDLE, "24" if killing else "23",
                     f"preempted for the better claim {nxt.id}")
            return
        if nxt is not None:
            self._forget_claim(nxt.id)
            self.emit(ClaimRefused(self.now, slot.name, claim=nxt.id,
                      reason=f"the slot was taken back ({(why or EvictWhy.OWNER).value})"))
        self.go(slot, S.OWNER, A.IDLE, "25" if killing else "22",
                 f"claim ended ({(why or EvictWhy.OWNER).value})")
        if slot.kind == "dynamic":
            self._delete_dslot(slot)

    def _delete_dslot(self, slot: Slot) -> None:
        slot.deleted = True
        parent = self.slots.get(slot.parent or "")
        self.layout.release(slot.layer)
        if parent is not None:
            self._refresh_resources(parent)
        self.emit(DeleteSlot(self.now, slot.name))
        del self.slots[slot.name]

    def _refresh_resources(self, slot: Slot) -> None:
        """Copy what the slot layer says ``slot`` has now (Cpus, Memory, Disk, custom
        resources, their devices) into its ad; a p-slot drops the devices it gave away."""
        layout = self.layout
        avail = layout.available(slot.layer)
        for k, v in (("Cpus", avail.cpus), ("Memory", avail.memory_mb),
                     ("Disk", avail.disk_kb)):
            slot.resources[k] = v
            self.put(slot, k, v)
        inventory = layout.inventory
        if not inventory.custom:
            return
        attrs = ClassAd()
        put_custom_resources(attrs, slot.layer.resources, avail, inventory)
        if slot.kind == "partitionable":
            for res in inventory.custom.values():
                for device in res.ids:
                    name = device_attr_name(device)
                    if name not in attrs and slot.ad.lookup(name) is not None:
                        del slot.ad[name]
        for name in attrs:
            expr = attrs.lookup(name)
            if expr is not None:
                slot.ad[name] = expr
        for name in inventory.custom:
            slot.resources[name] = float(avail.custom.get(name, 0))

    def _to_owner_from_matched(self, slot: Slot, reason: str) -> None:
        slot.matched_since = None
        self.go(slot, S.OWNER, A.IDLE, "8", reason)

    def _stop_backfill(self, slot: Slot, nxt: str, reason: str,
                       claim: Claim | None = None) -> None:
        slot.backfill_next = nxt
        slot.backfill_claim = claim
        if slot.activity is A.BUSY:
            self.go(slot, S.BACKFILL, A.KILLING, "28", reason)
            self.emit(KillBackfill(self.now, slot.name))
        elif slot.activity is A.IDLE:
            self._settle(slot)

    # ------------------------------------------------------------------ claims
    def _install_claim(self, slot: Slot, claim: Claim) -> None:
        slot.claim = claim
        slot.matched_since = None
        self._claims[claim.id] = slot.name

    def _slot(self, name: str) -> Slot:
        slot = self.slots.get(name)
        if slot is None or slot.deleted:
            raise PolicyError(f"no slot named {name!r}", slot=name)
        return slot

    def _forget_claim(self, claim_id: str) -> None:
        name = self._claims.pop(claim_id, None)
        if name is not None:
            self._ended[claim_id] = name

    def _claim_slot(self, claim_id: str) -> Slot:
        name = self._claims.get(claim_id)
        if name is None:
            raise PolicyError(f"no claim with id {claim_id!r}")
        return self.slots[name]

    def _refresh(self, now: float, slot: Slot) -> None:
        """Bring one slot up to date before an event acts on it (not a full cycle:
        events come one at a time, and a cycle over every slot per event would make a
        burst of claims quadratic)."""
        self._advance(now)
        if not slot.deleted:
            self._measure(slot)
            self._settle(slot)

    def vacate_slot(self, slot: Slot, fast: bool, reason: str,
                     why: EvictWhy = EvictWhy.OWNER) -> None:
        if slot.state is S.MATCHED:
            self._to_owner_from_matched(slot, reason)
        elif slot.state is S.BACKFILL:
            self._stop_backfill(slot, "owner", reason)
        elif slot.state is S.CLAIMED:
            self.evict(slot, why, reason, retire=False, fast=fast)
        elif slot.state is S.PREEMPTING and fast and slot.activity is A.VACATING:
            self.kill(slot, "21", reason)

    def _settle_one(self, slot: Slot) -> None:
        if not slot.deleted:
            self._settle(slot)
        self.machine.after_cycle(self)

    def _settle_all(self) -> None:
        for slot in list(self.slots.values()):
            if not slot.deleted:
                self._settle(slot)
        self.machine.after_cycle(self)

def _attr(engine: SlotMachine, ad: Any, name: str) -> Any:
    return engine.backend.evaluate(ad, name, None)


_NOT_SHAREABLE: frozenset[str] = frozenset({"\0not shareable"})
# Functions whose result is not fixed by the attributes an expression names.
_DYNAMIC_CALLS = frozenset({"eval", "evalineachcontext", "countmatches", "random",
                            "unresolved"})


def _leaf_refs(ad: Any, name: str) -> frozenset[str]:
    """The attributes (lower case) that ``name`` reads in ``ad``, through the ad's own
    expressions; _NOT_SHAREABLE when it reads the job, a slot literal, or anything chosen
    at run time."""
    leaves: set[str] = set()
    stack, seen = [name.lower()], set()
    while stack:
        attr = stack.pop()
        if attr in seen:
            continue
        seen.add(attr)
        expr = ad.lookup(attr)
        if expr is None:
            leaves.add(attr)          # absent: undefined in every slot alike
            continue
        if type(expr.node) is ast.Literal:
            if attr != name.lower():
                leaves.add(attr)      # a slot value: shareable only if machine-wide
            continue
        nodes = [expr.node]
        while nodes:
            n = nodes.pop()
            if type(n) is ast.Call and n.name.lower() in _DYNAMIC_CALLS:
                return _NOT_SHAREABLE
            nodes.extend(n.children())
        refs = expr.scoped_references()
        if refs["target"]:
            return _NOT_SHAREABLE
        stack.extend(refs["my"] | refs["unscoped"])
    return frozenset(leaves)
