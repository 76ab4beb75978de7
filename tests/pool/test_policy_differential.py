"""The startd policy as HTCondor 23.9.6's own condor_startd runs it, and condorpy's
(tests/pool/policy_differential.py: the harness): the owner's part (suspend, preempt,
keep jobs off, kill) and the schedd's (a claim's lease while the schedd is gone).
Where condorpy differs on purpose the scenario says so (docs/policy.md lists them);
everything else must agree."""

from __future__ import annotations

import pytest

from tests.pool.policy_differential import (  # noqa: F401  (pools: the module's fixture)
    SIDES, STUBBORN, TOLERANCE_S, Pools, after, evicted, evicted_and_back, owner, pools,
    pslot_is, run, same_path, same_pslot, same_statuses, schedd, settled, suspended, tool)

pytestmark = pytest.mark.pool
# minutes on one worker (each scenario runs its timeline in real time, on a pool of
# its own): the pool lane starts it first
POOL_LONG_MODULE = True


def test_suspend_and_continue(pools: Pools) -> None:
    r = run(pools, "suspend", "", [(1, owner(active=True)), (5, after(suspended, owner()))],
            lambda s: s.events().count("011") >= 1 and s.statuses[-1:] == ["2"])
    same_path(r)
    assert r.path["htcondor"][0][1] == "Claimed/Suspended"
    assert r.events["condorpy"] == r.events["htcondor"] == ["000", "001", "010", "011"]
    same_statuses(r)
    assert settled(r.statuses["htcondor"]) == ["2", "7", "2"]


def test_preempt_while_suspended_without_retirement_resumes_then_evicts(pools: Pools) -> None:
    # Issue 23 item 8a: suspended, then PREEMPT with no retirement time: HTCondor goes
    # through Claimed/Retiring, the job is unsuspended before the eviction, and the job
    # is matched again once the owner has gone.
    r = run(pools, "suspend-preempt", "+PolicyRetire = 0",
            [(1, owner(active=True)),
             (4, after(suspended, owner(active=True, preempt=True))),
             (9, after(lambda s: "004" in s.events(), owner()))],
            evicted_and_back)
    same_path(r)
    assert [sa for _, sa in r.path["htcondor"]][:4] == [
        "Claimed/Suspended", "Claimed/Retiring", "Preempting/Vacating", "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    assert r.events["htcondor"][:6] == ["000", "001", "010", "011", "004", "001"]
    same_statuses(r)


def test_preempt_with_retirement_retires_then_vacates(pools: Pools) -> None:
    # PREEMPT with retirement time: the job runs on for its retirement (25 s of run
    # time) less the vacate time (MachineMaxVacateTime 2), then is vacated.
    r = run(pools, "preempt-retire", "+PolicyRetire = 25",
            [(1, owner(preempt=True)), (30, owner())], evicted_and_back)
    same_path(r, timed=1)
    for side in SIDES:
        assert r.path[side][1][0] - r.path[side][0][0] >= 2, r.path
    assert [sa for _, sa in r.path["htcondor"]][:3] == [
        "Claimed/Retiring", "Preempting/Vacating", "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_kill_expression_while_vacating(pools: Pools) -> None:
    # KILL true while the job is vacating: Preempting/Killing, then the job is gone.
    r = run(pools, "kill-expr", "+PolicyRetire = 0\n+PolicyVacate = 30",
            [(0, owner(blocks=True)), (1, tool("condor_vacate")),
             (3, owner(blocks=True, kills=True))], evicted, job=STUBBORN)
    same_path(r)
    assert [sa for _, sa in r.path["htcondor"]][:4] == [
        "Claimed/Retiring", "Preempting/Vacating", "Preempting/Killing", "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_is_owner_takes_the_partitionable_slot_and_gives_it_back(pools: Pools) -> None:
    # START false: the partitionable slot goes to Owner (IS_OWNER), its busy d-slot
    # keeps its job; START true again: back to Unclaimed.
    r = run(pools, "is-owner", "", [(1, owner(blocks=True)),
                                    (5, after(pslot_is("Owner/Idle"), owner()))],
            pslot_is("Unclaimed/Idle"), settle=2.0)
    same_pslot(r)
    assert [sa for _, sa in r.pslot["htcondor"]] == ["Owner/Idle", "Unclaimed/Idle"]
    assert r.path["condorpy"] == r.path["htcondor"] == []


def test_claim_lease_while_the_schedd_is_gone(pools: Pools) -> None:
    # The job's JobLeaseDuration (20 s) is its claim's lease. The one schedd both sides
    # share stops (SIGSTOP) while the job runs, and goes on 55 s later; the job exits
    # meanwhile (25 s) and its shadow cannot finish with the schedd. HTCondor's startd
    # keeps the slot Busy (its starter waits for the shadow and keeps the claim alive)
    # until the schedd is back and releases the claim.
    r = run(pools, "lease", "job_lease_duration = 20",
            [(0, schedd(stop=True)), (55, schedd(stop=False))],
            lambda s: "005" in s.events(), job="executable = /bin/sleep\narguments = 25",
            cleanup=(schedd(stop=False),))
    # Once the schedd goes on, the shadow's answer to the exit and the schedd's release
    # of the claim come in the same instant: which the startd takes first is a race on
    # either side (a Claimed/Idle between Busy and Preempting, or none; both seen of
    # HTCondor's). What is compared: the slot stayed Busy until the schedd was back.
    for side in SIDES:
        path = [(t, sa) for i, (t, sa) in enumerate(r.path[side])
                if not (sa == "Claimed/Idle" and r.path[side][i + 1:i + 2]
                        and r.path[side][i + 1] == (t, "Preempting/Vacating"))]
        assert [sa for _, sa in path][:2] == ["Preempting/Vacating", "Owner/Idle"], r.path
        assert path[0][0] >= 55 - TOLERANCE_S, r.path
    assert r.events["condorpy"] == r.events["htcondor"] == ["000", "001", "005"]
