"""Root keeps its state only where no other user can change it: an attacker who made
(or can write) a directory on the way to SPOOL, LOCK or EXECUTE stops the start with
a clear error instead of getting root to make sandboxes and sockets in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.errors import StartdError
from condorpy.startd.paths import StatePaths, check_state_dirs
from tests.attackers import User, attacker, open_base  # noqa: F401
from tests.startd.daemon_helpers import Daemon


def _paths(root: Path) -> StatePaths:
    for d in ("spool", "log", "execute"):
        (root / d).mkdir(parents=True, exist_ok=True)
    return StatePaths(spool=root / "spool", log=root / "log", lock=root / "log",
                      execute=root / "execute", socket=root / "log" / "s.sock")


def test_root_owned_tree_is_accepted(open_base: Path) -> None:
    check_state_dirs(_paths(open_base / "state"), 0)


def test_sticky_ancestor_is_accepted_but_not_a_writable_state_dir(open_base: Path) -> None:
    tmp = open_base / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)
    paths = _paths(tmp / "state")
    check_state_dirs(paths, 0)
    os.chmod(paths.execute, 0o1777)
    with pytest.raises(StartdError, match=r"EXECUTE .*writable by others \(mode 1777\)"):
        check_state_dirs(paths, 0)


def test_directory_made_by_an_attacker_under_tmp_is_refused(open_base: Path,
                                                             attacker: User) -> None:
    tmp = open_base / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o1777)
    # the attacker gets there first and makes the daemon's LOCAL_DIR its own
    assert attacker.call(lambda: os.mkdir(tmp / "condorpy", 0o755)).kind == "ok"
    d = Daemon(open_base / "d", extra=f"LOCAL_DIR = {tmp / 'condorpy'}\n")
    res = subprocess.run([sys.executable, "-m", "condorpy", "startd", "-f"], env=d.env(),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert f"belongs to uid {attacker.uid}" in res.stderr
    assert "Traceback" not in res.stderr
    assert not list((tmp / "condorpy").glob("**/*.sock"))


def test_group_writable_ancestor_is_refused(open_base: Path) -> None:
    mid = open_base / "shared"
    paths = _paths(mid / "state")
    os.chmod(mid, 0o775)
    with pytest.raises(StartdError, match="writable by its group"):
        check_state_dirs(paths, 0)


def test_symlinked_state_dir_is_checked_where_it_points(open_base: Path,
                                                        attacker: User) -> None:
    target = attacker.home / "state"
    paths = _paths(target)
    for d in (target, paths.spool, paths.log, paths.execute):
        os.chown(d, attacker.uid, attacker.gid)
    link = open_base / "link"
    link.symlink_to(target)
    with pytest.raises(StartdError, match=f"belongs to uid {attacker.uid}"):
        check_state_dirs(StatePaths(spool=link / "spool", log=link / "log",
                                    lock=link / "log", execute=link / "execute",
                                    socket=link / "log" / "s.sock"), 0)
