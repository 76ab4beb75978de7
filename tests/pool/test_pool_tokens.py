"""condorpy in a pool at the package's default security (HTCondor 23.9.6's
``use security:recommended_v9_0``: authentication, encryption and integrity required,
methods FS, IDTOKENS, ...; ``ALLOW_DAEMON = condor@* condor_pool@*``).

The administrator's steps are those of any new execution point: on the central manager
``condor_token_create -identity condor@<TRUST_DOMAIN> -authz ADVERTISE_STARTD -authz
READ`` and the token into condorpy's SEC_TOKEN_DIRECTORY. With it the collector lists
the slots and the schedd's jobs run on them; without it the collector lists nothing and
condorpy says why in one line. The pool's tools on this host reach condorpy's command
port with FS authentication."""

from __future__ import annotations

import pwd
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool

HOST = "condorpy-tokens.example"

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
use security:recommended_v9_0
SEC_TOKEN_DIRECTORY = {tokens}
# the pool's tools run in the pool's chroot: this directory is bind-mounted there
FS_LOCAL_DIR = {shared}
CONDORPY_POOL_ACCEPT_CLAIMS = True
CONDORPY_TEST_KNOB = hello from condorpy
UPDATE_INTERVAL = 600
use FEATURE : StaticSlots
NUM_CPUS = 2
MEMORY = 2048
"""


@pytest.fixture(scope="module")
def secure_pool(refpool: RefPool) -> Iterator[RefPool]:
    """The session's pool, restarted at the package's default security for this module,
    and back to the host-based set-up afterwards."""
    refpool.start(security="default")
    yield refpool
    refpool.start()


@pytest.fixture(scope="module")
def token(secure_pool: RefPool) -> str:
    domain = secure_pool.trust_domain()
    return secure_pool.create_token(f"condor@{domain}", ("ADVERTISE_STARTD", "READ"))


def install(tokens: Path, text: str) -> None:
    tokens.mkdir(mode=0o700, exist_ok=True)
    path = tokens / "pool-token"
    path.write_text(text + "\n")
    path.chmod(0o600)


def slots(pool: RefPool, host: str = HOST) -> list[str]:
    res = pool.condor("condor_status", "-af", "Name", check=False)
    return sorted(n for n in res.stdout.split() if n.endswith(f"@{host}"))


def make_daemon(base: Path, pool: RefPool, host: str = HOST) -> Daemon:
    return Daemon(base, CONFIG.format(collector=pool.collector, host=host,
                                      tokens=base / "tokens.d", shared=pool.shared), cpus=2)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, secure_pool: RefPool,
           token: str) -> Iterator[Daemon]:
    base = tmp_path_factory.mktemp("tokens")
    install(base / "tokens.d", token)
    d = make_daemon(base, secure_pool)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def address(d: Daemon) -> str:
    m = re.search(r"as (<127\.0\.0\.1:\d+\?[^>]*noUDP>)", d.output())
    assert m, d.output()
    return m.group(1)


def test_the_collector_admits_the_slots_with_the_token(daemon: Daemon,
                                                        secure_pool: RefPool) -> None:
    wait_for(lambda: slots(secure_pool) == [f"slot1@{HOST}", f"slot2@{HOST}"], 30,
             lambda: f"{slots(secure_pool)}; daemon: {daemon.output()[-3000:]}")
    out = daemon.output()
    assert re.search(r"security session \S+ with \S+ negotiated \(TOKEN, AES\)", out), out
    # the collector knows who advertised: the token's identity
    who = secure_pool.condor("condor_status", f"slot1@{HOST}", "-af",
                             "AuthenticatedIdentity").stdout.split()
    assert who == [f"condor@{secure_pool.trust_domain()}"]
    # the token text is a credential: it never reaches a log
    token_text = (Path(daemon.base) / "tokens.d" / "pool-token").read_text().strip()
    assert token_text.split(".")[2] not in out and token_text.split(".")[1] not in out


def test_without_a_token_the_collector_lists_nothing_and_condorpy_says_why(
        tmp_path: Path, secure_pool: RefPool) -> None:
    d = make_daemon(tmp_path, secure_pool, "untokened.example")
    (tmp_path / "tokens.d").mkdir(mode=0o700)
    d.start()
    try:
        wait_for(lambda: "no IDTOKEN in" in d.output(), 30, d.output)
        line = next(x for x in d.output().splitlines() if "no IDTOKEN in" in x)
        assert str(tmp_path / "tokens.d") in line and "condor_token_create" in line
        assert f"trust domain {secure_pool.trust_domain()}" in line
        assert slots(secure_pool, "untokened.example") == []
    finally:
        d.stop()
        d.kill_leftovers()


def test_a_token_from_another_pool_is_refused_by_the_collector(
        tmp_path: Path, secure_pool: RefPool, token: str) -> None:
    # same issuer and key id, another signature: only the pool key could tell
    header, payload, sig = token.split(".")
    forged = f"{header}.{payload}.{sig[::-1]}"
    install(tmp_path / "tokens.d", forged)
    d = make_daemon(tmp_path, secure_pool, "forged.example")
    d.start()
    try:
        wait_for(lambda: "TOKEN proof does not match IDTOKEN" in d.output(), 30, d.output)
        # one line per attempt, not one per slot
        first = [x for x in d.output().splitlines() if "does not match" in x]
        assert len({x[:17] for x in first}) == len(first), first
        assert slots(secure_pool, "forged.example") == []
        assert forged.split(".")[2] not in d.output()
    finally:
        d.stop()
        d.kill_leftovers()


@pytest.fixture
def jobdir(secure_pool: RefPool) -> Iterator[Path]:
    d = secure_pool.shared / "tokens_job"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    d.chmod(0o1777)
    yield d
    secure_pool.condor("condor_rm", "-all", check=False)


def test_a_submitted_job_runs_on_condorpy_to_completion(
        daemon: Daemon, secure_pool: RefPool, jobdir: Path) -> None:
    wait_for(lambda: len(slots(secure_pool)) == 2, 30, daemon.output)
    (jobdir / "job.sub").write_text("""\
