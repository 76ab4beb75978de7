"""The startd's metrics: samples read from the private registry after driving the real
policy engine (the daemon's slot state) and the daemon's event counters."""

from __future__ import annotations

import socket
import sys
import subprocess
import urllib.request
from typing import Any

import pytest

from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.errors import ConfigError
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import HardKill, KillStarter, SoftKill
from condorpy.startd.core import Core
from condorpy.queue.jobstore import JobId, JobStatus
from condorpy.startd.metrics import (DEFAULT_ADDRESS, Metrics, metrics_address,
                                     scrape_text)

MiB = 1024 * 1024


def _cfg(extra: str = "") -> Config:
    text = ("NUM_CPUS = 8\nMEMORY = 8192\nDISK = 1000000\nRUNBENCHMARKS = False\n"
            "START = True\nSUSPEND = False\nPREEMPT = False\nKILL = False\n"
            "WANT_VACATE = True\nMACHINE_RESOURCE_GPUs = 2\n"
            "MACHINE_RESOURCE_Widgets = 3\n"
            "CONDORPY_METRICS_ADDRESS = 127.0.0.1:0\n" + extra)
    return Config.from_text(text, source="<test>", env={}, detected=VIRTUAL_DETECTED)


PSLOT = ("NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n")


def _setup(extra: str = PSLOT) -> tuple[PolicyEngine, Metrics, ManualClock]:
    cfg = _cfg(extra)
    clock = ManualClock(1000.0)
    eng = Core(cfg, virtual_inventory(cfg)).engine(clock)
    eng.set(1000, {"KeyboardIdle": 100000, "LoadAvg": 0.0})
    eng.cycle(1000)
    return eng, Metrics.from_config(cfg, eng, clock), clock


def _job(i: int, **kw: Any) -> dict[str, Any]:
    job = {"JobUniverse": 5, "Owner": "u", "RequestCpus": 1, "RequestMemory": 512,
           "RequestDisk": 1000, "ClusterId": i, "ProcId": 0}
    job.update(kw)
    return job


def _run(eng: PolicyEngine, m: Metrics, n: int, now: float = 1001, **kw: Any) -> None:
    for i in range(n):
        for o in eng.request_claim(now, f"c{i}", _job(i, **kw)):
            m.observe(o)
        for o in eng.activate(now, f"c{i}"):
            m.observe(o)
        m.stats.job_launched(JobId(i, 0), now)


