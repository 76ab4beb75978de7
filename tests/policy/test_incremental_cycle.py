"""The incremental cycle (condorpy/policy/quiet.py) changes nothing but the work done:
random scenarios run through two engines, one that skips busy slots whose inputs have
not changed and one that evaluates every slot every cycle, must give the same outputs
(state changes and actions, at the same clock values), the same ads and the same
evaluation-error counts, event by event."""

from __future__ import annotations

import random
from typing import Any, Callable

import pytest

from condorpy.classad import ClassAd
from condorpy.clock import ManualClock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.settings import settings_from_config
from tests.policy.engines import core_from_text

HOST = "NUM_CPUS = 6\nMEMORY = 6144\nDISK = 6000000\nRUNBENCHMARKS = False\n"
KEYBOARD = "SLOTS_CONNECTED_TO_KEYBOARD = 100\n"
MANY = "NUM_CPUS = 16\nMEMORY = 16384\nDISK = 16000000\nRUNBENCHMARKS = False\n"
PSLOT = ("NUM_SLOTS = 1\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
         "SLOT_TYPE_1_PARTITIONABLE = True\n")

# Desktop reads time() only on some paths (CpuBusyTimer once CpuBusy has latched,
# JobStart once the CPU has been busy long enough); the custom policies read time()
# on every path, the job's attributes (of changing types), and random() (whose draws
# must come in the same order in both engines: an impure expression is never skipped).
POLICIES = {
    "desktop-pslot": "use POLICY : Desktop\n" + HOST + PSLOT,
    "desktop-static": "use POLICY : Desktop\nNUM_SLOTS = 6\n" + HOST,
    "timers": HOST + PSLOT + KEYBOARD + (
        "STARTD_LATCH_EXPRS = CpuBusy\nCpuBusy = (LoadAvg - CondorLoadAvg) >= 0.5\n"
        "WANT_SUSPEND = TARGET.ImageSize is 1000 || TARGET.ImageSize > 4000\n"
        "SUSPEND = KeyboardIdle < 60 || (CpuBusyValue is 1 && time() - CpuBusyTime > 30)\n"
        "CONTINUE = KeyboardIdle > 90 && time() - EnteredCurrentActivity > 20\n"
        "PREEMPT = (Activity == \"Suspended\" && time() - EnteredCurrentActivity > 200) "
        "|| (TARGET.JobUniverse =!= 5 && time() - JobStart > 700)\n"
        "MaxJobRetirementTime = 50\nKILL = time() - EnteredCurrentActivity > 40\n"
        "WANT_VACATE = TARGET.ImageSize < 3000\nMachineMaxVacateTime = 30\n"),
    "random": HOST + PSLOT + KEYBOARD + (
        "WANT_SUSPEND = True\nSUSPEND = random(100) > 96 && KeyboardIdle < 100\n"
        "CONTINUE = random(100) > 50\nPREEMPT = random(1000) > 995\n"),
    # Many slots alike, so that classes of slots move together when the keyboard's
    # idle time grows (quiet.py's transitions).
    "desktop-many": "use POLICY : Desktop\n" + MANY + PSLOT,
    # Reads neither the clock nor an idle time: busy slots sleep (quiet.py) until a
    # reading of their own, a machine-wide one, their job's ad or their lease wakes them.
    "sleepy": MANY + PSLOT + (
        "WANT_SUSPEND = TARGET.ImageSize > 4000 || MY.OwnerBusy =?= True\n"
        "SUSPEND = MY.OwnerBusy =?= True || Pressure > 2\nCONTINUE = OwnerBusy =!= True\n"
        "PREEMPT = TARGET.ImageSize is true || (Activity == \"Busy\" && Pressure > 3)\n"
        "MaxJobRetirementTime = 25\n"),
}
# A reconfiguration's new knobs, for each policy: a new expression, a _VANILLA one
# (which changes the names a vanilla job's slot evaluates, not the expressions).
RECONFIG = ("\nSUSPEND = KeyboardIdle < 120\nMaxJobRetirementTime = 20\n",
            "\nPREEMPT_VANILLA = TARGET.ImageSize > 2500\nWANT_SUSPEND_VANILLA = False\n")


