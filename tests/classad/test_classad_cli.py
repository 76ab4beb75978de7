"""`condorpy classad eval` and `condorpy classad format`."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.cli import classad_cmd


def run(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str = "",
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if monkeypatch is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    rc = classad_cmd.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_eval_prints_literals(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["eval", "10", "5 / 2.0", '"te\\"xt"', "true", "x", "1/0", '{1, "a"}',
                      "[a = 1]", "2.5e20"], capsys)
    assert rc == 0
    assert out.splitlines() == ["10", "2.5", '"te\\"xt"', "true", "undefined", "error",
                                '{ 1,"a" }', "[ a = 1 ]", "2.5E+20"]


def test_eval_with_ads_and_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "slot.ad").write_text('Memory = 4096\nState = "Unclaimed"\n'
                                      "Start = TARGET.RequestMemory <= Memory\n")
    (tmp_path / "job.ad").write_text("RequestMemory = 2048\n")
    (tmp_path / "exprs").write_text("Start\n\n1 +\nMY.State\nRequestMemory\n")
    rc, out, err = run(["eval", "--my", str(tmp_path / "slot.ad"), "--target",
                        str(tmp_path / "job.ad"), "--file", str(tmp_path / "exprs"),
                        "Memory * 2"], capsys)
    assert rc == 1  # one line did not parse
    assert out.splitlines() == ["true", "error", '"Unclaimed"', "2048", "8192"]
    assert "line 3" in err and "1 +" in err and len(err.splitlines()) == 1


def test_eval_bad_ad_file_is_a_condorpy_error(tmp_path: Path) -> None:
    (tmp_path / "bad.ad").write_text("A = 1\nB = (\n")
    proc = subprocess.run([sys.executable, "-m", "condorpy", "classad", "eval", "--my",
                           str(tmp_path / "bad.ad"), "1"], capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "bad.ad" in proc.stderr and "line 2" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "condorpy", "classad", "eval", "--my",
                           str(tmp_path / "missing.ad"), "1"], capture_output=True, text=True)
    assert proc.returncode == 1 and "cannot read" in proc.stderr


def test_format_conversions(capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    old = 'A = 1\nB = "x"\nC = A + 2.5\nL = { 1,2 }\n'
    rc, new, _ = run(["format", "--in", "old", "--out", "new"], capsys, old, monkeypatch)
    assert rc == 0 and new == '[ A = 1; B = "x"; C = A + 2.5; L = { 1,2 } ]\n'
    rc, js, _ = run(["format", "--in", "new", "--out", "json"], capsys, new, monkeypatch)
    assert json.loads(js) == {"A": 1, "B": "x", "C": "/Expr(A + 2.5)/", "L": [1, 2]}
    rc, back, _ = run(["format", "--in", "json", "--out", "old"], capsys, js, monkeypatch)
    assert back == old
    rc, two, _ = run(["format", "--in", "old", "--out", "json"], capsys, "A = 1\n\nA = 2\n",
                     monkeypatch)
    assert json.loads(two) == [{"A": 1}, {"A": 2}]
    rc, many, _ = run(["format", "--in", "new", "--out", "new"], capsys,
                      "[a = 1; r = [b = 2]]\n[a = 3]\n", monkeypatch)
    assert many.splitlines() == ["[ a = 1; r = [ b = 2 ] ]", "[ a = 3 ]"]
