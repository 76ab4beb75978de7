"""GPU requirements end to end through the daemon, with simulated GPUs (one V100,
Capability 7.0, and two A100s, 8.0): `condorpy submit` with require_gpus, the local
matchmaker, the partitionable slot's choice of devices, and the job's
CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.classad import ClassAd, Undefined
from tests.startd.daemon_helpers import (Daemon, running, slot_values, submit,
                                         wait_for)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 and not os.access("/tmp", os.W_OK),
                                reason="needs a writable /tmp")

V100 = "GPU-a0223334"
A100S = {"GPU-b1223334", "GPU-c2223334"}

GPU_CONFIG = """\
use FEATURE : GPUs
GPU_DISCOVERY_EXTRA = -extra -simulate:2,1,4,2
use FEATURE : PartitionableSlot
"""

JOB = """\
executable = /bin/sh
arguments = "-c 'echo $CUDA_VISIBLE_DEVICES; sleep 1'"
output = out.$(Cluster).$(Process)
request_memory = 16
request_gpus = 1
{commands}
queue {count}
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path, GPU_CONFIG, cpus=4)) as d:
        yield d


def _status(d: Daemon, job: str) -> int | None:
    return d.statuses().get(job)


def test_require_gpus_picks_only_the_gpus_that_satisfy_it(daemon: Daemon,
                                                          tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    submit(daemon, JOB.format(commands="require_gpus = Capability >= 8.0", count=2), work)
    submit(daemon, JOB.format(commands="gpus_maximum_capability = 7.5", count=1), work)
    submit(daemon, JOB.format(commands="gpus_minimum_memory = 40G", count=1), work)
    done = ("1.0", "1.1", "2.0", "3.0")
    wait_for(lambda: all(_status(daemon, j) == 4 for j in done), 120, daemon.whole_log)
    got = {j: (work / f"out.{j}").read_text().strip() for j in done}
    # two jobs at once asking for an 8.0 GPU: each one of the A100s, never the V100
    assert {got["1.0"], got["1.1"]} <= A100S
    assert got["2.0"] == V100                  # only the V100 is at most 7.5
    assert got["3.0"] in A100S                 # 47661 MB; the V100 has 24220
    # use FEATURE : GPUs's usage monitor ran (condorpy's, without HTCondor's binary)
    # and did not fail: no NVML here, nothing to report
    wait_for(lambda: _metric(daemon, 'condorpy_cron_runs_total{name="GPUs_MONITOR"}') >= 1,
             60, daemon.whole_log)
    assert _metric(daemon, 'condorpy_cron_failures_total{name="GPUs_MONITOR"}') == 0
    assert "GPUs_MONITOR" not in daemon.whole_log()


def _metric(d: Daemon, series: str) -> float:
    import urllib.request
    host, port = d.call("ping")["metrics"]
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
    return 0.0


def test_a_gpu_no_slot_has_never_runs_and_explain_says_why(daemon: Daemon,
                                                           tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    submit(daemon, JOB.format(commands="require_gpus = Capability >= 9.5", count=1), work)
    submit(daemon, JOB.format(commands="require_gpus = Capability >= 8.0", count=1), work)
    # the job submitted after it ran and finished: matchmaking passed over it
    wait_for(lambda: _status(daemon, "2.0") == 4, 120, daemon.whole_log)
    assert _status(daemon, "1.0") == 1
    assert not (work / "out.1.0").exists()
    long = daemon.cli("q", "1.0", "-l").stdout
    assert "RequireGPUs = Capability >= 9.5" in long
    job_ad = tmp_path / "job.ad"
    job_ad.write_text(long)
    why = daemon.cli("policy", "explain", "-config", str(daemon.config), "--job",
                     str(job_ad)).stdout
    assert "countMatches(MY.RequireGPUs,TARGET.AvailableGPUs) >= RequestGPUs" in why
    assert "insufficient GPUs matching RequireGPUs: the job needs 1" in why
    assert "the job does not match: the job's Requirements" in why


# A stand-in for the GPU monitor: the V100 (CUDA0) busy half of the time, 1009 MB in
# use, reported every half second in condor_gpu_utilization's format (none while a
# file <monitor>.quiet exists).
FAKE_MONITOR = """\
#!{py}
import os, sys, time
last = time.monotonic()
while True:
    time.sleep(0.5)
    now = time.monotonic()
    if os.path.exists(__file__ + ".quiet"):
        last = now
        continue
    print('SlotMergeConstraint = StringListMember("CUDA0", AssignedGPUs) || '
          'StringListMember("GPU-a0223334", AssignedGPUs)')
    print("UptimeGPUsSeconds = %f" % ((now - last) / 2))
    print("UptimeGPUsMemoryPeakUsage = 1009")
    print("- GPUsSlot0")
    sys.stdout.flush()
    last = now
"""


def _job_attrs(text: str) -> dict[str, object]:
    ad = ClassAd.parse_old(text)
    return {k: ad.evaluate(k) for k in ad.keys()}


def test_the_gpu_monitors_metrics_reach_the_slot_and_the_jobs_ad(tmp_path: Path) -> None:
    monitor = tmp_path / "gpu_monitor"
    monitor.write_text(FAKE_MONITOR.format(py=sys.executable))
    monitor.chmod(0o755)
    d = Daemon(tmp_path, GPU_CONFIG + f"GPU_MONITOR = {monitor}\n", cpus=4)
    d.start()
    try:
        work = tmp_path / "work"
        work.mkdir()
        flag = tmp_path / "release"
        submit(d, JOB.replace("sleep 1", f"while [ ! -e {flag} ]; do sleep 0.2; done").format(
            commands="require_gpus = Capability < 8.0", count=1), work)
        # while it runs: the slot holding the V100 shows the job's figures, and so does
        # the job's ad (its usage updates carry them)
        def running_slot() -> dict[str, object] | None:
            return next((a for a in slot_values(d) if a.get("JobId") == "1.0" and
                         isinstance(a.get("GPUsUsage"), float)), None)
        wait_for(lambda: running_slot() is not None, 120, d.whole_log)
        slot = running_slot()
        assert slot is not None
        assert "GPU-a0223334" in str(slot["AssignedGPUs"])
        assert slot["GPUsMemoryUsage"] == 1009
        assert slot["DeviceGPUsMemoryPeakUsage"] == 1009
        assert isinstance(slot["DeviceGPUsAverageUsage"], float)
        assert "UptimeGPUsSeconds" not in slot           # accumulated, not merged raw
        wait_for(lambda: "GPUsMemoryUsage = 1009" in d.cli("q", "1.0", "-l").stdout, 60,
                 d.whole_log)
        running = _job_attrs(d.cli("q", "1.0", "-l").stdout)
        assert isinstance(running.get("GPUsUsage"), float)
        flag.write_text("")
        wait_for(lambda: _status(d, "1.0") == 4, 120, d.whole_log)
        ended = _job_attrs(next(a for a in d.history_ads() if "ProcId = 0" in a))
        # half of one GPU's time, within what the reports' arrival times blur
        assert 0.25 < ended["GPUsUsage"] < 0.75, ended.get("GPUsUsage")  # type: ignore
        assert ended["GPUsAverageUsage"] == ended["GPUsUsage"]
        assert ended["GPUsMemoryUsage"] == 1009
        # the other slots never held the V100: no figures of a job there
        assert not any("GPUsUsage" in a for a in slot_values(d))
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_static_slot_drops_its_jobs_gpu_figures_when_the_job_ends(tmp_path: Path) -> None:
    monitor = tmp_path / "gpu_monitor"
    monitor.write_text(FAKE_MONITOR.format(py=sys.executable))
    monitor.chmod(0o755)
    d = Daemon(tmp_path, "MACHINE_RESOURCE_GPUs = CUDA0, CUDA1\nuse FEATURE : StaticSlots\n"
               f"GPU_MONITOR = {monitor}\nuse FEATURE : GPUsMonitor\n")
    d.start()
    try:
        work = tmp_path / "work"
        work.mkdir()
        flag = tmp_path / "release"
        submit(d, f"""executable = /bin/sh
arguments = "-c 'while [ ! -e {flag} ]; do sleep 0.2; done'"
request_memory = 16
request_gpus = 1
requirements = TARGET.AssignedGPUs == "CUDA0"
queue
""", work)

        def cuda0() -> dict[str, object]:
            return next(a for a in slot_values(d) if a.get("AssignedGPUs") == "CUDA0")
        wait_for(lambda: isinstance(cuda0().get("GPUsUsage"), float), 120, d.whole_log)
        assert cuda0()["JobId"] == "1.0"
        # no sample from here on: the job's end alone takes its figures away
        (tmp_path / "gpu_monitor.quiet").write_text("")
        flag.write_text("")
        wait_for(lambda: _status(d, "1.0") == 4, 120, d.whole_log)
        # the job is gone, and its figures with it (undefined, as HTCondor leaves
        # them between jobs); the device's own stay
        figures = ("GPUsUsage", "GPUsAverageUsage", "GPUsMemoryUsage")
        wait_for(lambda: all(cuda0().get(k, Undefined) is Undefined for k in figures), 60,
                 lambda: str({k: v for k, v in cuda0().items() if "GPU" in k}))
        slot = cuda0()
        assert slot["DeviceGPUsMemoryPeakUsage"] == 1009
        assert isinstance(slot["DeviceGPUsAverageUsage"], float)
        other = next(a for a in slot_values(d) if a.get("AssignedGPUs") == "CUDA1")
        assert "DeviceGPUsAverageUsage" not in other     # its GPU was never reported
    finally:
        d.stop()
        d.kill_leftovers()