class Twins:
    """The same events to an incremental engine and to one that evaluates everything;
    every answer compared."""

    def __init__(self, text: str, seed: int) -> None:
        self.text = text
        self.engines: list[PolicyEngine] = []
        for incremental in (True, False):
            core = core_from_text(text)
            eng = core.engine(ManualClock(0.0))
            eng.quiet.enabled = incremental
            eng.ctx.rng.seed(seed)
            self.engines.append(eng)
        self.now = 0.0
        self.events = 0

    def both(self, call: Callable[[PolicyEngine], Any]) -> Any:
        got = []
        for eng in self.engines:
            try:
                got.append(("ok", call(eng)))
            except Exception as exc:   # both must refuse alike
                got.append(("raised", f"{type(exc).__name__}: {exc}"))
        assert got[0] == got[1], f"event {self.events} at t={self.now}: {got}"
        self.events += 1
        return got[0][1]

    def check_ads(self) -> None:
        a, b = self.engines
        assert a.snapshot() == b.snapshot(), f"ads differ at t={self.now}"
        assert a.evaluation_errors() == b.evaluation_errors()
        # as many random() draws in both
        assert a.ctx.rng.getstate() == b.ctx.rng.getstate()


def job(r: random.Random, i: int) -> dict[str, Any]:
    ad: dict[str, Any] = {
        "JobUniverse": r.choice([5, 5, 5, 1, 7]), "Owner": f"u{i % 3}",
        "ImageSize": r.choice([1000, 1000, 20000, 3000, 1000.0, 5000]),
        "RequestCpus": 1, "RequestMemory": r.choice([512, 1024]), "RequestDisk": 1000}
    if r.random() < 0.3:
        ad["MaxJobRetirementTime"] = r.choice([0, 30, 100])
    if r.random() < 0.4:
        ad["JobLeaseDuration"] = r.choice([40, 120, 600])
    return ad


