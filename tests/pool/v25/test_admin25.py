"""25.14.1's tools against condorpy's command port: condor_status -direct,
condor_config_val -startd, condor_drain (and -cancel), condor_vacate.

25.x tools send CLAIMTOBE as ``user@UID_DOMAIN`` (SEC_CLAIMTOBE_INCLUDE_DOMAIN is true
by default): the pool's root tools say ``condor@<the pool's UID_DOMAIN>``, which
condorpy, as HTCondor, takes as given; the administrator's ALLOW entry names it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.pool.test_pool_admin import (  # noqa: F401
    CONFIG, HOST, address, test_condor_config_val_startd_reads_the_daemons_live_knob,
    test_condor_drain_and_cancel_go_through_the_daemons_drain,
    test_condor_status_direct_lists_the_slots_like_the_daemons_own_status)
from tests.startd.daemon_helpers import Daemon, counts, submit, wait_for

REFPOOL_RELEASE = "forky"
pytestmark = pytest.mark.pool


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, refpool: RefPool) -> Iterator[Daemon]:
    domain = refpool.condor("condor_config_val", "UID_DOMAIN").stdout.strip()
    d = Daemon(tmp_path_factory.mktemp("admin25"),
               CONFIG.format(collector=refpool.collector, host=HOST)
               + f"ALLOW_ADMINISTRATOR = condor@{HOST}/127.0.0.1 condor@{domain}/127.0.0.1\n",
               cpus=2)
    d.start()
    address(d)
    yield d
    d.stop()
    d.kill_leftovers()


def test_condor_vacate_evicts_the_running_jobs_and_finds_a_slot_by_name(
        daemon: Daemon, refpool: RefPool, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    submit(daemon, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"
                   "queue 1\n", work)
    wait_for(lambda: counts(daemon).get(2) == 1, 30, daemon.output)
    res = refpool.condor("condor_vacate", "-fast", "-addr", address(daemon))
    port = address(daemon).split(":")[1].split("?")[0]
    assert res.stdout == ('Sent "Vacate-All-Claims-Fast" command to daemon at '
                          f"<127.0.0.1:{port}>\n"), res.stdout + res.stderr
    wait_for(lambda: "job 1.0: ended in slot1: idle" in daemon.output(), 30, daemon.output)
    assert re.search(r"slot1: Preempting/\w+ .*condor_vacate", daemon.output())
    # unlike 23.9.6's, 25.14.1's tool finds a slot's name among the slot ads and sends
    # that slot's startd VACATE_CLAIM
    wait_for(lambda: counts(daemon).get(2) == 1, 30, daemon.output)
    res = refpool.condor("condor_vacate", f"slot1@{HOST}")
    assert res.stdout == f'Sent "Vacate-Claim" command to startd slot1@{HOST}\n', res.stdout
    wait_for(lambda: daemon.output().count("job 1.0: ended in slot1: idle") == 2, 30,
             daemon.output)
    daemon.cli("rm", "-all")
