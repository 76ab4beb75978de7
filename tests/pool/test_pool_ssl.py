"""condorpy in a pool whose daemons authenticate each other by SSL only (issue 29):
the 23.9.6 pool at the package's default security with SEC_DAEMON_* and
SEC_ADVERTISE_*_AUTHENTICATION_METHODS = SSL, certificates from one CA, the subjects
mapped to condor@ssl.test by CERTIFICATE_MAPFILE (refpool.py's "ssl" variant).

condorpy's startd advertises over SSL (its host certificate, its name checked against
the collector's certificate), a condor_submit job runs on it, the pool's tools reach its
command port by SSL, and a collector certificate it cannot trust, or one that names
another host, is refused with one clear line naming the collector."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pool.certs import Issued, issue, make_ca
from tests.pool.jobs import history, submit
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool

HOST = "condorpy-ssl.example"
# the subjects of this CA's certificates are the pool's daemons (condor)
POOL_MAP = 'SSL "^/C=US/O=condorpy tests/CN=[^/]+$" condor@ssl.test\n'

CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
use security:recommended_v9_0
SEC_DEFAULT_AUTHENTICATION_METHODS = SSL
AUTH_SSL_CLIENT_CAFILE = {ca}
AUTH_SSL_SERVER_CAFILE = {ca}
AUTH_SSL_CLIENT_USE_DEFAULT_CAS = False
AUTH_SSL_SERVER_USE_DEFAULT_CAS = False
AUTH_SSL_CLIENT_CERTFILE = {crt}
AUTH_SSL_CLIENT_KEYFILE = {key}
AUTH_SSL_SERVER_CERTFILE = {crt}
AUTH_SSL_SERVER_KEYFILE = {key}
CERTIFICATE_MAPFILE = {maps}
CONDORPY_POOL_ACCEPT_CLAIMS = True
UPDATE_INTERVAL = 600
use FEATURE : StaticSlots
NUM_CPUS = 2
MEMORY = 2048
"""


class Pki:
    def __init__(self) -> None:
        self.ca = make_ca()
        # the collector is reached as "localhost": its certificate names that host
        self.pool = issue(self.ca, "localhost", sans=("localhost",))
        self.ep = issue(self.ca, HOST, sans=(HOST,))
        self.rogue_ca = make_ca("rogue CA")


@pytest.fixture(scope="module")
def pki() -> Pki:
    return Pki()


@pytest.fixture(scope="module")
def ssl_pool(refpool: RefPool, pki: Pki) -> Iterator[RefPool]:
    """The session's pool, restarted with SSL-only daemon authentication for this module,
    and back to the host-based set-up afterwards."""
    refpool.build()
    d = refpool.root / "etc/condor/ssl"
    pki.pool.write(d, "host")
    (d / "ca.crt").write_bytes(pki.ca.cert_pem())
    (d / "mapfile").write_text(POOL_MAP)
    refpool.start(security="ssl")
    yield refpool
    refpool.start()


def make_daemon(base: Path, pool: RefPool, pki: Pki, host: str = HOST,
                collector: str | None = None, ca: Issued | None = None,
                cert: Issued | None = None) -> Daemon:
    base.mkdir(parents=True, exist_ok=True)
    crt, key = (cert or pki.ep).write(base / "ssl", "host")
    ca_file = base / "ssl" / "ca.crt"
    ca_file.write_bytes((ca or pki.ca).cert_pem())
    maps = base / "ssl" / "mapfile"
    maps.write_text(POOL_MAP.replace("ssl.test", "vm"))
    return Daemon(base, CONFIG.format(collector=collector or f"localhost:{pool.port}",
                                      host=host, ca=ca_file, crt=crt, key=key, maps=maps),
                  cpus=2)


def slots(pool: RefPool, host: str = HOST) -> list[str]:
    res = pool.condor("condor_status", "-af", "Name", check=False)
    return sorted(n for n in res.stdout.split() if n.endswith(f"@{host}"))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, ssl_pool: RefPool,
           pki: Pki) -> Iterator[Daemon]:
    d = make_daemon(tmp_path_factory.mktemp("ssl"), ssl_pool, pki)
    d.start()
    yield d
    d.stop()
    d.kill_leftovers()


