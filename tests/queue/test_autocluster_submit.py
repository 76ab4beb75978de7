"""Autoclusters of a submission sent in parts (condorpy submit's way), keyed off the
rows' text by the daemon's submit command: the in-process daemon parts of
tests/startd/rm_rig.py, nothing started."""

from __future__ import annotations

from pathlib import Path

from condorpy.queue.jobstore import JobId
from condorpy.queue.matchmaker import LocalSchedd
from condorpy.queue.submit import submit_ads
from condorpy.queue.submit_parts import parts

from tests.startd.rm_rig import Rig

SUB = ("executable = /bin/sleep\narguments = $(Process)\nrequest_memory = {memory}\n"
       "+Project = \"p$(Process)\"\nqueue {n}\n")


def _submit(rig: Rig, memory: int, n: int) -> int:
    cluster = int(rig.cli("new_cluster"))
    ads = submit_ads(SUB.format(memory=memory, n=n), "test.sub", cluster_id=cluster,
                     owner="alice", submit_dir="/tmp", qdate=int(rig.clock.time()))
    for part in parts(cluster, n, ads, part_jobs=40):
        rig.cli("submit", **part)
    return cluster


def test_a_submission_in_parts_is_one_autocluster(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.step()
    never = _submit(rig, 10**8, 100)     # more memory than the machine has
    rig.step()
    index = rig.schedd.index()
    assert len(index) == 100 and index.clusters == 1
    ac = rig.schedd.autocluster(JobId(never, 99))
    assert ac is not None and "requestmemory" in ac[1].split(",")
    # Project differs from job to job, but nothing matching reads looks at it
    assert "project" not in ac[1].split(",")
    fits = _submit(rig, 64, 3)
    rig.step()
    assert [rig.status(f"{fits}.{p}") for p in range(3)] == [2, 2, 1]   # two slots
    assert rig.status(f"{never}.0") == 1
    assert index.clusters == 2 and len(index) == 101
    # a read of the whole queue from the store (the daemon's start) groups them alike
    restarted = LocalSchedd(rig.engine, rig.store, rig.clock, rig.rm, rig.job_log,
                            started_at=rig.clock.time(), knob=rig.cfg.get)
    again = restarted.index()
    assert again.clusters == 2 and len(again) == 101
