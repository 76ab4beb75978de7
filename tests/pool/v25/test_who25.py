"""Where is my job, against HTCondor 25.14.1's own tools: condorpy's `who` and
`q -run` print the layouts condor_who and condor_q -run print for the same two jobs on
a partitionable slot (the real startd's jobs beside condorpy's), `who` prints nothing
when no job runs, as condor_who does; and a pool job on condorpy's slot shows where it
runs in the schedd's condor_q -run, in condorpy's `who` and in the slot ad, with the
values HTCondor's startd publishes for its own jobs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.jobs import submit
from tests.pool.test_pool_jobs import CONFIG, HOST
from tests.startd.daemon_helpers import Daemon, counts, wait_for
from tests.startd.daemon_helpers import submit as submit_local

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool
POOL_TESTS_APART = True

PSLOT = "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"
SLEEP = "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\nrequest_cpus = 1\n"


def _who_shape(text: str) -> tuple[object, ...]:
    """What condor_who's layout is made of, without the values that differ between
    two machines (host, owner, pids, times, directories)."""
    lines = text.split("\n")
    if len(lines) < 3:
        return (text,)
    rows = [line.split() for line in lines[3:] if line.strip()]
    return (lines[0], re.sub(r": \S+ has", ": HOST has", lines[1]), lines[2].split(),
            sorted(r[2] for r in rows), [len(r) for r in rows],
            all(re.fullmatch(r"\d+\.\d+", r[3]) for r in rows), text.endswith("\n\n"))


def _q_run_shape(text: str) -> tuple[object, ...]:
    lines = text.split("\n")
    rows = [line.split() for line in lines[4:] if line.strip()]
    return (lines[:2], lines[2].startswith("-- Schedd: "), lines[3], len(rows),
            sorted(re.sub(r"@.*", "@HOST", r[-1]) for r in rows))


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(tmp_path, extra=PSLOT)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def test_who_and_q_run_print_condor_who_and_condor_q_run_layouts(
        refpool: RefPool, jobdir: Path, local: Daemon, tmp_path: Path) -> None:
    # nothing runs yet: condor_who prints nothing at all, and so does condorpy
    assert refpool.condor("condor_who").stdout == ""
    assert local.cli("who").stdout == ""
    submit(refpool, jobdir, SLEEP + "should_transfer_files = NO\n"
           "requirements = !regexp(\"condorpy\", TARGET.CondorVersion)\nqueue 2\n")
    # until the startd has published each job's run time and pid, like condorpy's
    wait_for(lambda: _who_shape(refpool.condor("condor_who").stdout)[4:5] == ([7, 7],), 120,
             lambda: refpool.condor("condor_who", check=False).stdout
             + refpool.condor("condor_q", "-nobatch", check=False).stdout)
    real_who = refpool.condor("condor_who").stdout
    real_run = refpool.condor("condor_q", "-run", "-allusers").stdout
    work = tmp_path / "work"
    work.mkdir()
    submit_local(local, SLEEP + "queue 2\n", work)
    wait_for(lambda: counts(local).get(2) == 2 and
             "".join(local.call("who")["ads"]).count("JobPid") == 2, 30, local.output)
    ours_who = local.cli("who").stdout
    ours_run = local.cli("q", "-run").stdout
    assert _who_shape(ours_who) == _who_shape(real_who), (ours_who, real_who)
    assert _who_shape(ours_who)[3] == ["1_1", "1_2"]
    assert _q_run_shape(ours_run) == _q_run_shape(real_run), (ours_run, real_run)
    assert _q_run_shape(ours_run)[4] == ["slot1_1@HOST", "slot1_2@HOST"]


def test_a_pool_job_on_condorpy_shows_where_it_runs(
        refpool: RefPool, jobdir: Path, tmp_path: Path) -> None:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=4)
    d.start()
    try:
        cluster = submit(refpool, jobdir, SLEEP + "should_transfer_files = NO\n"
                         "requirements = regexp(\"condorpy\", TARGET.CondorVersion)\n"
                         "queue\n")
        job = f"{cluster}.0"
        wait_for(lambda: job in d.cli("who").stdout, 120,
                 lambda: refpool.condor("condor_q", "-nobatch", check=False).stdout
                 + d.output()[-3000:])
        user = refpool.condor("condor_q", job, "-af", "User").stdout.strip()
        # the schedd's view: RemoteHost is condorpy's d-slot, as for any startd's
        run = refpool.condor("condor_q", "-run", "-allusers").stdout
        assert re.search(rf"^\s+{re.escape(job)} .* slot1_1@{re.escape(HOST)}$", run, re.M), run
        # the slot ad: who holds it and which job runs, as HTCondor's startd publishes
        # them (RemoteUser and RemoteOwner the job's User, ClientMachine the schedd's
        # address)
        af = d.cli("status", "-constraint", "DynamicSlot =?= true", "-af", "JobId",
                   "RemoteUser", "RemoteOwner", "ClientMachine", "GlobalJobId").stdout
        fields = af.split()
        assert fields[:4] == [job, user, user, "127.0.0.1"], af
        assert f"#{job}#" in fields[4]
        who = d.cli("who").stdout.splitlines()
        assert who[1] == f"--Startd : {HOST} has 1 job(s) running:"
        assert who[3].split()[:4] == [user, "127.0.0.1", "1_1", job], who
    finally:
        d.stop()
        d.kill_leftovers()