def _v(m: Metrics, metric: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(metric, labels)  # type: ignore[no-any-return]


# --- the knob --------------------------------------------------------------------

def test_address_default_empty_and_bad_values() -> None:
    def cfg(text: str) -> Config:
        return Config.from_text(text, source="site.conf", env={})
    assert metrics_address(cfg("")) == DEFAULT_ADDRESS == ("127.0.0.1", 9619)
    assert metrics_address(cfg("CONDORPY_METRICS_ADDRESS =\n")) is None
    assert metrics_address(cfg("CONDORPY_METRICS_ADDRESS = [::1]:9700\n")) == ("::1", 9700)
    assert metrics_address(cfg("CONDORPY_METRICS_ADDRESS = 0.0.0.0:9619\n")) == \
        ("0.0.0.0", 9619)
    for bad in ("9619", "localhost:http", "h:70000", "a b:1"):
        with pytest.raises(ConfigError) as err:
            metrics_address(cfg(f"X = 1\nCONDORPY_METRICS_ADDRESS = {bad}\n"))
        assert str(err.value) == (f"CONDORPY_METRICS_ADDRESS = {bad} at site.conf:2 is "
                                  "not a host:port address")


def test_startd_refuses_a_bad_address_before_starting(tmp_path: Any) -> None:
    conf = tmp_path / "condor_config"
    conf.write_text(f"LOCAL_DIR = {tmp_path}\nCONDORPY_METRICS_ADDRESS = nowhere\n")
    res = subprocess.run([sys.executable, "-m", "condorpy", "startd", "-f"], capture_output=True,
                         text=True, timeout=60,
                         env={"CONDOR_CONFIG": str(conf), "PATH": "/usr/bin:/bin",
                              "PYTHONPATH": str(__import__("pathlib").Path(__file__)
                                                .resolve().parents[2])})
    assert res.returncode == 1
    assert f"CONDORPY_METRICS_ADDRESS = nowhere at {conf}:2 is not a host:port address" \
        in res.stderr
    assert "Traceback" not in res.stderr


# --- slots and resources ---------------------------------------------------------

def test_slots_by_state_and_resources_claimed() -> None:
    eng, m, _ = _setup()
    m.publish(0.0)
    assert _v(m, "condorpy_slots", state="Unclaimed", activity="Idle",
              type="partitionable") == 1
    # Series a dashboard needs exist at zero before anything happens.
    assert _v(m, "condorpy_slots", state="Claimed", activity="Busy", type="dynamic") == 0
    assert _v(m, "condorpy_slots", state="Preempting", activity="Vacating",
              type="dynamic") == 0
    assert _v(m, "condorpy_slots", state="Claimed", activity="Busy", type="static") is None
    _run(eng, m, 3, RequestGPUs=0)
    m.publish(1.0, starters=3)
    assert _v(m, "condorpy_slots", state="Claimed", activity="Busy", type="dynamic") == 3
    assert _v(m, "condorpy_cpus", state="Claimed") == 3
    assert _v(m, "condorpy_cpus", state="Unclaimed") == 5
    assert _v(m, "condorpy_memory_bytes", state="Claimed") == 3 * 512 * MiB
    assert _v(m, "condorpy_memory_bytes", state="Unclaimed") == (8192 - 3 * 512) * MiB
    # Disk is carved in whole MiB (HTCondor's quantum): at least what was asked for,
    # and claimed plus unclaimed is all of it.
    claimed_disk = _v(m, "condorpy_disk_bytes", state="Claimed") or 0
    assert claimed_disk >= 3 * 1000 * 1024
    assert claimed_disk + (_v(m, "condorpy_disk_bytes", state="Unclaimed") or 0) == \
        1000000 * 1024
    assert _v(m, "condorpy_gpus", state="Unclaimed") == 2
    assert _v(m, "condorpy_gpus", state="Claimed") == 0
    assert _v(m, "condorpy_custom_resources", resource="Widgets", state="Unclaimed") == 3
    assert _v(m, "condorpy_machine_cpus") == 8
    assert _v(m, "condorpy_machine_memory_bytes") == 8192 * MiB
    assert _v(m, "condorpy_machine_disk_bytes") == 1000000 * 1024
    assert _v(m, "condorpy_machine_gpus") == 2
    assert _v(m, "condorpy_machine_custom_resources", resource="Widgets") == 3
    assert _v(m, "condorpy_starters") == 3
    assert _v(m, "condorpy_jobs_started_total") == 3
    # One GPU job: the GPU moves from the p-slot to a claimed d-slot.
    for o in eng.request_claim(1002, "g", _job(9, RequestGPUs=1)):
        m.observe(o)
    m.publish(2.0)
    assert _v(m, "condorpy_gpus", state="Claimed") == 1
    assert _v(m, "condorpy_gpus", state="Unclaimed") == 1


def test_static_slots_have_no_dynamic_series() -> None:
    eng, m, _ = _setup("NUM_SLOTS = 4\n")
    m.publish(0.0)
    assert _v(m, "condorpy_slots", state="Unclaimed", activity="Idle", type="static") == 4
    assert _v(m, "condorpy_slots", state="Claimed", activity="Busy", type="dynamic") is None
    _run(eng, m, 2)
    m.publish(1.0)
    assert _v(m, "condorpy_slots", state="Claimed", activity="Busy", type="static") == 2
    assert _v(m, "condorpy_cpus", state="Claimed") == 4       # 8 CPUs in 4 slots


def test_snapshot_is_what_a_scrape_sees_until_the_next_publish() -> None:
    eng, m, _ = _setup()
    m.publish(0.0)
    _run(eng, m, 2)
    # Nothing published yet: a scrape reads the old snapshot, never the engine.
    assert _v(m, "condorpy_cpus", state="Claimed") == 0
    m.after_step(2)          # the counters changed: the loop publishes
    assert _v(m, "condorpy_cpus", state="Claimed") == 2


# --- job events ------------------------------------------------------------------

def test_job_outcomes_holds_and_latency() -> None:
    eng, m, _ = _setup()
    _run(eng, m, 4)
    s = m.stats
    s.job_running(JobId(0, 0), 1001.2)
    s.job_running(JobId(1, 0), 1004.0)
    s.job_running(JobId(0, 0), 1009.0)       # a second report is not a second start
    s.job_ended(JobId(0, 0), "c0", JobStatus.COMPLETED, 0, False)
    s.job_ended(JobId(1, 0), "c1", JobStatus.HELD, 34, False)
    s.job_ended(JobId(2, 0), "c2", JobStatus.REMOVED, 0, False)
    s.job_ended(JobId(3, 0), "c3", JobStatus.IDLE, 0, True)
    s.job_held(1)                            # an idle job held by its owner
    m.publish(2.0)
    for outcome in ("completed", "held", "removed", "evicted"):
        assert _v(m, "condorpy_jobs_exited_total", outcome=outcome) == 1
    assert _v(m, "condorpy_job_holds_total", code="34") == 1
    assert _v(m, "condorpy_job_holds_total", code="1") == 1
    assert _v(m, "condorpy_job_holds_total", code="3") == 0
    assert _v(m, "condorpy_job_start_latency_seconds_count") == 2
    assert _v(m, "condorpy_job_start_latency_seconds_bucket", le="0.25") == 1
    assert _v(m, "condorpy_job_start_latency_seconds_bucket", le="5.0") == 2
    assert _v(m, "condorpy_job_start_latency_seconds_sum") == pytest.approx(3.2)
    # No eviction cause was seen for c3 (a lost starter): no cause counted.
    assert sum(_v(m, "condorpy_evictions_total", cause=c) or 0
               for c in ("preempt", "rank", "vacate", "drain", "kill")) == 0


def _evict(eng: PolicyEngine, m: Metrics, outputs: list[Any], n: int) -> None:
    for o in outputs:
        m.observe(o)
    for i in range(n):
        m.stats.job_ended(JobId(i, 0), f"c{i}", JobStatus.IDLE, 0, True)


@pytest.mark.parametrize("how,cause", [("vacate", "vacate"), ("vacate-fast", "kill"),
                                       ("drain", "drain"), ("off", "vacate")])
def test_eviction_causes(how: str, cause: str) -> None:
    eng, m, _ = _setup()
    _run(eng, m, 2)
    if how == "vacate":
        out = eng.vacate(1010)
    elif how == "vacate-fast":
        out = eng.vacate(1010, fast=True)
    elif how == "drain":
        out = eng.drain(1010, "quick")
    else:
        out = eng.off(1010, "graceful")
    _evict(eng, m, out, 2)
    m.publish(3.0)
    assert _v(m, "condorpy_evictions_total", cause=cause) == 2
    assert _v(m, "condorpy_jobs_exited_total", outcome="evicted") == 2


def test_vacate_after_a_cancelled_drain_is_a_vacate() -> None:
    """issue #23: a vacate that followed a graceful drain called off was counted as a
    preempt (the drain's retirement left its cause behind). The vacate retires the job
    first; the eviction at the end of that retirement is the vacate's."""
    eng, m, _ = _setup(PSLOT + "MaxJobRetirementTime = 2000\n")
    _run(eng, m, 1)
    for o in eng.drain(1010, "graceful") + eng.cancel_drain(1020) + eng.vacate(1100):
        m.observe(o)
    _evict(eng, m, eng.cycle(2500), 1)
    m.publish(3.0)
    assert _v(m, "condorpy_evictions_total", cause="vacate") == 1
    assert _v(m, "condorpy_evictions_total", cause="preempt") == 0


def test_vacate_during_a_preempt_retirement_changes_nothing() -> None:
    """A graceful condor_vacate retires the claim, as HTCondor's VACATE_CLAIM does; a
    claim already retiring because PREEMPT became true keeps that retirement, so the
    eviction at its end is still PREEMPT's, and nothing is evicted before it."""
    eng, m, _ = _setup(PSLOT + "MaxJobRetirementTime = 2000\nPREEMPT = time() > 1005\n")
    _run(eng, m, 1)
    out = eng.cycle(1010)
    assert not [o for o in out if isinstance(o, (SoftKill, HardKill, KillStarter))]
    for o in out:
        m.observe(o)
    out = eng.vacate(1100)
    assert not [o for o in out if isinstance(o, (SoftKill, HardKill, KillStarter))]
    for o in out:
        m.observe(o)
    _evict(eng, m, eng.cycle(2500), 1)
    m.publish(3.0)
    assert _v(m, "condorpy_evictions_total", cause="preempt") == 1
    assert _v(m, "condorpy_evictions_total", cause="vacate") == 0


def test_preempt_expression_is_a_preempt() -> None:
    eng, m, clock = _setup(PSLOT + "PREEMPT = time() > 1015\n")
    _run(eng, m, 1)
    _evict(eng, m, eng.cycle(1020), 1)
    m.publish(3.0)
    assert _v(m, "condorpy_evictions_total", cause="preempt") == 1


def test_drain_state_and_preempting_since() -> None:
    eng, m, _ = _setup()
    _run(eng, m, 1)
    m.publish(0.0)
    assert _v(m, "condorpy_draining", how="graceful") == 0
    assert _v(m, "condorpy_preempting_since_timestamp_seconds") == 0
    for o in eng.drain(1030, "quick"):
        m.observe(o)
    m.publish(1.0)
    assert _v(m, "condorpy_draining", how="quick") == 1
    assert _v(m, "condorpy_draining", how="graceful") == 0
    assert _v(m, "condorpy_drain_start_timestamp_seconds") == 1030
    assert _v(m, "condorpy_preempting_since_timestamp_seconds") == 1030
    assert _v(m, "condorpy_slots", state="Preempting", activity="Vacating",
              type="dynamic") == 1
    assert _v(m, "condorpy_drain_badput_cpu_seconds_total") == 0


def test_owner_activity_loads_cycles_hooks_cron_and_restarts() -> None:
    eng, m, clock = _setup(PSLOT + "STARTD_CRON_JOBLIST = temps, disks\n")
    m.owner_activity(42, 17, 1.5)
    m.stats.policy_cycle(0.003, 1234.0)
    m.stats.policy_cycle(0.3, 1240.0)
    m.stats.adopted("adopted")
    m.stats.adopted("lost")
    m.stats.hook_run("fetch_work", True)
    m.stats.hook_run("FETCH_WORK", False)
    m.stats.cron_run("temps", False)
    m.publish(0.0)
    assert _v(m, "condorpy_keyboard_idle_seconds") == 42
    assert _v(m, "condorpy_console_idle_seconds") == 17
    assert _v(m, "condorpy_load_average") == 1.5
    assert _v(m, "condorpy_policy_cycle_duration_seconds_count") == 2
    assert _v(m, "condorpy_policy_cycle_duration_seconds_bucket", le="0.005") == 1
    assert _v(m, "condorpy_last_policy_cycle_timestamp_seconds") == 1240
    assert _v(m, "condorpy_starters_adopted_total", result="adopted") == 1
    assert _v(m, "condorpy_starters_adopted_total", result="lost") == 1
    assert _v(m, "condorpy_starters_adopted_total", result="finished") == 0
    assert _v(m, "condorpy_hook_runs_total", hook="FETCH_WORK") == 2
    assert _v(m, "condorpy_hook_failures_total", hook="FETCH_WORK") == 1
    assert _v(m, "condorpy_hook_runs_total", hook="JOB_EXIT") == 0
    assert _v(m, "condorpy_cron_runs_total", name="temps") == 1
    assert _v(m, "condorpy_cron_failures_total", name="temps") == 1
    assert _v(m, "condorpy_cron_runs_total", name="disks") == 0
    assert _v(m, "condorpy_build_info", version=__import__("condorpy").__version__,
              condor_version="25.14.1",
              python_version=__import__("platform").python_version()) == 1
    assert _v(m, "condorpy_snapshot_timestamp_seconds") == clock.time()


def test_exposition_has_no_created_series_and_base_units() -> None:
    eng, m, _ = _setup()
    _run(eng, m, 1)
    m.publish(0.0)
    text = scrape_text(m.registry)
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines()
             if line and not line.startswith("#")}
    assert not any(n.endswith("_created") for n in names)
    assert all(n.startswith(("condorpy_", "process_")) for n in names)
    for line in text.splitlines():
        if line.startswith("# TYPE ") and line.endswith(" gauge"):
            assert not line.split()[2].endswith("_total"), line
        if line.startswith("# TYPE ") and line.endswith(" counter"):
            assert line.split()[2].endswith("_total"), line


