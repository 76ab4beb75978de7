"""The Debian package declares what its code imports, and pyproject's floors are
versions Debian 12 ships.

The .deb is built with ``dh_python3 --no-guessing-deps`` (packaging/debian/rules), so
its Depends are exactly what packaging/debian/control names: an import that the code
gains and control does not name installs fine on a developer's machine (which has the
module from pip or another package) and fails on a pristine Debian 12 with
``ModuleNotFoundError`` (issue #24: python3-cryptography). The scan below reads every
third-party import in condorpy/ -- ``import x``, ``from x import y`` and
``importlib.import_module("x")`` -- and asks control for its Debian package: in Depends
when the import is unconditional, in Depends, Recommends or Suggests when the code
catches its ImportError. tests/debian/test_pristine.py proves the same on a real
bookworm chroot.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "condorpy"
CONTROL = ROOT / "packaging" / "debian" / "control"
PYPROJECT = ROOT / "pyproject.toml"

# Import name -> (Debian 12 binary package or None, PyPI distribution, Debian 12's
# version). None: not packaged in Debian 12's main archive, so the code must treat it
# as optional (an ImportError caught), and the package cannot name it.
DEBIAN: dict[str, tuple[str | None, str, str | None]] = {
    "cryptography": ("python3-cryptography", "cryptography", "38.0.4"),
    "lark": ("python3-lark", "lark", "1.1.5"),
    "prometheus_client": ("python3-prometheus-client", "prometheus-client", "0.16.0"),
    "psutil": ("python3-psutil", "psutil", "5.9.4"),
    "pyroute2": ("python3-pyroute2", "pyroute2", "0.7.2"),
    "regex": ("python3-regex", "regex", "2022.10.31"),
    "systemd": ("python3-systemd", "systemd-python", "235"),
    # NVIDIA's NVML bindings: NVIDIA ships them, Debian 12's main does not
    "pynvml": (None, "nvidia-ml-py", None),
}


@dataclass(frozen=True)
class Import:
    module: str        # top-level name
    where: str         # path:line
    optional: bool     # inside a try that catches ImportError


_CATCHES_IMPORT = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(k, ast.Name) and k.id in _CATCHES_IMPORT for k in kinds):
            return True
    return False


def _imports(path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    rel = path.relative_to(ROOT)
    found: list[Import] = []

    def visit(node: ast.AST, optional: bool) -> None:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args \
                and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) \
                and ((isinstance(node.func, ast.Attribute)
                      and node.func.attr == "import_module")
                     or (isinstance(node.func, ast.Name)
                         and node.func.id in ("import_module", "__import__"))):
            names = [node.args[0].value]
        for name in names:
            top = name.split(".")[0]
            if top and top != "condorpy" and top not in sys.stdlib_module_names:
                found.append(Import(top, f"{rel}:{getattr(node, 'lineno', 0)}", optional))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.orelse:        # the body is for the type checker alone
                visit(stmt, optional)
            return
        if isinstance(node, ast.Try):
            inner = optional or _catches_import_error(node)
            for child in node.body:
                visit(child, inner)
            for rest in (*node.handlers, *node.orelse, *node.finalbody):
                visit(rest, optional)
            return
        for sub in ast.iter_child_nodes(node):
            visit(sub, optional)

    visit(tree, False)
    return found


# the package read once per process: six tests judge the same imports
@functools.cache
def _all_imports() -> list[Import]:
    return [imp for path in sorted(PACKAGE.rglob("*.py")) for imp in _imports(path)]


def _control_field(field: str, package: str = "condorpy") -> set[str]:
    """The Debian package names in a binary package's relation field (versions,
    alternatives' tails and substitution variables left out)."""
    stanzas = CONTROL.read_text().split("\n\n")
    stanza = next(s for s in stanzas if re.search(rf"^Package: {package}$", s, re.M))
    m = re.search(rf"^{field}:(.*(?:\n[ \t].*)*)", stanza, re.M)
    if m is None:
        return set()
    names = set()
    for rel in m.group(1).split(","):
        name = rel.split("|")[0].strip().split(" ")[0].split("(")[0].strip()
        if name and not name.startswith("${"):
            names.add(name)
    return names


def test_scan_sees_the_imports_issue_24_missed() -> None:
    found = {(i.module, i.optional) for i in _all_imports()}
    assert ("cryptography", False) in found
    assert ("systemd", True) in found         # importlib.import_module under try
    assert ("pynvml", True) in found


def test_every_third_party_import_has_a_known_debian_package() -> None:
    unknown = sorted({f"{i.where}: imports {i.module!r}" for i in _all_imports()
                      if i.module not in DEBIAN})
    assert not unknown, ("name the Debian 12 package of each new import in "
                         "tests/test_deb_depends.py's DEBIAN and in packaging/debian/"
                         "control:\n" + "\n".join(unknown))


def test_the_package_depends_on_every_unconditional_import() -> None:
    depends = _control_field("Depends")
    first: dict[str, str] = {}
    for i in _all_imports():
        deb = DEBIAN.get(i.module, (None,))[0]
        if not i.optional and deb is not None and deb not in depends:
            first.setdefault(deb, i.where)
    missing = [f"{deb} (imported at {where})" for deb, where in sorted(first.items())]
    assert not missing, "packaging/debian/control's Depends lacks " + ", ".join(missing)


def test_every_optional_import_is_declared_or_not_in_debian() -> None:
    declared = _control_field("Depends") | _control_field("Recommends") \
        | _control_field("Suggests")
    missing = sorted({f"{DEBIAN[i.module][0]} (imported at {i.where})"
                      for i in _all_imports()
                      if i.optional and i.module in DEBIAN
                      and DEBIAN[i.module][0] is not None
                      and DEBIAN[i.module][0] not in declared})
    assert not missing, ("packaging/debian/control names neither in Depends, "
                         "Recommends nor Suggests: " + ", ".join(missing))


def test_a_module_debian_does_not_package_is_only_imported_optionally() -> None:
    bad = sorted({f"{i.where}: {i.module}" for i in _all_imports()
                  if i.module in DEBIAN and DEBIAN[i.module][0] is None and not i.optional})
    assert not bad, "imported unconditionally, yet Debian 12 has no package: " + \
        ", ".join(bad)


def test_the_package_depends_on_nothing_the_code_does_not_import() -> None:
    imported = {DEBIAN[i.module][0] for i in _all_imports() if i.module in DEBIAN}
    stale = sorted(p for p in _control_field("Depends")
                   if p.startswith("python3-") and p not in imported)
    assert not stale, f"Depends names packages no code imports: {', '.join(stale)}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _pyproject_floors() -> dict[str, str]:
    import tomllib
    data = tomllib.loads(PYPROJECT.read_text())
    reqs = list(data["project"]["dependencies"])
    for extra in ("systemd", "gpu"):
        reqs += data["project"]["optional-dependencies"].get(extra, [])
    floors = {}
    for req in reqs:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)\s*", req)
        assert m, f"pyproject: {req!r} is not 'name>=floor'"
        floors[m.group(1).lower()] = m.group(2)
    return floors


def test_pyproject_floors_are_satisfied_by_debian_12() -> None:
    floors = _pyproject_floors()
    too_new = []
    for module, (deb, dist, have) in DEBIAN.items():
        if deb is None or have is None:
            continue
        floor = floors.get(dist)
        assert floor is not None, f"pyproject does not name {dist} (imported as {module})"
        if _version(floor) > _version(have):
            too_new.append(f"{dist}>={floor} (Debian 12's {deb} is {have})")
    assert not too_new, "floors Debian 12 cannot satisfy: " + ", ".join(too_new)
