"""A bad knob value, end to end: one line on stderr naming the knob, its value, and the
file and line (or environment variable, or --set) it came from; exit status 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.slots.inventory import MachineInventory
from condorpy.slots.inventory_json import inventory_to_json

MACHINE = MachineInventory(cpus=4, memory_mb=8192, disk_kb=1_000_000, detected_cpus=4,
                           hostname="node1", facts={"Arch": "X86_64", "OpSys": "LINUX"})


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.upper().startswith("_CONDOR_")}
    environ.pop("CONDOR_CONFIG", None)
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "condorpy", *args], capture_output=True,
                          text=True, timeout=120, env=environ)


def one_error(r: subprocess.CompletedProcess[str], command: str) -> str:
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    prefix = f"condorpy {command}: error: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix):]


@pytest.fixture()
def machine(tmp_path: Path) -> Path:
    path = tmp_path / "machine.json"
    path.write_text(inventory_to_json(MACHINE))
    return path


@pytest.mark.parametrize("line,message", [
    ("NUM_SLOTS = abc", "NUM_SLOTS = abc at {f}:2 is not an integer"),
    ("SLOTS_CONNECTED_TO_KEYBOARD = x", "SLOTS_CONNECTED_TO_KEYBOARD = x at {f}:2 is not an integer"),
    ("NUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_1_PARTITIONABLE = on",
     "SLOT_TYPE_1_PARTITIONABLE = on at {f}:3 is not a boolean"),
])
def test_status_offline(tmp_path: Path, machine: Path, line: str, message: str) -> None:
    config = tmp_path / "condor_config"
    config.write_text(f"# slots\n{line}\n")
    r = run(["status", "--offline", "-config", str(config), "--inventory", str(machine)])
    assert one_error(r, "status") == message.format(f=config)


def test_status_offline_value_from_the_environment(tmp_path: Path, machine: Path) -> None:
    config = tmp_path / "condor_config"
    config.write_text("NUM_SLOTS = 2\n")
    r = run(["status", "--offline", "-config", str(config), "--inventory", str(machine)],
            env={"_CONDOR_NUM_SLOTS": "abc"})
    assert one_error(r, "status") == \
        "NUM_SLOTS = abc at environment (_CONDOR_NUM_SLOTS) is not an integer"


def test_status_offline_accepts_what_htcondor_accepts(tmp_path: Path, machine: Path) -> None:
    config = tmp_path / "condor_config"
    config.write_text("NUM_SLOTS = $(DETECTED_CPUS) / 2\nSLOTS_CONNECTED_TO_KEYBOARD = 1 + 1\n")
    r = run(["status", "--offline", "-config", str(config), "--inventory", str(machine),
             "-af", "Name"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["slot1@node1", "slot2@node1"]


@pytest.fixture()
def job(tmp_path: Path) -> list[str]:
    (tmp_path / "execute").mkdir()
    (tmp_path / "job.ad").write_text('ClusterId = 1\nProcId = 0\nOwner = "nobody"\n'
                                     'Cmd = "/bin/true"\n')
    (tmp_path / "slot.ad").write_text('Name = "slot1@x"\nCpus = 1\nMemory = 128\n')
    return ["starter", "--job-ad", str(tmp_path / "job.ad"), "--slot-ad",
            str(tmp_path / "slot.ad"), "--execute", str(tmp_path / "execute"),
            "--result", str(tmp_path / "result.ad")]


@pytest.mark.parametrize("value", ["maybe", "on", "yes"])
def test_starter_refuses_what_htcondor_refuses(tmp_path: Path, job: list[str],
                                               value: str) -> None:
    config = tmp_path / "condor_config"
    config.write_text(f"KILLING_TIMEOUT = 5\nUSE_PID_NAMESPACES = {value}\n")
    r = run([*job, "--config", str(config)])
    assert one_error(r, "starter") == \
        f"USE_PID_NAMESPACES = {value} at {config}:2 is not a boolean"
    assert not (tmp_path / "result.ad").exists()


def test_starter_set_and_environment(tmp_path: Path, job: list[str]) -> None:
    config = tmp_path / "condor_config"
    config.write_text("KILLING_TIMEOUT = 5\n")
    r = run([*job, "--config", str(config), "--set", "KILLING_TIMEOUT=soon"])
    assert one_error(r, "starter") == \
        "KILLING_TIMEOUT = soon at the command line (--set) is not a number"
    r = run([*job, "--config", str(config)], env={"_CONDOR_DISABLE_SWAP_FOR_JOB": "off"})
    assert one_error(r, "starter") == ("DISABLE_SWAP_FOR_JOB = off at environment "
                                       "(_CONDOR_DISABLE_SWAP_FOR_JOB) is not a boolean")


def test_config_val_require_local_config_file(tmp_path: Path) -> None:
    config = tmp_path / "condor_config"
    config.write_text(f"LOCAL_CONFIG_FILE = {tmp_path}/local\nREQUIRE_LOCAL_CONFIG_FILE = maybe\n")
    r = run(["config-val", "-config", str(config), "LOCAL_CONFIG_FILE"])
    assert one_error(r, "config-val") == \
        f"REQUIRE_LOCAL_CONFIG_FILE = maybe at {config}:2 is not a boolean"
    # an expression HTCondor evaluates: false, so the missing file is fine
    config.write_text(f"LOCAL_CONFIG_FILE = {tmp_path}/local\n"
                      "REQUIRE_LOCAL_CONFIG_FILE = 1 == 2\n")
    r = run(["config-val", "-config", str(config), "LOCAL_CONFIG_FILE"])
    assert (r.returncode, r.stdout) == (0, f"{tmp_path}/local\n"), r.stderr


def test_config_val_local_config_dir_exclude_regexp(tmp_path: Path) -> None:
    (tmp_path / "config.d").mkdir()
    config = tmp_path / "condor_config"
    config.write_text(f"LOCAL_CONFIG_DIR = {tmp_path}/config.d\n"
                      "LOCAL_CONFIG_DIR_EXCLUDE_REGEXP = (\n")
    r = run(["config-val", "-config", str(config), "LOCAL_CONFIG_DIR"])
    assert one_error(r, "config-val").startswith(
        f"LOCAL_CONFIG_DIR_EXCLUDE_REGEXP = ( at {config}:2 is not a regular expression (")
