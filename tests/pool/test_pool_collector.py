"""condorpy's daemon advertises its slots to a real HTCondor 23.9.6 collector.

``condor_status`` in the pool lists the slots within one update, with their state and
resources; the collector holds the private ads with the claim ids the negotiator needs;
state changes show at once; the slots disappear when the daemon stops; a pool that
refuses condorpy's authentication leaves the daemon running and says why."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.pool import collector
from condorpy.pool.connection import Connection
from condorpy.pool.security import client_policy
from condorpy.pool.sinful import parse_address
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

pytestmark = pytest.mark.pool

HOST = "condorpy-test.example"

POOL_CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = {host}
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
UPDATE_INTERVAL = 600
use FEATURE : StaticSlots
NUM_CPUS = 3
MEMORY = 3072
CONDORPY_POOL_ACCEPT_CLAIMS = False
"""


def status(pool: RefPool, *attrs: str) -> dict[str, list[str]]:
    """condor_status's answer for condorpy's slots: name -> values of ``attrs``."""
    res = pool.condor("condor_status", "-af:,", "Name", *attrs, check=False)
    out = {}
    for line in res.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if parts and parts[0].endswith(f"@{HOST}"):
            out[parts[0]] = parts[1:]
    return out


def private_ads(pool: RefPool) -> dict[str, ClassAd]:
    cfg = Config.from_text("SEC_DEFAULT_AUTHENTICATION_METHODS = CLAIMTOBE\n"
                           "SEC_CLAIMTOBE_USER = condor\n")
    with Connection.connect(parse_address(pool.collector), 20) as c:
        _, ads = c.run(collector.query(collector.QUERY_STARTD_PVT_ADS, "true",
                                       client_policy(cfg, "condorpy-test"), pool.collector))
    assert isinstance(ads, list)
    return {str(a["Name"]): a for a in ads if str(a["Name"]).endswith(f"@{HOST}")}


@pytest.fixture
def daemon(tmp_path: Path, refpool: RefPool) -> Daemon:
    d = Daemon(tmp_path, POOL_CONFIG.format(collector=refpool.collector, host=HOST), cpus=3)
    yield d
    d.stop()
    d.kill_leftovers()


def test_condor_status_lists_the_slots_at_start_and_not_after_stop(
        daemon: Daemon, refpool: RefPool) -> None:
    t0 = time.monotonic()
    daemon.start()
    want = {f"slot{i}@{HOST}" for i in (1, 2, 3)}
    # UPDATE_INTERVAL is 600 s: only the update at start can put them there
    wait_for(lambda: set(status(refpool)) == want, 20,
             lambda: f"condor_status shows {status(refpool)}; daemon: {daemon.output()}")
    seen_after = time.monotonic() - t0
    rows = status(refpool, "State", "Activity", "Cpus", "Memory", "OpSys", "Arch",
                  "LoadAvg", "MyAddress", "Requirements")
    for name in want:
        state, activity, cpus, memory, opsys, arch, load, addr, req = rows[name]
        # CONDORPY_POOL_ACCEPT_CLAIMS = False: listed, but never matched
        assert req == "false"
        assert (state, activity, cpus, memory) == ("Unclaimed", "Idle", "1", "1024")
        assert (opsys, arch) == ("LINUX", "X86_64")
        assert float(load) >= 0
        assert addr.startswith("<127.0.0.1:")
    # the negotiator's view: private ads with a claim id naming this daemon
    pvt = private_ads(refpool)
    assert set(pvt) == want
    for name, ad in pvt.items():
        cid = str(ad["ClaimId"])
        assert cid.startswith(str(ad["MyAddress"]) + "#")
        assert '[Integrity="YES";Encryption="YES";' in cid and len(cid.split("]")[-1]) == 64
    print(f"slots listed {seen_after:.2f}s after the daemon was started")
    # one key exchange: the other slots' updates resumed its session
    assert daemon.output().count("negotiated (CLAIMTOBE, AES)") == 1, daemon.output()

    daemon.stop()
    assert status(refpool) == {}, "condor_status still lists the stopped daemon's slots"
    assert private_ads(refpool) == {}
    assert "invalidated 3 slot ad(s)" in daemon.output()


def test_a_state_change_reaches_the_collector_without_waiting_for_update_interval(
        daemon: Daemon, refpool: RefPool) -> None:
    daemon.start()
    wait_for(lambda: len(status(refpool)) == 3, 20, daemon.output)
    assert {v[0] for v in status(refpool, "State").values()} == {"Unclaimed"}
    daemon.call("drain", how="fast")

    def own() -> dict[str, list[str]]:
        ads = [ClassAd.parse_old(text) for text in daemon.call("status")["ads"]]
        return {str(a["Name"]): [str(a["State"]), str(a["Activity"])] for a in ads}
    wait_for(lambda: own() == status(refpool, "State", "Activity") and
             {v[0] for v in own().values()} != {"Unclaimed"}, 20,
             lambda: f"condor_status shows {status(refpool, 'State', 'Activity')}, "
                     f"the daemon {own()}")


def test_a_pool_refusing_condorpys_authentication_is_logged_and_the_daemon_runs_on(
        tmp_path: Path, refpool: RefPool) -> None:
    d = Daemon(tmp_path, POOL_CONFIG.format(collector=refpool.collector, host=HOST)
               + "SEC_DEFAULT_AUTHENTICATION_METHODS = IDTOKENS, SSL\n", cpus=3)
    try:
        d.start()
        wait_for(lambda: "no authentication method in common" in d.output(), 20, d.output)
        line = next(ln for ln in d.output().splitlines() if "in common" in ln)
        assert refpool.collector in line and "IDTOKENS" in line
        assert d.call("ping")  # still serving
        assert status(refpool) == {}
    finally:
        d.stop()
        d.kill_leftovers()
