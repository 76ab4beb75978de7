"""The startd policy as HTCondor 23.9.6's own condor_startd runs it, and condorpy's
(tests/pool/policy_differential.py: the harness): the administrator's tools
(condor_vacate, condor_drain), the partitionable slot's carving and the negotiator's
rank preemption. Where condorpy differs on purpose the scenario says so
(docs/policy.md lists them); everything else must agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pool.policy_differential import (  # noqa: F401  (pools: the module's fixture)
    SIDES, SLEEP, STUBBORN, Pools, Side, after, condorpy_address, evicted,
    htcondor_address, owner, pools, retiring, run, same_path, same_pslot, same_statuses,
    slots_of, submit_job, suspended, tool)
from tests.startd.daemon_helpers import wait_for

pytestmark = pytest.mark.pool
# minutes on one worker (each scenario runs its timeline in real time, on a pool of
# its own): the pool lane starts it first
POOL_LONG_MODULE = True


def test_graceful_vacate_retires_first(pools: Pools) -> None:
    # Issue 23 item 8b: condor_vacate (graceful) retires the claim first.
    r = run(pools, "vacate", "+PolicyRetire = 25",
            [(0, owner(blocks=True)), (1, tool("condor_vacate"))], evicted)
    same_path(r, timed=1, aligned=True)
    for side in SIDES:      # the job ran on, retiring
        assert r.path[side][1][0] - r.path[side][0][0] >= 2, r.path
    assert [sa for _, sa in r.path["htcondor"]][:2] == [
        "Claimed/Retiring", "Preempting/Vacating"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_fast_vacate_kills_at_once(pools: Pools) -> None:
    r = run(pools, "vacate-fast", "+PolicyRetire = 600",
            [(0, owner(blocks=True)), (1, tool("condor_vacate", "-fast"))], evicted)
    same_path(r, aligned=True)
    assert [sa for _, sa in r.path["htcondor"]][:1] == ["Preempting/Killing"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_kill_after_vacate(pools: Pools) -> None:
    # A job that ignores SIGTERM: once MachineMaxVacateTime (2 s) has passed after the
    # soft kill the job is hard-killed, the slot staying in Preempting/Vacating (only
    # KILL moves it to Killing).
    r = run(pools, "kill-after-vacate", "+PolicyRetire = 0",
            [(0, owner(blocks=True)), (1, tool("condor_vacate"))], evicted, job=STUBBORN)
    same_path(r, aligned=True)
    assert [sa for _, sa in r.path["htcondor"]][:3] == [
        "Claimed/Retiring", "Preempting/Vacating", "Owner/Idle"]
    for side in SIDES:
        (vacating, _), (gone, _) = r.path[side][1:3]
        assert gone - vacating >= 2, r.path
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


@pytest.mark.parametrize("how,retire", [("-graceful", 6), ("-quick", 600), ("-fast", 600)])
def test_drain(pools: Pools, how: str, retire: int) -> None:
    r = run(pools, f"drain{how}", f"+PolicyRetire = {retire}",
            [(1, tool("condor_drain", how))], evicted,
            cleanup=(tool("condor_drain", "-cancel"),))
    same_path(r, aligned=True)
    same_pslot(r, aligned=True)
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_a_job_suspended_while_a_graceful_drain_retires_it(pools: Pools) -> None:
    # START refuses the job (the owner blocks), so the drain does not coordinate its
    # retirement: it keeps its own, which suspension does not use up. Suspended (20)
    # while retiring, continued (16), then vacated once its own retirement is over.
    r = run(pools, "drain-suspended", "+PolicyRetire = 30",
            [(0, owner(blocks=True)), (1, tool("condor_drain", "-graceful")),
             (2, after(retiring, owner(active=True, blocks=True))),
             (6, after(suspended, owner(blocks=True)))],
            evicted,
            cleanup=(tool("condor_drain", "-cancel"),))
    same_path(r, timed=3, aligned=True)
    assert [sa for _, sa in r.path["htcondor"]][:5] == [
        "Claimed/Retiring", "Claimed/Suspended", "Claimed/Retiring", "Preempting/Vacating",
        "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_pslot_carving_and_release(pools: Pools) -> None:
    # A job asking for 1 CPU and 300 MB: both carve a d-slot of the same size (memory
    # rounded up as MODIFY_REQUEST_EXPR_REQUESTMEMORY says) and take it off the
    # partitionable slot; once the job is gone the p-slot has it all back.
    seen: dict[str, list[tuple[str, ...]]] = {}

    def look(pools: Pools, sides: list[Side]) -> None:
        for s in sides:
            seen[s.name] = slots_of(pools, s)
    run(pools, "carve", "request_cpus = 1\nrequest_memory = 300",
        [(0, look), (1, owner(blocks=True)), (2, tool("condor_vacate", "-fast"))],
        evicted, settle=1.0)
    assert seen["condorpy"] == seen["htcondor"], seen
    assert seen["htcondor"] == [("slot1", "Partitionable", "1", "1664", "Unclaimed", "Idle"),
                                ("slot1_1", "Dynamic", "1", "384", "Claimed", "Busy")], seen
    whole = [("slot1", "Partitionable", "2", "2048", "Unclaimed", "Idle")]
    addresses = {"htcondor": htcondor_address(pools.pool),
                 "condorpy": condorpy_address(pools.daemon)}
    for name, address in addresses.items():
        side = Side(name, address, str, Path())
        wait_for(lambda: slots_of(pools, side) == whole, 30,
                 lambda: f"{name}: {slots_of(pools, side)}")


def test_rank_preemption(pools: Pools) -> None:
    # The slot's RANK prefers jobs with +PolicyRank: such a job, matched to the busy
    # d-slot by the negotiator, makes the running job be vacated at once, and the slot
    # pass to the better claim (23) whose job then runs (11). It is submitted once both
    # d-slots' ads say the running job's retirement (4 s less 2 s of vacate time) is
    # used up: the pool negotiates within a second of a submission, and a match by a
    # stale ad would reach one side a cycle before the other.
    second: dict[str, int] = {}

    def retired(s: Side) -> bool:
        # as the collector has it: the negotiator leaves out a d-slot whose ad says its
        # job may still retire (NEGOTIATOR_CONSIDER_EARLY_PREEMPTION), and each startd
        # advertises it afresh only every UPDATE_INTERVAL
        res = pools.pool.condor("condor_status", "-const",
                                f'MyAddress == "{s.address}" && SlotType == "Dynamic"',
                                "-af", "RetirementTimeRemaining", check=False)
        return res.stdout.split() in (["0"], ["undefined"])

    def better(pools: Pools, sides: list[Side]) -> None:
        for s in sides:
            second[s.name] = submit_job(pools, s, SLEEP,
                                        "request_cpus = 2\n+PolicyRank = True",
                                        log="better.log")
            s.more.append(second[s.name])

    def done(s: Side) -> bool:
        st = pools.pool.condor("condor_q", str(second.get(s.name, 0)), "-af", "JobStatus",
                               check=False).stdout.split()
        return "004" in s.events() and st == ["2"]
    r = run(pools, "rank", "request_cpus = 2\n+PolicyRetire = 4",
            [(0, after(retired, better))], done)
    # The delays of the startd's own steps (vacating, the better claim taking the slot);
    # when the claim becomes Busy is when the schedd activates it, which 23.9.6's schedd
    # has been seen to do at once or 5 s later, for either startd (one run each way)
    same_path(r, timed=2)
    assert [sa for _, sa in r.path["htcondor"]][:3] == [
        "Preempting/Vacating", "Claimed/Idle", "Claimed/Busy"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)