# --- the endpoint ----------------------------------------------------------------

def test_endpoint_serves_and_closes() -> None:
    eng, m, _ = _setup()
    m.start()
    try:
        bound = m.bound
        assert bound is not None and bound[0] == "127.0.0.1" and bound[1] > 0
        body = urllib.request.urlopen(f"http://127.0.0.1:{bound[1]}/metrics",
                                      timeout=10).read().decode()
        assert 'condorpy_slots{activity="Idle",state="Unclaimed",type="partitionable"} 1.0' \
            in body
    finally:
        m.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{bound[1]}/metrics", timeout=5)


LAZY = """
import sys, urllib.request
sys.path.insert(0, sys.argv[1])
from tests.startd.test_metrics import _setup
_eng, m, _clock = _setup()
m.start()
m.after_step(0)
print("before", "prometheus_client" in sys.modules, "wsgiref" in sys.modules)
port = m.bound[1]
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
print("after", "prometheus_client" in sys.modules, b"condorpy_slots" in body)
m.close()
"""


def test_prometheus_client_is_loaded_by_the_first_scrape() -> None:
    """The endpoint listens from the start, but prometheus-client (and the HTTP, e-mail
    and TLS modules it brings) is imported by the first scrape only."""
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", LAZY, root], capture_output=True,
                         text=True, timeout=120, check=True).stdout.split("\n")
    assert out[0] == "before False False" and out[1] == "after True True", out


