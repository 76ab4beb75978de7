"""An execution point the schedd cannot reach runs a real 23.9.6 pool's jobs through CCB.

condorpy runs in a network namespace of the test's making: it reaches the pool (on the
host's end of a veth pair) but binds its command port to an address the host has no
route to, as behind NAT. With ``CCB_ADDRESS = $(COLLECTOR_HOST)`` it registers with the
collector (HTCondor's default CCB server), advertises ``CCBID`` in its addresses, and
the schedd and shadow reach it by asking the collector, which has condorpy connect out
to them (CCB_REVERSE_CONNECT). The pool runs its package's default security, and
condorpy registers with the IDTOKEN it advertises with (ADVERTISE_STARTD and READ).
Jobs with file transfer run; the collector restarts and condorpy registers again;
condorpy restarts under a running job and the shadow reconnects to it through the
broker."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from condorpy.pool.sinful import parse_address
from tests.pool.conftest import unavailable
from tests.pool.jobs import history, queued, submit
from tests.pool.jobs import submit_inside as _submit
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool

HOST = "condorpy-ccb.example"

CONFIG = """
COLLECTOR_HOST = {collector}
CCB_ADDRESS = $(COLLECTOR_HOST)
NETWORK_INTERFACE = {private}
FULL_HOSTNAME = {host}
UID_DOMAIN = {domain}
FILESYSTEM_DOMAIN = {domain}
use security:recommended_v9_0
SEC_TOKEN_DIRECTORY = {tokens}
# the pool's tools authenticate with FS: this directory is bind-mounted in their chroot
FS_LOCAL_DIR = {shared}
UPDATE_INTERVAL = 600
NUM_CPUS = 2
MEMORY = 2048
EXECUTE = {execute}
"""



@dataclass(frozen=True)
class Nat:
    """The test's network: the EP's namespace, the veth pair joining it to the host,
    the host's address on it (where the pool listens), the EP's address on it (where
    its connections come from) and the EP's private address (where it listens, and
    which nothing outside can reach)."""

    netns: str
    host_if: str
    host_ip: str
    ep_ip: str
    private_ip: str
    private_net: str


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, text=True, timeout=30)


def _index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    m = re.fullmatch(r"gw(\d+)", worker)
    return int(m.group(1)) % 200 + 20 if m else zlib.crc32(worker.encode()) % 200 + 20


def _need_ip() -> None:
    """iproute2, as the pool lane's other tools, is installed where it is missing (one
    apt at a time: the real-kernel lane may be installing its own)."""
    if shutil.which("ip") is not None:
        return
    apt = ["flock", "/tmp/condorpy-apt.lock", "apt-get", "-o", "DPkg::Lock::Timeout=600"]
    for argv in ([*apt, "update", "-qq"], [*apt, "install", "-y", "-qq", "iproute2"]):
        subprocess.run(argv, capture_output=True, timeout=900)


def _make_nat() -> Nat:
    _need_ip()
    i = _index()
    nat = Nat(f"condorpy-ccb{i}", f"cpccb{i}h", f"10.77.{i}.1", f"10.77.{i}.2",
              f"10.78.{i}.2", f"10.78.{i}.0/24")
    _drop_nat(nat)
    try:
        _ip("netns", "add", nat.netns)
        _ip("link", "add", nat.host_if, "type", "veth", "peer", "name", f"cpccb{i}n")
        _ip("link", "set", f"cpccb{i}n", "netns", nat.netns)
        _ip("addr", "add", f"{nat.host_ip}/24", "dev", nat.host_if)
        _ip("link", "set", nat.host_if, "up")
        _ip("-n", nat.netns, "link", "set", "lo", "up")
        _ip("-n", nat.netns, "addr", "add", f"{nat.ep_ip}/24", "dev", f"cpccb{i}n")
        _ip("-n", nat.netns, "link", "set", f"cpccb{i}n", "up")
        _ip("-n", nat.netns, "route", "add", "default", "via", nat.host_ip)
        # the EP's private address: on its namespace's loopback, and unreachable from
        # the host (as an address behind NAT is): a connect fails at once
        _ip("-n", nat.netns, "addr", "add", f"{nat.private_ip}/32", "dev", "lo")
        _ip("route", "add", "unreachable", nat.private_net)
    except (OSError, subprocess.CalledProcessError) as exc:
        _drop_nat(nat)
        err = getattr(exc, "stderr", "") or exc
        unavailable(f"cannot make a network namespace here: {err}")
    return nat


def _drop_nat(nat: Nat) -> None:
    if shutil.which("ip") is None:
        return
    for argv in (["route", "del", "unreachable", nat.private_net],
                 ["link", "del", nat.host_if], ["netns", "del", nat.netns]):
        subprocess.run(["ip", *argv], capture_output=True, timeout=30)


class NatDaemon(Daemon):
    """A condorpy daemon whose network is the EP's namespace (nsenter: only the
    network; its files, cgroups and control socket are the host's)."""

    netns = ""
    execute = Path()

    def start(self) -> None:
        log = open(self.base / "daemon.out", "ab")
        self.proc = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.netns}", sys.executable, "-m", "condorpy",
             "startd", "-f"], env=self.env(), stdout=log, stderr=log,
            stdin=subprocess.DEVNULL)
        log.close()
        wait_for(lambda: self.socket.exists() and self._ping(), 30,
                 lambda: f"daemon did not start: {self.output()}")