def run_scenario(policy: str, seed: int, steps: int = 600) -> Twins:
    r = random.Random(seed)
    t = Twins(POLICIES[policy], seed)
    t.both(lambda e: e.set(0, {"KeyboardIdle": 5000, "ConsoleIdle": 5000,
                               "LoadAvg": 0.0, "CondorLoadAvg": 0.0}))
    t.both(lambda e: e.cycle(0))
    claims: list[str] = []
    n = 0
    for _ in range(r.randint(0, 14)):             # a burst of claims to begin with
        n += 1
        cid, ad = f"c{n}", job(r, n)
        out = t.both(lambda e: e.request_claim(0, cid, dict(ad)))
        if any(getattr(o, "kind", "") == "claim_accepted" for o in out):
            claims.append(cid)
            t.both(lambda e: e.activate(0, cid))
    for step in range(steps):
        what = r.random()
        if what < 0.35:                           # time passes: a cycle, or several
            for _ in range(1 if r.random() < 0.7 else r.randint(2, 8)):
                t.now += r.choice([1, 5, 5, 5, 5, 10, 30, 120])
                now = t.now
                t.both(lambda e: e.cycle(now))
            continue
        now = t.now
        if what < 0.55:                                    # the owner, the load
            attrs: dict[str, Any] = {}
            if r.random() < 0.5:
                attrs["KeyboardIdle"] = r.choice([0, 10, 100, 1000, 5000, 5000, 5000])
            if r.random() < 0.5:
                attrs["LoadAvg"] = r.choice([0.0, 0.2, 1.0, 3.0])
            if r.random() < 0.3:
                attrs["CondorLoadAvg"] = r.choice([0.0, 1.0])
            if r.random() < 0.3:
                attrs["Pressure"] = r.choice([0, 1, 3, 4])
            t.both(lambda e: e.set(now, attrs))
        elif what < 0.70:                                  # a claim, then its job
            n += 1
            cid, ad = f"c{n}", job(r, n)
            out = t.both(lambda e: e.request_claim(now, cid, dict(ad)))
            if isinstance(out, list) and any(getattr(o, "kind", "") == "claim_accepted"
                                             for o in out):
                claims.append(cid)
                if r.random() < 0.9:
                    t.both(lambda e: e.activate(now, cid))
        elif claims and what < 0.80:                       # the running job's ad
            cid = r.choice(claims)
            upd = {"ImageSize": r.choice([1000, 1000.0, 5000, True, 20000])}
            if r.random() < 0.2:
                upd["JobUniverse"] = r.choice([5, 1])
            t.both(lambda e: e.job_update(now, cid, upd))
        elif claims and what < 0.86:                       # keep-alives
            cid = r.choice(claims)
            t.both(lambda e: e.alive(now, cid))
        elif claims and what < 0.92:                       # jobs end, claims go
            cid = claims.pop(r.randrange(len(claims)))
            if r.random() < 0.6:
                t.both(lambda e: e.job_exit(now, cid, 0))
            t.both(lambda e: e.release(now, cid))
        elif what < 0.95:                                  # one slot's own reading
            names = sorted(t.engines[0].slots)
            name = r.choice(names)
            own: dict[str, Any] = r.choice([{"CondorLoadAvg": r.choice([0.0, 1.0, 2.0])},
                                             {"OwnerBusy": r.random() < 0.3}])
            t.both(lambda e: e.set(now, own, slot=name))
        elif what < 0.965:                                  # condor_vacate
            fast = r.random() < 0.5
            t.both(lambda e: e.vacate(now, None, fast))
        elif what < 0.98:                                  # a reconfiguration
            text = t.text + r.choice(("",) + RECONFIG)
            cfg = core_from_text(text).config
            t.both(lambda e: e.reconfigure(settings_from_config(
                cfg, {s.slot_id: s.type_id for s in e.layout})))
        elif what < 1.0:                                  # a drain, its cancelling
            if t.engines[0].machine.draining:
                t.both(lambda e: e.cancel_drain(now))
            else:
                how = r.choice(["graceful", "quick"])
                t.both(lambda e: e.drain(now, how))
        if step % 40 == 0:
            t.check_ads()
    t.check_ads()
    return t


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_incremental_cycle_changes_no_outcome(policy: str) -> None:
    skipped = 0
    for seed in range(6):
        fast, slow = run_scenario(policy, seed).engines
        assert slow.quiet.slept == slow.quiet.moved == slow.quiet.reused == 0
        assert slow.quiet.shared == slow.quiet.evaluated == 0
        q = fast.quiet
        skipped += q.slept + q.moved + q.reused + q.shared
    # not vacuous: the incremental engine did skip steps
    assert skipped > 0


def test_a_job_attribute_changing_type_is_a_change() -> None:
    """1000 and 1000.0 and true compare equal; a policy may still tell them apart
    (``is``), and so must the records."""
    text = HOST + PSLOT + "WANT_SUSPEND = TARGET.ImageSize is 1000\nSUSPEND = True\n" \
        "CONTINUE = False\nPREEMPT = False\n"
    eng = core_from_text(text).engine(ManualClock(0.0))
    eng.set(0, {"KeyboardIdle": 5000})
    eng.request_claim(0, "c1", {"ImageSize": 1000.0, "RequestCpus": 1,
                                "RequestMemory": 512, "RequestDisk": 100})
    eng.activate(0, "c1")
    evaluated = eng.quiet.evaluated
    assert not eng.cycle(5) and not eng.cycle(10)
    assert eng.quiet.evaluated == evaluated         # not evaluated again
    out = eng.job_update(15, "c1", {"ImageSize": 1000})
    assert [o.kind for o in out if hasattr(o, "kind")] == ["suspend"]


def test_reads_that_cannot_be_followed_are_not_remembered() -> None:
    """An expression that walks an ad whole (here size() of the job's ad, as a
    record) is evaluated every cycle."""
    text = HOST + PSLOT + "WANT_SUSPEND = False\nPREEMPT = size(TARGET) > 100\n"
    eng = core_from_text(text).engine(ManualClock(0.0))
    eng.set(0, {"KeyboardIdle": 5000})
    eng.request_claim(0, "c1", ClassAd({"RequestCpus": 1, "RequestMemory": 512,
                                        "RequestDisk": 100}))
    eng.activate(0, "c1")
    for now in (5, 10, 15):
        eng.cycle(now)
    assert eng.quiet.reused == eng.quiet.shared == 0


