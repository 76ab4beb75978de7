"""One typed knob reader (ARCHITECTURE.md, "One core"): outside ``condorpy/config`` no
code turns knob text into a boolean or a number itself.

A second reader drifts: it accepts spellings HTCondor refuses (``on``, ``yes``), refuses
expressions HTCondor takes (``$(A) && true``, ``15 * 60``), and words its errors without
the file and line. The scan below finds, in every package but ``config``:

* boolean spelling tables (a collection literal holding several of true/yes/on/t/y or
  false/no/off/f/n);
* ``int()``, ``float()``, ``bool()`` or ``eval_arith()`` applied to text that came from
  a knob look-up (``lookup(...)``, ``cfg.get(...)``, ``cfg.raw(...)``,
  ``cfg.slot_get(...)``), followed through local assignments;
* comparisons of such text with boolean spellings (``text.lower() in ("true", "1")``);
* private typed helpers (``_bool``, ``_int``, ``_float``, ``_int_or``, ...) that do a
  knob look-up themselves;
* imports of the config layer's private arithmetic (``condorpy.config.arith``).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "condorpy"

# Files another change is moving onto the one reader. Each entry must still be flagged
# (test_pending_files_are_still_flagged), so it is removed as soon as its file is clean.
PENDING: dict[str, str] = {}

_TRUE_WORDS = {"true", "yes", "on", "t", "y"}
_FALSE_WORDS = {"false", "no", "off", "f", "n"}
_BOOL_WORDS = _TRUE_WORDS | _FALSE_WORDS | {"1", "0"}
_TYPED_HELPER = re.compile(
    r"^_+(get_)?(bool|boolean|int|integer|float|double|number|num|duration)(_or)?$")
_CONFIG_RECEIVER = re.compile(r"^_?(cfg|conf|config|knobs|source|reader|lookup)$", re.I)
_LOOKUP_NAME = re.compile(r"lookup", re.I)
_CONVERTERS = {"int", "float", "bool", "eval_arith"}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def _strings(node: ast.AST) -> set[str] | None:
    """The string constants of a set/tuple/list/frozenset(...) literal, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in ("frozenset", "set", "tuple") and node.args:
        node = node.args[0]
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        out = {e.value.lower() for e in node.elts
               if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        return out if len(out) == len(node.elts) else None
    return None


def _is_spelling_table(node: ast.AST) -> bool:
    words = _strings(node)
    return words is not None and (len(words & _TRUE_WORDS) >= 2
                                  or len(words & _FALSE_WORDS) >= 2)


def _is_lookup_call(node: ast.AST, params: frozenset[str] = frozenset()) -> bool:
    """A knob look-up: ``lookup(name)`` (a look-up function handed in), or ``get``,
    ``raw``, ``slot_get`` on something named like a configuration."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "lookup" or (func.id in params and bool(_LOOKUP_NAME.search(func.id)))
    if isinstance(func, ast.Attribute):
        if _LOOKUP_NAME.search(func.attr):
            return True
        receiver = func.value
        name = receiver.attr if isinstance(receiver, ast.Attribute) else \
            receiver.id if isinstance(receiver, ast.Name) else ""
        return func.attr in ("get", "raw", "slot_get") and bool(_CONFIG_RECEIVER.match(name))
    return False


class _Scan(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.found: list[Finding] = []
        self.tables: set[str] = set()          # module names bound to spelling tables

    def flag(self, node: ast.AST, what: str) -> None:
        self.found.append(Finding(self.path, getattr(node, "lineno", 0), what))

    # module level: spelling tables and the config layer's private arithmetic
    def visit_Assign(self, node: ast.Assign) -> None:
        if _is_spelling_table(node.value):
            self.flag(node, "boolean spelling table")
            self.tables |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module in ("condorpy.config.arith",):
            self.flag(node, f"imports {node.module} (knob arithmetic belongs to config)")

    def visit_Compare(self, node: ast.Compare) -> None:
        for comparator in node.comparators:
            if _is_spelling_table(comparator):
                self.flag(node, "compares with a boolean spelling table")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        body = [n for n in ast.walk(fn)]
        params = frozenset(a.arg for a in fn.args.args + fn.args.kwonlyargs)
        if _TYPED_HELPER.match(fn.name) and any(_is_lookup_call(n, params) for n in body):
            self.flag(fn, f"private typed knob helper {fn.name}() over a look-up")
        tainted: set[str] = set()

        def is_tainted(expr: ast.AST | None) -> bool:
            """Still the knob's text: the look-up itself, a name bound to it, string
            methods on it, ``or``/conditional choices and subscripts of it. What other
            functions make of it (an evaluated expression, a split list) is not."""
            if expr is None:
                return False
            if _is_lookup_call(expr, params):
                return True
            if isinstance(expr, ast.Name):
                return expr.id in tainted
            if isinstance(expr, ast.Call):
                if isinstance(expr.func, ast.Attribute):
                    return is_tainted(expr.func.value)
                return isinstance(expr.func, ast.Name) and expr.func.id in _CONVERTERS \
                    and any(is_tainted(a) for a in expr.args)
            if isinstance(expr, ast.BoolOp):
                return any(is_tainted(v) for v in expr.values)
            if isinstance(expr, ast.IfExp):
                return is_tainted(expr.body) or is_tainted(expr.orelse)
            if isinstance(expr, (ast.Subscript, ast.Attribute)):
                return is_tainted(expr.value)
            if isinstance(expr, ast.NamedExpr):
                return is_tainted(expr.value)
            return False

        # assignments in source order; a second pass catches uses before re-binding
        assigns = sorted((n for n in body if isinstance(n, (ast.Assign, ast.AnnAssign,
                                                            ast.NamedExpr))),
                         key=lambda n: (n.lineno, n.col_offset))
        for _ in range(2):
            for a in assigns:
                value = a.value
                if value is None or not is_tainted(value):
                    continue
                targets = a.targets if isinstance(a, ast.Assign) else [a.target]
                tainted |= {t.id for t in targets if isinstance(t, ast.Name)}
        for n in body:
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                    and n.func.id in _CONVERTERS and any(is_tainted(a) for a in n.args):
                self.flag(n, f"{n.func.id}() of knob text")
            if isinstance(n, ast.Compare) and is_tainted(n.left):
                for comparator in n.comparators:
                    words = _strings(comparator)
                    named = isinstance(comparator, ast.Name) and comparator.id in self.tables
                    constant = isinstance(comparator, ast.Constant) \
                        and isinstance(comparator.value, str) \
                        and comparator.value.lower() in _BOOL_WORDS
                    if named or constant or (words is not None and words & _BOOL_WORDS):
                        self.flag(n, "compares knob text with boolean spellings")


def scan_source(text: str, path: str = "<text>") -> list[Finding]:
    scan = _Scan(path)
    scan.visit(ast.parse(text, path))
    # one finding per line is enough to point at it
    unique = {(f.line, f.what): f for f in scan.found}
    return sorted(unique.values(), key=lambda f: f.line)


# the whole package read once per process: two tests judge the same scan
@functools.cache
def scan_tree() -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("condorpy/config/"):
            continue
        found = scan_source(path.read_text(), rel)
        if found:
            out[rel] = found
    return out


def test_no_knob_reader_outside_config() -> None:
    found = {p: f for p, f in scan_tree().items() if p not in PENDING}
    assert not found, "knob text parsed outside condorpy/config (use KnobReader):\n" + \
        "\n".join(str(x) for fs in found.values() for x in fs)


def test_pending_files_are_still_flagged() -> None:
    """When a pending file is clean, its PENDING entry must go."""
    tree = scan_tree()
    clean = sorted(p for p in PENDING if p not in tree)
    assert not clean, f"remove from PENDING, they read knobs through KnobReader now: {clean}"


# --- the scan itself ---------------------------------------------------------------

CAUGHT = {
    "spelling table": '_TRUE = {"true", "yes", "on"}\n',
    "spelling in a comparison": 'def f(cfg):\n'
                                '    v = cfg.get("X")\n'
                                '    return v.lower() in ("true", "1")\n',
    "int of a lookup": 'def f(lookup):\n    return int(lookup("NUM_SLOTS"))\n',
    "float through a local": 'def f(cfg):\n    raw = cfg.get("X")\n'
                             '    text = raw.strip()\n    return float(text)\n',
    "typed helper": 'def _bool(lookup, name, default):\n    return lookup(name) or default\n',
    "arith import": 'from condorpy.config.arith import eval_arith\n',
    "walrus": 'def f(cfg):\n    if (v := cfg.raw("X")) is not None:\n'
              '        return int(v)\n',
}

PASSED = {
    "typed reader": 'def f(cfg):\n    return cfg.get_int("NUM_SLOTS", 1)\n',
    "text only": 'def f(cfg):\n    return (cfg.get("X") or "").split()\n',
    "not a knob": 'def f(facts):\n    v = facts.get("DETECTED_CPUS", "")\n'
                  '    return int(v) if v.isdigit() else 0\n',
    "classad literal": 'def f(word):\n    return word in ("true", "false")\n',
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_scan_catches(name: str) -> None:
    assert scan_source(CAUGHT[name]), name


@pytest.mark.parametrize("name", sorted(PASSED))
def test_scan_passes(name: str) -> None:
    assert scan_source(PASSED[name]) == [], name


def test_scan_catches_the_policy_settings_helpers_of_today() -> None:
    """The readers the scan exists for, as policy/settings.py had them."""
    text = '''
def _int(lookup, name):
    text = lookup(name)
    if text is None or text.strip() == "":
        return INT_DEFAULTS[name]
    try:
        return int(float(text.strip()))
    except ValueError:
        return _arith(text)

def _bool(lookup, name, default):
    text = lookup(name)
    t = text.strip().lower()
    if t in ("true", "1", "yes", "t"):
        return True
    return default
'''
    found = {(f.line, f.what) for f in scan_source(text)}
    assert (2, "private typed knob helper _int() over a look-up") in found
    assert (7, "int() of knob text") in found and (7, "float() of knob text") in found
    assert (11, "private typed knob helper _bool() over a look-up") in found
    assert (14, "compares knob text with boolean spellings") in found
