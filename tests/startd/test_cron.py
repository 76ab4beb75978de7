"""Startd cron and benchmarks end to end: a real daemon running real cron scripts whose
output lands in the slot ads and steers START."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from condorpy.classad import ClassAd
from tests.startd.daemon_helpers import Daemon, counts, submit, wait_for

PERIODIC = """\
#!{py}
print("Flag = " + open({flag!r}).read().strip())
print("CronRuns = %d" % len(open({runs!r}, "a+").name))
with open({runs!r}, "a") as f:
    f.write("x")
"""

CONTINUOUS = """\
#!{py}
import sys, time
while True:
    print("Flag = " + open({flag!r}).read().strip())
    print("-")
    sys.stdout.flush()
    time.sleep(0.2)
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    ds: list[Daemon] = []
    yield ds
    for d in ds:
        d.stop()
        d.kill_leftovers()


def _start(ds: list[Daemon], tmp_path: Path, extra: str, cpus: int = 2) -> Daemon:
    d = Daemon(tmp_path / "d", extra=extra, cpus=cpus)
    ds.append(d)
    d.start()
    return d


def _ads(d: Daemon) -> dict[str, dict[str, Any]]:
    out = {}
    for text in d.call("status")["ads"]:
        ad = ClassAd.parse_old(text)
        out[str(ad.evaluate("Name")).split("@")[0]] = {k: ad.evaluate(k) for k in ad.keys()}
    return out