def test_a_reconfiguration_that_only_changes_which_names_are_read_wakes_slots() -> None:
    """A _VANILLA variant changes which expression a vanilla job's slot evaluates,
    while every expression the slot read stays as it was."""
    text = HOST + PSLOT + "WANT_SUSPEND = False\nPREEMPT = False\n"
    core = core_from_text(text)
    eng = core.engine(ManualClock(0.0))
    eng.set(0, {"KeyboardIdle": 5000})
    eng.request_claim(0, "c1", {"JobUniverse": 5, "RequestCpus": 1, "RequestMemory": 512,
                                "RequestDisk": 100})
    eng.activate(0, "c1")
    assert not eng.cycle(5) and not eng.cycle(10)
    assert eng.quiet.slept > 0
    cfg = core_from_text(text + "PREEMPT_VANILLA = True\n").config
    eng.reconfigure(settings_from_config(cfg, {s.slot_id: s.type_id for s in eng.layout}))
    out = eng.cycle(15)
    assert [o.transition for o in out if hasattr(o, "transition")][:1] == ["13"]


def test_one_job_ad_for_two_claims() -> None:
    """A caller may hand the same ClassAd to two claims: a write to it must reach
    both slots' policies."""
    text = HOST + PSLOT + "WANT_SUSPEND = False\nPREEMPT = TARGET.Bad =?= True\n"
    eng = core_from_text(text).engine(ManualClock(0.0))
    eng.set(0, {"KeyboardIdle": 5000})
    shared = ClassAd({"RequestCpus": 1, "RequestMemory": 512, "RequestDisk": 100})
    for cid in ("c1", "c2"):
        eng.request_claim(0, cid, shared)
        eng.activate(0, cid)
    assert not eng.cycle(5) and not eng.cycle(10)
    shared["Bad"] = True
    out = eng.cycle(15)
    assert sorted(o.slot for o in out if getattr(o, "transition", "") == "13") == \
        sorted(s.name for s in eng.slots.values() if s.kind == "dynamic")


def sleepy_engine(sizes: list[int]) -> PolicyEngine:
    eng = core_from_text(POLICIES["sleepy"]).engine(ManualClock(0.0))
    eng.set(0, {"KeyboardIdle": 5000, "Pressure": 0})
    for i, size in enumerate(sizes):
        eng.request_claim(0, f"c{i}", {"ImageSize": size, "RequestCpus": 1,
                                       "RequestMemory": 512, "RequestDisk": 100})
        eng.activate(0, f"c{i}")
    assert not eng.cycle(5) and not eng.cycle(10)
    return eng


def suspended(out: list[Any]) -> list[str]:
    return sorted({o.slot for o in out if getattr(o, "kind", "") == "suspend"})


def test_slots_move_with_their_own_class_only() -> None:
    """A machine-wide reading reaches slots of two classes (small and large jobs):
    each class takes the outcome of a slot of its own."""
    eng = sleepy_engine([1000, 1000, 5000, 5000])
    large = sorted(s.name for s in eng.slots.values() if s.claim is not None
                   and s.claim.ad.evaluate("ImageSize") == 5000)
    eng.set(15, {"Pressure": 3})
    assert suspended(eng.cycle(15)) == large


def test_a_slot_written_besides_the_batch_is_checked_alone() -> None:
    """A slot that got the machine-wide batch and a reading of its own does not take
    its class's outcome."""
    eng = sleepy_engine([1000, 1000, 1000])
    last = sorted(s.name for s in eng.slots.values() if s.kind == "dynamic")[-1]
    eng.set(15, {"Pressure": 1})
    eng.set(15, {"OwnerBusy": True}, slot=last)
    assert suspended(eng.cycle(15)) == [last]
    assert eng.quiet.moved > 0 or eng.quiet.shared > 0
