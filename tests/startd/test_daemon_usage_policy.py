"""End to end through a real daemon: a job that uses ~400 MB in a 128 MB slot. Its
usage reaches its job ad (STARTER_UPDATE_INTERVAL = 1 here), so the slot's
`use POLICY : Hold_If_Memory_Exceeded` holds it with HTCondor's code 21, subcode 102,
and the job's own periodic_hold over MemoryUsage holds it with code 3. The memory
limit policy is `none`, so that a host with cgroups measures the job without the
kernel killing it first (HTCondor's advice for these policies)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from condorpy.classad import ClassAd
from condorpy.queue.records import ad_of_text
from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0 and not os.access("/tmp", os.W_OK),
                                reason="needs a writable /tmp")

CONFIG = "CGROUP_MEMORY_LIMIT_POLICY = none\nPERIODIC_EXPR_INTERVAL = 3600\n"
# 400 MiB written (so resident), then a wait the policy cuts short
HOG = (f"executable = {sys.executable}\n"
       "arguments = \"-c 'import time; b = b\"\"x\"\" * (400 << 20); time.sleep(120)'\"\n"
       "request_memory = 128\nrequest_disk = 10000\n")


@pytest.fixture
def daemon(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Daemon]:
    with running(Daemon(tmp_path, CONFIG + getattr(request, "param", ""))) as d:
        yield d


def _ads(d: Daemon) -> list[ClassAd]:
    with d.db() as db:
        rows = db.execute("SELECT ad FROM jobs UNION ALL SELECT ad FROM history").fetchall()
    return [ad_of_text(r[0]) for r in rows]


def _held(d: Daemon) -> dict[str, Any]:
    wait_for(lambda: counts(d).get(5) == 1, 90, d.output)
    (ad,) = _ads(d)
    return {k: ad.evaluate(k) for k in ("HoldReason", "HoldReasonCode",
                                          "HoldReasonSubCode", "MemoryUsage",
                                          "ResidentSetSize")}


@pytest.mark.parametrize("daemon", ["use POLICY : Hold_If_Memory_Exceeded\n"],
                         indirect=True)
def test_hold_if_memory_exceeded_holds_a_job_over_its_slot(daemon: Daemon,
                                                           tmp_path: Path) -> None:
    submit(daemon, HOG + "queue\n", tmp_path)
    held = _held(daemon)
    assert held["HoldReasonCode"] == 21
    assert held["HoldReasonSubCode"] == 102
    assert held["HoldReason"] == "memory usage exceeded request_memory"
    assert held["MemoryUsage"] > 128 and held["ResidentSetSize"] > 128 * 1024
    assert "MemoryUsage" in daemon.cli("q", "-l").stdout


def test_periodic_hold_on_memory_usage_holds_the_job(daemon: Daemon, tmp_path: Path) -> None:
    submit(daemon, HOG + "periodic_hold = MemoryUsage > 300\n"
           "periodic_hold_reason = \"over 300 MB\"\nqueue\n", tmp_path)
    held = _held(daemon)
    assert (held["HoldReasonCode"], held["HoldReason"]) == (3, "over 300 MB")
    assert held["MemoryUsage"] > 300
    size = daemon.cli("q", "-af", "MemoryUsage").stdout.split()
    assert size and int(size[0]) > 300
