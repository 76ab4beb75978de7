"""No class in condorpy/ grows past 500 lines (ARCHITECTURE.md, "Layers").

A class that long has taken on more than one job; it is split where its jobs part
(a collaborator object it holds, a module of functions), not cut into chunks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "condorpy"
MAX_CLASS_LINES = 500


def class_lengths(source: str, filename: str = "<string>") -> list[tuple[str, int, int]]:
    """(class name, first line, length in lines) of every class in ``source``, nested
    ones included; a class's lines run from its first decorator to its last line."""
    out: list[tuple[str, int, int]] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ClassDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            last = node.end_lineno or node.lineno
            out.append((node.name, first, last - first + 1))
    return out


def oversized(root: Path, limit: int = MAX_CLASS_LINES) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        for name, line, length in class_lengths(path.read_text(), str(path)):
            if length > limit:
                found.append(f"{rel}:{line}: class {name} is {length} lines")
    return found


def test_no_class_is_over_500_lines() -> None:
    found = oversized(ROOT)
    assert not found, (f"classes over {MAX_CLASS_LINES} lines (split them along a seam of "
                       "responsibility):\n" + "\n".join(found))


def test_the_scan_finds_a_long_class_and_says_where(tmp_path: Path) -> None:
    pkg = tmp_path / "condorpy"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(6))
    (pkg / "big.py").write_text(f"import os\n\n\n@decorated\nclass Big:\n{body}\n")
    (pkg / "small.py").write_text(f"class Small:\n{body}\n")
    assert oversized(pkg, limit=7) == ["condorpy/big.py:4: class Big is 8 lines"]
