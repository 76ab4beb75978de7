"""Resource monitors' METRICS (SUM and PEAK) accumulated per device and per job, from
the GPU monitor's own output, with the times given: no process, no clock."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.machine.gpu_utilization import GpuSample, UsageReport
from condorpy.startd.cron import read_specs
from condorpy.startd.cron_metrics import Metric, MetricKind, MonitorUsage, parse_metrics
from condorpy.startd.hookproto import CronParser, route, values

GPUS = (Metric(MetricKind.SUM, "GPUs"), Metric(MetricKind.PEAK, "GPUsMemory"))

# condor_gpu_utilization's report for two devices, as HTCondor's monitor prints it
REPORT = """\
SlotMergeConstraint = StringListMember("CUDA0", AssignedGPUs) || StringListMember("GPU-8f1b7c2e", AssignedGPUs)
UptimeGPUsSeconds = {busy0}
UptimeGPUsMemoryPeakUsage = {mem0}
- GPUsSlot0
SlotMergeConstraint = StringListMember("CUDA1", AssignedGPUs) || StringListMember("GPU-00d24b61", AssignedGPUs)
UptimeGPUsSeconds = {busy1}
UptimeGPUsMemoryPeakUsage = {mem1}
- GPUsSlot1
"""


def _slot(name: str, gpus: str) -> ClassAd:
    ad = ClassAd()
    ad["Name"] = f"{name}@host"
    ad["AssignedGPUs"] = gpus
    return ad


SLOTS = {"slot1": _slot("slot1", "CUDA0"), "slot2": _slot("slot2", "GPU-00d24b61")}


class Rig:
    """The monitor's text in, through the cron parser and the slots' routing."""

    def __init__(self, started: float = 1000.0) -> None:
        self.usage = MonitorUsage(GPUS, started)
        self.parser = CronParser("GPUs_MONITOR")
        self.jobs: dict[str, Any] = {"slot1": None, "slot2": None}

    def report(self, now: float, busy0: float = 0.0, mem0: int = 0, busy1: float = 0.0,
               mem1: int = 0) -> None:
        text = REPORT.format(busy0=busy0, mem0=mem0, busy1=busy1, mem1=mem1)
        self.text(now, text)

    def text(self, now: float, text: str) -> None:
        for cad in self.parser.feed(text):
            slots = route(cad.ad, SLOTS, None)
            self.usage.sample(cad.name, values(cad.ad), now,
                              {s: self.jobs[s] for s in slots})

    def slot(self, slot: str, now: float) -> dict[str, Any]:
        devices = [d for d in self.usage.devices
                   if slot in route(self.parser_ad(d), SLOTS, None)]
        return self.usage.slot_values(slot, devices, self.jobs[slot], now)

    def parser_ad(self, device: str) -> ClassAd:
        return next(c.ad for c in reversed(self.parser.ads) if c.name == device)


def test_metrics_knob_parses_sum_and_peak() -> None:
    assert parse_metrics("SUM:GPUs, PEAK:GPUsMemory") == GPUS
    assert parse_metrics("sum:GPUs peak:GPUsMemory SUM:GPUs") == GPUS
    assert parse_metrics("") == ()
    assert GPUS[0].sample_attr == "UptimeGPUsSeconds"
    assert GPUS[1].sample_attr == "UptimeGPUsMemoryPeakUsage"


@pytest.mark.parametrize("bad", ["AVG:GPUs", "SUM", "SUM:", "PEAK:9lives", "GPUs"])
def test_a_bad_metrics_entry_is_a_config_error_naming_the_knob(
        bad: str, caplog: pytest.LogCaptureFixture) -> None:
    cfg = Config.from_mapping({
        "STARTD_CRON_JOBLIST": "GPUs_MONITOR",
        "STARTD_CRON_GPUs_MONITOR_MODE": "WaitForExit",
        "STARTD_CRON_GPUs_MONITOR_PERIOD": "300",
        "STARTD_CRON_GPUs_MONITOR_EXECUTABLE": "/bin/true",
        "STARTD_CRON_GPUs_MONITOR_METRICS": f"SUM:GPUs, {bad}"}, source="site.conf")
    with caplog.at_level(logging.ERROR, logger="condorpy.startd"):
        assert read_specs(cfg, "STARTD_CRON", "STARTD_CRON_JOBLIST") == []
    text = caplog.text
    assert "STARTD_CRON_GPUs_MONITOR_METRICS" in text and "site.conf" in text
    assert repr(bad) in text


def test_the_gpus_feature_declares_a_monitor() -> None:
    cfg = Config.from_text("use FEATURE : GPUs\n")
    specs = read_specs(cfg, "STARTD_CRON", "STARTD_CRON_JOBLIST")
    mon = next(s for s in specs if s.name == "GPUs_MONITOR")
    assert mon.metrics == GPUS


def test_sum_averages_the_busy_seconds_since_the_job_started() -> None:
    rig = Rig(started=1000.0)
    rig.report(1010.0, busy0=10.0, mem0=100)     # before the job: the machine's
    rig.jobs["slot1"] = ("c1", 1012.0)
    rig.report(1020.0, busy0=5.0, mem0=1009)     # the period the job started in counts
    rig.report(1030.0, busy0=10.0, mem0=800)
    got = rig.slot("slot1", 1030.0)
    assert got["GPUsAverageUsage"] == pytest.approx(15.0 / 20.0)
    assert got["GPUsUsage"] == got["GPUsAverageUsage"]
    assert got["GPUsMemoryUsage"] == 1009          # the job's peak
    assert got["DeviceGPUsAverageUsage"] == pytest.approx(25.0 / 30.0)
    assert got["DeviceGPUsMemoryPeakUsage"] == 1009
    assert "UptimeGPUsSeconds" not in got
    assert rig.usage.job_values("slot1", ("c1", 1012.0)) == {
        "GPUsAverageUsage": got["GPUsAverageUsage"], "GPUsUsage": got["GPUsUsage"],
        "GPUsMemoryUsage": 1009}


def test_each_slot_gets_its_own_devices_and_job() -> None:
    rig = Rig()
    rig.report(1010.0)
    rig.jobs = {"slot1": ("c1", 1011.0), "slot2": ("c2", 1011.0)}
    rig.report(1020.0, busy0=10.0, mem0=500, busy1=2.5, mem1=70)
    one, two = rig.slot("slot1", 1020.0), rig.slot("slot2", 1020.0)
    assert (one["GPUsUsage"], one["GPUsMemoryUsage"]) == (pytest.approx(1.0), 500)
    assert (two["GPUsUsage"], two["GPUsMemoryUsage"]) == (pytest.approx(0.25), 70)


def test_a_slot_with_two_gpus_sums_their_use_and_keeps_the_higher_peak() -> None:
    rig = Rig()
    slots = dict(SLOTS)
    SLOTS["slot1"] = _slot("slot1", "CUDA0, CUDA1")
    try:
        rig.report(1010.0)
        rig.jobs["slot1"] = ("c1", 1011.0)
        rig.report(1020.0, busy0=10.0, mem0=500, busy1=5.0, mem1=900)
        got = rig.slot("slot1", 1020.0)
    finally:
        SLOTS.clear()
        SLOTS.update(slots)
    assert got["GPUsUsage"] == pytest.approx(1.5)    # of one GPU, as HTCondor counts
    assert got["GPUsMemoryUsage"] == 900


def test_a_new_job_starts_afresh_and_a_slot_without_one_has_no_job_figures() -> None:
    rig = Rig()
    rig.report(1010.0)
    rig.jobs["slot1"] = ("c1", 1011.0)
    rig.report(1020.0, busy0=10.0, mem0=2000)
    rig.jobs["slot1"] = None
    assert rig.usage.job_values("slot1", None) == {}
    assert "GPUsUsage" not in rig.slot("slot1", 1021.0)
    rig.jobs["slot1"] = ("c1", 1022.0)          # the claim's next job
    assert rig.usage.job_values("slot1", ("c1", 1022.0)) == {}    # nothing sampled yet
    rig.report(1030.0, busy0=2.0, mem0=300)
    got = rig.slot("slot1", 1030.0)
    assert got["GPUsUsage"] == pytest.approx(0.2)
    assert got["GPUsMemoryUsage"] == 300
    assert got["DeviceGPUsMemoryPeakUsage"] == 2000     # since the daemon started


def test_a_job_started_before_any_sample_averages_from_the_first_one() -> None:
    rig = Rig()
    rig.jobs["slot1"] = ("c1", 1001.0)
    rig.report(1010.0, busy0=9.0, mem0=40)      # a period of unknown start: the baseline
    assert "GPUsUsage" not in rig.slot("slot1", 1010.0)
    assert rig.slot("slot1", 1010.0)["GPUsMemoryUsage"] == 40
    rig.report(1020.0, busy0=4.0, mem0=10)
    assert rig.slot("slot1", 1020.0)["GPUsUsage"] == pytest.approx(0.4)


def test_condorpys_own_monitor_output_feeds_the_same_figures() -> None:
    rep = UsageReport(["GPU-8f1b7c2e-1111-2222-3333-444455556666"])
    rig = Rig()
    rig.text(1010.0, rep.take())
    rig.jobs["slot1"] = ("c1", 1011.0)
    for _ in range(10):
        rep.add(0, GpuSample(100, 1009 * 1024 * 1024), 1.0)
    rig.text(1020.0, rep.take())
    got = rig.slot("slot1", 1020.0)
    assert got["GPUsUsage"] == pytest.approx(1.0)
    assert got["GPUsMemoryUsage"] == 1009


def test_uptime_seconds_are_advertised_only_when_asked() -> None:
    usage = MonitorUsage(GPUS, 0.0, advertise_uptime=True)
    usage.sample("d0", {"UptimeGPUsSeconds": 3.0}, 10.0, {"slot1": None})
    usage.sample("d0", {"UptimeGPUsSeconds": 4.5}, 20.0, {"slot1": None})
    assert usage.slot_values("slot1", ["d0"], None, 20.0) == {
        "DeviceGPUsAverageUsage": pytest.approx(7.5 / 20.0), "UptimeGPUsSeconds": 7.5}


def test_a_sample_that_is_no_number_is_left_out() -> None:
    usage = MonitorUsage(GPUS, 0.0)
    usage.sample("d0", {"UptimeGPUsSeconds": "busy", "UptimeGPUsMemoryPeakUsage": 5},
                 10.0, {})
    assert usage.slot_values("s", ["d0"], None, 10.0) == {"DeviceGPUsMemoryPeakUsage": 5}
