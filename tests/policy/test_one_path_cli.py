"""`policy simulate` and `policy explain` find and read the configuration as every
command does, report a bad knob the same way, and explain this machine and the whole
match of a job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from condorpy.cli.main import main as condorpy_main
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_to_json

CLAIM = ('{"t": 0, "event": "request_claim", "id": "c1", "job": '
         '{"Owner": "alice", "RequestCpus": 1, "RequestMemory": 64, "RequestDisk": 10}}\n')


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = condorpy_main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _refused(out: str) -> bool:
    return any(json.loads(x).get("action") == "claim_refused" for x in out.splitlines())


@pytest.fixture
def no_default_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CONDOR_CONFIG", "_CONDOR_START", "CONDORPY_INVENTORY"):
        monkeypatch.delenv(var, raising=False)


def test_simulate_finds_condor_config_and_condor_variables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        no_default_config: None) -> None:
    conf = tmp_path / "condor_config"
    conf.write_text("START = False\n")
    tl = tmp_path / "t.jsonl"
    tl.write_text(CLAIM)
    monkeypatch.setenv("CONDOR_CONFIG", str(conf))
    rc, out, _ = _run(["policy", "simulate", "--timeline", str(tl)], capsys)
    assert rc == 0 and _refused(out)
    # _CONDOR_START overrides the file, as in HTCondor
    monkeypatch.setenv("_CONDOR_START", "True")
    rc, out, _ = _run(["policy", "simulate", "--timeline", str(tl)], capsys)
    assert rc == 0 and not _refused(out)
    # -config (also spelled --config) wins over $CONDOR_CONFIG
    monkeypatch.delenv("_CONDOR_START")
    other = tmp_path / "other"
    other.write_text("START = True\n")
    for flag in ("-config", "--config"):
        rc, out, _ = _run(["policy", "simulate", flag, str(other), "--timeline", str(tl)],
                          capsys)
        assert rc == 0 and not _refused(out)


def test_explain_finds_condor_config_and_condor_variables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        no_default_config: None) -> None:
    conf = tmp_path / "condor_config"
    conf.write_text("START = False\n")
    monkeypatch.setenv("CONDOR_CONFIG", str(conf))
    rc, out, _ = _run(["policy", "explain"], capsys)
    assert rc == 0 and out.splitlines()[0] == "slot1: START = false"
    monkeypatch.setenv("_CONDOR_START", "KeyboardIdle > -1")
    rc, out, _ = _run(["policy", "explain"], capsys)
    assert rc == 0 and out.splitlines()[0] == "slot1: START = true"


def test_missing_configuration_is_one_clear_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        no_default_config: None) -> None:
    monkeypatch.setenv("CONDOR_CONFIG", str(tmp_path / "nowhere"))
    rc, _, err = _run(["policy", "explain"], capsys)
    assert rc == 1 and "nowhere" in err and "Traceback" not in err


@pytest.mark.parametrize("knob, value, kind", [
    ("POLLING_INTERVAL", "abc", "an integer"),
    ("ENABLE_BACKFILL", "maybe", "a boolean"),
    ("NUM_SLOTS", "two", "an integer"),
    ("MAX_CLAIM_ALIVES_MISSED", "1.5.2", "an integer"),
])
@pytest.mark.parametrize("command", ["simulate", "explain"])
def test_a_bad_knob_names_its_file_and_line(command: str, knob: str, value: str, kind: str,
                                            tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c"
    conf.write_text(f"# a policy\nRUNBENCHMARKS = False\n{knob} = {value}\n")
    argv = ["policy", command, "-config", str(conf)]
    if command == "simulate":
        (tmp_path / "t.jsonl").write_text(CLAIM)
        argv += ["--timeline", str(tmp_path / "t.jsonl")]
    rc, _, err = _run(argv, capsys)
    assert rc == 1
    assert f"{knob} = {value} at {conf}:3 is not {kind}" in err
    assert len(err.strip().splitlines()) == 1


def test_on_is_not_a_boolean_anywhere(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """HTCondor's param_boolean refuses `on`; so does every condorpy command."""
    conf = tmp_path / "c"
    conf.write_text("ENABLE_BACKFILL = on\n")
    (tmp_path / "t.jsonl").write_text(CLAIM)
    rc, _, err = _run(["policy", "simulate", "-config", str(conf), "--timeline",
                       str(tmp_path / "t.jsonl")], capsys)
    assert rc == 1 and f"ENABLE_BACKFILL = on at {conf}:1 is not a boolean" in err