def test_the_collector_admits_condorpys_slots_by_ssl(daemon: Daemon,
                                                      ssl_pool: RefPool) -> None:
    wait_for(lambda: slots(ssl_pool) == [f"slot1@{HOST}", f"slot2@{HOST}"], 30,
             lambda: f"{slots(ssl_pool)}; daemon: {daemon.output()[-3000:]}")
    out = daemon.output()
    assert re.search(r"security session \S+ with \S+ negotiated \(SSL, AES\)", out), out
    # the collector mapped condorpy's certificate through its map file
    who = ssl_pool.condor("condor_status", f"slot1@{HOST}", "-af",
                          "AuthenticatedIdentity").stdout.split()
    assert who == ["condor@ssl.test"]


@pytest.fixture
def jobdir(ssl_pool: RefPool) -> Iterator[Path]:
    d = ssl_pool.shared / "ssl_job"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    d.chmod(0o1777)
    yield d
    ssl_pool.condor("condor_rm", "-all", check=False)


def test_a_submitted_job_runs_on_condorpy(daemon: Daemon, ssl_pool: RefPool,
                                          jobdir: Path) -> None:
    wait_for(lambda: len(slots(ssl_pool)) == 2, 30, daemon.output)
    cluster = submit(ssl_pool, jobdir, """\
executable = /bin/sh
arguments = "-c 'echo ssl on $$(Name); exit 3'"
output = out
error = err
log = job.log
should_transfer_files = NO
requirements = regexp("condorpy", TARGET.CondorVersion)
queue 1
""")
    wait_for(lambda: history(ssl_pool, cluster, "JobStatus") != {}, 120,
             lambda: f"{ssl_pool.condor('condor_q', '-nobatch').stdout}\n"
                     f"{daemon.output()[-3000:]}")
    assert history(ssl_pool, cluster, "JobStatus", "ExitCode") == {0: ["4", "3"]}
    assert re.match(rf"ssl on slot\d@{re.escape(HOST)}\n\Z", (jobdir / "out").read_text())


def test_the_pools_tools_reach_condorpy_by_ssl(daemon: Daemon, ssl_pool: RefPool) -> None:
    m = re.search(r"as (<127\.0\.0\.1:\d+\?[^>]*noUDP>)", daemon.output())
    assert m, daemon.output()
    # ADMINISTRATOR at condorpy: SSL only; the tool presents the pool's host certificate
    # (its client certificate), which condorpy's map file makes condor@vm
    res = ssl_pool.condor("condor_vacate", "-addr", m.group(1))
    assert res.stdout.startswith('Sent "Vacate-All-Claims" command'), res.stdout
    assert "VACATE_ALL_CLAIMS from condor@vm" in daemon.output()


@pytest.mark.parametrize("case, why", [
    ("unknown CA", "the certificate did not verify"),
    ("bare address", "no host name to check the server's certificate against"),
    ("rogue client", "the server ended the TLS handshake"),
])
def test_a_bad_certificate_is_refused_naming_the_collector(
        tmp_path: Path, ssl_pool: RefPool, pki: Pki, case: str, why: str) -> None:
    host = f"{case.replace(' ', '-')}.example"
    if case == "unknown CA":
        d = make_daemon(tmp_path, ssl_pool, pki, host, ca=pki.rogue_ca)
    elif case == "bare address":
        d = make_daemon(tmp_path, ssl_pool, pki, host, collector=ssl_pool.collector)
    else:
        d = make_daemon(tmp_path, ssl_pool, pki, host,
                        cert=issue(pki.rogue_ca, host, sans=(host,)))
    d.start()
    try:
        wait_for(lambda: why in d.output(), 30, d.output)
        line = next(x for x in d.output().splitlines() if why in x)
        assert "SSL authentication failed" in line and f":{ssl_pool.port}" in line, line
        assert slots(ssl_pool, host) == []
    finally:
        d.stop()
        d.kill_leftovers()
