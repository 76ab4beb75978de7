"""Shared test set-up: the `vm` markers.

Tests marked ``vm`` need a kernel with every cgroup v2 controller; they run inside the
real-kernel lane (``tests/vm/run``), which sets CONDORPY_VM=1 (and CONDORPY_VM=systemd
when systemd is PID 1). On the host they are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Under pytest-xdist each worker's tmp_path gains "popen-gwN/", and a daemon's state
    # directory there (.../d/state/execute/starter_<pid>.sock) outgrows the 107 bytes
    # of a unix socket's path: its starters cannot be reached. A short base of our own
    # (before pytest's tmp_path factory reads it; xdist derives the workers' from it).
    if getattr(config.option, "numprocesses", None) and config.option.basetemp is None \
            and not hasattr(config, "workerinput"):
        config.option.basetemp = tempfile.mkdtemp(prefix="cpy-", dir="/tmp")
        config.stash[_OWN_BASETEMP] = config.option.basetemp


_OWN_BASETEMP = pytest.StashKey[str]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # kept when something failed, for its daemons' logs; pytest keeps its own last three
    own = session.config.stash.get(_OWN_BASETEMP, None)
    if own is not None and exitstatus == 0:
        shutil.rmtree(own, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lane = os.environ.get("CONDORPY_VM", "")
    # Markers, not keywords: a keyword test would also match the directory tests/vm.
    for item in items:
        if item.get_closest_marker("vm_systemd") and lane != "systemd":
            item.add_marker(pytest.mark.skip(
                reason="needs systemd as PID 1: runs in `tests/vm/run --systemd`"))
        elif item.get_closest_marker("vm") and not lane:
            item.add_marker(pytest.mark.skip(
                reason="needs real cgroup v2 controllers: runs in the `tests/vm/run` lane"))
