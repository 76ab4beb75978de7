"""Every knob read once and defaulted once (issue #22; ARCHITECTURE.md, "One core").

A knob whose default sits in ``condorpy/config/defaults.py`` is read with
``knob_int``/``knob_float``/``knob_bool``, which take the table's default: a second
default written at the call drifts from the table (UPDATE_INTERVAL was 300 in one place
and read as a float with its own floor in another; POLLING_INTERVAL's 5 was written
three times). And a knob is turned into a number or a boolean by one module only: the
others ask that module's settings record, so two readers can never disagree about a
value or about which spellings they refuse.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

from condorpy.config.defaults import CODE_DEFAULTS, PARAM_DEFAULTS

PACKAGE = Path(__file__).resolve().parent.parent / "condorpy"

TABLE = {k.upper(): v for k, v in {**PARAM_DEFAULTS, **CODE_DEFAULTS}.items() if v.strip()}
TYPED = {"get_int", "get_float", "get_bool", "get_duration"}
TABLED = {"knob_int", "knob_float", "knob_bool"}

# (file, knob): why the call states a default of its own
ALLOWED_DEFAULTS: dict[tuple[str, str], str] = {
    ("machine/probe.py", "NUM_CPUS"):
        "the table's default is the detected count, which the caller measured itself "
        "after COUNT_HYPERTHREAD_CPUS; only a configured value is read here",
}

# Files another change is moving onto one reading. Each entry must still be flagged
# (test_pending_files_are_still_flagged), so it goes as soon as its file is clean.
PENDING: dict[str, str] = {
}


def _reads(path: Path) -> list[tuple[str, str, int, bool]]:
    """(method, knob, line, states a default) for each typed read of a literal knob."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        if method not in TYPED | TABLED or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        knob = first.value.upper()
        defaulted = len(node.args) > 1 or any(k.arg == "default" for k in node.keywords)
        out.append((method, knob, node.lineno, defaulted))
    return out


def _files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.parent.name != "config"]


# the package read once per process: two tests judge the same scan
@functools.cache
def _problems() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    readers: dict[str, set[str]] = defaultdict(set)
    for path in _files():
        rel = str(path.relative_to(PACKAGE))
        for method, knob, line, defaulted in _reads(path):
            readers[knob].add(rel)
            if method in TABLED and knob not in TABLE:
                found[rel].append(f"{rel}:{line}: {method}({knob!r}) but {knob} has no "
                                  "default in config/defaults.py")
            if method in TYPED and defaulted and knob in TABLE \
                    and (rel, knob) not in ALLOWED_DEFAULTS:
                found[rel].append(f"{rel}:{line}: {knob} defaulted again (the table has "
                                  f"{TABLE[knob]!r}); use knob_{method[4:]}")
    for knob, files in readers.items():
        if len(files) > 1:
            for rel in sorted(files):
                found[rel].append(f"{rel}: {knob} typed-read here and in "
                                  f"{sorted(files - {rel})}")
    return found


def test_each_knob_read_once_and_defaulted_once() -> None:
    found = {f: p for f, p in _problems().items() if f not in PENDING}
    assert not found, "\n".join(line for lines in found.values() for line in lines)


def test_pending_files_are_still_flagged() -> None:
    problems = _problems()
    clean = [f for f in PENDING if f not in problems]
    assert not clean, f"no longer flagged, remove from PENDING: {clean}"


def test_the_scan_sees_a_second_default(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('x = cfg.get_int("UPDATE_INTERVAL", 300)\n'
                       'y = cfg.knob_int("NO_SUCH_KNOB_ANYWHERE")\n')
    reads = _reads(planted)
    assert ("get_int", "UPDATE_INTERVAL", 1, True) in reads
    assert ("knob_int", "NO_SUCH_KNOB_ANYWHERE", 2, False) in reads
    assert "UPDATE_INTERVAL" in TABLE and "NO_SUCH_KNOB_ANYWHERE" not in TABLE
