"""Policy expressions evaluated in a slot: the _VANILLA variants, the job's universe,
and the latched expressions (STARTD_LATCH_EXPRS) with the values slots can share.

The names a slot evaluates are lower-cased once per settings and cached per SlotID:
this runs for every claimed slot several times a cycle.
"""

from __future__ import annotations

from typing import Any

from condorpy.classad import ast
from condorpy.policy.engine_state import EngineState
from condorpy.policy.evaluation import Error, is_false, is_true, number
from condorpy.policy.readings import Readings
from condorpy.policy.records import Claim, Slot
from condorpy.policy.settings import VANILLA_VARIANTS, PolicySettings

_UNSET: Any = object()


class _Unbudgeted:
    """What :attr:`SlotEval.allowance` is without an allowance: nothing runs out."""
    exceeded = 0
_NOT_SHAREABLE: frozenset[str] = frozenset({"\0not shareable"})
# Functions whose result is not fixed by the attributes an expression names.
_DYNAMIC_CALLS = frozenset({"eval", "evalineachcontext", "countmatches", "random",
                            "unresolved"})


class SlotEval:
    """Evaluates a slot's policy expressions, against its claim's job when asked."""

    def __init__(self, st: EngineState, readings: Readings) -> None:
        self._st = st
        self._readings = readings
        # evaluate(ad, lower-case name, target) as a plain function
        self.evaluate = st.backend.evaluator()
        self._vanilla: dict[int, dict[str, str]] = {}
        self._leaves: dict[tuple[int, str], frozenset[str]] = {}
        self.plain_lc: dict[str, str] = {}
        self.has_vanilla = False
        # policy expressions that evaluated to ERROR, by name (for the metrics)
        self.errors: dict[str, int] = {}
        # counts the evaluations that ran out of their budget (one that did is an
        # ERROR, even where the expression swallowed its error: isError(...))
        self.allowance: Any = st.ctx.allowance or _Unbudgeted()
        self.reconfigure(st.settings)

    def reconfigure(self, settings: PolicySettings) -> None:
        self.plain_lc = {n: n.lower() for n in (*settings.exprs, *VANILLA_VARIANTS)}
        self.has_vanilla = any(f"{n}_VANILLA" in exprs for n in VANILLA_VARIANTS
                               for exprs in (settings.exprs, *settings.slot_exprs.values()))
        self._vanilla.clear()
        self._leaves.clear()

    # ------------------------------------------------------------------ names
    def _vanilla_table(self, slot_id: int) -> dict[str, str]:
        """Lower-cased names to evaluate for a vanilla job's claim on slot ``slot_id``."""
        settings = self._st.settings
        table = dict(self.plain_lc)
        for n in VANILLA_VARIANTS:
            if settings.expr_for(f"{n}_VANILLA", slot_id) is not None:
                table[n] = f"{n}_VANILLA".lower()
        self._vanilla[slot_id] = table
        return table

    def universe(self, claim: Claim) -> int:
        if claim.universe is None:
            n = number(self.job_attr(claim.ad, "JobUniverse"))
            claim.universe = int(n) if n is not None else 5
        return claim.universe

    def names_for(self, slot: Slot) -> dict[str, str]:
        """Policy names to the lower-cased names evaluated for ``slot``: the _VANILLA
        variant when the claim's job is vanilla and the slot has one configured."""
        claim = slot.claim
        if claim is not None and self.has_vanilla:
            u = claim.universe
            if (u if u is not None else self.universe(claim)) == 5:
                return self._vanilla.get(slot.slot_id) or self._vanilla_table(slot.slot_id)
        return self.plain_lc

    def claim_names(self, slot: Slot, job_ad: Any) -> dict[str, str]:
        """:meth:`names_for` ``slot`` once claimed for ``job_ad`` (not claimed yet)."""
        if self.has_vanilla:
            n = number(self.job_attr(job_ad, "JobUniverse"))
            if (int(n) if n is not None else 5) == 5:
                return self._vanilla.get(slot.slot_id) or self._vanilla_table(slot.slot_id)
        return self.plain_lc

    # ------------------------------------------------------------- evaluation
    def eval(self, slot: Slot, name: str, with_job: bool = True) -> Any:
        claim = slot.claim
        table = self.plain_lc if not self.has_vanilla else self.names_for(slot)
        lc = table.get(name)
        if lc is None:
            lc = name.lower()
        allowance = self.allowance
        spent = allowance.exceeded
        v = self.evaluate(slot.ad, lc, claim.ad if with_job and claim is not None
                          else None)
        if v is Error or allowance.exceeded != spent:
            return self.error(name)
        return v

    def error(self, name: str) -> Any:
        """Policy expression ``name`` evaluated to ERROR, or ran out of its evaluation
        budget (as HTCondor takes an ERROR: not True); ERROR."""
        self.errors[name] = self.errors.get(name, 0) + 1
        return Error

    def job_attr(self, job_ad: Any, name: str) -> Any:
        return self._st.backend.evaluate(job_ad, name, None)

    def start_locally_false(self, slot: Slot) -> bool:
        return is_false(self.eval(slot, "START", with_job=False))

    def is_owner(self, slot: Slot) -> bool:
        if self._st.machine.draining:
            return False
        return is_true(self.eval(slot, "IS_OWNER", with_job=False))

    def worklife_over(self, slot: Slot, claim: Claim) -> bool:
        life = number(self.eval(slot, "CLAIM_WORKLIFE", False))
        return life is not None and life >= 0 and self._st.now - claim.created > life

    # ---------------------------------------------------------------- latches
    def latch_all(self, slots: list[Slot]) -> None:
        """STARTD_LATCH_EXPRS of every slot: <name>Value and <name>Time when the value
        changes. A latched expression that reads only machine-wide inputs (Desktop's
        CpuBusy reads LoadAvg and CondorLoadAvg) has one value per slot type in a
        cycle."""
        latch = self._st.settings.latch_exprs
        if not latch:
            return
        shared: dict[tuple[int, str], Any] = {}
        own = self._readings.own
        for slot in slots:
            if not (own and slot.name in own):
                # latch()'s answer, inline, when every value is shared and unchanged
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
            self.latch(slot, shared)

    def latch(self, slot: Slot, shared: dict[tuple[int, str], Any]) -> None:
        st = self._st
        latched = slot.latched
        own = slot.name in self._readings.own
        for name in st.settings.latch_exprs:
            key = (slot.slot_id, name)
            v = _UNSET if own else shared.get(key, _UNSET)
            if v is _UNSET:
                v = self.eval(slot, name, with_job=False)
                if self._machine_wide(slot, name):
                    shared[key] = v
            if v is True or v is False:
                v = int(v)
            old = latched.get(name, _UNSET)
            if old is _UNSET or old != v or type(old) is not type(v):
                latched[name] = v
                st.put(slot, f"{name}Value", v)
                st.put(slot, f"{name}Time", int(st.now))

    def _machine_wide(self, slot: Slot, name: str) -> bool:
        """Whether attribute ``name`` of this slot's ad reads nothing but machine-wide
        inputs (following the slot's own expressions), so every slot of its type and
        without readings of its own gets the same value."""
        if slot.name in self._readings.own:
            return False
        key = (slot.slot_id, name)
        leaves = self._leaves.get(key)
        if leaves is None:
            leaves = self._leaves[key] = leaf_refs(slot.ad, name)
        return leaves is not _NOT_SHAREABLE and leaves <= self._readings.input_names


def leaf_refs(ad: Any, name: str) -> frozenset[str]:
    """The attributes (lower case) that ``name`` reads in ``ad``, through the ad's own
    expressions; a set that is never a subset of the inputs when it reads the job, a
    slot literal, or anything chosen at run time."""
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
        if expr.calls_any(_DYNAMIC_CALLS):
            return _NOT_SHAREABLE
        refs = expr.scoped_references()
        if refs["target"]:
            return _NOT_SHAREABLE
        stack.extend(refs["my"] | refs["unscoped"])
    return frozenset(leaves)
