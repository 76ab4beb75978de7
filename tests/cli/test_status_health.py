"""`condorpy status -health`: condor_status -healthy's layout (HTCondor 25.11) over
STARTD_HEALTH_EXPRS."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.queue.status_health import failed_checks, render_health
from tests.cli.test_status import run

CHECKS = ("STARTD_HEALTH_EXPRS = TotalLoadAvg < 0.1, TotalCpus > 0, "
          "(MachinePressureMemorySomeAvg10 ?: 0) < 20, NoSuchAttr > 1\n")


def test_unhealthy_machine_row_and_totals(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(tmp_path, capsys, CHECKS, "-health")
    assert rc == 0, err
    # one check of four false (the load is 0.25); the undefined one fails the factor
    # but is not listed, as condor_status renders it
    assert out.splitlines() == [
        "HOST_NAME         HEALTH FAILED_HEALTH_CHECKS",
        "node1.example.org    50% TotalLoadAvg < 0.1",
        "",
        "          Healthy Unhealthy    Broken   Unknown",
        "",
        "  Total         0         1         0         0"]


def test_healthy_rows_only_with_verbose(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = "STARTD_HEALTH_EXPRS = TotalCpus > 0\n"
    rc, out, _ = run(tmp_path, capsys, config, "-healthy")
    assert rc == 0 and "node1" not in out
    assert out.splitlines()[-1].split() == ["Total", "1", "0", "0", "0"]
    rc, out, _ = run(tmp_path, capsys, config, "-health:verbose")
    assert out.splitlines()[1].split() == ["node1.example.org", "100%"]
    # a machine without health checks is unknown, its row "?" under verbose
    rc, out, _ = run(tmp_path, capsys, "", "-heal:v")
    assert out.splitlines()[1].split() == ["node1.example.org", "?", "?"]
    assert out.splitlines()[-1].split() == ["Total", "0", "0", "0", "1"]


def test_failed_checks_lists_false_and_error_as_condor_status() -> None:
    ad = ClassAd({"A": 1})
    ad.set_expr("HealthExprs", '{A > 2, A == 1, B > 0, A + "x", A < 0}')
    assert failed_checks(ad) == "A > 2,error, A < 0"
    broken = ClassAd({"SlotBrokenReason": "leftover processes"})
    assert failed_checks(broken) == "leftover processes"
    assert "leftover processes" in render_health([broken])
