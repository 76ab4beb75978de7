"""Explanations from the daemon itself (issue 23, item 6), end to end through a real
daemon: `policy explain` reads the running daemon's slot ads and says so, and an Owner
slot is re-evaluated every POLLING_INTERVAL, not only every UPDATE_INTERVAL."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from tests.startd.daemon_helpers import Daemon, running, wait_for

# a daemon start takes about 2 s on the host, about 30 s under the real-kernel lane
LEAD = 45.0 if os.environ.get("CONDORPY_VM") else 8.0
JOB_AD = ('MyType = "Job"\nOwner = "alice"\nRequestCpus = 1\nRequestMemory = 16\n'
          "RequestDisk = 1\nRequirements = true\n")


def slot_states(d: Daemon) -> dict[str, str]:
    ads = [ClassAd.parse_old(t) for t in d.call("status")["ads"]]
    return {str(ad.evaluate("Name")).split("@")[0]: str(ad.evaluate("State")) for ad in ads}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    # START turns true LEAD seconds from now; nothing else would make the daemon look
    # again for an hour (UPDATE_INTERVAL), so only the POLLING_INTERVAL cadence (1 s)
    # can take the slot out of Owner in time
    with running(Daemon(tmp_path, cpus=1, extra=f"UPDATE_INTERVAL = 3600\n"
               f"START = time() >= {int(time.time() + LEAD)}\n"
               "IS_OWNER = (START =?= False)\n")) as d:
        yield d


def test_an_owner_slot_leaves_owner_on_the_polling_cadence(daemon: Daemon,
                                                            tmp_path: Path) -> None:
    assert slot_states(daemon) == {"slot1": "Owner"}
    (tmp_path / "job.ad").write_text(JOB_AD)
    res = daemon.cli("policy", "explain", "--job", str(tmp_path / "job.ad"))
    assert "the running daemon's live slot ads" in res.stderr
    assert "slot1: the daemon has it Owner/Idle" in res.stdout
    assert "slot1: the job does not match: the slot is Owner now, START" in res.stdout
    # well within UPDATE_INTERVAL: START turning true is seen at the next poll
    wait_for(lambda: slot_states(daemon) == {"slot1": "Unclaimed"}, LEAD + 60,
             lambda: f"still {slot_states(daemon)}: {daemon.output()}")


def test_explain_uses_the_daemons_slots_and_says_so(daemon: Daemon, tmp_path: Path) -> None:
    wait_for(lambda: slot_states(daemon) == {"slot1": "Unclaimed"}, LEAD + 60,
             lambda: f"still {slot_states(daemon)}: {daemon.output()}")
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.sub").write_text("executable = /bin/sleep\narguments = 300\n"
                                  "request_memory = 16\nqueue\n")
    daemon.cli("submit", "job.sub", cwd=work)
    # the job runs in a d-slot carved from the p-slot, which keeps nothing back
    wait_for(lambda: slot_states(daemon).get("slot1_1") == "Claimed", 60, daemon.output)
    (tmp_path / "job.ad").write_text(JOB_AD)
    live = daemon.cli("policy", "explain", "--job", str(tmp_path / "job.ad"))
    assert "the running daemon's live slot ads" in live.stderr
    assert "slot1: the daemon has it Unclaimed/Idle" in live.stdout
    assert "slot1: the request fits = false (the d-slot's Cpus 1 > Cpus 0 left)" \
        in live.stdout
    assert ("slot1: the job does not match: the slot's Requirements, the request's size"
            in live.stdout)
    assert "slot1_1: the daemon has it Claimed/Busy" in live.stdout
    assert "slot1_1: the job does not match: the slot is Claimed now" in live.stdout
    # the configuration alone knows nothing of the claim
    computed = daemon.cli("policy", "explain", "--offline", "--job",
                          str(tmp_path / "job.ad"))
    assert "computed from the configuration (--offline)" in computed.stderr
    assert "slot1: the job matches" in computed.stdout
    assert "the daemon has it" not in computed.stdout
