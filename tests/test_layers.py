"""The layer rule of ARCHITECTURE.md: each package imports only the layers below it.

Decisions (classad, config, slots, policy) never import the I/O shell (machine, starter,
startd) or the command front ends, so they stay testable without a host.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "condorpy"

# errors and inputs (reading untrusted text and JSON) are modules below every layer.
ALLOWED: dict[str, set[str]] = {
    "classad": {"classad", "errors", "clock", "inputs"},
    "config": {"config", "classad", "errors", "clock", "inputs"},
    "slots": {"slots", "config", "classad", "errors", "clock", "inputs"},
    "policy": {"policy", "slots", "config", "classad", "errors", "clock", "inputs"},
    "machine": {"machine", "slots", "config", "classad", "errors", "clock", "inputs"},
    "starter": {"starter", "machine", "config", "classad", "errors", "clock", "inputs"},
    "pool": {"pool", "starter", "policy", "machine", "slots", "config", "classad", "errors",
             "clock", "inputs"},
    # the local schedd; starter only for the reserved-attribute rule the starter also keeps
    "queue": {"queue", "policy", "slots", "config", "classad", "starter", "errors", "clock",
              "inputs"},
    "startd": {"startd", "queue", "pool", "starter", "policy", "machine", "slots", "config", "classad",
               "errors", "clock", "inputs"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "condorpy" and len(parts) > 1:
                out.add(parts[1])
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_layers(package: str) -> None:
    bad = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        wrong = imported_packages(path) - ALLOWED[package]
        if wrong:
            bad[str(path.relative_to(ROOT))] = sorted(wrong)
    assert not bad, f"{package} imports layers above it: {bad}"
