"""condorpy's submit reader against HTCondor's own (the htcondor2 wheel).

htcondor2 25.14.1 cannot make job ads without a schedd (``Submit.jobs`` and
``Submit.procs`` say "not currently implemented"), but it exposes the two parts of
condor_submit's reader that decide *which* jobs exist and *what* the macros say:
``Submit.itemdata()`` (the queue statement's items) and ``Submit.expand(key)`` (macro
expansion for the first job). Both are compared here on the same texts. The job-ad
attributes themselves are checked against HTCondor's condor_submit sources in
test_submit.py.

The oracle runs in a child process with a timeout: HTCondor's reader spins forever on
a macro loop, and a test must not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from condorpy.queue.submit import expand, item_data

pytest.importorskip("htcondor2")

_ORACLE = r"""
import json, os, sys
import htcondor2
cases = json.load(sys.stdin)
out = {}
for name, case in cases.items():
    os.chdir(case["cwd"])
    os.environ.update(case.get("env", {}))
    try:
        s = htcondor2.Submit(case["text"])
        if case["kind"] == "items":
            out[name] = {"ok": [dict(d) for d in s.itemdata()]}
        else:
            got = {}
            for k in case["keys"]:
                try:
                    got[k] = s.expand(k)
                except KeyError:
                    got[k] = None   # htcondor2 raises KeyError for an empty result
            out[name] = {"ok": got}
    except Exception as exc:
        out[name] = {"error": str(exc)}
json.dump(out, sys.stdout)
"""


def _oracle(cases: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    proc = subprocess.run([sys.executable, "-c", _ORACLE], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CONDOR_CONFIG": "/dev/null"})
    assert proc.returncode == 0, proc.stderr
    result: dict[str, dict[str, object]] = json.loads(proc.stdout)
    return result


QUEUE_CASES = {
    "in_commas_and_blanks": "queue x in (a, b c,d)\n",
    "in_multiline_with_count": "queue 2 x in (\n a b\n c, d\n)\n",
    "in_multiline_comment": "queue x in (\n a\n # b\n c\n)\n",
    "in_default_item": "queue in (x y)\n",
    "in_quotes_not_special": 'queue x in ("a b", c)\n',
    "in_macro_list": "L = p q\nqueue x in ($(L))\n",
    "from_inline_two_vars": "queue a,b from (\n 1 2\n 3, 4\n 5,6 7 8\n 9\n)\n",
    "from_three_vars": "queue a,b,c from (\n x  y  z w\n p,q\n)\n",
    "from_one_var_keeps_line": "queue a from (\n x y, z\n w\n)\n",
    "from_comment_line": "queue a from (\n x\n # c\n w\n)\n",
    "from_one_line_list": "queue a,b from (1 2)\n",
    "from_tabs": "queue a,b from (\n\tx\t\ty\n)\n",
    "from_trailing_comma": "queue a,b from (\n x,\n)\n",
    "from_blank_then_comma": "queue a,b from (\n x , y\n)\n",
    "from_space_separated_vars": "queue a b from (\n 1 2\n)\n",
    "from_file": "queue a,b from items.txt\n",
    "from_file_macro": "F = items.txt\nqueue a,b from $(F)\n",
    "matching_files": "queue f matching files *.dat\n",
    "matching_dirs": "queue d matching dirs d*\n",
    "matching_any": "queue matching *.dat d1\n",
    "matching_two_patterns": "queue f matching (a*.dat b*.dat)\n",
    "count_and_from": "queue 3 a from (\n p\n q\n)\n",
}

MACRO_TEXT = """executable = /bin/true
A = 1
B = $(A)x$(A)
C = $(undefined_thing:dflt)
D = $(A:dflt)
E = $ENV(CONDORPY_T_ENV)
P = /a/b/c.txt
F = $Fn(P)
G = $Fx(P)
H = $Fp(P)
I = $Fnx(P)
J = $Fd(P)
K = $Fq(P)
L = $$(Memory) and $(A)
M = $(cluster).$(process).$(Step).$(Row).$(ItemIndex)
N = $INT(A)
O = $(ARCH) $(OPSYS) $(IsLinux)
R = $(B:zz)
S = $(Undefined)
T = x$(A)$(A)y $(B)
U = $(t)
arguments = "a 'b c' $(A)"
request_memory = $(A) GB
Case = $(a)$(ClusterId)$(ProcId)
queue
"""
MACRO_KEYS = list("BCDEFGHIJKLMNORSTU") + ["arguments", "request_memory", "Case"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("subdiff")
    # no blank line: htcondor2's itemdata() refuses one ("invalid qargs"), condorpy
    # skips it (see test_submit.py)
    (d / "items.txt").write_text("1 2\n3, 4\n# comment\n5 6 7\n")
    for name in ("a1.dat", "a2.dat", "b1.dat", "x.txt"):
        (d / name).write_text("")
    (d / "d1").mkdir()
    (d / "d2.dat").mkdir()
    return d


def test_queue_items_agree_with_htcondor(workdir: Path) -> None:
    cases: dict[str, dict[str, object]] = {
        name: {"kind": "items", "text": "executable = /bin/true\n" + text,
               "cwd": str(workdir)}
        for name, text in QUEUE_CASES.items()}
    theirs = _oracle(cases)
    agree, differ = [], []
    for name, case in cases.items():
        ref = theirs[name]
        assert "ok" in ref, f"{name}: htcondor2 refused: {ref}"
        ours = item_data(str(case["text"]), name, submit_dir=str(workdir))
        (agree if ours == ref["ok"] else differ).append((name, ours, ref["ok"]))
    assert not differ
    print(f"\nqueue statements: {len(agree)}/{len(cases)} agree with htcondor2 itemdata()")


def test_macro_expansion_agrees_with_htcondor(workdir: Path) -> None:
    env = {"CONDORPY_T_ENV": "from-env"}
    cases: dict[str, dict[str, object]] = {
        "macros": {"kind": "expand", "text": MACRO_TEXT, "keys": MACRO_KEYS,
                   "cwd": str(workdir), "env": env}}
    ref = _oracle(cases)["macros"]
    assert "ok" in ref, ref
    theirs = ref["ok"]
    assert isinstance(theirs, dict)
    ours = {k: expand(MACRO_TEXT, k, env=env) or None for k in MACRO_KEYS}
    assert ours == theirs
    print(f"\nmacro expansion: {len(ours)}/{len(MACRO_KEYS)} keys agree with "
          "htcondor2 expand()")
