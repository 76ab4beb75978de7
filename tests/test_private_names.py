"""No module reaches into another module's private names (ARCHITECTURE.md, "Layers").

A name with one leading underscore is its module's own business: the module may change
or drop it without looking further. A caller elsewhere that reads it ties the two
modules together where nobody can see it, so the scan below finds, across condorpy/:

* imports of private names (``from condorpy.x import _name``) and of private modules
  (``import condorpy.x._impl``, ``from condorpy.x._impl import name``);
* attribute access ``expr._name`` (read, write or delete, and ``getattr(expr,
  "_name")`` and its kin) where ``expr`` is not ``self``, ``cls`` or ``super()`` and
  ``_name`` is not defined in the same module. Defined means assigned as
  ``self._name`` / ``cls._name``, a class-level attribute (dataclass fields included)
  or ``__slots__`` entry, or a ``def _name`` in a class of the module: so a module may
  touch the privates of its own classes on other instances (``other._items`` in an
  ``__eq__``), never another module's.

Dunder names (``__eq__``) are protocol, not private, and are left alone.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "condorpy"

# Standard-library names that are documented public API despite the underscore (the
# underscore is there to keep them out of the way of user-chosen names), and nothing
# else: a private name of our own gets a public spelling instead of an entry here.
ALLOWED: frozenset[str] = frozenset({
    # collections.namedtuple's methods and attributes (typing.NamedTuple's too): the
    # underscore avoids clashes with field names
    "_asdict", "_fields", "_field_defaults", "_make", "_replace",
    # os._exit (exit without cleanup, in a forked child) and sys._getframe
    "_exit", "_getframe",
    # enum's documented "sunder" names
    "_value_", "_name_", "_missing_", "_generate_next_value_", "_ignore_",
})

# Files another change is rewriting right now (issue #22, "the daemon as parts"). Each
# entry must still be flagged (test_pending_files_are_still_flagged), so it goes as soon
# as its file is clean.
PENDING: dict[str, str] = {}


def _private(name: str) -> bool:
    """One leading underscore (or a mangled ``__name``), and not a dunder."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) \
        and name != "_"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _self_like(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
        and node.func.id == "super"


