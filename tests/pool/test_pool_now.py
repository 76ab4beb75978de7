"""The rest of the pool's commands against condorpy, with HTCondor 23.9.6's own tools
and daemons (the reference pool): the tools find condorpy by host name through its
StartD daemon ad and Machine (condor_status -direct, condor_config_val -startd -name,
condor_drain, condor_vacate), condor_ping is answered level by level, and condor_now
replaces a running pool job by the now-job on the same slot (COALESCE_SLOTS), as
against HTCondor's own startd."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool

HOST = "condorpy-now.example"

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
SEC_DEFAULT_AUTHENTICATION = REQUIRED
ALLOW_READ = *
ALLOW_ADMINISTRATOR = condor@vm/127.0.0.1
CONDORPY_POOL_ACCEPT_CLAIMS = True
CONDORPY_TEST_KNOB = found by name
UPDATE_INTERVAL = 600
NUM_CPUS = 2
MEMORY = 2048
"""


@pytest.fixture
def daemon(tmp_path: Path, refpool: RefPool) -> Iterator[Daemon]:
    d = Daemon(tmp_path, CONFIG.format(collector=refpool.collector, host=HOST), cpus=2)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def address(d: Daemon) -> str:
    m = re.search(r"as (<127\.0\.0\.1:\d+\?[^>]*noUDP>)", d.output())
    assert m, d.output()
    return m.group(1)


def run(pool: RefPool, *argv: str, user: str | None = None) -> tuple[int, str]:
    cmd = ["chroot", str(pool.root)]
    cmd += ["su", user, "-c", " ".join(argv)] if user else list(argv)
    res = subprocess.run(cmd, capture_output=True, timeout=60)
    return res.returncode, (res.stdout + res.stderr).decode("utf-8", "replace")


def _ad(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, sep, v in
            (line.partition(" = ") for line in text.splitlines()) if sep}


def daemon_ads(pool: RefPool) -> list[list[str]]:
    res = pool.condor("condor_status", "-any", "-constraint",
                      f'MyType == "StartD" && Machine == "{HOST}"', "-af", "Name", "Machine",
                      "MyAddress", check=False)
    return [line.split() for line in res.stdout.splitlines() if line.strip()]


def test_the_pools_tools_find_condorpy_by_its_host_name(daemon: Daemon,
                                                          refpool: RefPool) -> None:
    addr = address(daemon)
    # the daemon ad, as HTCondor's startd sends it: named for the host, beside the slots
    wait_for(lambda: daemon_ads(refpool) == [[HOST, HOST, addr]], 30,
             lambda: str(daemon_ads(refpool)))
    slots = refpool.condor("condor_status", "-constraint", f'Machine == "{HOST}"', "-af",
                           "Name", "HasStartDaemonAd").stdout.split()
    assert slots == [f"slot1@{HOST}", "true"]
    rc, out = run(refpool, "condor_status", "-direct", HOST, "-af", "Name", "State")
    assert (rc, out) == (0, f"slot1@{HOST} Unclaimed\n"), out
    rc, out = run(refpool, "condor_config_val", "-startd", "-name", HOST, "CONDORPY_TEST_KNOB")
    assert (rc, out) == (0, "found by name\n"), out
    rc, out = run(refpool, "condor_drain", "-reason", "by-name", HOST)
    assert rc == 0 and out.startswith("Sent request to drain the startd <127.0.0.1:"), out
    wait_for(lambda: all(_ad(a).get("State") == '"Drained"'
                         for a in daemon.call("status")["ads"]), 20,
             lambda: str(daemon.call("status")))
    rc, out = run(refpool, "condor_drain", "-cancel", HOST)
    assert rc == 0 and out.startswith("Sent request to cancel draining on"), out
    wait_for(lambda: all(_ad(a).get("State") == '"Unclaimed"'
                         for a in daemon.call("status")["ads"]), 20,
             lambda: str(daemon.call("status")))
    rc, out = run(refpool, "condor_vacate", HOST)
    assert (rc, out) == (0, f'Sent "Vacate-All-Claims" command to startd {HOST}\n'), out
    wait_for(lambda: "VACATE_ALL_CLAIMS from condor@vm" in daemon.output(), 10,
             daemon.output)
    # a host nobody advertises: the tools' own words, nothing sent to condorpy
    rc, out = run(refpool, "condor_vacate", "nobody.example")
    assert rc != 0 and "Can't find address for startd nobody.example" in out, out
    # at shutdown the daemon ad goes with the slots
    daemon.stop()
    wait_for(lambda: daemon_ads(refpool) == [], 20, lambda: str(daemon_ads(refpool)))


