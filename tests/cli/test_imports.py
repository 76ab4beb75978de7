"""The everyday commands start without what they do not need: importing a client
command's module, or running it, in a fresh interpreter loads neither the machine
probes nor the libraries only the daemon uses, and config-val of a plain knob does not
probe the machine (issue 24: fast commands)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What the daemon, the starter, the probes or `status --offline` need, and no command
# that talks to a running daemon or prints a knob does.
HEAVY = ("pyroute2", "psutil", "cryptography", "prometheus_client", "lark", "regex",
         "sqlite3", "condorpy.machine.probe", "condorpy.machine.network",
         "condorpy.startd.core", "condorpy.startd.daemon", "condorpy.startd.control",
         "condorpy.starter.starter", "condorpy.policy.engine", "condorpy.pool")

CLIENT_MODULES = ("condorpy.cli.main", "condorpy.cli.queue_cmds", "condorpy.cli.status_cmd",
                  "condorpy.cli.daemon_cmds", "condorpy.cli.config_val")


def _loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    full = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    res = subprocess.run([sys.executable, "-c", full], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                         timeout=120)
    assert res.returncode == 0, res.stderr
    return set(json.loads(res.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules
                  if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("module", CLIENT_MODULES)
def test_client_command_module_imports_nothing_heavy(module: str) -> None:
    assert _heavy(_loaded_after(f"import {module}")) == []


def _config(tmp_path: Path) -> Path:
    conf = tmp_path / "condor_config"
    conf.write_text(f"LOCAL_DIR = {tmp_path}\nSTART = KeyboardIdle > 60 && $(MY_START)\n"
                    "MY_START = true\n")
    return conf


def _run_cli(argv: list[str]) -> str:
    """Run ``condorpy ARGV`` in this interpreter, its output kept, its exit status
    ignored (a command whose daemon is not running ends in an error)."""
    return ("import contextlib, io\nfrom condorpy.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), "
            "contextlib.redirect_stderr(io.StringIO()):\n"
            f"    main({argv!r})\n")


@pytest.mark.parametrize("argv", [["q"], ["who"], ["history"], ["status"]])
def test_daemon_commands_load_nothing_heavy(tmp_path: Path, argv: list[str]) -> None:
    # no daemon listens: the command reads its configuration, finds the socket and
    # fails to connect, which is as far as its own start-up goes
    conf = _config(tmp_path)
    loaded = _loaded_after(_run_cli([*argv, "-config", str(conf)]))
    assert _heavy(loaded) == []
    # the configuration did not measure the machine to find the socket
    assert "platform" not in loaded and "condorpy.machine.facts" not in loaded


def test_config_val_of_a_plain_knob_never_probes(tmp_path: Path) -> None:
    conf = _config(tmp_path)
    code = ("import condorpy.machine.facts as facts\n"
            "def refuse():\n"
            "    raise SystemExit('config-val probed the machine')\n"
            "facts.probed_facts = refuse\n"
            "import condorpy.config.facts as cheap\n"
            "cheap.host_facts = refuse\n"
            "import contextlib, io\n"
            "from condorpy.cli.main import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    assert main(['config-val', '-config', {str(conf)!r}, 'START', "
            "'MY_START', 'LOCAL_DIR']) == 0\n"
            "print(repr(out.getvalue()))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == repr(f"KeyboardIdle > 60 && true\ntrue\n{tmp_path}\n")
    loaded = _loaded_after(_run_cli(["config-val", "-config", str(conf), "START"]))
    assert _heavy(loaded) == [] and "condorpy.machine.facts" in loaded


def test_config_val_of_a_detected_knob_gives_the_probed_value(tmp_path: Path) -> None:
    conf = _config(tmp_path)
    res = subprocess.run([sys.executable, "-m", "condorpy", "config-val", "-config", str(conf),
                          "DETECTED_CPUS", "OPSYSANDVER"], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert res.returncode == 0, res.stderr
    from condorpy.machine.facts import probed_facts
    facts = probed_facts()
    assert res.stdout.splitlines() == [str(facts.cpus), facts.extra["OPSYSANDVER"]]


def test_probed_names_cover_every_fact_the_probe_gives() -> None:
    # a look-up measures only for a name the facts may define: one the probe gives and
    # PROBED_NAMES lacks would read as undefined
    from condorpy.machine.facts import PROBED_NAMES
    from condorpy.machine.probe import detected_facts
    assert set(detected_facts()) <= PROBED_NAMES


def test_the_command_line_imports_its_command_without_the_collector(tmp_path: Path) -> None:
    # collecting while the modules load cost a command line a tenth of its start-up;
    # a caller of main() in the same process keeps its collector as it was
    conf = _config(tmp_path)
    code = ("import gc, sys\n"
            "seen = []\n"
            "class Spy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'condorpy.cli.config_val':\n"
            "            seen.append(gc.isenabled())\n"
            "        return None\n"
            "sys.meta_path.insert(0, Spy())\n"
            "from condorpy.cli.main import main\n"
            f"sys.argv = ['condorpy', 'config-val', '-config', {str(conf)!r}, 'MY_START']\n"
            "assert main() == 0\n"
            "assert seen == [False] and gc.isenabled(), seen\n"
            "del sys.modules['condorpy.cli.config_val']\n"
            f"assert main(['config-val', '-config', {str(conf)!r}, 'MY_START']) == 0\n"
            "assert seen == [False, True], seen\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "true\ntrue\n"


def test_a_daemon_without_a_pool_loads_neither_cryptography_nor_pyroute2() -> None:
    """Each is about 8-20 MB of the daemon's memory for its whole life: cryptography
    comes with the first pool session, pyroute2 with the namespace work of a job; the
    machine's addresses come from psutil."""
    loaded = _loaded_after(
        "import condorpy.startd.daemon\n"
        "from condorpy.machine.network import probe_network\n"
        "from condorpy.machine.roots import HostRoots\n"
        "assert probe_network(HostRoots()).interfaces\n")
    assert [m for m in loaded if m.split(".")[0] in ("cryptography", "pyroute2")] == []
