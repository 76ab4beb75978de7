"""condorpy against classad2 on the matchmaking idioms that evaluate an expression in other
records: countMatches and evalInEachContext with attribute references to unevaluated
expressions in argument position (``x``, ``MY.x``, ``TARGET.x``, ``r.x``, nested record
members), lists of references to records (GPU property records reached through
``AvailableGPUs``), literal records in those lists, and the nested records they lead
to; the calls written inline, held in the job ad (``MY.Attr``) and in the slot ad
(``TARGET.Attr``), in a match and with the job alone. The extended ads add what the
reference evaluates after such a call in the same expression (operators, conditionals,
a second call, records and lists written after it, attributes holding all that) and
lists reached through chains of attributes, the other ad, records, conditionals and
cycles.

The generators draw names from one small pool for both ads, so that a name is often
defined in the job, in the slot, in both or in neither: where it is found decides
what the reference library evaluates next (see condorpy.classad.functions.eachcontext).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from condorpy.classad import ClassAd, Undefined, parse_expr
from tests.classad.oracle import classad2, same

pytestmark = [pytest.mark.differential,
              pytest.mark.skipif(classad2 is None, reason="needs the htcondor wheel")]
if classad2 is not None:
    # countMatches and evalInEachContext are HTCondor's additions to the library:
    # importing htcondor2 registers them
    pytest.importorskip("htcondor2")

NAMES = ["c", "y", "d", "q", "Req", "Capability", "nothere"]
NUMS = ["0", "1", "2", "7.0", "8.0", "8.5", "-1", "9.5"]


def _num(rng: random.Random) -> str:
    return rng.choice(NUMS)


def _unevaluated(rng: random.Random, depth: int = 0) -> str:
    """An expression held by an attribute and meant to be evaluated elsewhere."""
    n = rng.choice(NAMES[:4] + ["Capability"])
    forms = [f"{n} >= {_num(rng)}", f"{n}", f"{n} > y", f"MY.{n} >= 1", f"TARGET.{n} > 1",
             f"isUndefined({n})", f"{n} + 1", f"n.c > {_num(rng)}", f"MY.n.c", f"{n} ?: 5",
             f"Capability >= {_num(rng)} && GlobalMemoryMb > 1000", "TARGET.Want",
             f"{_num(rng)}", "undefined", "error", "true", '"s"']
    # (no countMatches inside: the reference evaluates each element with a fresh state,
    # without its cycle check, and a held call that reaches itself crashes it)
    return rng.choice(forms)


def _record(rng: random.Random, depth: int = 0) -> str:
    fields = []
    for n in ("c", "y", "d", "q", "Capability"):
        if rng.random() < 0.5:
            fields.append(f"{n} = {_num(rng) if rng.random() < 0.6 else _unevaluated(rng, 1)}")
    if rng.random() < 0.4:
        fields.append("GlobalMemoryMb = " + rng.choice(["4000", "40536", "500"]))
    if depth < 2 and rng.random() < 0.5:
        fields.append(f"n = {_record(rng, depth + 1)}")
    return "[" + "; ".join(fields) + "]"


def _list(rng: random.Random, depth: int = 0) -> str:
    """A list of references to records (and odd elements)."""
    pool = ["ga", "gb", "GPUs_a", "GPUs_b", "GPUs_c", "ga.n", "MY.ga", "TARGET.gb",
            "r", "r.rr", "y", "nothere", "undefined", "error", "1", "{ga}"]
    k = rng.randint(0, 4)
    items = [(_record(rng, 1) if rng.random() < 0.25 else rng.choice(pool))
             for _ in range(k)]
    return "{" + ", ".join(items) + "}"


def _arg0(rng: random.Random, depth: int = 0) -> str:
    """The expression argument: mostly attribute references to unevaluated expressions."""
    n = rng.choice(NAMES + ["RequireGPUs"])
    forms = [n, f"MY.{n}", f"TARGET.{n}", f"r.{n}", f"MY.r.{n}", f"r.rr.{n}",
             f"TARGET.ga.{n}", f"ga.{n}", f"({n})"]
    if rng.random() < 0.2:
        return _unevaluated(rng, depth + 1)
    return rng.choice(forms)


def _arg1(rng: random.Random, depth: int = 0) -> str:
    forms = ["L", "MY.L", "TARGET.L", "G", "TARGET.G", "MY.G", "AvailableGPUs",
             "TARGET.AvailableGPUs", "MY.AvailableGPUs", "r.L", "TARGET.ga.L", "K",
             "nothere", "undefined", "error", "1", "ga", "Recs", "TARGET.Recs"]
    if rng.random() < 0.3:
        return _list(rng, depth)
    return rng.choice(forms)


def _call(rng: random.Random) -> str:
    f = rng.choice(["countMatches", "evalInEachContext"])
    text = f"{f}({_arg0(rng)}, {_arg1(rng)})"
    wrap = rng.random()
    if f == "countMatches" and wrap < 0.3:
        # the call last: what the reference evaluates after it is not compared here
        # (see test_what_follows_the_call_in_the_same_expression)
        return f"RequestGPUs <= {text}"
    if f == "evalInEachContext" and wrap < 0.2:
        return f"sum({text})"
    return text


def _ad(rng: random.Random, side: str, extended: bool = False) -> str:
    attrs: list[str] = []

    def put(name: str, value: str, p: float = 0.75) -> None:
        if rng.random() < p:
            attrs.append(f"{name} = {value}")
    for n in ("c", "y", "d"):
        put(n, _num(rng) if rng.random() < 0.7 else _unevaluated(rng))
    for n in ("q", "Req", "RequireGPUs", "Capability"):
        put(n, _unevaluated(rng), 0.5)
    put("r", "[" + "; ".join([f"q = {_unevaluated(rng)}", f"c = {_num(rng)}",
                              f"L = {_list(rng)}",
                              f"rr = [q = {_unevaluated(rng)}; c = {_num(rng)}]"]) + "]")
    put("ga", _record(rng))
    put("gb", _record(rng))
    for g in ("GPUs_a", "GPUs_b", "GPUs_c"):
        cap = rng.choice(["7.0", "8.0", "8.0", "9.0"])
        put(g, f'[Capability = {cap}; DeviceName = "{g}"; GlobalMemoryMb = '
               f'{rng.choice(["16160", "40536"])}]', 0.8 if side == "slot" else 0.15)
    put("AvailableGPUs", rng.choice(["{GPUs_a, GPUs_b, GPUs_c}", "{GPUs_a}", "{}",
                                     "{GPUs_b, GPUs_c, GPUs_zz}"]),
        0.9 if side == "slot" else 0.15)
    put("L", _list(rng))
    put("G", _list(rng))
    put("K", "{ga.n, [c = 3], gb}", 0.4)
    put("Recs", "{" + ", ".join(_record(rng) for _ in range(rng.randint(0, 3))) + "}", 0.5)
    put("Want", _num(rng), 0.5)
    put("RequestGPUs", rng.choice(["1", "2"]), 0.8)
    put("Call", _call(rng), 0.9)
    if extended:
        # lists reached through attributes: chains, the other ad, records, cycles
        put("LL", rng.choice(["L", "G", "TARGET.L", "MY.G", "r.L", "K", "LL2", "(L)",
                              "AvailableGPUs", "TARGET.AvailableGPUs", "nothere",
                              "TARGET.LL", "ga.L", "Recs", "TARGET.Recs", "Lc",
                              "c > 1 ? L : TARGET.L", "ifThenElse(y > 1, G, r.L)",
                              "nothere ?: TARGET.G", "LL2 ?: L", "y ? L : 5",
                              "ifThenElse(nothere, L, G)", "(q > 1) ? LL2 : G"]))
        put("LL2", rng.choice(["L", "TARGET.G", "r.L", "LL", "{ga, gb.n}"]), 0.6)
        put("Lc", rng.choice(["Lc", "LL", "{Lc}"]), 0.3)
        ga_l = _list(rng)
        put("gl", f"[L = {ga_l}; n = {_record(rng, 1)}; c = {_num(rng)}]", 0.6)
        put("Follow", _followed(rng), 0.8)
        put("Held", rng.choice(["MY.RequireGPUs", "TARGET.Req", "r.q", "nothere"]), 0.5)
    return "[" + "; ".join(attrs) + "]"


def _exprs(rng: random.Random) -> list[str]:
    out = [_call(rng) for _ in range(3)]
    out += ["MY.Call", "TARGET.Call", "Call",
            rng.choice(["MY.r.q", "r.rr.q", "TARGET.ga.q", "ga.n.d", "TARGET.ga.n.c",
                        "MY.ga.d", "r.c", "TARGET.r.rr.c", "MY.L[0].c",
                        "TARGET.AvailableGPUs[0]", "TARGET.AvailableGPUs[1].Capability"])]
    return out


def _list_arg(rng: random.Random) -> str:
    """A second argument that is a list held in an attribute, often through a chain of
    them, through the other ad, a record, a list that is not there or a cycle."""
    return rng.choice(["LL", "MY.LL", "TARGET.LL", "LL2", "TARGET.LL2", "Lc", "gl.L",
                       "TARGET.gl.L", "MY.gl.L", "r.L", "TARGET.r.L", "(LL)", "nothere",
                       "TARGET.AvailableGPUs", "AvailableGPUs", "L", "TARGET.G", "K"])


def _ref_arg(rng: random.Random) -> str:
    """A first argument that is an attribute reference, often to nothing."""
    n = rng.choice(NAMES + ["RequireGPUs", "Held"])
    return rng.choice([n, f"MY.{n}", f"TARGET.{n}", f"r.{n}", f"MY.r.{n}", f"r.rr.{n}",
                       f"TARGET.ga.{n}", f"ga.n.{n}", f"gl.n.{n}", f"TARGET.gl.n.{n}",
                       "MY.nothere", "TARGET.nothere", "r.nothere", "MY.Held"])


def _operand(rng: random.Random) -> str:
    """What an expression evaluates after the call: where it is looked up is the test."""
    n = rng.choice(NAMES + ["RequestGPUs", "Want"])
    return rng.choice([n, n, f"MY.{n}", f"TARGET.{n}", f"r.{n}", f"ga.{n}",
                       f"TARGET.r.{n}", _num(rng), "size(L)", "size(TARGET.L)",
                       f"isUndefined({n})", f"r.rr.{n}", "Call", "TARGET.Call",
                       "Follow", "TARGET.Follow", "gl.c", "gl.n.c",
                       # written in the expression: records belong to its ad
                       f"[a = {n}].a", f"[a = TARGET.{n}].a", f"[a = [b = {n}]].a.b",
                       f'[a = MY.{n}]["a"]', f"{{{n}, TARGET.{n}}}[1]",
                       f"sum({{{n}, TARGET.{n}, 1}})", f"size({{{n}}})",
                       f"size(unparse({n}))", f"size(unresolved({n}))"])


def _moving_call(rng: random.Random) -> str:
    f = rng.choice(["countMatches", "countMatches", "evalInEachContext", "unresolved"])
    if f == "unresolved":
        ref = _ref_arg(rng)
        return rng.choice([f"size(unresolved({ref}))", f'unresolved({ref}, "^[a-m]")',
                           f'unresolved({ref}, "^C")'])
    second = _list_arg(rng) if rng.random() < 0.6 else _arg1(rng)
    text = f"{f}({_ref_arg(rng)}, {second})"
    return f"sum({text})" if f == "evalInEachContext" and rng.random() < 0.6 else text


def _followed(rng: random.Random) -> str:
    """A call whose attribute lookup moves the evaluation, and more evaluated after it
    in the same expression (and sometimes before it, which must not move)."""
    c, a, b = _moving_call(rng), _operand(rng), _operand(rng)
    return rng.choice([
        f"{c} >= {a}", f"{c} + {a}", f"{c} && {a}", f"{c} || {a}", f"{c} == {a}",
        f"{c} ? {a} : {b}", f"({c} > 0) ? {a} : {b}", f"{c} ?: {a}",
        f"ifThenElse({c} > 0, {a}, {b})", f"{a} + {c} + {b}", f"-{c} * {a}",
        f"{c} + {_moving_call(rng)} + {a}", f"{c} is undefined || {a}",
        f"{c} =?= {a}", f"{c} - {a} * {b}", f"strcat({c}, {a}, {b})",
        f"{a} <= {c} && {b}", f"{c} != {a} && {b} >= 1", f"({c}) / {a}",
        f"isUndefined({c}) ? {a} : {b}", f"{c} + ({a} + {b})",
        f"member({a}, {{{c}}})", f"real({c}) + {a}",
    ])


def _disagreements(seed: int, n_pairs: int, match: bool, extended: bool = False
                   ) -> tuple[int, list[str]]:
    rng = random.Random(seed)
    bad: list[str] = []
    checked = 0
    for _ in range(n_pairs):
        job_text, slot_text = _ad(rng, "job", extended), _ad(rng, "slot", extended)
        rj, rs = classad2.ClassAd(job_text), classad2.ClassAd(slot_text)
        j, s = ClassAd.parse_new(job_text), ClassAd.parse_new(slot_text)
        exprs = _exprs(rng)
        if extended:
            exprs += [_followed(rng) for _ in range(4)]
            exprs += [f"{rng.choice(['countMatches', 'evalInEachContext'])}"
                      f"({_arg0(rng)}, {_list_arg(rng)})" for _ in range(2)]
            exprs += ["MY.Follow", "TARGET.Follow", "Follow + c", "TARGET.Follow + c"]
            # the other functions whose argument is a reference to an expression
            exprs += [f"{rng.choice(['unparse', 'unresolved'])}({_ref_arg(rng)})"
                      for _ in range(2)]
        for text in exprs:
            ref = classad2.ExprTree(text).eval(rj, rs if match else None)
            ours = parse_expr(text).evaluate(j, s if match else None)
            checked += 1
            if not same(ours, ref, rj, rs if match else None):
                bad.append(f"{text}\n    job  {job_text}\n    slot {slot_text}\n"
                           f"    condorpy {ours!r}, classad2 {ref!r}")
    return checked, bad


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_calls_in_a_match_agree(seed: int) -> None:
    checked, bad = _disagreements(seed, 250, match=True)
    assert not bad, f"{len(bad)} of {checked} disagree:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("seed", [5, 6])
def test_calls_with_the_job_alone_agree(seed: int) -> None:
    checked, bad = _disagreements(seed, 150, match=False)
    assert not bad, f"{len(bad)} of {checked} disagree:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_what_follows_a_moving_call_agrees_in_a_match(seed: int) -> None:
    checked, bad = _disagreements(seed, 200, match=True, extended=True)
    assert not bad, f"{len(bad)} of {checked} disagree:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("seed", [15, 16])
def test_what_follows_a_moving_call_agrees_with_the_job_alone(seed: int) -> None:
    checked, bad = _disagreements(seed, 150, match=False, extended=True)
    assert not bad, f"{len(bad)} of {checked} disagree:\n" + "\n".join(bad[:10])


def _both(job: str, slot: str, text: str) -> tuple[Any, Any, Any, Any]:
    rj, rs = classad2.ClassAd(job), classad2.ClassAd(slot)
    ref = classad2.ExprTree(text).eval(rj, rs)
    ours = parse_expr(text).evaluate(ClassAd.parse_new(job), ClassAd.parse_new(slot))
    return ours, ref, rj, rs


GPU_SLOT = ("[AvailableGPUs = {g}; g = [Capability = 8.0]; RequestGPUs = 5; c = 10; "
            "L = evalInEachContext(d + 0, {[d = c]})]")


@pytest.mark.parametrize("job, text, expected", [
    # MY.RequireGPUs missing: the lookup ends above both ads, and RequestGPUs is then
    # found in neither: the whole comparison is undefined
    ("[RequestGPUs = 1]",
     "countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs", None),
    # found in the job: the evaluation stays there
    ("[RequestGPUs = 1; RequireGPUs = Capability >= 8.0]",
     "countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) >= RequestGPUs", True),
    # found in the slot: RequestGPUs is then the slot's (5), not the job's
    ("[RequestGPUs = 1]",
     "countMatches(TARGET.AvailableGPUs, TARGET.AvailableGPUs) >= RequestGPUs", False),
    # what comes before the call is not moved
    ("[RequestGPUs = 1]",
     "RequestGPUs <= countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)", False),
    # an attribute's expression keeps its move to itself
    ("[RequestGPUs = 1; N = countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)]",
     "N + RequestGPUs", 1),
    ("[RequestGPUs = 1; N = countMatches(MY.RequireGPUs, TARGET.AvailableGPUs) + "
     "RequestGPUs]", "N", None),
    # ... and an attribute evaluated after a move starts afresh where it is found: the
    # record written in the slot's L belongs to the slot (c = 10)
    ("[c = 1; RequireGPUs = c > 0]",
     "countMatches(MY.RequireGPUs, {}) + sum(TARGET.L)", 10),
])
def test_what_follows_the_call_in_the_same_expression(job: str, text: str,
                                                       expected: Any) -> None:
    ours, ref, rj, rs = _both(job, GPU_SLOT, text)
    assert same(ours, ref, rj, rs)
    assert ours == expected if expected is not None else ours is Undefined


@pytest.mark.parametrize("job, slot, text, expected", [
    # the slot's L is {g}: g is evaluated where the call stands (the job, which has a
    # g of its own), not in the slot where the list is written
    ("[g = [Capability = 9.0]]", "[L = {g}; g = [Capability = 7.0]]",
     "evalInEachContext(Capability + 0, TARGET.L)", [9.0]),
    # through a chain of attributes (LL = L), and through the other ad
    ("[g = [Capability = 9.0]]", "[LL = L; L = {g}; g = [Capability = 7.0]]",
     "evalInEachContext(Capability + 0, TARGET.LL)", [9.0]),
    ("[g = [Capability = 9.0]; LT = TARGET.L]", "[L = {g}; g = [Capability = 7.0]]",
     "evalInEachContext(Capability + 0, LT)", [9.0]),
    # after a reference found in the slot moved the call there, TARGET.L is the job's
    # list, and its g the slot's
    ("[g = [Capability = 9.0]; L = {g}]", "[g = [Capability = 7.0]; R = Capability > 8]",
     "evalInEachContext(TARGET.R, TARGET.L)", [False]),
    # a missing reference moves it above both ads, where no list is found
    ("[g = [Capability = 9.0]]", "[L = {g}; g = [Capability = 7.0]]",
     "evalInEachContext(Capability, TARGET.L)", None),
    # a record written in the list belongs to the ad the list is written in
    ("[c = 1]", "[L = {[x = c]}; c = 2]", "evalInEachContext(x + 0, TARGET.L)", [2]),
    # a cycle is undefined
    ("[Lc = Lc]", "[]", "evalInEachContext(x, Lc)", None),
])
def test_lists_held_in_attributes_are_evaluated_where_the_call_stands(
        job: str, slot: str, text: str, expected: Any) -> None:
    ours, ref, rj, rs = _both(job, slot, text)
    assert same(ours, ref, rj, rs)
    assert ours == expected if expected is not None else ours is Undefined