def _class_members(cls: ast.ClassDef) -> set[str]:
    """Names a class body defines: methods, class attributes, __slots__ entries (also
    under if/try blocks in the body, e.g. ``if not TYPE_CHECKING: def __getattr__``)."""
    out: set[str] = set()
    stack: list[ast.stmt] = list(cls.body)
    while stack:
        st = stack.pop()
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(st.name)
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
                        if n.id == "__slots__" and st.value is not None:
                            out |= {c.value for c in ast.walk(st.value)
                                    if isinstance(c, ast.Constant)
                                    and isinstance(c.value, str)}
        elif isinstance(st, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for sub in getattr(st, block, []):
                    if isinstance(sub, ast.ExceptHandler):
                        stack.extend(sub.body)
                    else:
                        stack.append(sub)
    return out


def defined_privates(tree: ast.Module) -> set[str]:
    """The private attribute names this module defines itself."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            out |= {n for n in _class_members(node) if _private(n)}
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and _self_like(node.value) and _private(node.attr):
            out.add(node.attr)
    return out


def _module_of(path: str) -> str:
    """``condorpy/x/y.py`` -> ``condorpy.x.y``; a package's __init__ -> the package."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(node: ast.ImportFrom, path: str) -> str:
    """The module an import names, relative imports resolved against ``path``."""
    if node.level == 0:
        return node.module or ""
    package = _module_of(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module(module: str, importer: str) -> str | None:
    """The first private component of ``module``, unless ``importer`` is the package
    that holds it (a package's __init__ may re-export its own private modules)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if _private(part):
            if ".".join(parts[:i]) == _module_of(importer) and importer.endswith(
                    "__init__.py"):
                return None
            return ".".join(parts[:i + 1])
    return None


_ATTR_FUNCS = {"getattr", "setattr", "hasattr", "delattr"}


def scan_source(text: str, path: str = "condorpy/example.py") -> list[Finding]:
    tree = ast.parse(text, path)
    own = defined_privates(tree)
    found: list[Finding] = []

    def flag(node: ast.AST, what: str) -> None:
        found.append(Finding(path, getattr(node, "lineno", 0), what))

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if _private(node.attr) and node.attr not in ALLOWED \
                    and node.attr not in own and not _self_like(node.value):
                flag(node, f".{node.attr} on {ast.unparse(node.value)[:40]}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _ATTR_FUNCS and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) \
                    and _private(name.value) and name.value not in ALLOWED \
                    and name.value not in own and not _self_like(node.args[0]):
                flag(node, f"{node.func.id}(..., {name.value!r}) on "
                           f"{ast.unparse(node.args[0])[:40]}")
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, path)
            hidden = _private_module(module, path)
            if hidden:
                flag(node, f"imports from the private module {hidden}")
            for alias in node.names:
                # (``from . import _impl``, a private module, is caught here too)
                if _private(alias.name) and alias.name not in ALLOWED:
                    flag(node, f"imports {module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                hidden = _private_module(alias.name, path)
                if hidden:
                    flag(node, f"imports the private module {hidden}")
    unique = {(f.line, f.what): f for f in found}
    return sorted(unique.values(), key=lambda f: (f.line, f.what))


def python_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


# the whole package read once per process: two tests judge the same scan
@functools.cache
def scan_tree() -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for path in python_files():
        rel = path.relative_to(ROOT).as_posix()
        found = scan_source(path.read_text(), rel)
        if found:
            out[rel] = found
    return out


def test_no_module_reaches_into_another_modules_privates() -> None:
    found = {p: f for p, f in scan_tree().items() if p not in PENDING}
    assert not found, "private names of another module (give the caller a public " \
        "method or a port):\n" + "\n".join(str(x) for fs in found.values() for x in fs)


def test_pending_files_are_still_flagged() -> None:
    """When a pending file is clean, its PENDING entry must go."""
    tree = scan_tree()
    clean = sorted(p for p in PENDING if p not in tree)
    assert not clean, f"remove from PENDING, they no longer reach into privates: {clean}"


def test_pending_files_exist() -> None:
    missing = sorted(p for p in PENDING if not (ROOT / p).is_file())
    assert not missing, f"remove from PENDING, the files are gone: {missing}"


# --- the scan itself ---------------------------------------------------------------

def test_scan_reads_the_whole_package() -> None:
    """Not vacuous: the scan walks the real tree, and a violation planted in a real,
    clean module of it is found."""
    files = python_files()
    assert len(files) > 100 and PACKAGE / "classad" / "ad.py" in files
    text = (PACKAGE / "classad" / "ad.py").read_text()
    rel = "condorpy/classad/ad.py"
    assert scan_source(text, rel) == []
    planted = text + "\n\ndef leak(cfg):\n    return cfg._planted\n"
    found = scan_source(planted, rel)
    assert [f.what for f in found] == ["._planted on cfg"]
    assert found[0].line == len(planted.splitlines())


CAUGHT = {
    "another module's attribute": "def f(ad):\n    return ad._exprs\n",
    "another module's method": "def f(daemon):\n    daemon._apply(1)\n",
    "write": "def f(cfg):\n    cfg._seed = 3\n",
    "delete": "def f(cfg):\n    del cfg._seed\n",
    "nested base": "class A:\n    def f(self):\n        return self.d._apply()\n",
    "a class of another module": "import m\nx = m.Thing._helper\n",
    "a module's private function": "import condorpy.classad.ast as a\nx = a._prec\n",
    "getattr": "def f(v):\n    return getattr(v, '_exprs', None)\n",
    "hasattr": "def f(v):\n    return hasattr(v, '_exprs')\n",
    "private name import": "from condorpy.startd.hooks import HookStats, _excerpt\n",
    "private import renamed": "from condorpy.x import _f as f\n",
    "relative private import": "from .hooks import _excerpt\n",
    "private module": "import condorpy.pool._impl\n",
    "from a private module": "from condorpy.pool._impl import thing\n",
    "relative private module": "from . import _impl\n",
    "mangled": "def f(o):\n    return o.__secret\n",
    "private of a same-named local": "class A:\n    def f(self, other):\n"
                                     "        return other._x\n",
}

PASSED = {
    "self": "class A:\n    def f(self):\n        return self._x\n",
    "cls": "class A:\n    @classmethod\n    def f(cls):\n        return cls._x\n",
    "super": "class A(B):\n    def f(self):\n        return super()._g()\n",
    "own attribute on another instance":
        "class A:\n    def __init__(self):\n        self._items = {}\n"
        "    def __eq__(self, other):\n        return self._items == other._items\n",
    "own slot": "class A:\n    __slots__ = ('_v',)\n\ndef f(a):\n    return a._v\n",
    "own dataclass field": "@dataclass\nclass C:\n    _cache: dict = field(default_factory=dict)"
                           "\n\ndef build(c):\n    c._cache.clear()\n",
    "own method": "class A:\n    def _bad(self):\n        pass\n\ndef f(a):\n"
                  "    raise a._bad()\n",
    "own method under if": "class A:\n    if X:\n        def _g(self):\n            pass\n\n"
                           "def f(a):\n    a._g()\n",
    "dunder": "def f(o):\n    return o.__class__, o.__dict__\n",
    "namedtuple": "def f(p):\n    return p._replace(x=1)._asdict()\n",
    "os._exit": "import os\nos._exit(1)\n",
    "enum sunder": "def f(m):\n    return m._value_\n",
    "public import": "from condorpy.classad.ast import precedence\n",
    "package's own private module": "from condorpy.x._impl import y\n",
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_scan_catches(name: str) -> None:
    assert scan_source(CAUGHT[name]), name


@pytest.mark.parametrize("name", sorted(PASSED))
def test_scan_passes(name: str) -> None:
    path = "condorpy/x/__init__.py" if name == "package's own private module" \
        else "condorpy/example.py"
    assert scan_source(PASSED[name], path) == [], name


def test_relative_imports_resolve() -> None:
    node = ast.parse("from ..b import c").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _absolute(node, "condorpy/x/y.py") == "condorpy.b"
    assert _absolute(node, "condorpy/x/__init__.py") == "condorpy.b"