@pytest.fixture(scope="module")
def nat(refpool: RefPool) -> Iterator[Nat]:
    """The network, and the pool restarted on the host's end of it; afterwards the
    pool as the other modules have it."""
    n = _make_nat()
    try:
        refpool.start(security="default", host=n.host_ip)
        yield n
    finally:
        refpool.start()
        _drop_nat(n)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, refpool: RefPool,
           nat: Nat) -> Iterator[NatDaemon]:
    # the job's user (nobody: alice has no account here) must reach its scratch
    # directory, so EXECUTE is world-searchable, as HTCondor wants it
    execute = Path(tempfile.mkdtemp(prefix="condorpy-ccb-execute-", dir="/tmp"))
    execute.chmod(0o755)
    base = tmp_path_factory.mktemp("ccb")
    tokens = base / "tokens.d"
    tokens.mkdir(mode=0o700)
    token = refpool.create_token(f"condor@{refpool.trust_domain()}",
                                 ("ADVERTISE_STARTD", "READ"))
    (tokens / "pool-token").write_text(token + "\n")
    (tokens / "pool-token").chmod(0o600)
    d = NatDaemon(base, CONFIG.format(
        collector=refpool.collector, private=nat.private_ip, host=HOST, execute=execute,
        tokens=tokens, shared=refpool.shared,
        # the pool's own: a job may run on the shared directory (the restart's test)
        domain=refpool.condor("condor_config_val", "FILESYSTEM_DOMAIN").stdout.strip()),
        cpus=2)
    d.netns = nat.netns
    d.execute = execute
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()
    shutil.rmtree(execute, ignore_errors=True)


def _slot_addresses(pool: RefPool) -> dict[str, str]:
    res = pool.condor("condor_status", "-af:,", "Name", "MyAddress", check=False)
    return {n.strip(): a.strip() for n, _, a in
            (line.partition(",") for line in res.stdout.splitlines()) if HOST in n}


def _registrations(d: Daemon) -> int:
    return d.whole_log().count("registered with the CCB broker")


def _job_files(submitdir: Path) -> None:
    (submitdir / "job.sh").write_text("#!/bin/sh\nset -e\ntr a-z A-Z < in.txt > out.txt\n"
                                      "echo \"$1\" >> out.txt\n")
    (submitdir / "job.sh").chmod(0o755)
    (submitdir / "in.txt").write_text("through the broker\n")


SUB = """\
executable = job.sh
arguments = $(Process)
should_transfer_files = YES
transfer_input_files = in.txt
transfer_output_remaps = "out.txt = out.$(Process).txt"
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue {n}
"""


