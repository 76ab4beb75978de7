"""A real daemon and its local queue: each kind of interruption leaves HTCondor's
VacateReason, VacateReasonCode, VacateReasonSubCode and NumVacatesByReason in the job's
ad, and so in its history once it leaves the queue."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.queue.records import ad_of_text
from tests.startd.daemon_helpers import Daemon, counts, running, submit, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0 and not os.access("/tmp", os.W_OK),
                                reason="needs a writable /tmp")

# ignores SIGTERM, so only a hard kill ends it
SCRIPT = "#!/bin/sh\ntrap '' TERM\nsleep 300\n"
SLEEP = "executable = stubborn.sh\nrequest_memory = 16\nlog = job.log\nqueue\n"


def _job_ad(d: Daemon) -> ClassAd | None:
    with d.db() as db:
        rows = db.execute("SELECT ad FROM jobs").fetchall()
    return ad_of_text(rows[0][0]) if rows else None


def _code(d: Daemon) -> object:
    ad = _job_ad(d)
    return ad.evaluate("VacateReasonCode") if ad is not None else None


@pytest.fixture
def work(tmp_path: Path) -> Path:
    p = tmp_path / "work"
    p.mkdir()
    return p


def _started(d: Daemon, work: Path) -> None:
    script = work / "stubborn.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    submit(d, SLEEP, work)
    wait_for(lambda: counts(d).get(2) == 1, 60, d.output)


def _in_history(d: Daemon) -> ClassAd:
    """Remove the job: its ad, reason and counts included, goes to the history."""
    d.cli("rm", "1")
    wait_for(lambda: bool(d.history_ads()), 60, d.output)
    return ad_of_text(d.history_ads()[0])


def _counts(ad: ClassAd) -> dict[str, object]:
    nested = ad.evaluate("NumVacatesByReason")
    assert isinstance(nested, ClassAd)
    return {k: nested.evaluate(k) for k in nested.keys()}


def test_condor_vacate(tmp_path: Path, work: Path) -> None:
    with running(Daemon(tmp_path, cpus=1, extra="START = (TARGET.NumJobStarts ?: 0) < 1\n")) as d:
        _started(d, work)
        d.call("vacate", fast=True)
        wait_for(lambda: _code(d) == 1010, 60, d.output)
        ad = _in_history(d)
    assert ad.evaluate("VacateReason") == "Claim vacated by the administrator"
    assert ad.evaluate("VacateReasonCode") == 1010
    assert ad.evaluate("VacateReasonSubCode") == 0
    assert _counts(ad) == {"StartdVacateCommand": 1}


def test_preempt_then_kill(tmp_path: Path, work: Path) -> None:
    # the job ignores SIGTERM: KILL ends the vacate, the cause stays PREEMPT
    cfg = ('PREEMPT = Activity == "Busy" && (time() - EnteredCurrentActivity) > 2\n'
           "MAXJOBRETIREMENTTIME = 0\nMachineMaxVacateTime = 600\n"
           'KILL = Activity == "Vacating" && (time() - EnteredCurrentActivity) > 2\n'
           "START = (TARGET.NumJobStarts ?: 0) < 1\n")
    with running(Daemon(tmp_path, cpus=1, extra=cfg)) as d:
        _started(d, work)
        wait_for(lambda: _code(d) == 1011, 60, d.output)
        assert "KILL is True" in d.whole_log()
        ad = _in_history(d)
    assert ad.evaluate("VacateReason") == "PREEMPT expression evaluated to True"
    assert _counts(ad) == {"StartdPreemptExpression": 1}


def test_drain(tmp_path: Path, work: Path) -> None:
    with running(Daemon(tmp_path, cpus=1)) as d:
        _started(d, work)
        d.call("drain", how="fast")
        wait_for(lambda: _code(d) == 1014, 60, d.output)
        ad = _in_history(d)
    assert ad.evaluate("VacateReason") == "Startd was draining"
    assert _counts(ad) == {"StartdDraining": 1}


def test_counts_add_up_over_runs(tmp_path: Path, work: Path) -> None:
    with running(Daemon(tmp_path, cpus=1,
                        extra="START = (TARGET.NumJobStarts ?: 0) < 2\n")) as d:
        _started(d, work)
        d.call("vacate", fast=True)
        wait_for(lambda: _code(d) == 1010 and counts(d).get(2) == 1, 60, d.output)
        d.call("drain", how="fast")
        wait_for(lambda: _code(d) == 1014, 60, d.output)
        ad = _in_history(d)
    assert _counts(ad) == {"StartdVacateCommand": 1, "StartdDraining": 1}


def test_shutdown(tmp_path: Path, work: Path) -> None:
    with running(Daemon(tmp_path, cpus=1)) as d:
        _started(d, work)
        d.call("off", how="fast")
        assert d.proc is not None
        wait_for(lambda: d.proc is not None and d.proc.poll() is not None, 60, d.output)
        ad = _job_ad(d)
    assert ad is not None
    assert ad.evaluate("VacateReason") == "Startd was shutdown"
    assert ad.evaluate("VacateReasonCode") == 1013
    assert _counts(ad) == {"StartdShutdown": 1}
