"""Claims for jobs whose GPU requirements condorpy's `submit` wrote (RequireGPUs, the
countMatches clause of Requirements, GPUsMin*), as a pool's schedd sends them, against
simulated GPUs: one V100 (Capability 7.0) and two A100s (8.0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from condorpy.queue.submit import parse_submit
from tests.policy.sim import find, simulate, snapshots

CONFIG = ("RUNBENCHMARKS = False\nIS_OWNER = False\nSLOT_TYPE_1_PARTITIONABLE = True\n"
          "NUM_CPUS = 4\nMEMORY = 4096\nDISK = 10000000\n"
          "use FEATURE : GPUs\nGPU_DISCOVERY_EXTRA = -extra -simulate:2,1,4,2\n")
V100, A100S = "GPU-a0223334", {"GPU-b1223334", "GPU-c2223334"}


def _job(commands: str) -> dict[str, Any]:
    """The job ad condorpy's submit writes, as a timeline's JSON (expressions as
    /Expr(...)/), less the file transfer clause of Requirements (another matter)."""
    ad = parse_submit(f"executable = /bin/true\nrequest_gpus = 1\n{commands}\nqueue\n",
                      "job.sub", cluster_id=1, owner="alice", submit_dir="/tmp", qdate=0,
                      env={})[0]
    out: dict[str, Any] = {}
    for name in ad.keys():
        expr = ad.lookup(name)
        value = ad.evaluate(name) if expr is not None and expr.is_constant else None
        out[name] = value if isinstance(value, (bool, int, float, str)) \
            else f"/Expr({expr})/"
    transfer = " && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))"
    assert transfer in out["Requirements"]
    out["Requirements"] = out["Requirements"].replace(transfer, "")
    return out


def _claim(t: float, cid: str, commands: str) -> dict[str, Any]:
    return {"t": t, "event": "request_claim", "id": cid, "job": _job(commands)}


@pytest.mark.parametrize("commands, want", [
    ("require_gpus = Capability >= 8.0", A100S),
    ("gpus_minimum_capability = 8.0", A100S),
    ("gpus_maximum_capability = 7.5", {V100}),
    ("gpus_minimum_memory = 40G", A100S),
])
def test_a_claim_gets_a_gpu_that_satisfies_require_gpus(tmp_path: Path, commands: str,
                                                        want: set[str]) -> None:
    recs = simulate(tmp_path, CONFIG, [_claim(1, "c1", commands),
                                       {"t": 2, "event": "snapshot",
                                        "attrs": ["AssignedGPUs"]}])
    assert not find(recs, action="claim_refused"), find(recs, action="claim_refused")
    assert snapshots(recs, "slot1_1")[0]["AssignedGPUs"] in want


def test_a_claim_no_gpu_satisfies_is_refused_saying_why(tmp_path: Path) -> None:
    recs = simulate(tmp_path, CONFIG, [_claim(1, "c1", "require_gpus = Capability >= 9.5")])
    refused = find(recs, action="claim_refused", claim="c1")
    assert refused and refused[0]["reason"] == \
        "the job's Requirements are not True for this slot"
    assert not any(r.get("slot") == "slot1_1" for r in recs)
