"""The pool's own administration tools (HTCondor 23.9.6, run inside the reference pool)
against condorpy's command port: ``condor_status -direct``, ``condor_config_val
-startd``, ``condor_vacate``, ``condor_drain`` and ``-cancel``. Each gives what it
gives against HTCondor's own startd, and a client the ALLOW/DENY lists refuse gets
nothing done."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, counts, submit, wait_for

pytestmark = pytest.mark.pool

HOST = "condorpy-admin.example"

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = {host}
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
SEC_DEFAULT_AUTHENTICATION = REQUIRED
ALLOW_READ = *
ALLOW_ADMINISTRATOR = condor@{host}/127.0.0.1
DENY_ADMINISTRATOR = intruder*/*
DENY_READ = spy*/*
UPDATE_INTERVAL = 600
CONDORPY_TEST_KNOB = hello from condorpy
use FEATURE : StaticSlots
NUM_CPUS = 2
MEMORY = 2048
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, refpool: RefPool) -> Iterator[Daemon]:
    d = Daemon(tmp_path_factory.mktemp("admin"),
               CONFIG.format(collector=refpool.collector, host=HOST), cpus=2)
    d.start()
    address(d)
    yield d
    d.stop()
    d.kill_leftovers()


_ADDRESSES: dict[int, str] = {}


def address(d: Daemon) -> str:
    # read once: the start-up line scrolls out of the output the helper keeps
    if id(d) not in _ADDRESSES:
        m = re.search(r"as (<127\.0\.0\.1:\d+\?[^>]*noUDP>)", d.output())
        assert m, d.output()
        _ADDRESSES[id(d)] = m.group(1)
    return _ADDRESSES[id(d)]


def as_user(user: str, *argv: str) -> tuple[str, ...]:
    # CLAIMTOBE sends the tool's idea of its user: the knob sets it
    return ("env", f"_CONDOR_SEC_CLAIMTOBE_USER={user}", *argv)


def test_condor_status_direct_lists_the_slots_like_the_daemons_own_status(
        daemon: Daemon, refpool: RefPool) -> None:
    res = refpool.condor("condor_status", "-direct", address(daemon), "-af", "Name",
                         "State", "Activity", "Cpus", "Memory", timeout=60)
    rows = sorted(line.split() for line in res.stdout.splitlines() if line.strip())
    assert rows == [[f"slot{i}@{HOST}", "Unclaimed", "Idle", "1", "1024"] for i in (1, 2)]
    own = daemon.call("status")["ads"]
    assert len(own) == 2
    # the default table: the same columns as against HTCondor's startd
    table = refpool.condor("condor_status", "-direct", address(daemon)).stdout
    assert re.search(r"Name\s+OpSys\s+Arch\s+State\s+Activity\s+LoadAv\s+Mem", table), table
    assert f"slot1@{HOST}" in table and "Total" in table
    # the query's constraint is honoured
    one = refpool.condor("condor_status", "-direct", address(daemon), "-constraint",
                         "SlotID == 2", "-af", "Name").stdout.split()
    assert one == [f"slot2@{HOST}"]
    wait_for(lambda: "pool: QUERY_STARTD_ADS from" in daemon.output(), 10, daemon.output)


def _run(refpool: RefPool, *argv: str) -> tuple[int, str]:
    import subprocess
    res = subprocess.run(["chroot", str(refpool.root), *argv], capture_output=True,
                         timeout=60)
    return res.returncode, (res.stdout + res.stderr).decode("utf-8", "replace")


def test_condor_config_val_startd_reads_the_daemons_live_knob(
        daemon: Daemon, refpool: RefPool) -> None:
    rc, out = _run(refpool, "condor_config_val", "-startd", "-address", address(daemon),
                   "CONDORPY_TEST_KNOB")
    assert (rc, out.strip()) == (0, "hello from condorpy"), out
    rc, out = _run(refpool, "condor_config_val", "-startd", "-address", address(daemon),
                   "CONDORPY_NO_SUCH_KNOB")
    # as HTCondor 23.9.6's own daemons answer (condor_config_val -master NO_SUCH_KNOB)
    assert (rc, out) == (0, "Not defined\n")


def test_a_denied_client_is_refused_and_nothing_happens(
        daemon: Daemon, refpool: RefPool) -> None:
    res = refpool.condor(*as_user("intruder", "condor_drain", address(daemon)),
                         check=False)
    assert res.returncode != 0, res.stdout
    # the daemon's log line may follow its refusal by a moment
    wait_for(lambda: "DENY_ADMINISTRATOR matches intruder" in daemon.output(), 10,
             daemon.output)
    assert [_ad(a)["State"] for a in daemon.call("status")["ads"]] == ['"Unclaimed"'] * 2
    rc, out = _run(refpool, *as_user("intruder", "condor_vacate", "-addr", address(daemon)))
    # as the pool's own startd refuses: the tool says DENIED and who it was
    assert rc == 1 and 'Received "DENIED" from server for user intruder' in out, out
    assert "Can't send Vacate-All-Claims command" in out
    spy = refpool.condor(*as_user("spy", "condor_status", "-direct", address(daemon),
                                  "-af", "Name"), check=False)
    assert f"slot1@{HOST}" not in spy.stdout
    wait_for(lambda: "DENY_READ matches spy" in daemon.output(), 10, daemon.output)


def _ad(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(" = ")
        if sep:
            out[k.strip()] = v.strip()
    return out


def test_condor_drain_and_cancel_go_through_the_daemons_drain(
        daemon: Daemon, refpool: RefPool) -> None:
    res = refpool.condor("condor_drain", "-reason", "pool maintenance", address(daemon))
    # word for word what the tool prints against the pool's own startd
    assert res.stdout == (f"Sent request to drain the startd {address(daemon)} with (null). "
                          "This only affects the single startd; any other startds running "
                          "on the same host will not be drained.\n"), res.stdout + res.stderr
    wait_for(lambda: all(_ad(a).get("State") == '"Drained"'
                         for a in daemon.call("status")["ads"]), 20,
             lambda: str(daemon.call("status")))
    direct = refpool.condor("condor_status", "-direct", address(daemon), "-af", "State",
                            "DrainReason").stdout.splitlines()
    assert direct == ["Drained pool maintenance"] * 2, direct
    res = refpool.condor("condor_drain", "-cancel", address(daemon))
    assert res.stdout == "Sent request to cancel draining on (null)\n", res.stdout + res.stderr
    wait_for(lambda: all(_ad(a).get("State") == '"Unclaimed"'
                         for a in daemon.call("status")["ads"]), 20,
             lambda: str(daemon.call("status")))


def test_condor_vacate_evicts_the_running_jobs(daemon: Daemon, refpool: RefPool,
                                             tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    submit(daemon, "executable = /bin/sleep\narguments = 300\nrequest_memory = 16\n"
                   "queue 1\n", work)
    wait_for(lambda: counts(daemon).get(2) == 1, 30, daemon.output)
    res = refpool.condor("condor_vacate", "-fast", "-addr", address(daemon))
    port = address(daemon).split(":")[1].split("?")[0]
    # as against the pool's own startd
    assert res.stdout == ('Sent "Vacate-All-Claims-Fast" command to daemon at '
                          f"<127.0.0.1:{port}>\n"), res.stdout + res.stderr
    wait_for(lambda: "VACATE_ALL_FAST from condor@" in daemon.output(), 10, daemon.output)
    # evicted at once (fast: hard kill), the job goes back to the queue
    wait_for(lambda: "job 1.0: ended in slot1: idle" in daemon.output(), 30, daemon.output)
    assert re.search(r"slot1: Preempting/\w+ .*condor_vacate", daemon.output())
    # by host name, found through the collector (the daemon ad, Machine)
    wait_for(lambda: counts(daemon).get(2) == 1, 30, daemon.output)
    res = refpool.condor("condor_vacate", HOST)
    assert res.stdout == f'Sent "Vacate-All-Claims" command to startd {HOST}\n', res.stdout
    wait_for(lambda: daemon.output().count("job 1.0: ended in slot1: idle") == 2, 30,
             daemon.output)
    # a slot's name is not a startd's: 23.9.6's tool looks names up among daemon ads and
    # fails exactly so against HTCondor's own startd (condor_vacate slot1@<its host>);
    # VACATE_CLAIM itself is covered in test_secserver.py
    rc, out = _run(refpool, "condor_vacate", f"slot1@{HOST}")
    assert rc == 1 and out.startswith(f"Can't find address for startd slot1@{HOST}\n"), out
    daemon.cli("rm", "-all")
