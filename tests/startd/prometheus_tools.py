"""Debian's `prometheus` package (prometheus and promtool) for the metrics tests:
installed with apt-get when missing and the tests run as root, else the tests that
need it are skipped with the reason."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

_tried: list[str] = []


def ensure_prometheus() -> tuple[str, str]:
    """Paths of prometheus and promtool, installing the package if need be."""
    prom, tool = shutil.which("prometheus"), shutil.which("promtool")
    if prom and tool:
        return prom, tool
    if os.geteuid() != 0:
        pytest.skip("needs Debian's prometheus package (apt-get install prometheus); "
                    "not installed and not root to install it")
    if not _tried:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        res = subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y",
                              "-q", "--no-install-recommends", "prometheus"], env=env, capture_output=True, text=True,
                             timeout=600)
        if res.returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True,
                           timeout=600)
            res = subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "install",
                                  "-y", "-q", "--no-install-recommends", "prometheus"], env=env,
                                 capture_output=True, text=True, timeout=600)
        _tried.append(res.stdout[-2000:] + res.stderr[-2000:])
    prom, tool = shutil.which("prometheus"), shutil.which("promtool")
    if not (prom and tool):
        pytest.fail(f"apt-get install prometheus did not give prometheus and promtool: "
                    f"{_tried[0]}")
    return prom, tool
