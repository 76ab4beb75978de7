"""condorpy's configuration reader against HTCondor 25.14.1's (htcondor2.param).

Every case is read by both; every name the case defines (directly or through a
template) must expand to the same value. One reference interpreter serves all cases.
Random values are compared by shape; machine values by pinning condorpy's detected
facts to what the reference detected on this host.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from condorpy.config import DetectedFacts, load_config
from condorpy.config.arith import ArithError, eval_arith
from condorpy.config.defaults import CODE_DEFAULTS, PARAM_DEFAULTS
from tests.config.diff_cases import Case, all_cases
from tests.config.helpers import FACTS

pytestmark = pytest.mark.differential

try:
    import htcondor2  # noqa: F401  (only to know whether the reference is installed)
    HAVE_REFERENCE = True
except ImportError:  # pragma: no cover - the test extra is missing
    HAVE_REFERENCE = False

CASES = all_cases()
RANDOM_NAMES = {"PERIODIC_CHECKPOINT", "UWCS_PERIODIC_CHECKPOINT"}
# $RANDOM_CHOICE results: any of the choices is right
RANDOM_CHOICES = {("random", "R1"): {"a", "b", "c"}}
ORACLE = Path(__file__).with_name("oracle.py")
# Knobs whose built-in value depends on this process or on randomness.
MACHINE_OR_RANDOM_DEFAULTS = {
    "PERIODIC_CHECKPOINT": "contains $RANDOM_INTEGER(-30,30,1): compared by shape",
}


def _write_case(root: Path, case: Case) -> Path:
    base = root / case.id
    for rel, text in case.files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{dir}", str(base)))
    return base / case.main


def _env(case: Case) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("_CONDOR_")}
    env.update(case.env)
    return env


def _run_oracle(cases: list[dict[str, Any]]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(ORACLE)], input=json.dumps({"cases": cases}),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _facts(raw: dict[str, Any]) -> DetectedFacts:
    def num(v: Any) -> int:
        return int(v["int"] if isinstance(v, dict) else v)
    return DetectedFacts(
        full_hostname=raw["FULL_HOSTNAME"], cpus=num(raw["DETECTED_CPUS"]),
        cores=num(raw["DETECTED_CORES"]), physical_cpus=num(raw["DETECTED_PHYSICAL_CPUS"]),
        memory_mb=num(raw["DETECTED_MEMORY"]), arch=raw["ARCH"], opsys=raw["OPSYS"],
        uname_arch=raw["UNAME_ARCH"], uname_opsys=raw["UNAME_OPSYS"],
        ip_address=raw["IP_ADDRESS"], username=raw["USERNAME"],
        ipv4_address=raw.get("IPV4_ADDRESS") or "", ipv6_address=raw.get("IPV6_ADDRESS") or "")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not HAVE_REFERENCE:
        pytest.skip("the htcondor==25.14.1 reference wheel is not installed")
    root = tmp_path_factory.mktemp("diff")
    requests = []
    for case in CASES:
        main = _write_case(root, case)
        # this first reading only collects the names each case defines
        cfg = load_config(str(main), env=_env(case), subsystem=case.subsystem, detected=FACTS)
        names = sorted({entry.name for entry in cfg.table.values()})
        requests.append({"config": str(main), "env": case.env, "names": names,
                         "id": case.id, "subsystem": case.subsystem})
    empty = root / "empty_config"
    empty.write_text("")
    requests.append({"config": str(empty), "env": {}, "names": sorted(PARAM_DEFAULTS),
                     "id": "<defaults>"})
    requests.append({"config": str(empty), "env": {}, "names": sorted(CODE_DEFAULTS),
                     "id": "<code-defaults>"})
    out = _run_oracle(requests)
    return {"facts": _facts(out["facts"]), "requests": requests,
            "results": dict(zip([r["id"] for r in requests], out["results"]))}


def _shape(value: str | None) -> str | None:
    return None if value is None else re.sub(r"-?\d+", "#", value)


def _agrees(mine: str | None, typed: Any, ref: Any, name: str, random_case: bool) -> bool:
    if isinstance(ref, dict):
        if "error" in ref:
            return False
        if "bool" in ref:
            return typed is not None and bool(typed) == ref["bool"]
        try:
            number = eval_arith(typed if isinstance(typed, str) else str(typed))
        except (ArithError, TypeError):
            return False
        key = "int" if "int" in ref else "float"
        return bool(abs(number - ref[key]) < 1e-9)
    if mine == ref:
        return True
    if random_case or name.upper() in RANDOM_NAMES:
        return _shape(mine) == _shape(ref)
    return False


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_agrees_with_htcondor(case: Case, reference: dict[str, Any]) -> None:
    request = next(r for r in reference["requests"] if r["id"] == case.id)
    ref_values = reference["results"][case.id]
    cfg = load_config(request["config"], env=_env(case), subsystem=case.subsystem,
                      detected=reference["facts"])
    assert request["names"], "a case must define something"
    random_case = "random" in case.id
    wrong = []
    for name in request["names"]:
        ref = ref_values[name]
        mine = cfg.get(name)
        choices = RANDOM_CHOICES.get((case.id, name))
        if choices is not None:
            assert mine in choices and ref in choices, (name, mine, ref)
            continue
        typed: Any = mine
        if isinstance(ref, dict) and "bool" in ref:
            typed = cfg.get_bool(name)
        elif isinstance(ref, dict):
            typed = str(cfg.get_float(name))
        if not _agrees(mine, typed, ref, name, random_case):
            wrong.append(f"{name}: condorpy={mine!r} htcondor={ref!r}")
    assert not wrong, "\n".join(wrong)


def test_builtin_defaults_equal_htcondor(reference: dict[str, Any]) -> None:
    """Every knob in condorpy's default table has HTCondor's default (empty config)."""
    empty = next(r for r in reference["requests"] if r["id"] == "<defaults>")
    ref_values = reference["results"]["<defaults>"]
    cfg = load_config(empty["config"], env={}, subsystem="TOOL",
                      detected=reference["facts"])
    wrong = []
    for name in empty["names"]:
        mine = cfg.get(name)
        typed: Any = mine
        ref = ref_values[name]
        if isinstance(ref, dict) and "bool" in ref:
            typed = cfg.get_bool(name)
        if not _agrees(mine, typed, ref, name, name in MACHINE_OR_RANDOM_DEFAULTS):
            wrong.append(f"{name}: condorpy={mine!r} htcondor={ref!r}")
    assert not wrong, "\n".join(wrong)


def test_code_defaults_are_knobs_htcondor_leaves_undefined(reference: dict[str, Any]) -> None:
    """CODE_DEFAULTS must not hide a table default: HTCondor reports these undefined."""
    values = reference["results"]["<code-defaults>"]
    assert {n: v for n, v in values.items() if v is not None} == {}


def test_enough_cases() -> None:
    assert len(CASES) >= 100


def test_host_facts_match_what_htcondor_detects(reference: dict[str, Any]) -> None:
    from condorpy.config import host_facts
    mine, ref = host_facts(), reference["facts"]
    assert mine.full_hostname == ref.full_hostname
    assert (mine.cpus, mine.arch, mine.opsys, mine.username) == (
        ref.cpus, ref.arch, ref.opsys, ref.username)
    assert abs(mine.memory_mb - ref.memory_mb) <= max(ref.memory_mb // 100, 1)
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", mine.ip_address)
