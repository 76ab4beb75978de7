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
        "empty_ad": "",
        "comments_ad": "# only a comment\n\n",
        "empty_json_job": "{}\n",
        "empty_job_timeline": '{"t": 0, "event": "request_claim", "id": "c", "job": {}}\n',
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
    (["config-val", "-config", "{good_conf}", "-dump", "["],
     "-dump '[' is not a valid regular expression"),
    (["status", "--offline", "-config", "{bad_conf}"], "bad_conf, line 2"),
    (["status", "--offline", "-config", "{good_conf}", "-constraint", "Cpus >"], "Cpus >"),
    (["policy", "simulate", "-config", "{good_conf}", "--timeline", "{bad_timeline}"],
     "bad_timeline, line 1"),
    (["policy", "explain", "-config", "{good_conf}", "--set", "KeyboardIdle"], "KeyboardIdle"),
    (["starter", "--job-ad", "{bad_ad}", "--slot-ad", "{slot_ad}", "--execute", "{tmp}"],
     "bad_ad"),
    # an empty job ad is refused, naming where it came from (issue 23, item 6)
    (["policy", "explain", "-config", "{good_conf}", "--job", "{empty_ad}"],
     "the job ad is empty|{empty_ad}"),
    (["policy", "explain", "-config", "{good_conf}", "--job", "{comments_ad}"],
     "the job ad is empty|{comments_ad}"),
    (["policy", "explain", "-config", "{good_conf}", "--job", "{empty_json_job}"],
     "the job ad is empty|{empty_json_job}"),
    (["policy", "simulate", "-config", "{good_conf}", "--timeline", "{empty_job_timeline}"],
     "the job ad is empty|{empty_job_timeline}, line 1"),
    (["classad", "eval", "--my", "{empty_ad}", "1"], "the MY ad is empty|{empty_ad}"),
    (["starter", "--job-ad", "{empty_ad}", "--slot-ad", "{slot_ad}", "--execute", "{tmp}"],
     "the job ad is empty|{empty_ad}"),
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


# --- input that is not UTF-8 text, or JSON nested without end -----------------------

@pytest.fixture()
def raw(tmp_path: Path) -> dict[str, str]:
    deep = "[" * 100_000 + "]" * 100_000
    out = {
        "latin1_ad": b'A = 1\nOwner = "j\xf6rg"\n',
        "latin1_conf": b"X = 1\nSTART = Owner == \"j\xf6rg\"\n",
        "latin1_timeline": b'{"t": 0, "set": {"X": "\xff"}}\n',
        "latin1_inventory": b'{"cpus": 2, "memory_mb": \xff}',
        "deep_timeline": ('{"t": 0, "set": {"X": ' + deep + "}}\n").encode(),
        "deep_job": ('{"A": ' + deep + "}\n").encode(),
        "good_conf": b"use POLICY : Desktop\n",
        "slot_ad": b'Name = "slot1@x"\nCpus = 1\nMemory = 128\n',
    }
    paths = {"tmp": str(tmp_path)}
    for name, data in out.items():
        (tmp_path / name).write_bytes(data)
        paths[name] = str(tmp_path / name)
    return paths


RAW_CASES = [
    (["policy", "simulate", "--timeline", "{latin1_timeline}"],
     "{latin1_timeline} is not UTF-8 text (byte 0xff at offset 23, line 1)"),
    (["policy", "simulate", "--timeline", "{deep_timeline}"],
     "nested deeper than 200 levels (at {deep_timeline}, line 1)"),
    (["policy", "simulate", "-config", "{latin1_conf}", "--timeline", "{deep_timeline}"],
     "configuration file {latin1_conf} is not UTF-8 text (byte 0xf6 at offset 25, line 2)"),
    (["policy", "explain", "-config", "{latin1_conf}"], "{latin1_conf} is not UTF-8"),
    (["policy", "explain", "--job", "{latin1_ad}"],
     "job ad {latin1_ad} is not UTF-8 text (byte 0xf6 at offset 16, line 2)"),
    (["policy", "explain", "--job", "{deep_job}"], "{deep_job}: not JSON: nested deeper"),
    (["starter", "--job-ad", "{latin1_ad}", "--slot-ad", "{slot_ad}", "--execute", "{tmp}"],
     "the job ad {latin1_ad} is not UTF-8"),
    (["starter", "--job-ad", "{slot_ad}", "--slot-ad", "{latin1_ad}", "--execute", "{tmp}"],
     "the slot ad {latin1_ad} is not UTF-8"),
    (["starter", "--config", "{latin1_conf}", "--job-ad", "{slot_ad}", "--slot-ad",
      "{slot_ad}", "--execute", "{tmp}"], "{latin1_conf} is not UTF-8"),
    (["classad", "eval", "--my", "{latin1_ad}", "Owner"], "{latin1_ad} is not UTF-8"),
    (["classad", "eval", "--file", "{latin1_ad}"], "{latin1_ad} is not UTF-8"),
    (["config-val", "-config", "{latin1_conf}", "START"], "{latin1_conf} is not UTF-8"),
    (["status", "--offline", "-config", "{latin1_conf}"], "{latin1_conf} is not UTF-8"),
    (["status", "--offline", "-config", "{good_conf}", "--inventory", "{latin1_inventory}"],
     "the inventory file {latin1_inventory} is not UTF-8 text (byte 0xff at offset 25"),
]


@pytest.mark.parametrize("argv, message", RAW_CASES,
                         ids=[" ".join(c[0][:2]) + f"-{i}" for i, c in enumerate(RAW_CASES)])
def test_undecodable_or_too_deep_input_names_the_file(raw: dict[str, str], argv: list[str],
                                                      message: str) -> None:
    r = run([a.format(**raw) for a in argv])
    assert r.returncode == 1, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert message.format(**raw) in r.stderr, r.stderr


@pytest.mark.parametrize("fmt, data", [("old", b'A = "\xff"\n'),
                                       ("json", b'{"A": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")])
def test_classad_format_refuses_bad_stdin(fmt: str, data: bytes) -> None:
    r = subprocess.run([sys.executable, "-m", "condorpy", "classad", "format", "--in", fmt],
                       input=data, capture_output=True, timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 1 and "internal error" not in err, err
    assert "<stdin>" in err


def test_starter_refuses_an_unwritable_result_before_running_the_job(
        files: dict[str, str], tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    job = tmp_path / "touch.ad"
    job.write_text(f'Cmd = "/bin/touch"\nArguments = "{ran}"\n')
    for result, why in ((tmp_path / "missing" / "final.ad", "does not exist"),
                        (tmp_path, "is a directory")):
        r = run(["starter", "--job-ad", str(job), "--slot-ad", files["slot_ad"],
                 "--execute", files["tmp"], "--result", str(result)])
        assert r.returncode == 1 and "internal error" not in r.stderr
        assert f"--result {result}" in r.stderr and why in r.stderr, r.stderr
        assert not ran.exists(), "the job ran although its final ad had nowhere to go"