def test_jobs_with_file_transfer_run_through_ccb_on_an_ep_the_schedd_cannot_reach(
        daemon: NatDaemon, refpool: RefPool, nat: Nat, submitdir: Path) -> None:
    # the slots are advertised with the collector's contact for condorpy in CCBID
    wait_for(lambda: bool(_slot_addresses(refpool)), 60, lambda: daemon.output()[-3000:])
    addresses = _slot_addresses(refpool)
    for name, address in addresses.items():
        addr = parse_address(address)
        assert addr.host == nat.private_ip, address
        assert addr.ccb_id and addr.ccb_id.startswith(f"{nat.host_ip}:{refpool.port}"), \
            address
        assert re.fullmatch(r".*#\d+", addr.ccb_id), address
        assert addr.private_network == HOST, address
    # nothing outside the namespace can reach condorpy's command port
    port = parse_address(next(iter(addresses.values()))).port
    with pytest.raises(OSError):
        socket.create_connection((nat.private_ip, port), timeout=5).close()
    # a tool reaches it through the broker too (listening for the reverse connection
    # on a port of its own, not a daemon's command port)
    res = refpool.condor("condor_status", "-direct", next(iter(addresses.values())),
                         "-af", "Name", timeout=60)
    assert res.stdout.split() == [f"slot1@{HOST}"], res
    _job_files(submitdir)
    cluster = _submit(refpool, submitdir, SUB.format(n=2))
    wait_for(lambda: queued(refpool, cluster) == 0, 240,
             lambda: f"still queued: {refpool.condor('condor_q', '-nobatch', '-hold', check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-4000:]}")
    done = history(refpool, cluster, "JobStatus", "ExitCode", "LastRemoteHost")
    assert sorted(done) == [0, 1], done
    for proc, (status, code, host) in done.items():
        assert (status, code) == ("4", "0"), done
        assert host.endswith(f"@{HOST}"), done
        assert (submitdir / f"out.{proc}.txt").read_text() == \
            f"THROUGH THE BROKER\n{proc}\n"
    # the shadow knew condorpy by its address behind the broker
    log = (submitdir / "job.log").read_text()
    assert log.count(f"Job executing on host: <{nat.private_ip}:{port}?CCBID=") == 2, log


def test_after_the_collector_restarts_the_ep_registers_again_and_runs_jobs(
        daemon: NatDaemon, refpool: RefPool, submitdir: Path) -> None:
    before = _registrations(daemon)
    assert before >= 1
    refpool.condor("condor_restart", "-collector")
    # condorpy finds its broker gone, registers again (the collector's reconnect file
    # gives it its old id) and advertises its slots again at once
    wait_for(lambda: _registrations(daemon) > before, 90, lambda: daemon.output()[-3000:])
    wait_for(lambda: bool(_slot_addresses(refpool)), 60, lambda: daemon.output()[-3000:])
    assert all("CCBID=" in a for a in _slot_addresses(refpool).values())
    _job_files(submitdir)
    cluster = _submit(refpool, submitdir, SUB.format(n=1))
    wait_for(lambda: queued(refpool, cluster) == 0, 240,
             lambda: f"still queued: {refpool.condor('condor_q', '-nobatch', '-hold', check=False).stdout}"
                     f"\ndaemon: {daemon.output()[-4000:]}")
    assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "0"]
    assert (submitdir / "out.0.txt").read_text() == "THROUGH THE BROKER\n0\n"


def test_a_job_survives_the_eps_restart_and_its_shadow_reconnects_through_ccb(
        daemon: NatDaemon, refpool: RefPool, jobdir: Path) -> None:
    # on the shared directory: the 23.9.6 shadow refuses any output transfer after a
    # reconnect, HTCondor's own starter's too (test_pool_xfer_reconnect.py)
    cluster = submit(refpool, jobdir, f"""\
executable = /bin/sh
arguments = "-c 'touch {jobdir}/started; sleep 12; echo done > {jobdir}/out.txt'"
should_transfer_files = NO
log = job.log
requirements = regexp("condorpy", TARGET.CondorVersion)
queue
""")
    # the job itself has started
    wait_for(lambda: (jobdir / "started").exists(), 120, lambda: daemon.output()[-3000:])
    wait_for(lambda: daemon.db().execute("SELECT count(*) FROM starters WHERE cluster < 0")
             .fetchone()[0] == 1, 30, lambda: daemon.output()[-3000:])
    daemon.restart(signal.SIGKILL)
    # the shadow finds the job again by the address it holds: the restarted daemon has
    # registered with the id it had
    wait_for(lambda: "reconnected to job" in daemon.output(), 120,
             lambda: daemon.output()[-3000:])
    wait_for(lambda: queued(refpool, cluster) == 0, 120, lambda: daemon.output()[-3000:])
    assert history(refpool, cluster, "JobStatus", "ExitCode")[0] == ["4", "0"]
    log = _text(jobdir / "job.log")
    assert log.count("Job executing") == 1, log
    assert log.count("Job reconnected") == 1, log
    assert (jobdir / "out.txt").read_text() == "done\n"


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""

