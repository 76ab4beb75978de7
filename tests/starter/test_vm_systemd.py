"""The starter as the main process of a systemd service with ``Delegate=yes``
(run in ``tests/vm/run --systemd``: systemd 252 as PID 1, no DelegateSubgroup).

The service's main process is ``vm_service_driver.py``, which runs the real
``condorpy starter`` command in-process. The starter must step out of the service's
top cgroup into a leaf of its own before handing controllers down (no internal
processes), put each job in ``htcondor/job_<pid>.slice/job.scope`` with the limits on
the slice, and leave nothing behind. Systemd's automatic restart puts the next main
process back into the service's top cgroup, which the first one left as an interior
node: that start must work too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd

from .helpers import pids_with_marker

pytestmark = pytest.mark.vm_systemd
DRIVER = Path(__file__).with_name("vm_service_driver.py")
REPO = DRIVER.parents[2]
PY3 = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"
UNIT_TIMEOUT_S = 300
SLOT_MEMORY_MB = 64
PIDS_MAX = 32

# Each job reports where it ran and the limits on its slice (the scope's parent).
OK_JOB = """#!/bin/sh
cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
echo "cgroup $cg"
echo "memory.max $(cat /sys/fs/cgroup$cg/../memory.max)"
echo "pids.max $(cat /sys/fs/cgroup$cg/../pids.max)"
echo "user $(id -un)"
"""
OOM_JOB = f"""#!/bin/sh
exec {PY3} -c 'b = b"x" * (300 << 20)'
"""
# Leaves a daemon in a session of its own behind, marked by its $0.
DAEMON_JOB = """#!/bin/sh
setsid /bin/sh -c 'while :; do sleep 1; done' "$1" </dev/null >/dev/null 2>&1 &
sleep 0.5
"""


def ad_text(attrs: dict[str, object]) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in attrs.items())


@pytest.fixture
def work() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="condorpy-svc-"))
    os.chmod(d, 0o755)
    (d / "execute").mkdir(mode=0o755)
    (d / "out").mkdir()
    os.chmod(d / "out", 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def write_jobs(work: Path, marker: str) -> None:
    for name, script, extra in (("ok", OK_JOB, {}), ("oom", OOM_JOB, {}),
                                ("daemon", DAEMON_JOB, {"Arguments": marker})):
        path = work / f"{name}.sh"
        path.write_text(script)
        path.chmod(0o755)
        ad: dict[str, object] = {"Cmd": str(path), "ClusterId": 5, "ProcId": 0,
                                 "Out": str(work / "out" / f"{name}.out"),
                                 "Err": str(work / "out" / f"{name}.err")}
        ad.update(extra)
        (work / f"{name}.job.ad").write_text(ad_text(ad))
    (work / "slot.ad").write_text(ad_text({"Name": "slot1@vm", "Cpus": 1,
                                           "Memory": SLOT_MEMORY_MB}))


def journal(unit: str) -> str:
    out = subprocess.run(["journalctl", "-u", unit, "--no-pager", "-o", "short-monotonic"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout[-8000:] + out.stderr[-2000:]


def run_service(unit: str, work: Path, *props: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Start the driver as a transient service and wait for the unit to end."""
    cmd = ["systemd-run", "--quiet", "--wait", "--collect", f"--unit={unit}",
           "-p", "Delegate=yes", "-p", "Type=exec", "-p", "TimeoutStopSec=20",
           "-E", "CONDOR_CONFIG=ONLY_ENV", "-E", "PYTHONDONTWRITEBYTECODE=1",
           f"--working-directory={REPO}", *props,
           "--", sys.executable, str(DRIVER), str(work)]
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=UNIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        subprocess.run(["systemctl", "kill", "--signal=SIGKILL", f"{unit}.service"],
                       capture_output=True, timeout=30)
        subprocess.run(["systemctl", "stop", f"{unit}.service"], capture_output=True,
                       timeout=60)
        pytest.fail(f"unit {unit} did not end within {UNIT_TIMEOUT_S} s\n"
                    f"{report_text(work)}\n{journal(unit)}")
    return done, journal(unit)


def report_text(work: Path) -> str:
    return "\n".join(f"{p.name}: {p.read_text()}" for p in sorted(work.glob("report-*.json")))


def load_report(work: Path, start: int, context: str) -> dict[str, object]:
    path = work / f"report-{start}.json"
    assert path.exists(), f"start {start} of the service left no report\n{context}"
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def final_ad(entry: dict[str, object], context: str) -> ClassAd:
    assert "error" not in entry, f"{entry['error']}\n{context}"
    assert "result" in entry, f"no final ad\n{context}"
    return ClassAd.parse_old(str(entry["result"]), source="result")


