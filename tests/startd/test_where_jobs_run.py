"""Where is my job? Through a real daemon: condor_who's SLOT names each d-slot,
condor_q -run's HOST(S) is the slot a job runs in (RemoteHost, then LastRemoteHost),
and the slot ads say who holds them and which job runs there."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

PSLOT = "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path, extra=PSLOT + "UID_DOMAIN = where.example\n")) as d:
        yield d


def _slot_ads(d: Daemon) -> dict[str, ClassAd]:
    ads = [ClassAd.parse_old(t) for t in d.call("status")["ads"]]
    return {str(a.evaluate("Name")): a for a in ads}


def test_who_q_run_and_slot_ads_say_where_each_job_runs(daemon: Daemon,
                                                        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    submit(daemon, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"
                   "queue 2\n", work)
    wait_for(lambda: counts(daemon).get(2) == 2, 30, daemon.output)
    wait_for(lambda: daemon.call("who")["ads"] and
             "".join(daemon.call("who")["ads"]).count("JobPid") == 2, 30, daemon.output)
    host = daemon.call("who")["name"].split("@", 1)[1]
    me = f"{getpass.getuser()}@where.example"

    # the slot ads: who holds each d-slot, from where, with which job
    ads = _slot_ads(daemon)
    running = {n: a for n, a in ads.items() if a.evaluate("JobId") is not None
               and isinstance(a.evaluate("JobId"), str)}
    assert sorted(running) == [f"slot1_1@{host}", f"slot1_2@{host}"]
    for ad in running.values():
        assert ad.evaluate("RemoteUser") == me and ad.evaluate("RemoteOwner") == me
        assert ad.evaluate("ClientMachine") == host
    job_of = {n: a.evaluate("JobId") for n, a in running.items()}
    assert sorted(job_of.values()) == ["1.0", "1.1"]
    assert not isinstance(ads[f"slot1@{host}"].evaluate("JobId"), str)

    # condor_who: SLOT is the d-slot's own name (1_1, 1_2), never just the p-slot's 1
    lines = daemon.cli("who").stdout.splitlines()
    assert lines[1] == f"--Startd : {host} has 2 job(s) running:"
    rows = [line.split() for line in lines[3:] if line.strip()]
    assert {(r[2], r[3]) for r in rows} == {(n.split("@")[0][4:], j)
                                           for n, j in job_of.items()}
    assert {(r[0], r[1]) for r in rows} == {(me, host)}

    # condor_q -run: HOST(S) is the slot, and so is RemoteHost
    out = daemon.cli("q", "-run").stdout.splitlines()
    assert out[3].split()[-1] == "HOST(S)"
    hosts = {r.split()[0]: r.split()[-1] for r in out[4:] if r.strip()}
    assert hosts == {j: n for n, j in job_of.items()}
    af = daemon.cli("q", "-af", "ClusterId", "ProcId", "RemoteHost").stdout.split("\n")
    assert {f"{line.split()[0]}.{line.split()[1]}": line.split()[2]
            for line in af if line.strip()} == hosts

    # once a job leaves its slot, RemoteHost is gone and LastRemoteHost names it
    daemon.cli("rm", "1.0")
    wait_for(lambda: counts(daemon).get(3) == 1, 30, daemon.output)
    hist = daemon.cli("history", "1.0", "-af", "LastRemoteHost", "RemoteHost").stdout
    assert hist.split() == [hosts["1.0"], "undefined"]

    # with no job running, condor_who prints nothing at all (as condor_who 23 and 25),
    # and the slots carry no job
    daemon.cli("rm", "-all")
    wait_for(lambda: counts(daemon).get(2) is None, 30, daemon.output)
    wait_for(lambda: len(_slot_ads(daemon)) == 1, 30, daemon.output)
    res = daemon.cli("who")
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    (pslot,) = _slot_ads(daemon).values()
    assert all(not isinstance(pslot.evaluate(a), str)
               for a in ("JobId", "RemoteUser", "RemoteOwner", "ClientMachine"))