MEASURED = MachineInventory(cpus=2, memory_mb=24000, disk_kb=50_000_000, hostname="desk1",
                            total_load_avg=0.4, keyboard_idle=33, console_idle=44,
                            facts={"Arch": "X86_64", "OpSys": "LINUX"})


def test_explain_describes_this_machine(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c"
    conf.write_text("use POLICY : Desktop\nNUM_SLOTS = 1\n")
    inv = tmp_path / "machine.json"
    inv.write_text(inventory_to_json(MEASURED))
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--inventory", str(inv),
                       "Memory", "Disk", "KeyboardIdle", "ConsoleIdle", "LoadAvg", "START"],
                      capsys)
    assert rc == 0
    lines = [x for x in out.splitlines() if x.startswith("slot1: ")]
    assert lines[:5] == ["slot1: Memory = 24000", "slot1: Disk = 50000000",
                         "slot1: KeyboardIdle = 33", "slot1: ConsoleIdle = 44",
                         "slot1: LoadAvg = 0.4"]
    # Desktop's START wants the keyboard idle for 15 minutes: not yet
    assert lines[5] == "slot1: START = false"
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--inventory", str(inv),
                       "--set", "KeyboardIdle=3600", "START"], capsys)
    # the owner is away, but the measured load (0.4) is over Desktop's 0.3
    assert out.splitlines()[0] == "slot1: START = false"
    assert "  ✗ false      (LoadAvg - CondorLoadAvg) <= 0.3" in out
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--inventory", str(inv),
                       "--set", "KeyboardIdle=3600", "--set", "LoadAvg=0.1", "START"],
                      capsys)
    assert out.splitlines()[0] == "slot1: START = true"


def test_explain_judges_the_whole_match(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c"
    conf.write_text("")
    inv = tmp_path / "machine.json"
    inv.write_text(inventory_to_json(MEASURED))
    big = tmp_path / "big.ad"
    big.write_text('Owner = "alice"\nRequestCpus = 64\nRequestMemory = 999999\n'
                   'RequestDisk = 100\nRequirements = TARGET.Memory >= RequestMemory\n')
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--inventory", str(inv),
                       "--job", str(big)], capsys)
    assert rc == 0
    assert "slot1: START = true" in out
    assert "slot1: the job's Requirements = false" in out
    assert "slot1: Requirements = false" in out
    assert "slot1: the request fits = false (insufficient Cpus" in out
    assert out.splitlines()[-1] == ("slot1: the job does not match: the job's Requirements, "
                                    "the slot's Requirements, the request's size")
    small = tmp_path / "small.ad"
    small.write_text('Owner = "alice"\nRequestCpus = 1\nRequestMemory = 1000\n'
                     'RequestDisk = 100\nRequirements = TARGET.Memory >= RequestMemory\n')
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--inventory", str(inv),
                       "--job", str(small)], capsys)
    assert out.splitlines()[-1] == "slot1: the job matches"
    assert "slot1: the request fits = true (a d-slot of 1 Cpus, 1024 MB (1 GiB) memory" in out


def test_explain_knows_every_slot_status_shows(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c"
    conf.write_text("SLOT_TYPE_1 = cpus=1\nNUM_SLOTS_TYPE_1 = 2\n"
                    "SLOT_TYPE_1_START = Owner == \"bob\"\nuse FEATURE : StaticSlots\n")
    inv = tmp_path / "machine.json"
    inv.write_text(inventory_to_json(MEASURED))
    rc, out, _ = _run(["policy", "explain", "-config", str(conf), "--inventory", str(inv),
                       "--slot", "slot2"], capsys)
    assert rc == 0 and out.splitlines()[0].startswith("slot2: START = ")


def test_explain_a_start_of_thousands_of_owners(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A long flat chain is one level of alternatives, not thousands of nested ones."""
    owners = " || ".join(f'Owner == "u{i}"' for i in range(3000))
    conf = tmp_path / "c"
    conf.write_text(f"NUM_SLOTS = 1\nSTART = {owners}\n")
    job = tmp_path / "job.ad"
    job.write_text('Owner = "u2999"\nRequestCpus = 1\nRequestMemory = 1\nRequestDisk = 1\n')
    rc, out, err = _run(["policy", "explain", "-config", str(conf), "--job", str(job)],
                        capsys)
    assert rc == 0, err
    assert out.splitlines()[0] == "slot1: START = true"
    job.write_text('Owner = "nobody"\n')
    rc, out, err = _run(["policy", "explain", "-config", str(conf), "--job", str(job)],
                        capsys)
    assert rc == 0, err
    alternatives = [x for x in out.splitlines()
                    if x.startswith("  ✗ false      Owner == ") and "||" not in x]
    assert len(alternatives) == 3000
