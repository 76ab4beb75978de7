"""`condorpy q -analyze` / `-better-analyze`: why a job does not run, in condor_q's
layout (HTCondor 23.9.6's condor_q in the reference pool is the oracle for the lines
compared here), judged by the policy explain machinery over the daemon's slot ads."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.clock import ManualClock
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.explain import SlotView, live_views
from condorpy.queue.analysis import analyze, clauses, pretty, referenced_job_attrs
from condorpy.queue.formats import ScheddLabel
from condorpy.queue.query import QueryArgumentError, parse_query
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_to_json
from condorpy.startd.core import load_core

MACHINE = MachineInventory(cpus=4, memory_mb=8192, disk_kb=4_194_304, hostname="n1",
                           facts={"Arch": "X86_64", "OpSys": "LINUX"})
SCHEDD = ScheddLabel("condorpy@n1", "<127.0.0.1:9618?addrs=x>")
JOB = """\
ClusterId = {cluster}
ProcId = 0
Owner = "alice"
User = "alice@n1"
JobStatus = {status}
RequestCpus = 1
RequestMemory = {memory}
DiskUsage = 45
RequestDisk = DiskUsage
FileSystemDomain = "n1"
Requirements = {req}
"""
DEFAULT_REQ = ('(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && '
               '(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && '
               '((TARGET.FileSystemDomain == MY.FileSystemDomain) || '
               '(TARGET.HasFileTransfer))')


def engine_of(tmp_path: Path, config: str) -> PolicyEngine:
    conf = tmp_path / "condor_config"
    conf.write_text("RUNBENCHMARKS = False\n" + config)
    inv = tmp_path / "machine.json"
    inv.write_text(inventory_to_json(MACHINE))
    engine = load_core(str(conf), inventory_path=str(inv)).engine(ManualClock(1000.0))
    engine.cycle(engine.now)
    return engine


def views(engine: PolicyEngine, **changes: dict[str, str]) -> list[SlotView]:
    """The engine's slot ads as a daemon advertises them, with some attributes of
    named slots changed (``slot1={"State": '"Claimed"'}``)."""
    ads = []
    for ad in engine.ads():
        copy = ClassAd.parse_old(ad.to_old())
        for attr, text in changes.get(str(ad.evaluate("Name")).split("@")[0], {}).items():
            copy[attr] = parse_expr(text)
        ads.append(copy)
    return live_views(engine, ads)


def job(cluster: int = 1, status: int = 1, memory: int = 128, req: str = DEFAULT_REQ,
        extra: str = "") -> ClassAd:
    return ClassAd.parse_old(JOB.format(cluster=cluster, status=status, memory=memory,
                                        req=req) + extra)


def run(engine: PolicyEngine, jobs: list[ClassAd], slots: list[SlotView],
        better: bool = True) -> str:
    return analyze(engine, jobs, slots, schedd=SCHEDD, better=better, ctime=time.ctime)


def test_requirements_are_wrapped_as_condor_q_wraps_them() -> None:
    # condor_q 23.9.6 -better-analyze, job 1.000 of the reference pool
    expr = parse_expr('((OpSys == "LINUX") && (Arch == "X86_64")) && '
                      '(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && '
                      '((TARGET.FileSystemDomain == MY.FileSystemDomain) || '
                      '(TARGET.HasFileTransfer))')
    assert "    " + pretty(expr) == (
        '    ((OpSys == "LINUX") && (Arch == "X86_64")) &&\n'
        '    (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) &&\n'
        '    ((TARGET.FileSystemDomain == MY.FileSystemDomain) ||\n'
        '      (TARGET.HasFileTransfer))')
    # nested conjunctions are separate conditions, each without its parentheses
    assert [str(c) for c in clauses(expr)][:3] == ['OpSys == "LINUX"', 'Arch == "X86_64"',
                                                  "TARGET.Disk >= RequestDisk"]


def test_job_attributes_are_those_the_requirements_use() -> None:
    ad = job()
    assert referenced_job_attrs(ad) == ["DiskUsage", "FileSystemDomain", "RequestDisk",
                                        "RequestMemory"]


def test_job_rejected_by_its_own_requirements(tmp_path: Path) -> None:
    engine = engine_of(tmp_path, "NUM_SLOTS = 2\n")
    out = run(engine, [job(memory=9000)], views(engine))
    lines = out.splitlines()
    assert lines[:4] == ["", "", "-- Schedd: condorpy@n1 : <127.0.0.1:9618?...",
                         "The Requirements expression for job 1.000 is"]
    assert ("Job 1.000 defines the following attributes:\n\n"
            "    DiskUsage = 45\n"
            '    FileSystemDomain = "n1"\n'
            "    RequestDisk = DiskUsage (kb)\n"
            "    RequestMemory = 9000 (mb)\n") in out
    assert ("         Slots\n"
            "Step    Matched  Condition\n"
            "-----  --------  ---------\n"
            '[0]           2  TARGET.Arch == "X86_64"\n'
            '[1]           2  TARGET.OpSys == "LINUX"\n'
            "[2]           2  TARGET.Disk >= RequestDisk\n"
            "[3]           0  TARGET.Memory >= RequestMemory\n") in out
    assert ("001.000:  Run analysis summary ignoring user priority.  Of 2 machines,\n"
            "      2 are rejected by your job's requirements\n"
            "      0 reject your job because of their own requirements\n"
            "      0 match and are already running your jobs\n"
            "      0 match but are serving other users\n"
            "      0 are able to run your job\n"
            "\n"
            "WARNING:  Be advised:\n"
            "   No machines matched the jobs's constraints\n\n") in out
    assert out.endswith("constraints\n\n")


def test_slot_start_refusing_the_job_is_opened_part_by_part(tmp_path: Path) -> None:
    engine = engine_of(tmp_path, 'NUM_SLOTS = 1\nSTART = TARGET.Owner == "bob"\n')
    out = run(engine, [job()], views(engine))
    assert "      1 reject your job because of their own requirements\n" in out
    assert "      0 are able to run your job\n" in out
    assert "Slot slot1 (Unclaimed/Idle) refuses job 1.000:" in out
    assert "slot1: START = false\n" in out
    assert 'TARGET.Owner == "bob"' in out
    assert "   Job did not match any machines's constraints\n" in out
    # plain -analyze says the same in its summary, without the clause table
    short = run(engine, [job()], views(engine), better=False)
    assert "Step    Matched" not in short and "refuses job" not in short
    assert "      1 reject your job because of their own requirements\n" in short


def test_busy_slots_are_yours_or_others(tmp_path: Path) -> None:
    engine = engine_of(tmp_path, "NUM_SLOTS = 3\n")
    slots = views(engine, slot1={"State": '"Claimed"', "RemoteUser": '"alice@n1"'},
                  slot2={"State": '"Claimed"', "RemoteUser": '"bob@n1"'})
    out = run(engine, [job(cluster=7)], slots)
    assert ("007.000:  Run analysis summary ignoring user priority.  Of 3 machines,\n"
            "      0 are rejected by your job's requirements\n"
            "      0 reject your job because of their own requirements\n"
            "      1 match and are already running your jobs\n"
            "      1 match but are serving other users\n"
            "      1 are able to run your job\n\n") in out
    assert "WARNING" not in out


def test_running_job_says_it_runs_and_where(tmp_path: Path) -> None:
    engine = engine_of(tmp_path, "")
    running = job(cluster=3, status=2, extra='RemoteHost = "slot1_1@n1"\n'
                                              "LastMatchTime = 1795689334\n")
    out = run(engine, [running], views(engine), better=False)
    # condor_q -analyze of a running job: no Requirements, its state, its last match
    assert out.startswith("\n\n-- Schedd: condorpy@n1 : <127.0.0.1:9618?...\n\n"
                          "003.000:  Job is running.\n\n"
                          "Remote host: slot1_1@n1\n\n"
                          f"Last successful match: {time.ctime(1795689334)}\n\n\n"
                          "003.000:  Run analysis summary ignoring user priority.")
    better = run(engine, [running], views(engine))
    assert "The Requirements expression for job 3.000 is" in better
    assert "003.000:  Job is running." in better


def test_held_job_says_why(tmp_path: Path) -> None:
    engine = engine_of(tmp_path, "")
    out = run(engine, [job(status=5, extra='HoldReason = "via condor_hold"\n')],
              views(engine), better=False)
    assert "001.000:  Job is held.\n\nHold reason: via condor_hold\n" in out


def test_partitionable_slot_too_small_for_the_request(tmp_path: Path) -> None:
    # the p-slot's Requirements carry WithinResourceLimits: an oversized request is
    # refused by the slot, and the refusal names the shortfall
    engine = engine_of(tmp_path, "")
    out = run(engine, [job(memory=9000, req="true")], views(engine))
    assert "      1 reject your job because of their own requirements\n" in out
    assert "slot1: Requirements = false" in out
    assert "slot1: the request fits = false" in out


@pytest.mark.parametrize("arg,output", [("-analyze", "analyze"), ("-an", "analyze"),
                                        ("-analyse", "analyze"),
                                        ("-better-analyze", "better-analyze"),
                                        ("-be", "better-analyze"),
                                        ("-better-analyse", "better-analyze")])
def test_analyze_options_as_condor_q_spells_them(arg: str, output: str) -> None:
    q = parse_query([arg, "4.0"], "q")
    assert q.output == output and [str(i) for i in q.ids] == ["4.0"]


def test_analyze_is_one_layout_among_the_others() -> None:
    with pytest.raises(QueryArgumentError):
        parse_query(["-analyze", "-long"], "q")
    with pytest.raises(QueryArgumentError):
        parse_query(["-analyze"], "history")


# --- against condor_q 23.9.6 ------------------------------------------------------------

ORACLE = Path(__file__).parent / "data" / "condor_q"


def _blocks(path: Path) -> list[ClassAd]:
    return [ClassAd.parse_old(b) for b in path.read_text().split("\n\n") if b.strip()]


def _utc(epoch: float) -> str:
    return time.asctime(time.gmtime(epoch))


@pytest.mark.parametrize("better", [False, True])
def test_reference_pool_jobs_read_as_condor_q_s(tmp_path: Path, better: bool) -> None:
    """data/condor_q: two idle jobs of the reference pool (one asking for more memory
    than the machine has, one for Windows), its one partitionable slot, and condor_q's
    -analyze and -better-analyze of them. Everything but the clause table is the same
    line for line; each condition condor_q lists is in condorpy's table with the same
    count (within a whole `a || b` clause where condor_q shows only a part)."""
    engine = engine_of(tmp_path, "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\n"
                                 "SLOT_TYPE_1_PARTITIONABLE = True\n")
    jobs = _blocks(ORACLE / "jobs.ads")
    slots = live_views(engine, _blocks(ORACLE / "slots.ads"))
    got = analyze(engine, jobs, slots, schedd=ScheddLabel("vm", "<127.0.0.1:30751?a=b>"),
                  better=better, ctime=_utc)
    want = (ORACLE / ("better-analyze.out" if better else "analyze.out")).read_text()

    def rows(text: str) -> list[tuple[int, str]]:
        return [(int(line.split()[1]), line.split(None, 2)[2])
                for line in text.splitlines() if line.startswith("[")]

    # condorpy's ClassAd printer spells =!= as isnt (both are the same operator)
    got = got.replace(" isnt ", " =!= ")
    assert [ln for ln in got.splitlines() if not ln.startswith("[")] == \
        [ln for ln in want.splitlines() if not ln.startswith("[")]
    mine = rows(got)
    for count, condition in rows(want):
        assert any(c == count and condition in text for c, text in mine), (count, condition)
