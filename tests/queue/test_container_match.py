"""A docker or container job finds only slots that advertise its runtime, through the
Requirements its submit wrote (HTCondor's EP adds no check of its own for WantDocker:
its startd judges a claim by the slot's START and Requirements, and the starter by
the job's attributes), and `condorpy q -better-analyze` says why it stays idle."""

from __future__ import annotations

import time
from pathlib import Path

from condorpy.classad import ClassAd, parse_expr
from condorpy.clock import ManualClock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.explain import SlotView, live_views
from condorpy.queue.analysis import analyze
from condorpy.queue.formats import ScheddLabel
from condorpy.queue.submit import parse_submit
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_to_json
from condorpy.startd.core import load_core

MACHINE = MachineInventory(cpus=2, memory_mb=4096, disk_kb=4_194_304, hostname="n1",
                           facts={"Arch": "X86_64", "OpSys": "LINUX"})
SCHEDD = ScheddLabel("condorpy@n1", "<127.0.0.1:9618?addrs=x>")


def engine_of(tmp_path: Path) -> PolicyEngine:
    conf = tmp_path / "condor_config"
    conf.write_text("RUNBENCHMARKS = False\nNUM_SLOTS = 2\n")
    inv = tmp_path / "machine.json"
    inv.write_text(inventory_to_json(MACHINE))
    engine = load_core(str(conf), inventory_path=str(inv)).engine(ManualClock(1000.0))
    engine.cycle(engine.now)
    return engine


def slots(engine: PolicyEngine, **extra: str) -> list[SlotView]:
    ads = []
    for ad in engine.ads():
        copy = ClassAd.parse_old(ad.to_old())
        for attr, text in extra.items():
            copy[attr] = parse_expr(text)
        ads.append(copy)
    return live_views(engine, ads)


def job(text: str) -> ClassAd:
    (ad,) = parse_submit(text, "job.sub", cluster_id=3, owner="alice", submit_dir="/tmp",
                         qdate=0, env={}, uid_domain="n1")
    return ad


DOCKER = job("universe = docker\ndocker_image = debian:12\nqueue\n")
CONTAINER = job("universe = container\ncontainer_image = docker://debian:12\nqueue\n")


def test_a_docker_job_needs_a_slot_that_says_has_docker(tmp_path: Path) -> None:
    engine = engine_of(tmp_path)
    for view, want in ((slots(engine), False), (slots(engine, HasDocker="false"), False),
                       (slots(engine, HasDocker="true"), True)):
        for s in view:
            # not True is no match, for the local matchmaker as for a negotiator
            assert (DOCKER.evaluate("Requirements", s.ad) is True) is want


def test_a_container_job_needs_the_runtime_and_the_image_kind(tmp_path: Path) -> None:
    engine = engine_of(tmp_path)
    both = slots(engine, HasContainer="true", HasDockerURL="true")
    assert all(CONTAINER.evaluate("Requirements", s.ad) is True for s in both)
    runtime_only = slots(engine, HasContainer="true", HasDockerURL="false")
    assert not any(CONTAINER.evaluate("Requirements", s.ad) is True for s in runtime_only)


def test_better_analyze_names_the_missing_runtime(tmp_path: Path) -> None:
    engine = engine_of(tmp_path)
    out = analyze(engine, [DOCKER], slots(engine), schedd=SCHEDD, better=True,
                  ctime=time.ctime)
    row = next(line for line in out.splitlines() if line.endswith("TARGET.HasDocker"))
    assert row.split()[1] == "0"
    assert "No slot advertises HasDocker = true: the job wants Docker" in out
    offline = analyze(engine, [DOCKER],
                      slots(engine, HasDocker="false",
                            DockerOfflineReason='"docker info failed"'),
                      schedd=SCHEDD, better=True, ctime=time.ctime)
    assert "(DockerOfflineReason: docker info failed)" in offline
    fine = analyze(engine, [DOCKER], slots(engine, HasDocker="true"), schedd=SCHEDD,
                   better=True, ctime=time.ctime)
    assert "No slot advertises" not in fine
    out = analyze(engine, [CONTAINER], slots(engine), schedd=SCHEDD, better=True,
                  ctime=time.ctime)
    assert "No slot advertises HasContainer = true" in out
