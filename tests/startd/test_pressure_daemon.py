"""Pressure in the daemon: the machine's PSI read from a fake /proc tree by the
activity probe (behind HostRoots) reaches every slot ad and the metrics and a
SUSPEND over it acts; a job's PSI from its starter's usage report reaches its slot ad,
a PREEMPT over it acts, and it is undefined again once the job is gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from condorpy.classad import Undefined
from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.machine.probe import measure_activity
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.policy.records import Output, StateChange
from condorpy.startd.core import Core
from condorpy.startd.metrics import Metrics, scrape_text
from condorpy.startd.policy_timers import PolicyTimers
from tests.machine.fakehost import roots, write
from tests.startd.rm_rig import Rig

CONFIG = ("NUM_CPUS = 1\nNUM_SLOTS = 1\nMEMORY = 1024\nRUNBENCHMARKS = False\n"
          "WANT_SUSPEND = True\nSUSPEND = MachinePressureCpuSomeAvg10 > 50\n"
          "CONTINUE = MachinePressureCpuSomeAvg10 < 10\nPREEMPT = False\nKILL = False\n"
          "CONDORPY_METRICS_ADDRESS = 127.0.0.1:0\nCONSOLE_DEVICES =\n")


def _psi(avg10: float) -> str:
    return (f"some avg10={avg10:.2f} avg60=1.00 avg300=0.50 total=2500000\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def test_machine_pressure_from_a_fake_proc_suspends_and_is_exported(tmp_path: Path) -> None:
    cfg = Config.from_text(CONFIG, source="<test>", env={}, detected=VIRTUAL_DETECTED)
    clock = ManualClock(10_000.0)
    eng = Core(cfg, virtual_inventory(cfg)).engine(clock)
    host = roots(tmp_path)
    write(tmp_path / "proc/loadavg", "0.10 0.10 0.10 1/100 42\n")
    write(tmp_path / "proc/pressure/cpu", _psi(2.0))
    outputs: list[Output] = []
    metrics = Metrics.from_config(cfg, eng, clock)
    timers = PolicyTimers(eng, clock, metrics, outputs.extend,
                          measure=lambda: measure_activity(cfg, host),
                          publish=lambda: None, cycled=lambda: None)
    timers.probe()
    timers.cycle()
    eng.request_claim(clock.time(), "c1", {"JobUniverse": 5, "Owner": "alice",
                                         "RequestMemory": 128})
    eng.activate(clock.time(), "c1")
    clock.advance(1)
    timers.probe()
    timers.cycle()
    slot = eng.slots["slot1"]
    assert slot.ad.evaluate("MachinePressureCpuSomeAvg10") == 2.0
    assert slot.ad.evaluate("MachinePressureCpuSomeTotal") == 2500000
    assert slot.ad.evaluate("MachinePressureIoSomeAvg10") is Undefined    # no io file
    assert (slot.state.value, slot.activity.value) == ("Claimed", "Busy")

    write(tmp_path / "proc/pressure/cpu", _psi(75.0))       # the kernel's next figure
    clock.advance(1)
    outputs.clear()
    timers.probe()
    timers.cycle()
    assert [(o.state.value, o.activity.value) for o in outputs
            if isinstance(o, StateChange)] == [("Claimed", "Suspended")]

    metrics.publish(clock.monotonic())
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(scrape_text(metrics.registry))
               for s in fam.samples}
    assert samples[("condorpy_machine_pressure_ratio",
                    (("kind", "some"), ("resource", "cpu"), ("window", "10s")))] == 0.75
    assert samples[("condorpy_machine_pressure_stalled_seconds_total",
                    (("kind", "some"), ("resource", "cpu")))] == 2.5


JOB = "executable = /bin/sleep\narguments = 300\n"


def _usage(pressure: list[list[Any]]) -> dict[str, Any]:
    return {"event": "usage", "usage": {"RemoteUserCpu": 1.0, "RemoteSysCpu": 0.0},
            "pressure": pressure}


def test_job_pressure_in_its_slot_ad_preempts_and_goes_with_the_job(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "PREEMPT = (JobPressureMemoryFullAvg10 ?: 0) > 40\n"
                        "WANT_SUSPEND = False\n")
    exported: list[tuple[str, object]] = []
    rig.rm.pressure.export = lambda slot, p: exported.append((slot, p))
    rig.submit(JOB + "queue\n")
    rig.step()
    rig.step(1)
    name = rig.handle("1.0").slot
    rig.says("1.0", _usage([["memory", "some", 30.0, 5.0, 1.0, 700000],
                            ["memory", "full", 12.5, 2.0, 0.5, 300000]]))
    rig.step(1)
    ad = rig.engine.slots[name].ad
    assert ad.evaluate("JobPressureMemorySomeAvg10") == 30.0
    assert ad.evaluate("JobPressureMemoryFullTotal") == 300000
    assert "soft_kill" not in rig.channel.told("1.0")
    rig.says("1.0", _usage([["memory", "full", 55.0, 9.0, 2.0, 900000]]))
    rig.step(1)
    # a line the kernel no longer gives does not linger
    assert ad.evaluate("JobPressureMemorySomeAvg10") is Undefined
    assert "soft_kill" in rig.channel.told("1.0")
    assert exported[-1][0] == name and exported[-1][1] is not None
    rig.obey()
    rig.step(1)
    if name in rig.engine.slots and not rig.engine.slots[name].deleted:
        assert rig.engine.slots[name].ad.evaluate("JobPressureMemoryFullAvg10") is Undefined
    assert exported[-1] == (name, None)
