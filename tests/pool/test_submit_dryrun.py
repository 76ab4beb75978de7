"""condorpy's submit against HTCondor's own condor_submit -dry-run (23.9.6, in the
reference pool's chroot) on the same files: every attribute that matters to running a
job agrees, job by job.

Differences that are a matter of version are named, not hidden: condor_submit 23.9
leaves out the default PeriodicHold/Release/Remove and OnExit* expressions (the schedd
assumes them) and writes an empty Arguments where 25.x writes an empty Args (both: no
arguments); its default RequestMemory is an expression where 25.x's
JOB_DEFAULT_REQUESTMEMORY is 128, and its default RequestDisk is DiskUsage; 25.12 added
a version guard to the disk clause of Requirements, which condorpy (following 25.14)
writes.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from condorpy.classad import ClassAd, Undefined
from condorpy.queue.submit import parse_submit
from tests.pool.refpool import PoolUnavailable, RefPool

pytestmark = pytest.mark.pool

# What the starter and the queue act on.
MATTERS = ("Cmd", "Arguments", "Args", "Environment", "Env", "In", "Out", "Err", "Iwd",
           "UserLog", "RequestCpus", "RequestMemory", "RequestDisk", "RequestGPUs",
           "JobUniverse", "JobPrio", "Rank", "Requirements", "PeriodicHold",
           "PeriodicRelease", "PeriodicRemove", "OnExitHold", "OnExitRemove",
           "PeriodicHoldReason", "PeriodicHoldSubCode", "LeaveJobInQueue", "ClusterId",
           "ProcId", "JobStatus", "ShouldTransferFiles", "WhenToTransferOutput",
           "TransferIn", "MaxHosts", "MinHosts", "JobLeaseDuration", "KillSig",
           "JobMaxVacateTime", "MaxJobRetirementTime", "NiceUser", "GetEnv",
           "TransferInput", "TransferOutput", "StreamOut", "StreamErr", "CoreSize",
           "JobNotification", "HoldReasonCode")
# What the schedd assumes when condor_submit 23.9 leaves them out.
ASSUMED = {"PeriodicHold": False, "PeriodicRelease": False, "PeriodicRemove": False,
           "OnExitHold": False, "OnExitRemove": True}
GUARD = '(versionGE(split(TARGET.CondorVersion)[1],"25.12.0") || (TARGET.Disk >= RequestDisk))'

CASES = {
    "minimal": "executable = /bin/true\nqueue\n",
    "args_v1_env_v1": "executable = /bin/echo\narguments = a b\\\"c d\n"
                      "environment = A=1;B=two words\nqueue\n",
    "args_v2_env_v2": "executable = /bin/echo\narguments = \"one 'two three' four\"\n"
                      "environment = \"A=1 B='x y' C=\"\nqueue\n",
    "files_and_log": "executable = run.sh\ninput = in.txt\noutput = out.$(Cluster).$(Process)\n"
                     "error = err.$(Process)\nlog = job.log\nqueue 3\n",
    "initialdir": "executable = /bin/true\ninitialdir = sub\noutput = o\nlog = l\nqueue\n",
    "requests_with_units": "executable = /bin/true\nrequest_cpus = 3\nrequest_memory = 2GB\n"
                           "request_disk = 1.5G\nqueue\n",
    "requests_plain_numbers": "executable = /bin/true\nrequest_memory = 100\n"
                              "request_disk = 2048\nqueue\n",
    "gpus": "executable = /bin/true\nrequest_gpus = 1\nqueue\n",
    "requirements_rank_priority": "executable = /bin/true\nrequirements = Memory > 10\n"
                                  "rank = Memory\npriority = 5\nqueue\n",
    "custom_attrs": "executable = /bin/true\n+Project = \"physics\"\nMY.Weight = 3 + 4\n"
                    "+Flag = true\nqueue\n",
    "policy": "executable = /bin/true\nperiodic_hold = NumJobStarts > 3\n"
              "periodic_hold_reason = \"too many\"\nperiodic_hold_subcode = 4\n"
              "periodic_release = HoldReasonCode == 3\nperiodic_remove = JobStatus == 5\n"
              "on_exit_hold = ExitCode =!= 0\non_exit_remove = ExitCode == 0\nqueue\n",
    "own_macros": "N = 4\nprog = /bin/sleep\nexecutable = $(prog)\narguments = $(N)\n"
                  "output = o.$(N).$(Process)\nqueue 2\n",
    "queue_in": "executable = /bin/echo\narguments = $(item)\noutput = o.$(item)\n"
                "queue item in (alpha, beta gamma)\n",
    "queue_from_file": "executable = /bin/echo\narguments = $(a) $(b)\n"
                       "queue a,b from items.txt\n",
    "queue_matching": "executable = /bin/echo\narguments = $(f)\n"
                      "queue f matching files *.dat\n",
    "leave_in_queue_and_kill": "executable = /bin/true\nleave_in_queue = true\n"
                               "kill_sig = SIGUSR1\njob_max_vacate_time = 30\n"
                               "max_retirement_time = 60\nqueue\n",
    "transfer": "executable = /bin/true\nshould_transfer_files = YES\n"
                "when_to_transfer_output = ON_EXIT_OR_EVICT\n"
                "transfer_input_files = in.txt\ntransfer_output_files = out\nqueue\n",
    "hold_and_nice": "executable = /bin/true\nhold = true\nqueue\n",
}


@pytest.fixture(scope="module")
def pool() -> Iterator[RefPool]:
    # an overlay of its own on the built chroot: never the one a started pool of this
    # session runs in (closing it would take that pool's files away)
    worker = os.environ.get("PYTEST_XDIST_WORKER") or "main"
    pool = RefPool(instance=f"{worker}-dryrun")
    try:
        pool.build()
    except PoolUnavailable as exc:
        if os.environ.get("CONDORPY_REQUIRE_POOL") == "1":
            pytest.fail(f"reference pool unavailable: {exc}")
        pytest.skip(f"reference pool unavailable: {exc}")
    if os.geteuid() != 0:
        pytest.skip("condor_submit runs in the reference pool's chroot: needs root")
    try:
        yield pool
    finally:
        pool.close()


class ChrootFS:
    """The submit directory as condor_submit sees it, from outside the chroot."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)

    def read_bytes(self, path: str) -> bytes:
        return Path(self.root + path).read_bytes()

    def glob(self, pattern: str) -> list[str]:
        return [p[len(self.root):] for p in glob.glob(self.root + pattern)]

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self.root + path)