def check_start(report: dict[str, object], work: Path, context: str) -> None:
    """What every start must show: the starter in a leaf, the service's top cgroup
    empty with the controllers handed down, the ok job limited, the oom job held."""
    service = str(report["cgroup"])
    jobs = report["jobs"]
    assert isinstance(jobs, dict)
    for name, entry in jobs.items():
        assert entry["starter_cgroup_after"] == f"{service}/starters.leaf", \
            f"{name}: starter ended up in {entry['starter_cgroup_after']}\n{context}"
        after = entry["service_after"]
        assert after["procs"] == [], f"{name}: processes left in {service}\n{context}"
        assert set(after["subtree_control"].split()) >= {"cpu", "memory", "pids"}, context
    ok = final_ad(jobs["ok"], context)
    assert jobs["ok"]["rc"] == 0 and ok.evaluate("ExitCode") == 0, context
    lines = dict(line.split(" ", 1) for line in
                 (work / "out" / "ok.out").read_text().splitlines())
    cg = lines["cgroup"]
    assert cg.startswith(f"{service}/htcondor/job_") and cg.endswith(".slice/job.scope"), \
        f"job ran in {cg}\n{context}"
    assert int(lines["memory.max"]) == SLOT_MEMORY_MB << 20, context
    assert int(lines["pids.max"]) == PIDS_MAX, context
    assert lines["user"] == "nobody", context
    oom = final_ad(jobs["oom"], context)
    assert jobs["oom"]["rc"] == 3, context
    assert oom.evaluate("HoldReasonCode") == 34, f"{jobs['oom']['result']}\n{context}"
    assert f"{SLOT_MEMORY_MB} MB" in str(oom.evaluate("HoldReason")), context


def assert_nothing_left(unit: str, marker: str, context: str) -> None:
    deadline = time.monotonic() + 10
    while pids_with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids_with_marker(marker) == [], f"job processes survived the unit\n{context}"
    top = Path("/sys/fs/cgroup/system.slice", f"{unit}.service")
    left = [] if not top.exists() else [
        pid for root, _d, _f in os.walk(top)
        for pid in Path(root, "cgroup.procs").read_text().split()]
    assert left == [], f"processes {left} left in {top}\n{context}"


def test_starter_as_main_process_of_a_delegated_service(work: Path) -> None:
    unit = f"condorpy-ep-{uuid.uuid4().hex[:8]}"
    marker = f"condorpy-daemon-{uuid.uuid4().hex[:8]}"
    write_jobs(work, marker)
    (work / "plan.json").write_text(json.dumps(
        {"starts": [{"jobs": ["ok", "oom", "daemon"], "exit": 0}]}))
    done, log = run_service(unit, work)
    context = f"systemd-run: rc {done.returncode} {done.stderr}\n{report_text(work)}\n{log}"
    assert done.returncode == 0, context
    report = load_report(work, 1, context)
    start_state = report["service_at_start"]
    assert isinstance(start_state, dict)
    assert str(report["cgroup"]).endswith(f"/{unit}.service"), context
    assert start_state["procs"] == [str(report["pid"])], context
    check_start(report, work, context)
    jobs = report["jobs"]
    assert isinstance(jobs, dict)
    assert final_ad(jobs["daemon"], context).evaluate("ExitCode") == 0, context
    assert_nothing_left(unit, marker, context)


def test_automatic_restart_of_the_service(work: Path) -> None:
    """The first main process fails after its jobs, leaving the service's top cgroup
    an interior node (controllers in its subtree_control, ``starters.leaf`` and
    ``htcondor`` below). systemd's automatic restart puts the next main process back
    into the top cgroup: systemd 252 trims the emptied subtree first; either way the
    new starter must step aside again and run its jobs with their limits."""
    unit = f"condorpy-ep-{uuid.uuid4().hex[:8]}"
    marker = f"condorpy-daemon-{uuid.uuid4().hex[:8]}"
    write_jobs(work, marker)
    (work / "plan.json").write_text(json.dumps(
        {"starts": [{"jobs": ["ok", "daemon"], "exit": 3},
                    {"jobs": ["ok", "oom", "daemon"], "exit": 0}]}))
    done, log = run_service(unit, work, "-p", "Restart=on-failure",
                            "-p", "RestartSec=200ms")
    context = f"systemd-run: rc {done.returncode} {done.stderr}\n{report_text(work)}\n{log}"
    assert (work / "starts").exists() and (work / "starts").read_text() == "2", \
        f"the service was not started twice\n{context}"
    assert done.returncode == 0, context
    first = load_report(work, 1, context)
    left = first["jobs"]["ok"]["service_after"]        # type: ignore[index]
    assert set(left["subtree_control"].split()) >= {"cpu", "memory", "pids"}, context
    assert {"starters.leaf", "htcondor"} <= set(left["children"]), context
    second = load_report(work, 2, context)
    began = second["service_at_start"]
    assert isinstance(began, dict) and began["procs"] == [str(second["pid"])], context
    # Shown with -rP: what systemd handed the second main process.
    print("second start began in", json.dumps(second["service_at_start"]))
    check_start(second, work, context)
    assert_nothing_left(unit, marker, context)