executable = /bin/sh
arguments = "-c 'echo secured on $$(Name); exit 3'"
output = out
error = err
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue 1
""")
    res = secure_pool.condor("condor_submit", "job.sub", user="alice", cwd=str(jobdir))
    m = re.search(r"submitted to cluster (\d+)", res.stdout)
    assert m, res.stdout
    cluster = m.group(1)

    def done() -> bool:
        return secure_pool.condor("condor_q", cluster, "-af", "ProcId",
                                  check=False).stdout.strip() == ""
    wait_for(done, 120, lambda: f"{secure_pool.condor('condor_q', '-nobatch').stdout}\n"
                                f"{daemon.output()[-3000:]}")
    hist = secure_pool.condor("condor_history", cluster, "-af", "JobStatus", "ExitCode",
                              "LastRemoteHost").stdout.split()
    assert hist[:2] == ["4", "3"] and hist[2].endswith(f"@{HOST}"), hist
    assert re.match(rf"secured on slot\d@{re.escape(HOST)}\n\Z", (jobdir / "out").read_text())
    wait_for(lambda: "activated by" in daemon.output(), 10, daemon.output)


def test_the_pools_tools_reach_condorpy_with_fs_authentication(
        daemon: Daemon, secure_pool: RefPool) -> None:
    addr = address(daemon)
    res = secure_pool.condor("condor_status", "-direct", addr, "-af", "Name", "State")
    assert sorted(res.stdout.splitlines()) == [f"slot1@{HOST} Unclaimed",
                                               f"slot2@{HOST} Unclaimed"], res.stdout
    res = secure_pool.condor("condor_config_val", "-startd", "-address", addr,
                             "CONDORPY_TEST_KNOB")
    assert res.stdout.strip() == "hello from condorpy"
    # A tool run by root makes FS's directory as the condor user (set_condor_priv). The
    # pool's chroot has its own user database: its condor (uid 100) is another user on
    # this host, which condorpy rightly does not take for condor. CONDOR_IDS = 0.0 keeps
    # the tool root, a name both sides agree on.
    res = secure_pool.condor("env", "_CONDOR_CONDOR_IDS=0.0", "condor_vacate", "-addr", addr)
    port = addr.split(":")[1].split("?")[0]
    assert res.stdout == f'Sent "Vacate-All-Claims" command to daemon at <127.0.0.1:{port}>\n'
    out = daemon.output()
    # FS says root, and ALLOW_ADMINISTRATOR (condor@* condor_pool@* root@*) lets it in
    assert re.search(r"VACATE_ALL_CLAIMS from root@vm", out), out
    res = secure_pool.condor("env", "_CONDOR_CONDOR_IDS=0.0", "condor_drain", addr)
    assert res.stdout.startswith(f"Sent request to drain the startd {addr}"), res.stdout
    wait_for(lambda: "Drained" in secure_pool.condor(
        "condor_status", "-direct", addr, "-af", "State").stdout, 20, daemon.output)
    res = secure_pool.condor("env", "_CONDOR_CONDOR_IDS=0.0", "condor_drain", "-cancel", addr)
    assert res.stdout.startswith("Sent request to cancel draining"), res.stdout
    wait_for(lambda: set(secure_pool.condor("condor_status", "-direct", addr, "-af",
                                            "State").stdout.split()) == {"Unclaimed"}, 20,
             daemon.output)
    # a user ALLOW_ADMINISTRATOR does not name gets nothing done
    res = secure_pool.condor("condor_vacate", "-addr", addr, user="alice", check=False)
    assert res.returncode != 0 and "DENIED" in res.stdout + res.stderr, res.stdout
    # (FS names alice's uid as this host knows it: the chroot's users are not the host's)
    uid = int(secure_pool.condor("id", "-u", "alice").stdout)
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return
    assert f"{name}@vm denied: no ALLOW_ADMINISTRATOR entry" in daemon.output()


def test_advertise_startd_alone_is_enough_to_join_and_to_leave(
        tmp_path: Path, secure_pool: RefPool) -> None:
    host = "minimal.example"
    install(tmp_path / "tokens.d", secure_pool.create_token(
        f"condor@{secure_pool.trust_domain()}", ("ADVERTISE_STARTD",)))
    d = make_daemon(tmp_path, secure_pool, host)
    d.start()
    try:
        wait_for(lambda: len(slots(secure_pool, host)) == 2, 30, d.output)
    finally:
        d.stop()
        d.kill_leftovers()
    # INVALIDATE_STARTD_ADS needs no more than ADVERTISE_STARTD either
    wait_for(lambda: slots(secure_pool, host) == [], 20,
             lambda: f"{slots(secure_pool, host)}; {d.output()[-2000:]}")


def test_on_the_central_managers_host_fs_suffices(tmp_path: Path,
                                                   secure_pool: RefPool) -> None:
    """The collector prefers FS (first of its methods). On its own host condorpy, run by
    root, proves to be the condor user as HTCondor's daemons do, and needs no token.
    Here the collector lives in a chroot: its FS_LOCAL_DIR is the directory shared with
    the host, and condorpy's CONDOR_IDS names the chroot's condor user."""
    uid = secure_pool.condor("id", "-u", "condor").stdout.strip()
    gid = secure_pool.condor("id", "-g", "condor").stdout.strip()
    secure_pool.start(security="default", extra=f"FS_LOCAL_DIR = {secure_pool.shared}")
    host = "same-host.example"
    try:
        (tmp_path / "tokens.d").mkdir(mode=0o700)
        d = make_daemon(tmp_path, secure_pool, host)
        d.config.write_text(d.config.read_text() + f"CONDOR_IDS = {uid}.{gid}\n")
        d.start()
        try:
            wait_for(lambda: len(slots(secure_pool, host)) == 2, 30, d.output)
            assert re.search(r"negotiated \(FS, AES\)", d.output()), d.output()
            who = secure_pool.condor("condor_status", f"slot1@{host}", "-af",
                                     "AuthenticatedIdentity").stdout.split()
            assert who and who[0].startswith("condor@"), who
        finally:
            d.stop()
            d.kill_leftovers()
    finally:
        secure_pool.start(security="default")
