"""`condorpy policy simulate` and `explain` through the command dispatcher."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.cli.main import main as condorpy_main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = condorpy_main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_simulate_prints_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text("NUM_SLOTS = 1\n")
    monkeypatch.setenv("CONDOR_CONFIG", str(conf))   # found without -config
    tl = tmp_path / "t.jsonl"
    tl.write_text('{"t": 0, "event": "request_claim", "id": "c1", "job": {"Owner": "a"}}\n'
                  '{"t": 5, "event": "snapshot", "attrs": ["State"]}\n')
    rc, out, _ = _run(["policy", "simulate", "--timeline", str(tl)], capsys)
    assert rc == 0
    recs = [json.loads(x) for x in out.splitlines()]
    assert recs[0] == {"t": 0, "slot": "slot1", "state": "Owner", "activity": "Idle",
                       "transition": "start", "reason": "startd started"}
    assert recs[-1] == {"t": 5, "slot": "slot1", "ad": {"State": "Claimed"}}
    assert [r["t"] for r in recs] == sorted(r["t"] for r in recs)


def test_simulate_until_stops_the_clock(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text("IS_OWNER = KeyboardIdle < 600\nRUNBENCHMARKS = False\n"
                    "SLOTS_CONNECTED_TO_KEYBOARD = 1\n")
    tl = tmp_path / "t.jsonl"
    tl.write_text('{"t": 0, "set": {"KeyboardIdle": 0}}\n')
    _, short, _ = _run(["policy", "simulate", "-config", str(conf), "--timeline", str(tl)],
                       capsys)
    _, long, _ = _run(["policy", "simulate", "-config", str(conf), "--timeline", str(tl),
                       "--until", "1000"], capsys)
    assert len(short.splitlines()) == 1
    assert json.loads(long.splitlines()[-1])["t"] == 600


def test_bad_timeline_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty.conf").write_text("")
    monkeypatch.setenv("CONDOR_CONFIG", str(tmp_path / "empty.conf"))
    tl = tmp_path / "bad.jsonl"
    tl.write_text('{"t": 0, "set": {"A": 1}}\n{"t": "soon", "event": "match"}\n')
    rc, _, err = _run(["policy", "simulate", "--timeline", str(tl)], capsys)
    assert rc == 1
    assert err.strip().endswith(f"(at {tl}, line 2)")
    assert "Traceback" not in err


def test_explain_marks_the_failing_clause(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text('START = KeyboardIdle > 900 && TARGET.Owner == "bob"\n'
                    "RUNBENCHMARKS = False\n")
    job = tmp_path / "job.ad"
    job.write_text('Owner = "alice"\nRequestCpus = 1\n')
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--job", str(job),
                       "--set", "KeyboardIdle=3000"], capsys)
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "slot1: START = false"
    owner = next(x for x in lines if 'TARGET.Owner == "bob"' in x)
    assert owner.lstrip().startswith("✗ false")
    keyboard = next(x for x in lines if "KeyboardIdle > 900" in x)
    assert "✗" not in keyboard and "true" in keyboard


def test_explain_opens_referenced_policy_expressions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text("START = KeyboardIdle > 900\nIS_OWNER = (START =?= False)\n")
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--set", "KeyboardIdle=30",
                       "IS_OWNER"], capsys)
    assert out.splitlines()[0] == "slot1: IS_OWNER = true"
    assert any(x.strip().startswith("✗ false") and "KeyboardIdle > 900" in x
               for x in out.splitlines())


def test_module_entry_point(tmp_path: Path) -> None:
    tl = tmp_path / "t.jsonl"
    tl.write_text('{"t": 0, "event": "match"}\n')
    (tmp_path / "empty.conf").write_text("")
    env = {**os.environ, "CONDOR_CONFIG": str(tmp_path / "empty.conf")}
    res = subprocess.run([sys.executable, "-m", "condorpy", "policy", "simulate",
                          "--timeline", str(tl)], capture_output=True, text=True, check=True,
                         env=env)
    assert '"transition": "6"' in res.stdout
