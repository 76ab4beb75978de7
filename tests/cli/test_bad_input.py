"""Bad input to any command gives a one-line error naming its source, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def run(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "condorpy", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    out = {
        "bad_ad": "A = 1\nB = (\n",
        "bad_conf": "X = 1\nif true\nY = 2\n",
        "cycle_conf": "include : cycle_conf\n",
        "bad_timeline": '{"t": 0, "event": "request_claim"}\nnot json\n',
        "good_conf": "use POLICY : Desktop\n",
        "job_no_cmd": 'Owner = "nobody"\nJobUniverse = 5\n',
        "slot_ad": 'Name = "slot1@x"\nCpus = 1\nMemory = 128\n',
    }
    paths = {}
    for name, text in out.items():
        p = tmp_path / name
        p.write_text(text)
        paths[name] = str(p)
    (tmp_path / "cycle_conf").write_text(f"include : {tmp_path / 'cycle_conf'}\n")
    paths["tmp"] = str(tmp_path)
    return paths


CASES = [
    (["classad", "eval", "--my", "{bad_ad}", "A"], "{bad_ad}|line 2"),
    (["classad", "eval", "1 +"], "expected an expression"),
    (["config-val", "-config", "{bad_conf}", "X"], "bad_conf, line 2"),
    (["config-val", "-config", "{cycle_conf}", "X"], "cycle_conf"),
    (["config-val", "-config", "{tmp}/missing", "X"], "missing"),
    (["status", "--offline", "-config", "{bad_conf}"], "bad_conf, line 2"),
    (["status", "--offline", "-config", "{good_conf}", "-constraint", "Cpus >"], "Cpus >"),
    (["policy", "simulate", "-config", "{good_conf}", "--timeline", "{bad_timeline}"],
     "bad_timeline, line 1"),
    (["policy", "explain", "-config", "{good_conf}", "--set", "KeyboardIdle"], "KeyboardIdle"),
    (["starter", "--job-ad", "{bad_ad}", "--slot-ad", "{slot_ad}", "--execute", "{tmp}"],
     "bad_ad"),
]


@pytest.mark.parametrize("argv, names", CASES, ids=[" ".join(c[0][:2]) + f"-{i}"
                                                   for i, c in enumerate(CASES)])
def test_bad_input_is_a_clear_error(files: dict[str, str], argv: list[str], names: str) -> None:
    r = run([a.format(**files) for a in argv])
    assert "Traceback" not in r.stderr + r.stdout
    assert r.returncode != 0
    for part in names.split("|"):
        assert part.format(**files) in r.stderr, r.stderr


def test_format_reads_bad_stdin_without_traceback() -> None:
    r = run(["classad", "format", "--in", "new", "--out", "json"], stdin="[ a = ")
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "<stdin>" in r.stderr


def test_starter_holds_a_job_without_cmd(files: dict[str, str], tmp_path: Path) -> None:
    result = tmp_path / "final.ad"
    r = run(["starter", "--job-ad", files["job_no_cmd"], "--slot-ad", files["slot_ad"],
             "--execute", files["tmp"], "--result", str(result)])
    assert "Traceback" not in r.stderr
    text = result.read_text()
    assert "HoldReasonCode = 6" in text
