"""The pristine-Debian lane runs only when asked for (``pytest -m debian tests/debian``,
as bin/test does): it takes root and minutes, and a host-lane run must not pick it up."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "debian" in (config.option.markexpr or "").replace("not debian", ""):
        return
    skip = pytest.mark.skip(reason="the pristine-Debian lane: runs with "
                                   "`pytest -m debian tests/debian` (bin/test)")
    for item in items:
        if item.get_closest_marker("debian"):
            item.add_marker(skip)