def _dry_run(pool: RefPool, inside: str, text: str) -> list[dict[str, Any]]:
    (pool.root / inside.lstrip("/") / "job.sub").write_text(text)
    res = pool.condor("condor_submit", "-dry-run", "-", "job.sub", cwd=inside)
    ads: list[dict[str, Any]] = []
    cluster: dict[str, Any] = {}
    current: dict[str, Any] = {}
    for line in res.stdout.splitlines()[1:]:
        if line == ".":
            if not ads:
                cluster = dict(current)
            ads.append({**cluster, **current})
            current = {}
        elif "=" in line and not line.endswith("dry-run to cluster 1."):
            name, _, value = line.partition("=")
            current[name] = value
    return ads


def _value(ad: ClassAd, name: str) -> Any:
    expr = ad.lookup(name)
    return None if expr is None else str(expr)


EMPTY_MEANS_NONE = ("Arguments", "Args", "Environment", "Env")
# the job's default requests changed between 23.9 and 25.x
VERSION_DEFAULTS = {"RequestMemory": "request_memory", "RequestDisk": "request_disk"}


def _canon(name: str, text: str | None) -> Any:
    if text == '""' and name in EMPTY_MEANS_NONE:
        return None
    if text is None:
        return ASSUMED.get(name)
    ad = ClassAd.parse_old(f"X = {text}")
    value = ad.evaluate("X") if ad.lookup("X").is_constant else Undefined
    if value is not Undefined and not isinstance(value, ClassAd):
        return value
    return str(ad.lookup("X")).replace(" ", "")


@pytest.mark.parametrize("case", sorted(CASES))
def test_job_ads_agree_with_condor_submit_dry_run(pool: RefPool, case: str) -> None:
    inside = f"/tmp/condorpy-dryrun/{case}"
    where = pool.root / inside.lstrip("/")
    shutil.rmtree(where, ignore_errors=True)
    (where / "sub").mkdir(parents=True)
    (where / "items.txt").write_text("1 2\n3 4\n")
    for name in ("a.dat", "b.dat", "c.txt", "in.txt"):
        (where / name).write_text("x")
    (where / "run.sh").write_text("#!/bin/sh\n")
    (where / "run.sh").chmod(0o755)
    theirs = _dry_run(pool, inside, CASES[case])
    ours = parse_submit(CASES[case], "job.sub", cluster_id=1, owner="root", submit_dir=inside,
                        qdate=0, env={}, fs=ChrootFS(pool.root))
    assert len(ours) == len(theirs), (case, len(ours), len(theirs))
    for mine, their in zip(ours, theirs):
        for name in MATTERS:
            if name in VERSION_DEFAULTS and VERSION_DEFAULTS[name] not in CASES[case]:
                continue
            want = _canon(name, their.get(name))
            got_text = _value(mine, name)
            if name == "Requirements" and got_text is not None:
                got_text = got_text.replace(GUARD, "(TARGET.Disk >= RequestDisk)")
            got = _canon(name, got_text)
            assert got == want, f"{case} proc {their.get('ProcId')}: {name}: condorpy " \
                                f"{got_text!r}, condor_submit {their.get(name)!r}"
