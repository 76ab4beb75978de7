"""Two condorpy execution points on one host in one HTCondor 23.9.6 pool, told apart by
STARTD_NAME under one NETWORK_HOSTNAME: the collector holds both, under distinct
names, and condor_submit jobs run on each."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.fleet import Fleet
from tests.pool.jobs import history, queued, submit
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import wait_for

pytestmark = pytest.mark.pool
POOL_TESTS_APART = True

HOST = "condorpy-fleet.example"


@pytest.fixture
def fleet(tmp_path: Path, refpool: RefPool) -> Iterator[Fleet]:
    f = Fleet(tmp_path, refpool, 2, host=HOST)
    f.start()
    yield f
    f.stop()


def test_two_named_eps_on_one_host_both_run_jobs(fleet: Fleet, refpool: RefPool,
                                                 jobdir: Path) -> None:
    ads = refpool.condor("condor_status", "-any", "-af", "MyType", "Name", "Machine",
                         "MyAddress").stdout.splitlines()
    ours = sorted(line.split() for line in ads if HOST in line)
    assert [(t, n, m) for t, n, m, _ in ours] == [
        ("Machine", f"slot1@ep1@{HOST}", HOST), ("Machine", f"slot1@ep2@{HOST}", HOST),
        ("StartD", f"ep1@{HOST}", HOST), ("StartD", f"ep2@{HOST}", HOST)]
    addresses = {n: a for _, n, _, a in ours}
    assert addresses[f"slot1@ep1@{HOST}"] != addresses[f"slot1@ep2@{HOST}"]
    for a in addresses.values():
        assert re.fullmatch(rf"<127\.0\.0\.1:(\d+)\?addrs=127\.0\.0\.1-\1&alias={HOST}&noUDP>",
                            a), a

    cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 'echo $$(Name)'"
output = out.$(Process)
log = job.log
should_transfer_files = NO
ep = $(Process) + 1
requirements = TARGET.Name == "slot1@ep$INT(ep)@{HOST}"
queue 2
""")
    wait_for(lambda: queued(refpool, cluster) == 0, 240,
             lambda: f"still queued: {refpool.condor('condor_q', '-nobatch', check=False).stdout}"
                     f"\n{fleet.output()}")
    done = history(refpool, cluster, "ExitCode", "LastRemoteHost")
    assert sorted(done) == [0, 1], done
    for proc, (code, host) in done.items():
        # a d-slot of the partitionable slot the job's requirements named
        assert code == "0" and re.fullmatch(rf"slot1_\d+@ep{proc + 1}@{HOST}", host), done
        assert (jobdir / f"out.{proc}").read_text() == f"{host}\n"
