"""What the engine knows of the machine: idle times, load, and any other reading.

Machine-wide readings become ClassAd literals once per clock value (a *generation*)
and go into every slot ad as one prepared batch; a slot that saw the previous
generation gets only what changed since. Idle times are given to each slot as the slot
layer's SLOTS_CONNECTED_TO_* rules say, and the total load is split among the slots as
the slot layer splits it.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from condorpy.policy.engine_state import EngineState
from condorpy.policy.records import Slot
from condorpy.policy.states import State
from condorpy.slots.ads import Measurements
from condorpy.slots.load import SlotLoadInput, distribute_load, slot_idle_times

_AGEING = ("KeyboardIdle", "ConsoleIdle")   # measurements that grow with the clock
# Measurements the slot layer distributes per slot rather than copying to every ad.
PER_SLOT = frozenset({"keyboardidle", "consoleidle", "loadavg", "condorloadavg",
                      "totalloadavg"})
_OWNER = State.OWNER


class Readings:
    """Machine-wide and per-slot readings, and their literals prepared for the ads."""

    def __init__(self, st: EngineState, measurements: Measurements,
                 utc_offset: Callable[[float], int]) -> None:
        self._st = st
        self._utc_offset = utc_offset
        now, m = st.now, measurements
        # Machine-wide readings: the raw idle times (each slot sees them as the slot
        # layer's SLOTS_CONNECTED_TO_* rules say) and the machine's total load.
        self._measured: dict[str, tuple[Any, float]] = {
            "KeyboardIdle": (m.keyboard_idle, now), "ConsoleIdle": (m.console_idle, now),
            "TotalLoadAvg": (m.total_load_avg, now), "CondorLoadAvg": (0.0, now)}
        # Per slot: readings of that slot alone (empty for most machines).
        self.own: dict[str, dict[str, tuple[Any, float]]] = {}
        self._inputs_cache: dict[str, Any] = {}
        self._inputs_at: float | None = None
        self._lit_values: dict[str, tuple[type, Any]] = {}
        self.idle_batches: dict[int, tuple[tuple[Any, Any], Any]] = {}
        self._idle_lits: dict[tuple[type, Any], Any] = {}
        self._load_nonzero = m.total_load_avg != 0
        b = st.backend
        # The inputs, prepared by the backend for setting in many ads at once.
        self.all_batch: Any = b.literal_batch(())
        self.changed_batch: Any = self.all_batch
        self.changed_any = False
        self.set_batch = b.batch_setter()
        self.input_names: frozenset[str] = frozenset()
        self.gen = 0

    def current(self) -> Measurements:
        """The machine-wide readings as the slot layer's ad builder takes them."""
        kb, con, load = (self._measured[k][0] for k in ("KeyboardIdle", "ConsoleIdle",
                                                        "TotalLoadAvg"))
        return Measurements(float(load) if isinstance(load, (int, float)) else 0.0,
                            int(kb) if isinstance(kb, (int, float)) else 0,
                            int(con) if isinstance(con, (int, float)) else 0)

    def set(self, attrs: Mapping[str, Any], slot: str | None = None) -> None:
        """New readings at the engine's clock value (see PolicyEngine.set)."""
        now = self._st.now
        if slot is None:
            for k, v in attrs.items():
                key = "TotalLoadAvg" if k.lower() in ("loadavg", "totalloadavg") else k
                self._measured[key] = (v, now)
            self._inputs_at = None
        else:
            table = self.own.setdefault(slot, {})
            for k, v in attrs.items():
                table[k] = (v, now)

    def forget(self, slot_name: str) -> None:
        self.own.pop(slot_name, None)

    def value(self, name: str) -> Any:
        now = self._st.now
        v, at = self._measured.get(name, (0, now))
        if name in _AGEING and type(v) in (int, float):
            return v + int(now - at)
        return v

    def inputs(self) -> int:
        """Prepare the machine-wide inputs at ``now`` as backend literals, once per
        clock value and shared by every slot; the generation they make."""
        st = self._st
        if self._inputs_at == st.now:
            return self.gen
        b, now = st.backend, st.now
        local = int(now) + self._utc_offset(now)
        # MyCurrentTime is stamped when an ad is read (snapshot), not every cycle.
        # ClockMin/ClockDay in the zone the engine was given (UTC by default).
        values: dict[str, Any] = {"ClockMin": (local // 60) % 1440,
                                  "ClockDay": (local // 86400 + 4) % 7}  # 1970-01-01: Thu
        for k in self._measured:
            if k.lower() not in PER_SLOT:
                values[k] = self.value(k)
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
        self.gen += 1
        self.idle_batches = {}
        self._inputs_cache, self._inputs_at = cache, now
        self.all_batch = b.literal_batch(cache.items())
        self.changed_batch = b.literal_batch(changed)
        self.changed_any = bool(changed)
        self.input_names = frozenset(k.lower() for k in cache) | PER_SLOT
        return self.gen

    def measure(self, slot: Slot) -> None:
        """Bring one slot's ad up to the readings at ``now``."""
        gen = self.gen if self._inputs_at == self._st.now else self.inputs()
        if slot.inputs_gen != gen:
            # A slot that saw the previous generation needs only what changed since.
            self.set_batch(
                slot.ad, self.changed_batch if slot.inputs_gen == gen - 1 else self.all_batch)
            slot.inputs_gen = gen
            self.measure_idle(slot)
        if self.own:
            self.measure_own(slot)

    def measure_all(self, slots: list[Slot]) -> None:
        """measure() for every slot of a cycle, the same batches for each, then the
        load split."""
        gen = self.inputs()
        # (most cycles no machine-wide literal changes: nothing to put but the idle times)
        changed = self.changed_batch if self.changed_any else None
        full, put = self.all_batch, self.set_batch
        own = self.own
        idle = self.idle_batches
        for slot in slots:
            g = slot.inputs_gen
            if g != gen:
                if g != gen - 1:
                    put(slot.ad, full)
                elif changed is not None:
                    put(slot.ad, changed)
                slot.inputs_gen = gen
                # measure_idle inline for the common case of a SlotID already computed
                got = idle.get(slot.slot_id)
                if got is not None and slot.idle != got[0]:
                    slot.idle = got[0]
                    put(slot.ad, got[1])
                elif got is None:
                    self.measure_idle(slot)
            if own:
                self.measure_own(slot)
        self.measure_load(slots)

    def measure_idle(self, slot: Slot) -> None:
        """KeyboardIdle and ConsoleIdle as the slot layer gives them to this slot: the
        machine's when connected (SLOTS_CONNECTED_TO_*), else the time since start-up
        plus the boost. Computed once per SlotID and clock value (d-slots share their
        parent's) and set as one prepared batch."""
        got = self.idle_batches.get(slot.slot_id)
        if got is None:
            st = self._st
            lay = st.layout.settings
            kb, con = self.value("KeyboardIdle"), self.value("ConsoleIdle")
            if type(kb) in (int, float) and type(con) in (int, float):
                kb, con = slot_idle_times(slot.slot_id, int(kb), int(con), lay.idle,
                                          st.now, lay.started_at)
            got = self.idle_batches[slot.slot_id] = (
                (kb, con), st.backend.literal_batch((("KeyboardIdle", self._idle_lit(kb)),
                                                     ("ConsoleIdle", self._idle_lit(con)))))
        pair, batch = got
        if slot.idle != pair:
            slot.idle = pair
            self.set_batch(slot.ad, batch)

    def _idle_lit(self, value: Any) -> Any:
        """The literal for an idle time, the same object while the value stays: an
        attribute that keeps its expression object is unchanged to the incremental
        cycle (quiet.py), though its batch companion (ConsoleIdle) has moved on."""
        key = (type(value), value)
        lit = self._idle_lits.get(key)
        if lit is None:
            if len(self._idle_lits) >= 64:
                self._idle_lits.clear()
            lit = self._idle_lits[key] = self._st.backend.literal(value)
        return lit

    def measure_load(self, slots: list[Slot]) -> None:
        """LoadAvg and CondorLoadAvg of every slot, split as the slot layer does."""
        put = self._st.put
        total = self.value("TotalLoadAvg")
        total = float(total) if type(total) in (int, float) else 0.0
        default = self.value("CondorLoadAvg")
        default = float(default) if type(default) in (int, float) else 0.0
        own = self.own
        if not own and total == 0 and default == 0 and not self._load_nonzero:
            self._quiet_load(slots, total)   # (what the split below comes to)
            return
        loads = []
        for s in slots:
            mine = own.get(s.name, {}).get("CondorLoadAvg") if own else None
            c = mine[0] if mine is not None and type(mine[0]) in (int, float) else default
            # A p-slot never runs a job itself: its d-slots carry the load.
            loads.append(SlotLoadInput(s.name, 0.0 if s.kind == "partitionable" else float(c),
                                       s.state is _OWNER))
        nonzero = total != 0 or any(x.condor_load for x in loads)
        if not nonzero and not self._load_nonzero and not own:
            self._quiet_load(slots, total)
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
                put(s, "LoadAvg", pair[0])
                put(s, "CondorLoadAvg", pair[1])
        self._put_total_load(slots, total, split.total_condor_load_avg)

    def _quiet_load(self, slots: list[Slot], total: float) -> None:
        """The quiet machine: every slot 0.0, set once."""
        put = self._st.put
        zero = (0.0, 0.0)
        for s in slots:
            if s.load != zero:
                s.load = zero
                put(s, "LoadAvg", 0.0)
                put(s, "CondorLoadAvg", 0.0)
        self._put_total_load(slots, total, 0.0)

    def _put_total_load(self, slots: list[Slot], total: float, condor: float) -> None:
        put = self._st.put
        pair = (round(total, 6), round(condor, 6))
        for s in slots:
            if s.total_load != pair:
                s.total_load = pair
                put(s, "TotalLoadAvg", pair[0])
                put(s, "TotalCondorLoadAvg", pair[1])

    def measure_own(self, slot: Slot) -> None:
        own = self.own.get(slot.name)
        if own:
            st = self._st
            for k, (v, at) in own.items():
                if k in ("CondorLoadAvg", "LoadAvg"):
                    continue       # the load split puts them, the slot's own LoadAvg first
                if k in _AGEING and type(v) in (int, float):
                    v = v + int(st.now - at)
                st.put(slot, k, v)
