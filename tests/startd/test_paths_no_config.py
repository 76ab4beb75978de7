"""With no configuration file found, the daemon and every command take the installed
package's paths, never ``/log`` and ``/spool`` under an empty LOCAL_DIR (issue #23);
CONDOR_CONFIG=ONLY_ENV without LOCAL_DIR is refused by the daemon and its clients."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.config import config as config_module
from condorpy.config import load_config
from condorpy.errors import ConfigError
from condorpy.startd.paths import client_socket, configured_paths

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_config_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config_module, "DEFAULT_CONFIG_PATH", str(tmp_path / "missing"))


def test_no_configuration_means_the_packages_paths(no_config_installed: None) -> None:
    cfg = load_config(env={})
    paths = configured_paths(cfg)
    shipped = configured_paths(load_config(str(ROOT / "etc" / "condor_config"), env={}))
    assert paths == shipped     # the daemon the package runs is where clients look
    assert (str(paths.log), str(paths.spool), str(paths.execute), str(paths.socket)) == (
        "/var/log/condorpy", "/var/lib/condorpy/spool", "/var/lib/condorpy/execute",
        "/run/condorpy/condorpy_startd.sock")
    where = cfg.where("LOG")
    assert where is not None and "no configuration file" in where[0]
    assert client_socket(cfg, env={"XDG_STATE_HOME": "/nonexistent"}) == paths.socket


def test_the_environment_still_wins_over_the_packages_paths(no_config_installed: None) -> None:
    cfg = load_config(env={"_CONDOR_LOCAL_DIR": "/srv/ep", "_CONDOR_LOG": "/srv/log"})
    paths = configured_paths(cfg)
    assert (str(paths.log), str(paths.spool), str(paths.lock)) == (
        "/srv/log", "/srv/ep/spool", "/run/condorpy")


def test_only_env_without_local_dir_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        configured_paths(load_config("ONLY_ENV", env={}))
    assert "LOCAL_DIR is not set" in str(err.value) and "/spool" in str(err.value)
    paths = configured_paths(load_config("ONLY_ENV", env={"_CONDOR_LOCAL_DIR": "/srv/ep"}))
    assert str(paths.spool) == "/srv/ep/spool" and str(paths.log) == "/srv/ep/log"


@pytest.mark.parametrize("command", [["q"], ["history"], ["startd", "-f"]])
def test_daemon_and_clients_refuse_only_env_alike(command: list[str], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("_CONDOR_")}
    env.update(CONDOR_CONFIG="ONLY_ENV", PYTHONPATH=str(ROOT), XDG_STATE_HOME=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "condorpy", *command], capture_output=True,
                       text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 1
    assert "LOCAL_DIR is not set" in r.stderr and "Traceback" not in r.stderr, r.stderr