def test_condor_ping_is_answered_level_by_level(daemon: Daemon, refpool: RefPool) -> None:
    addr = address(daemon)
    port = addr.split(":")[1].split("?")[0]
    rc, out = run(refpool, "condor_ping", "-address", addr, "READ", "WRITE",
                  "ADMINISTRATOR", "DAEMON")
    # word for word what the tool prints against HTCondor's own startd (CLAIMTOBE is
    # the method condorpy serves); DAEMON is not granted (ALLOW_DAEMON unset)
    done = "command using (AES, AES, and CLAIMTOBE) succeeded as condor@vm to daemon at"
    assert rc == 1 and out.splitlines() == [
        f"READ {done} <127.0.0.1:{port}>.", f"WRITE {done} <127.0.0.1:{port}>.",
        f"ADMINISTRATOR {done} <127.0.0.1:{port}>.",
        "DAEMON failed!  Use -verbose for more information."], out
    rc, out = run(refpool, "env", "_CONDOR_SEC_CLAIMTOBE_USER=bob", "condor_ping",
                  "-address", addr, "-table", "READ", "ADMINISTRATOR")
    rows = [line.split() for line in out.splitlines()[1:]]
    assert rc == 1 and rows[0] == ["READ", "CLAIMTOBE", "AES", "AES", "ALLOW", "bob@vm"]
    assert rows[1][:5] == ["ADMINISTRATOR", "FAIL", "FAIL", "FAIL", "FAIL"], out
    wait_for(lambda: "DC_SEC_QUERY from bob@vm" in daemon.output(), 10, daemon.output)
    # the daemon logs a refusal just after sending it
    wait_for(lambda: "no ALLOW_ADMINISTRATOR entry matches bob@vm" in daemon.output(), 10,
             daemon.output)


def queue(pool: RefPool, cluster: int) -> dict[int, tuple[str, str]]:
    res = pool.condor("condor_q", str(cluster), "-af", "ProcId", "JobStatus", "RemoteHost",
                      check=False)
    return {int(p[0]): (p[1], p[2]) for p in (line.split() for line in res.stdout.splitlines())
            if len(p) == 3}


def _said(path: Path) -> bool:
    """The job's output holds its whole line."""
    try:
        return path.read_text().endswith("\n")
    except FileNotFoundError:
        return False


def test_condor_now_runs_the_now_job_on_the_victims_slot(daemon: Daemon, refpool: RefPool
                                                        ) -> None:
    refpool.condor("condor_rm", "-all", check=False)     # nothing else may take the slot
    jobdir = refpool.shared / "condor_now"
    shutil.rmtree(jobdir, ignore_errors=True)
    jobdir.mkdir()
    jobdir.chmod(0o1777)
    (jobdir / "job.sub").write_text(f"""\
executable = /bin/sh
arguments = "-c 'echo $(Process) on $$(Name); exec sleep 300'"
request_cpus = 2
request_memory = 64
output = out.$(Process)
log = job.log
should_transfer_files = NO
requirements = Machine == "{HOST}"
queue 2
""")
    res = refpool.condor("condor_submit", "job.sub", user="alice", cwd=str(jobdir))
    m = re.search(r"submitted to cluster (\d+)", res.stdout)
    assert m, res.stdout
    cluster = int(m.group(1))
    try:
        # the whole partitionable slot goes to one of them; the other waits
        wait_for(lambda: sorted(s for s, _ in queue(refpool, cluster).values()) == ["1", "2"],
                 120, lambda: f"{queue(refpool, cluster)}\n{daemon.output()[-3000:]}")
        running = next(p for p, (s, _) in queue(refpool, cluster).items() if s == "2")
        waiting = 1 - running
        wait_for(lambda: (jobdir / f"out.{running}").exists(), 30, daemon.output)
        rc, out = run(refpool, "condor_now", f"{cluster}.{waiting}", f"{cluster}.{running}",
                      user="alice")
        assert (rc, out) == (0, ""), out
        # the now-job runs at once on the victim's resources, the victim waits again
        wait_for(lambda: queue(refpool, cluster).get(waiting, ("", ""))[0] == "2", 60,
                 lambda: f"{queue(refpool, cluster)}\n{daemon.output()[-3000:]}")
        assert queue(refpool, cluster)[running][0] == "1"
        # the file is made as the job starts, its line written once the shell runs
        wait_for(lambda: _said(jobdir / f"out.{waiting}"), 30, daemon.output)
        assert re.fullmatch(rf"{waiting} on slot1_\d+@{re.escape(HOST)}\n",
                            (jobdir / f"out.{waiting}").read_text())
        assert re.search(r"pool: 1 claim\(s\) of <127\.0\.0\.1:\d+\S*> coalesced into "
                         rf"slot1_\d+ for job {cluster}\.{waiting}", daemon.output())
        assert "coalesce failed" not in refpool.log("SchedLog")
        log = (jobdir / "job.log").read_text()
        assert re.search(rf"^004 \({cluster:03d}\.{running:03d}\.000\) .*Job was evicted",
                         log, re.M), log
        assert len(re.findall(rf"^001 \({cluster:03d}\.{waiting:03d}\.000\)", log, re.M)) == 1
    finally:
        refpool.condor("condor_rm", str(cluster), check=False)
