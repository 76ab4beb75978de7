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


# The daemon's rooms import one another one way: a circle (there was one of seven
# modules: commands, cron, daemon, hooks, pool_link, pool_now, pool_reconnect) means no
# part can be read, tested or replaced without the rest.
ACYCLIC = ("startd", "queue", "policy")


def _module_graph(package: str) -> dict[str, set[str]]:
    base = ROOT / package
    modules = {".".join(("condorpy",) + p.relative_to(ROOT).with_suffix("").parts): p
               for p in base.rglob("*.py") if p.name != "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []           # typing-only imports are not run
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    deps.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("package", ACYCLIC)
def test_modules_import_without_circles(package: str) -> None:
    assert not _cycles(_module_graph(package))


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
