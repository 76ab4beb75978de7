"""`condorpy config-val`: condor_config_val's output contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture()
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "condor_config"
    path.write_text("A = $(B) x\nB = 1\nE =\nSTARTD.P = startd\nP = plain\n")
    return path


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "condorpy", "config-val", *args],
                          capture_output=True, text=True, timeout=60, env=env)


def test_values_one_per_line(conf: Path) -> None:
    r = run("-config", str(conf), "A", "B", "UPDATE_INTERVAL", "P")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["1 x", "1", "300", "startd"]


def test_undefined_name(conf: Path) -> None:
    r = run("-config", str(conf), "B", "NO_SUCH_KNOB")
    assert r.returncode == 1
    assert r.stdout == "1\n"
    assert r.stderr.strip() == "Not defined: NO_SUCH_KNOB"


def test_raw(conf: Path) -> None:
    assert run("-config", str(conf), "-raw", "A").stdout == "$(B) x\n"


def test_verbose_shows_place_and_raw(conf: Path) -> None:
    r = run("-config", str(conf), "-verbose", "A", "UPDATE_INTERVAL")
    assert r.stdout.splitlines() == [
        "A = 1 x", f" # at: {conf}, line 1", " # raw: $(B) x",
        "UPDATE_INTERVAL = 300", " # at: <Default>", " # raw: 300"]


def test_dump_with_regex(conf: Path) -> None:
    r = run("-config", str(conf), "-dump", "^(A|B|E)$")
    assert r.stdout.splitlines() == ["A = 1 x", "B = 1", "E = "]


def test_condor_config_from_environment(conf: Path) -> None:
    import os
    env = dict(os.environ, CONDOR_CONFIG=str(conf), _CONDOR_B="2")
    r = run("A", env=env)
    assert r.stdout == "2 x\n"


def test_subsystem_option(conf: Path) -> None:
    assert run("-config", str(conf), "-subsystem", "SCHEDD", "P").stdout == "plain\n"


def test_empty_knob_is_not_defined(conf: Path) -> None:
    # condor_config_val prints "Not defined" for a knob set to nothing, even one with
    # a built-in default; -raw shows the empty text as written
    conf.write_text(conf.read_text() + "CLAIM_WORKLIFE =\n")
    r = run("-config", str(conf), "E", "CLAIM_WORKLIFE", "B")
    assert r.returncode == 1
    assert r.stdout == "1\n"
    assert r.stderr.splitlines() == ["Not defined: E", "Not defined: CLAIM_WORKLIFE"]
    assert run("-config", str(conf), "-raw", "E").stdout == "\n"


def test_verbose_empty_knob_still_names_its_place(conf: Path) -> None:
    r = run("-config", str(conf), "-verbose", "E")
    assert r.returncode == 1
    assert r.stderr.strip() == "Not defined: E"
    assert r.stdout.splitlines() == [f" # at: {conf}, line 3", " # raw: "]