def _policy_follows_flag(d: Daemon, flag: Path, work: Path, period: float) -> None:
    """START = Flag: a job waits while the cron job says false and starts within one
    period of the cron job saying true."""
    wait_for(lambda: all(a.get("Flag") is False for a in _ads(d).values()), 30, d.output)
    submit(d, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\nqueue\n", work)
    time.sleep(period + 1)
    assert counts(d) == {1: 1}, d.output()
    flag.write_text("true")
    wait_for(lambda: counts(d) == {2: 1}, period + 2, d.output)
    assert all(a.get("Flag") is True for a in _ads(d).values())


@pytest.mark.parametrize("mode", ["Periodic", "WaitForExit"])
def test_cron_attribute_steers_start(daemons: list[Daemon], tmp_path: Path,
                                     mode: str) -> None:
    flag = tmp_path / "flag"
    flag.write_text("false")
    work = tmp_path / "work"
    work.mkdir()
    if mode == "Periodic":
        exe = _script(tmp_path / "cron.py", PERIODIC.format(
            py=sys.executable, flag=str(flag), runs=str(tmp_path / "runs")))
        period = 2
    else:
        exe = _script(tmp_path / "cron.py", CONTINUOUS.format(py=sys.executable,
                                                              flag=str(flag)))
        period = 1
    d = _start(daemons, tmp_path, f"STARTD_CRON_JOBLIST = test\n"
                                  f"STARTD_CRON_test_EXECUTABLE = {exe}\n"
                                  f"STARTD_CRON_test_MODE = {mode}\n"
                                  f"STARTD_CRON_test_PERIOD = {period}s\n"
                                  "START = MY.Flag =?= true\n")
    _policy_follows_flag(d, flag, work, period)
    if mode == "WaitForExit":
        # One process all along, publishing at each separator line.
        assert d.output().count("STARTD_CRON job test") == 0


def test_cron_template_one_shot_and_reconfig_rerun(daemons: list[Daemon],
                                                   tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    exe = _script(tmp_path / "once.sh",
                  f"#!/bin/sh\necho x >> {runs}\necho \"Once = $(wc -l < {runs})\"\n"
                  "echo \"Args = \\\"$0 $1\\\"\"\n"
                  "echo \"Env = \\\"$COLOUR $SHAPE\\\"\"\necho \"Cwd = \\\"$(pwd)\\\"\"\n")
    d = _start(daemons, tmp_path, f"use FEATURE : StartdCronOneShot(one, {exe}, hello)\n"
                                  "STARTD_CRON_one_PREFIX = t_\n"
                                  "STARTD_CRON_one_ENV = COLOUR=red;SHAPE=round\n"
                                  f"STARTD_CRON_one_CWD = {tmp_path}\n")
    wait_for(lambda: _ads(d)["slot1"].get("t_Once") == 1, 30, d.output)
    ad = _ads(d)["slot1"]
    assert ad["t_Args"].endswith(" hello")
    assert ad["t_Env"] == "red round" and ad["t_Cwd"] == str(tmp_path)
    assert isinstance(ad["t_LastUpdate"], int)
    time.sleep(1.5)
    assert runs.read_text().count("x") == 1     # OneShot: once
    d.cli("reconfig")
    wait_for(lambda: _ads(d)["slot1"].get("t_Once") == 2, 30, d.output)


def test_cron_output_routed_per_slot(daemons: list[Daemon], tmp_path: Path) -> None:
    exe = _script(tmp_path / "route.sh", "#!/bin/sh\n"
                  "printf 'Value = 1\\nSlotId = 1\\n- s1\\nValue = 2\\nSlotId = 2\\n- s2\\n"
                  "Value = 10\\nnot an assignment\\n- update:true\\n'\n")
    d = _start(daemons, tmp_path, "use FEATURE : StaticSlots\n"
                                  f"use FEATURE : StartdCronPeriodic(route, 1, {exe})\n",
               cpus=3)
    wait_for(lambda: _ads(d).get("slot3", {}).get("Value") == 10, 30, d.output)
    ads = _ads(d)
    assert [ads[s]["Value"] for s in ("slot1", "slot2", "slot3")] == [1, 2, 10]
    assert "not an assignment" in d.output()


def test_misbehaving_cron_jobs(daemons: list[Daemon], tmp_path: Path) -> None:
    hang = _script(tmp_path / "hang.sh", "#!/bin/sh\nsleep 600 &\nsleep 600\n")
    fails = _script(tmp_path / "fails.sh", "#!/bin/sh\necho Good = 1\necho oops >&2\nexit 4\n")
    d = _start(daemons, tmp_path,
               "CONDORPY_METRICS_ADDRESS = 127.0.0.1:0\n"
               "STARTD_CRON_JOBLIST = hang fails missing badmode slow\n"
               f"STARTD_CRON_slow_EXECUTABLE = {hang}\nSTARTD_CRON_slow_PERIOD = 1\n"
               "STARTD_CRON_slow_KILL = true\n"
               f"STARTD_CRON_hang_EXECUTABLE = {hang}\nSTARTD_CRON_hang_PERIOD = 1\n"
               "STARTD_CRON_hang_TIMEOUT = 1\n"
               f"STARTD_CRON_fails_EXECUTABLE = {fails}\nSTARTD_CRON_fails_PERIOD = 1\n"
               "STARTD_CRON_missing_EXECUTABLE = /nonexistent/cron\n"
               "STARTD_CRON_missing_PERIOD = 1\n"
               f"STARTD_CRON_badmode_EXECUTABLE = {fails}\nSTARTD_CRON_badmode_MODE = Often\n")
    wait_for(lambda: "STARTD_CRON job hang" in d.output() and "timed out" in d.output()
             and "next run is due" in d.output(), 30, d.output)
    out = d.output()
    assert "STARTD_CRON job fails" in out and "exited with status 4" in out and "oops" in out
    assert "cannot run /nonexistent/cron" in out
    assert "STARTD_CRON_slow" in out and "killed: its next run is due (KILL = true)" in out
    assert "badmode skipped" in out and "Often" in out
    # A failing job's output still counts, as HTCondor's does.
    assert _ads(d)["slot1"].get("Good") == 1
    assert "Traceback" not in out
    wait_for(lambda: not _running(str(hang)), 10)
    # Runs and failures per cron job reach the metrics endpoint.
    metrics = _scrape(d)
    assert _sample(metrics, 'condorpy_cron_failures_total{name="fails"}') >= 1
    assert _sample(metrics, 'condorpy_cron_runs_total{name="missing"}') >= 1


def _scrape(d: Daemon) -> str:
    import urllib.request
    host, port = d.call("ping")["metrics"]
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as r:
        text: str = r.read().decode()
    return text


def _sample(text: str, series: str) -> float:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    raise AssertionError(f"no {series} in the metrics")


def _running(text: str) -> bool:
    import os
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
            except OSError:
                pass
    return False


def test_benchmarks_publish_mips_and_kflops(daemons: list[Daemon], tmp_path: Path) -> None:
    d = _start(daemons, tmp_path, "RUNBENCHMARKS = LastBenchmark == 0\n", cpus=1)
    wait_for(lambda: isinstance(_ads(d)["slot1"].get("KFlops"), int), 60, d.output)
    ad = _ads(d)["slot1"]
    assert ad["Mips"] > 0 and ad["KFlops"] > 0
    assert ad["LastBenchmark"] > 0
    assert "Benchmarking" in d.output()
    wait_for(lambda: _ads(d)["slot1"]["Activity"] == "Idle", 30, d.output)


def test_gpus_monitor_template_routes_each_gpu_to_its_slot(daemons: list[Daemon],
                                                           tmp_path: Path) -> None:
    # What condor_gpu_monitor prints: one ad per device, merged by AssignedGPUs.
    monitor = _script(tmp_path / "gpu_monitor.sh", "#!/bin/sh\n"
                      "for i in 0 1; do\n"
                      "  echo \"SlotMergeConstraint = StringListMember(\\\"CUDA$i\\\", "
                      "AssignedGPUs)\"\n"
                      "  echo \"UptimeGPUsSeconds = $((i + 5)).5\"\n"
                      "  echo \"UptimeGPUsMemoryPeakUsage = $((i * 100 + 100))\"\n"
                      "  echo \"- GPUsSlot$i\"\n"
                      "done\nexec sleep 600\n")
    d = _start(daemons, tmp_path, "MACHINE_RESOURCE_GPUs = CUDA0, CUDA1\n"
                                  "use FEATURE : StaticSlots\n"
                                  f"GPU_MONITOR = {monitor}\nuse FEATURE : GPUsMonitor\n"
                                  "ADVERTISE_CMR_UPTIME_SECONDS = true\n")
    # the samples are the monitor's METRICS (SUM:GPUs, PEAK:GPUsMemory): each slot's
    # device's seconds summed, its peak kept as Device<Res>PeakUsage
    wait_for(lambda: _ads(d).get("slot2", {}).get("UptimeGPUsSeconds") == 6.5, 30, d.output)
    ads = _ads(d)
    assert ads["slot1"]["UptimeGPUsSeconds"] == 5.5
    assert ads["slot1"]["DeviceGPUsMemoryPeakUsage"] == 100
    assert ads["slot2"]["DeviceGPUsMemoryPeakUsage"] == 200
    assert 0 < ads["slot1"]["DeviceGPUsAverageUsage"] < ads["slot2"]["DeviceGPUsAverageUsage"]
    assert "SlotMergeConstraint" not in ads["slot1"]
    assert "UptimeGPUsMemoryPeakUsage" not in ads["slot1"]


def test_continuous_job_gets_sighup_at_reconfig(daemons: list[Daemon], tmp_path: Path) -> None:
    exe = _script(tmp_path / "hup.py", f"""#!{sys.executable}
import signal, sys, time
hups = 0
def on_hup(*_):
    global hups
    hups += 1
signal.signal(signal.SIGHUP, on_hup)
while True:
    print("Hups = %d" % hups)
    print("-")
    sys.stdout.flush()
    time.sleep(0.1)
""")
    d = _start(daemons, tmp_path, f"use FEATURE : StartdCronContinuous(hup, {exe})\n"
                                  "STARTD_CRON_hup_RECONFIG = true\n")
    wait_for(lambda: _ads(d)["slot1"].get("Hups") == 0, 30, d.output)
    d.cli("reconfig")
    wait_for(lambda: _ads(d)["slot1"].get("Hups") == 1, 30, d.output)
