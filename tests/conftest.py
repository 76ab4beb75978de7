"""Shared test set-up: the `vm` markers.

Tests marked ``vm`` need a kernel with every cgroup v2 controller; they run inside the
real-kernel lane (``tests/vm/run``), which sets CONDORPY_VM=1 (and CONDORPY_VM=systemd
when systemd is PID 1). On the host they are skipped with the reason.
"""

from __future__ import annotations

import os

import pytest


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