def test_endpoint_off_and_address_in_use(caplog: pytest.LogCaptureFixture) -> None:
    cfg = _cfg(PSLOT + "CONDORPY_METRICS_ADDRESS =\n")
    clock = ManualClock(0.0)
    eng = Core(cfg, virtual_inventory(cfg)).engine(clock)
    off = Metrics.from_config(cfg, eng, clock)
    off.start()
    assert off.bound is None and not off.enabled
    off.after_step(0)
    assert off.collector.snapshot is None     # no cost when off
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        cfg2 = _cfg(PSLOT + f"CONDORPY_METRICS_ADDRESS = 127.0.0.1:{port}\n")
        m = Metrics.from_config(cfg2, eng, clock)
        m.start()        # the daemon runs on without its endpoint, saying why
        assert m.bound is None
        assert f"CONDORPY_METRICS_ADDRESS: cannot listen on 127.0.0.1:{port}" in caplog.text


def test_reconfig_moves_the_endpoint() -> None:
    eng, m, _ = _setup()
    m.start()
    try:
        first = m.bound
        assert first is not None
        m.reconfig(_cfg(PSLOT + "CONDORPY_METRICS_ADDRESS = 127.0.0.1:0\n"))
        assert m.bound == first            # same knob value: the same endpoint
        with pytest.raises(ConfigError):
            m.reconfig(_cfg(PSLOT + "CONDORPY_METRICS_ADDRESS = bad\n"))
        assert m.bound == first
        m.reconfig(_cfg(PSLOT + "CONDORPY_METRICS_ADDRESS =\n"))
        assert m.bound is None
    finally:
        m.close()


# The daemon's counting of evictions and re-adoptions runs in-process:
# tests/startd/test_resource_manager.py::test_daemon_counts_evictions_and_readoptions.
