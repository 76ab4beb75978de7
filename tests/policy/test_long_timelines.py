"""Huge or non-finite times: refused, or simulated in time proportional to the events."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from condorpy.policy import simulate as simulate_mod
from condorpy.policy.simulate import MAX_SIM_SECONDS, QUIET_CYCLES

from .sim import simulate

DESKTOP = "use POLICY : Desktop\n"


def cli(tmp: Path, timeline: str, *extra: str) -> subprocess.CompletedProcess[str]:
    tl = tmp / "t.jsonl"
    tl.write_text(timeline)
    return subprocess.run([sys.executable, "-m", "condorpy", "policy", "simulate",
                           "--timeline", str(tl), *extra],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("t", ["1e15", "Infinity", "-Infinity", "NaN", "-1",
                               str(MAX_SIM_SECONDS + 1)])
def test_a_time_beyond_ten_years_or_not_finite_is_refused(tmp_path: Path, t: str) -> None:
    r = cli(tmp_path, f'{{"t": 0, "event": "snapshot"}}\n{{"t": {t}, "event": "snapshot"}}\n')
    assert r.returncode == 1 and "internal error" not in r.stderr
    assert "'t' must be a number of seconds from 0 to 315360000 (ten years)" in r.stderr
    assert "line 2" in r.stderr


@pytest.mark.parametrize("until", ["1e12", "inf", "nan", "1e400"])
def test_an_until_beyond_ten_years_or_not_finite_is_refused(tmp_path: Path, until: str) -> None:
    r = cli(tmp_path, '{"t": 0, "event": "snapshot"}\n', f"--until={until}")
    assert r.returncode == 1 and "internal error" not in r.stderr
    assert "--until must be a number of seconds up to 315360000" in r.stderr


def test_ten_years_of_a_running_job_take_well_under_a_minute(tmp_path: Path) -> None:
    tl = ('{"t": 0, "event": "request_claim", "id": "c", "job": {"JobLeaseDuration": 1e9}}\n'
          '{"t": 0, "event": "activate", "id": "c"}\n'
          f'{{"t": {MAX_SIM_SECONDS}, "event": "snapshot", "attrs": ["Activity"]}}\n')
    started = time.monotonic()
    r = cli(tmp_path, tl)
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - started < 30
    assert '"quiet_until"' in r.stdout
    assert r.stdout.rstrip().endswith('"ad": {"Activity": "Busy"}}')


def without(records: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [r for r in records if key not in r]


def test_skipping_a_quiet_stretch_changes_nothing_that_follows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Desktop: the owner comes back long after the machine went quiet; what happens
    # then (suspension, the claim's end) must be what a cycle-by-cycle run gives.
    far = 5 * (QUIET_CYCLES + 2_345) + 17     # POLLING_INTERVAL while claimed
    tl = [{"t": 0, "set": {"KeyboardIdle": 3600}},
          {"t": 10, "event": "request_claim", "id": "c", "job": {"JobLeaseDuration": 1e9}},
          {"t": 10, "event": "activate", "id": "c"},
          {"t": far, "set": {"KeyboardIdle": 0, "LoadAvg": 1.5}},
          {"t": far + 3600, "event": "snapshot", "attrs": ["State", "Activity"]}]
    skipped = simulate(tmp_path, DESKTOP, tl)
    assert any("quiet_until" in r for r in skipped)
    monkeypatch.setattr(simulate_mod, "QUIET_CYCLES", 10**9)
    full = simulate(tmp_path, DESKTOP, tl)
    assert not any("quiet_until" in r for r in full)
    assert without(skipped, "quiet_until") == full
    assert any(r.get("t", 0) > far and r.get("activity") == "Suspended" for r in full)
