"""Policies over pressure stall information: the machine's (MachinePressure*, every
slot) and a job's (JobPressure*, its slot), as the daemon sets them through
PolicyEngine.set, and STARTD_HEALTH_EXPRS's Healthy / HealthFactor / HealthExprs."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import ConfigError
from condorpy.policy.records import SoftKill, StateChange
from condorpy.slots.health import HealthExprsError, parse_health
from tests.policy.engines import engine_from_text

BASE = "NUM_SLOTS = 1\nMEMORY = 128\nRUNBENCHMARKS = False\n"
JOB = {"JobUniverse": 5, "Owner": "alice", "RequestMemory": 128}


def _states(out: list[object]) -> list[tuple[str, str]]:
    return [(o.state.value, o.activity.value) for o in out if isinstance(o, StateChange)]


def _running(text: str):  # type: ignore[no-untyped-def]
    eng = engine_from_text(BASE + text)
    eng.cycle(0.0)
    eng.request_claim(0.0, "c1", JOB)
    eng.activate(0.0, "c1")
    eng.cycle(1.0)
    return eng


def test_suspend_on_machine_cpu_pressure_and_continue_when_it_falls() -> None:
    eng = _running("WANT_SUSPEND = True\n"
                   "SUSPEND = MachinePressureCpuSomeAvg10 > 50\n"
                   "CONTINUE = MachinePressureCpuSomeAvg10 < 10\n")
    eng.set(5.0, {"MachinePressureCpuSomeAvg10": 5.0})
    assert _states(eng.cycle(5.0)) == []
    eng.set(10.0, {"MachinePressureCpuSomeAvg10": 80.0})
    assert _states(eng.cycle(10.0)) == [("Claimed", "Suspended")]
    eng.set(20.0, {"MachinePressureCpuSomeAvg10": 2.0})
    assert _states(eng.cycle(20.0)) == [("Claimed", "Busy")]


def test_start_refuses_new_work_under_memory_pressure() -> None:
    eng = engine_from_text(BASE + "START = (MachinePressureMemorySomeAvg10 ?: 0) <= 20\n")
    eng.cycle(0.0)
    slot = eng.slots["slot1"]
    assert slot.ad.evaluate("START") is True            # no PSI: undefined, START holds
    eng.set(1.0, {"MachinePressureMemorySomeAvg10": 35.5})
    eng.cycle(1.0)
    assert slot.ad.evaluate("START") is False
    assert slot.ad.evaluate("MachinePressureMemorySomeAvg10") == 35.5


def test_preempt_over_the_jobs_own_memory_pressure() -> None:
    eng = _running("PREEMPT = (JobPressureMemoryFullAvg10 ?: 0) > 30\n")
    eng.set(5.0, {"JobPressureMemoryFullAvg10": 10.0}, slot="slot1")
    assert not any(isinstance(o, SoftKill) for o in eng.cycle(5.0))
    eng.set(10.0, {"JobPressureMemoryFullAvg10": 60.0}, slot="slot1")
    out = eng.cycle(10.0)
    assert any(isinstance(o, SoftKill) for o in out)
    assert ("Preempting", "Vacating") in _states(out)


def test_health_exprs_make_healthy_factor_and_requirements() -> None:
    eng = engine_from_text(
        BASE + "STARTD_HEALTH_EXPRS = (MachinePressureMemorySomeAvg10 ?: 0) < 20, "
        "(MachinePressureIoFullAvg60 ?: 0) < 50\n")
    eng.cycle(0.0)
    ad = eng.slots["slot1"].ad
    assert ad.evaluate("HealthFactor") == 1.0 and ad.evaluate("Healthy")
    assert str(ad.lookup("Requirements")).startswith("Healthy && START")
    job = {"Requirements": True, **JOB}
    assert ad.evaluate("Requirements", ClassAd(job)) is True
    eng.set(1.0, {"MachinePressureMemorySomeAvg10": 40.0})
    eng.cycle(1.0)
    assert ad.evaluate("HealthFactor") == 0.5
    assert not ad.evaluate("Healthy")
    assert ad.evaluate("Requirements", ClassAd(job)) is False


def test_health_exprs_knob_forms() -> None:
    assert parse_health("{a, b}") == parse_health("a, b")
    assert parse_health("").attrs() == (("Healthy", "true"),)
    with pytest.raises(HealthExprsError):
        parse_health("a <")
    with pytest.raises(ConfigError, match="STARTD_HEALTH_EXPRS"):
        engine_from_text(BASE + "STARTD_HEALTH_EXPRS = a <\n")


DOC_EXAMPLE = """
START = $(START) && (MachinePressureMemorySomeAvg10 ?: 0) <= 20
SUSPEND = (MachinePressureCpuSomeAvg10 ?: 0) > 50
# (while WANT_SUSPEND is true a busy job is suspended, never preempted: PREEMPT below
# is evaluated while SUSPEND is false)
WANT_SUSPEND = $(SUSPEND)
CONTINUE = (MachinePressureCpuSomeAvg10 ?: 0) < 10
PREEMPT = $(PREEMPT) || (JobPressureMemoryFullAvg60 ?: 0) > 30
WANT_HOLD = (JobPressureMemoryFullAvg60 ?: 0) > 30
WANT_HOLD_REASON = "job stalled on memory: raise request_memory"
"""


def test_the_documented_example_policy_acts() -> None:
    """docs/pressure.md's example: a thrashing job is held with the documented reason."""
    eng = _running(DOC_EXAMPLE)
    eng.set(5.0, {"JobPressureMemoryFullAvg60": 45.0}, slot="slot1")
    kills = [o for o in eng.cycle(5.0) if isinstance(o, SoftKill)]
    assert kills and kills[0].hold_reason == "job stalled on memory: raise request_memory"
