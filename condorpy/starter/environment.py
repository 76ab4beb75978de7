"""The environment a job starts with: its own, plus what HTCondor's starter adds.

The starter's own environment is never inherited, so nothing of the daemon's service
(``NOTIFY_SOCKET``, ``INVOCATION_ID``) can reach a job; those two are also removed
when a job ad asks for them, as a job must never talk to the service manager.
"""

from __future__ import annotations

import math

from condorpy.starter.jobspec import JobSpec, SlotSpec

NEVER_INHERITED = ("NOTIFY_SOCKET", "INVOCATION_ID", "WATCHDOG_USEC", "WATCHDOG_PID",
                   "JOURNAL_STREAM")


def gpu_visible_devices(assigned: tuple[str, ...]) -> str:
    """``CUDA0,CUDA1`` -> ``0,1``; UUID-style ids (``GPU-…``) pass through unchanged."""
    out = []
    for gpu in assigned:
        out.append(gpu[4:] if gpu.startswith("CUDA") and gpu[4:].isdigit() else gpu)
    return ",".join(out)


def job_environment(job: JobSpec, slot: SlotSpec, *, scratch: str, job_ad_path: str,
                    machine_ad_path: str, iwd: str,
                    thread_vars: tuple[str, ...]) -> dict[str, str]:
    env = dict(job.env)
    threads = str(max(1, math.floor(slot.cpus)))
    for name in thread_vars:
        env.setdefault(name, threads)
    env.update({
        "_CONDOR_SCRATCH_DIR": scratch,
        "_CONDOR_SLOT": slot.short_name,
        "_CONDOR_JOB_AD": job_ad_path,
        "_CONDOR_MACHINE_AD": machine_ad_path,
        "_CONDOR_JOB_IWD": iwd,
        "TMPDIR": scratch, "TMP": scratch, "TEMP": scratch,
        "BATCH_SYSTEM": "HTCondor",
    })
    if slot.assigned_gpus:
        devices = gpu_visible_devices(slot.assigned_gpus)
        env["CUDA_VISIBLE_DEVICES"] = devices
        env["GPU_DEVICE_ORDINAL"] = devices
        env["_CONDOR_AssignedGPUs"] = ",".join(slot.assigned_gpus)
    else:
        # No GPU in the slot: hide every GPU rather than expose the machine's.
        env["CUDA_VISIBLE_DEVICES"] = "10000"
    for name in NEVER_INHERITED:
        env.pop(name, None)
    return env
