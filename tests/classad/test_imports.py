"""The package's import structure: condorpy/classad imports its own modules at module
level only (so the graph is visible and acyclic), and nowhere in condorpy is an import of
condorpy's own modules wrapped in try/except (a broken module must fail loudly, not
leave features silently missing)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "condorpy"

# try/except around condorpy imports outside condorpy/classad, owned by other work
# (listed so that no new one appears).
TRY_IMPORTS_LEFT = {
    ("config/config.py", "condorpy.classad"),
    ("config/macros.py", "condorpy.classad"),
    ("policy/explain.py", "condorpy.classad"),
}


# The one deliberate exception: the built-in function families load at the first look-up
# of a function name, not with the library (a command line that evaluates no call, such
# as `condorpy q`, never pays for them); the families are listed there in one import.
LAZY_IMPORTS = {("classad/functions/__init__.py", "condorpy.classad.functions")}


def _own_imports(tree: ast.AST) -> list[tuple[ast.AST, str, list[ast.AST]]]:
    """(import node, module, its ancestors) for every import of a condorpy module."""
    out: list[tuple[ast.AST, str, list[ast.AST]]] = []

    def walk(node: ast.AST, ancestors: list[ast.AST]) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom):
                mods = ["." * node.level + (node.module or "")]
            else:
                mods = [a.name for a in node.names]
            for m in mods:
                if m.startswith("condorpy") or m.startswith("."):
                    out.append((node, m, ancestors))
        for child in ast.iter_child_nodes(node):
            walk(child, ancestors + [node])

    walk(tree, [])
    return out


def _type_checking_only(ancestors: list[ast.AST]) -> bool:
    return any(isinstance(a, ast.If) and "TYPE_CHECKING" in ast.unparse(a.test)
               for a in ancestors)


def _scan() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    local: set[tuple[str, str]] = set()
    tried: set[tuple[str, str]] = set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node, mod, ancestors in _own_imports(ast.parse(path.read_text())):
            if _type_checking_only(ancestors):
                continue
            if any(isinstance(a, ast.Try) for a in ancestors):
                tried.add((rel, mod))
            if rel.startswith("classad/") and any(
                    isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                    for a in ancestors):
                local.add((rel, mod))
    return local, tried


def test_no_function_local_imports_in_classad() -> None:
    # formats.py's readers take the class they build (adtext.py, below ad.py); eval()
    # compiles through the LazyCall's compiler; splitTime is handed a record factory
    local, _ = _scan()
    assert local <= LAZY_IMPORTS, sorted(local - LAZY_IMPORTS)


def test_no_try_around_own_imports() -> None:
    _, tried = _scan()
    assert not {t for t in tried if t[0].startswith("classad/")}
    assert tried <= TRY_IMPORTS_LEFT, sorted(tried - TRY_IMPORTS_LEFT)


def test_every_classad_module_imports_on_its_own() -> None:
    # each module first, in a fresh interpreter: an import cycle shows up as an error
    mods = sorted("condorpy." + p.relative_to(ROOT).with_suffix("").as_posix()
                  .replace("/", ".").removesuffix(".__init__")
                  for p in (ROOT / "classad").rglob("*.py"))
    code = ("import importlib, sys\n"
            "for m in sys.argv[1:]:\n"
            "    for k in [k for k in sys.modules if k.startswith('condorpy')]:\n"
            "        del sys.modules[k]\n"
            "    importlib.import_module(m)\n")
    r = subprocess.run([sys.executable, "-c", code, *mods], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
