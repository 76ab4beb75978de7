"""condorpy's ``status`` and ``q -analyze`` beside HTCondor's own tools reading the same
ads: ``condor_status -ads FILE`` for condorpy's slot ads, ``condor_q -better-analyze
-jobads FILE -slotads FILE`` for condorpy's jobs against its live slots (HTCondor
23.9.6, inside the reference pool's chroot; no daemon of the pool is asked)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.clock import ManualClock
from condorpy.queue.status_layouts import StatusView, render_status, select
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_to_json
from condorpy.slots.status_format import render_long
from condorpy.startd.core import load_core
from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

pytestmark = pytest.mark.pool

MACHINE = MachineInventory(
    cpus=8, memory_mb=16384, disk_kb=50_000_000, swap_kb=1_000_000, detected_cpus=8,
    detected_memory_mb=16384, hostname="node7.example.org",
    facts={"Arch": "X86_64", "OpSys": "LINUX", "OpSysAndVer": "Debian12",
           "OpSysShortName": "Debian", "OpSysMajorVer": 12},
    total_load_avg=0.5)

CONFIGS = {
    "pslot": "",
    "static": "NUM_SLOTS = 4\n",
    "mixed": ("SLOT_TYPE_1 = cpus=2, mem=25%\nNUM_SLOTS_TYPE_1 = 2\n"
              "SLOT_TYPE_2 = auto\nSLOT_TYPE_2_PARTITIONABLE = TRUE\nNUM_SLOTS_TYPE_2 = 1\n"),
}
OPTIONS = ["", "-wide", "-compact", "-compact -wide", "-total", "-avail", "-avail -compact",
           "-claimed", "-claimed -wide", "-total -claimed"]


def _ads(tmp_path: Path, config: str) -> list[ClassAd]:
    conf = tmp_path / "condor_config"
    conf.write_text("RUNBENCHMARKS = False\n" + config)
    inv = tmp_path / "machine.json"
    inv.write_text(inventory_to_json(MACHINE))
    engine = load_core(str(conf), inventory_path=str(inv)).engine(ManualClock(1.8e9))
    engine.cycle(engine.now)
    ads = [ClassAd.parse_old(ad.to_old()) for ad in engine.ads()]
    # one slot claimed by someone, so that -claimed has a row
    ads[0]["State"] = parse_expr('"Claimed"')
    ads[0]["Activity"] = parse_expr('"Busy"')
    ads[0]["RemoteUser"] = parse_expr('"bob@example.org"')
    ads[0]["ClientMachine"] = parse_expr('"submit.example.org"')
    return ads


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_status_layouts_match_condor_status(refpool: RefPool, tmp_path: Path,
                                            name: str) -> None:
    ads = _ads(tmp_path, CONFIGS[name])
    inside = refpool.root / "tmp" / f"condorpy-status-{name}.ads"
    inside.write_text(render_long(ads))
    for options in OPTIONS:
        words = options.split()
        view = StatusView(compact="-compact" in words, claimed="-claimed" in words,
                          avail="-avail" in words, wide="-wide" in words,
                          totals_only="-total" in words)
        ours = render_status(select(ads, view), ads, 0.0, view)
        theirs = refpool.condor("condor_status", "-ads", f"/tmp/{inside.name}", *words)
        assert ours == theirs.stdout, f"condor_status {options} ({name})"


# --- q -better-analyze --------------------------------------------------------------

DAEMON = ("NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = True\n"
          'START = (TARGET.Color =!= "red")\n')
JOBS = [  # what each asks for, and why it does or does not run
    "request_memory = 16\n",                                    # runs
    "request_memory = 9000\n",                                  # more than the machine
    'request_memory = 16\nrequirements = OpSys == "WINDOWS"\n',  # no such slot
    'request_memory = 16\n+Color = "red"\n',                    # START refuses it
]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    with running(Daemon(tmp_path, extra=DAEMON)) as d:
        yield d


def _summaries(text: str) -> dict[str, list[str]]:
    """Each job's summary: its state line, the counts, the first warning line."""
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"\n(\d{3}\.\d{3}):  Run analysis summary[^\n]*\n((?:  +\d+ [^\n]*\n)+)"
                         r"(\nWARNING:  Be advised:\n[^\n]*\n)?", text):
        out[m.group(1)] = [m.group(0).splitlines()[1]] + m.group(2).splitlines() + \
            (m.group(3).splitlines()[1:] if m.group(3) else [])
    return out


def test_analyze_counts_match_condor_q(refpool: RefPool, daemon: Daemon,
                                       tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for extra in JOBS:
        submit(daemon, f"executable = /bin/sleep\narguments = 300\n{extra}queue 1\n", work)
    wait_for(lambda: counts(daemon).get(2) == 1, 30, daemon.output)
    time.sleep(1)         # one more cycle: the slot ads carry the claim
    jobs = daemon.cli("q", "-l").stdout
    slots = daemon.cli("status", "-l").stdout
    (refpool.root / "tmp" / "condorpy-jobs.ads").write_text(jobs)
    (refpool.root / "tmp" / "condorpy-slots.ads").write_text(slots)
    theirs = refpool.condor("condor_q", "-better-analyze", "-jobads", "/tmp/condorpy-jobs.ads",
                            "-slotads", "/tmp/condorpy-slots.ads").stdout
    ours = daemon.cli("q", "-better-analyze").stdout
    # the same jobs, each judged the same by both
    assert _summaries(ours) == _summaries(theirs), (ours, theirs)
    assert sorted(_summaries(ours)) == ["001.000", "002.000", "003.000", "004.000"]
    # the lines of the requirements and of the job's attributes are the same too
    # (condorpy's ClassAd printer writes =!= as isnt)
    ours = ours.replace(" isnt ", " =!= ")
    for label in ("1.000", "2.000", "3.000", "4.000"):
        start = f"The Requirements expression for job {label} is"
        assert ours[ours.index(start):].split("\n\n")[:4] == \
            theirs[theirs.index(start):].split("\n\n")[:4]
