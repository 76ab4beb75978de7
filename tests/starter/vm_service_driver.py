"""The main process of a systemd service in ``test_vm_systemd.py``.

    python vm_service_driver.py WORK

Each start of the service counts itself in ``WORK/starts``, reads what to do from
``WORK/plan.json`` (``{"starts": [{"jobs": [NAME, ...], "exit": N}, ...]}``), runs
the real ``condorpy starter`` command in this very process for each job
(``WORK/NAME.job.ad`` with ``WORK/slot.ad``), and writes what it saw to
``WORK/report-<start>.json``: the cgroup it began in, the state of the service's
cgroup then, and for each job the exit status, the final ad and where the starter
itself was afterwards. The service's cgroup is the one it began in.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

from condorpy.cli import starter_cmd
from condorpy.errors import CondorpyError
from condorpy.starter.cgroup import own_cgroup

MOUNT = "/sys/fs/cgroup"
KNOBS = ("CGROUP_MEMORY_LIMIT_POLICY=hard", "DISABLE_SWAP_FOR_JOB=true",
         "CONDORPY_CGROUP_PIDS_MAX=32", "BASE_CGROUP=htcondor",
         "CONDORPY_USAGE_INTERVAL=0.2", "KILLING_TIMEOUT=5")


def cgroup_state(path: str) -> dict[str, object]:
    directory = os.path.join(MOUNT, path.lstrip("/"))

    def read(name: str) -> str | None:
        try:
            with open(os.path.join(directory, name)) as fh:
                return fh.read().strip()
        except OSError as exc:
            return f"<{exc.strerror}>"

    children = sorted(e.name for e in os.scandir(directory) if e.is_dir()) \
        if os.path.isdir(directory) else []
    return {"path": path, "subtree_control": read("cgroup.subtree_control"),
            "procs": (read("cgroup.procs") or "").split(), "children": children}


def write_json(path: str, data: object) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, path)


def main(work: str) -> int:
    starts_file = os.path.join(work, "starts")
    start = int(open(starts_file).read()) + 1 if os.path.exists(starts_file) else 1
    with open(starts_file, "w") as fh:
        fh.write(str(start))
    with open(os.path.join(work, "plan.json")) as fh:
        plan = json.load(fh)["starts"][start - 1]
    service = own_cgroup() or "?"
    report: dict[str, object] = {"start": start, "pid": os.getpid(), "cgroup": service,
                                 "service_at_start": cgroup_state(service), "jobs": {}}
    jobs: dict[str, object] = {}
    report["jobs"] = jobs
    report_file = os.path.join(work, f"report-{start}.json")
    for name in plan["jobs"]:
        result = os.path.join(work, f"{name}-{start}.result.ad")
        argv = ["--job-ad", os.path.join(work, f"{name}.job.ad"),
                "--slot-ad", os.path.join(work, "slot.ad"),
                "--execute", os.path.join(work, "execute"), "--result", result]
        for knob in KNOBS:
            argv += ["--set", knob]
        entry: dict[str, object] = {}
        try:
            entry["rc"] = starter_cmd.main(argv)
        except CondorpyError as exc:
            entry["error"] = str(exc)
        except Exception:
            entry["error"] = traceback.format_exc()
        entry["starter_cgroup_after"] = own_cgroup()
        entry["service_after"] = cgroup_state(service)
        if os.path.exists(result):
            with open(result) as fh:
                entry["result"] = fh.read()
        jobs[name] = entry
        write_json(report_file, report)
    write_json(report_file, report)
    return int(plan["exit"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
