"""Two daemons on one host, root's and an ordinary user's personal one: a command with
``-config FILE`` reaches the daemon FILE configures, never silently the other.

The user's personal daemon runs from a file that names the system's state directories
(the shipped configuration, say), which the user cannot write: it keeps its state under
``$XDG_STATE_HOME/condorpy`` instead (condorpy.startd.paths.daemon_paths). Its stand-in
here is a real daemon run by root from that same file with those directories set by
``_CONDOR_*`` (a test's interpreter may be out of an ordinary user's reach), and the
commands are run as a real ordinary user."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from condorpy.startd.paths import SOCKET_NAME
from tests.attackers import User, open_base, victim  # noqa: F401
from tests.startd.daemon_helpers import Daemon


class Personal(Daemon):
    """A daemon run from ``config`` with its state where ``user``'s own would be."""

    def __init__(self, base: Path, config_text: str, state_home: Path) -> None:
        super().__init__(base)
        self.config.write_text(config_text)
        self.config.chmod(0o644)
        self.root = state_home / "condorpy"
        self.socket = self.root / "lock" / SOCKET_NAME

    def env(self) -> dict[str, str]:
        env = super().env()
        for name in ("spool", "log", "lock", "execute"):
            env[f"_CONDOR_{name.upper()}"] = str(self.root / name)
        return env


@pytest.fixture
def two(open_base: Path) -> Iterator[tuple[Daemon, Personal, Path]]:  # noqa: F811
    system = Daemon(open_base / "system", extra="MARKER = system\n")
    system.config.chmod(0o644)
    state_home = open_base / "state-home"
    state_home.mkdir(mode=0o755)
    # the user's file: the system's directories, a knob of its own
    mine = system.config.read_text().replace("MARKER = system", "MARKER = personal")
    personal = Personal(open_base / "personal", mine, state_home)
    system.start()
    personal.start()
    try:
        yield system, personal, state_home
    finally:
        for d in (personal, system):
            d.stop()
            d.kill_leftovers()


def _as(user: User, state_home: Path, *argv: str,
        condor_config: Path | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CONDOR_CONFIG"}
    env["XDG_STATE_HOME"] = str(state_home)
    if condor_config is not None:
        env["CONDOR_CONFIG"] = str(condor_config)
    got = user.cli(list(argv), env=env)
    return got.rc, got.stdout, got.stderr


def test_config_names_the_daemon_a_command_reaches(
        two: tuple[Daemon, Personal, Path], victim: User) -> None:  # noqa: F811
    system, personal, state_home = two
    rc, out, err = _as(victim, state_home, "config-val", "-startd", "-config",
                       str(personal.config), "MARKER")
    assert (rc, out.strip()) == (0, "personal"), err
    rc, out, err = _as(victim, state_home, "q", "-config", str(personal.config))
    assert rc == 0, err
    assert str(personal.socket) in out and str(system.socket) not in out
    # $CONDOR_CONFIG names a file as -config does
    rc, out, err = _as(victim, state_home, "config-val", "-startd", "MARKER",
                       condor_config=personal.config)
    assert (rc, out.strip()) == (0, "personal"), err
    # the system's file still reaches the system's daemon
    rc, out, err = _as(victim, state_home, "config-val", "-startd", "-config",
                       str(system.config), "MARKER")
    assert (rc, out.strip()) == (0, "system"), err


def test_the_named_configs_daemon_not_running_is_an_error_naming_the_socket(
        two: tuple[Daemon, Personal, Path], victim: User) -> None:  # noqa: F811
    system, personal, state_home = two
    personal.stop()
    rc, out, err = _as(victim, state_home, "q", "-config", str(personal.config))
    assert rc == 1 and out == ""
    assert f"no control socket at {personal.socket}" in err
    assert f"{system.socket} belongs to the daemon of {system.config.resolve()}" in err
