"""Evaluation: operators, three-valued logic, scoping, records and lists, cycles."""

from __future__ import annotations

import math
import random

import pytest

from condorpy.classad import (AbsTime, CallContext, ClassAd, Error, Expr, RelTime, Undefined,
                              parse_expr)
from condorpy.classad.ast import Binary


def ev(text: str, my: ClassAd | None = None, target: ClassAd | None = None) -> object:
    return parse_expr(text).evaluate(my, target)


@pytest.mark.parametrize("text,value", [
    ("7 / 2", 3), ("-7 / 2", -3), ("-7 % 3", -1), ("1 + 2.5", 3.5), ("2.0 * 3", 6.0),
    ("9223372036854775807 + 1", -(1 << 63)), ("9223372036854775807 * 2", -2),
    ("(-9223372036854775807 - 1) / -1", (1 << 63) - 1), ("1 << 70", 64), ("1 << 63", -(1 << 63)),
    ("-8 >> 1", -4), ("-8 >>> 1", 9223372036854775804), ("-1 >>> 0", 0), ("~5", -6),
    ("1 & 3 | 4 ^ 6", 3), ("true + 1", 2), ("true < 2", True), ("1 == true", True),
    ('"abc" == "ABC"', True), ('"abc" =?= "ABC"', False), ('"abc" < "ABD"', True),
    ("1 is 1.0", False), ("1 == 1.0", True), ("undefined =?= undefined", True),
    ("error =!= 1", True), ("true ? 1 : 2", 1), ("0 ? 2 : 3", 3), ("undefined ?: 4", 4),
    ("3 ?: 4", 3), ("-1.0 / 0", -math.inf), ("!0", True), ("!1.5", False),
])
def test_operators(text: str, value: object) -> None:
    assert ev(text) == value and type(ev(text)) is type(value)


@pytest.mark.parametrize("text", [
    "1 / 0", "1 % 0", "1.0 / 0", "7.5 % 2", "1e308 * 10", '1 == "1"', '"x" + 1', "-true",
    "true | false", "3 & 1.0", "~1.5", '!"a"', "{1} == {1}", "{1} is {1}", '"s" ? 1 : 2',
    "error && false", "error || true", '"a" || true', "error ?: 4", "{1,2,3}[5]",
    '"abc"[0]', "{1,2}[1.5]", "error",
])
def test_errors(text: str) -> None:
    assert ev(text) is Error


@pytest.mark.parametrize("text,value", [
    ("false && error", False), ("true || error", True), ("undefined || true", True),
    ("undefined && false", False), ("x && false", False), ("false || undefined", Undefined),
    ("true && undefined", Undefined), ("undefined == 1", Undefined), ("-x", Undefined),
    ("undefined[0]", Undefined), ("x.y", Undefined), ("undefined ? 1 : 2", Undefined),
])
def test_three_valued_logic(text: str, value: object) -> None:
    assert ev(text) is value


def test_nan_and_infinity_follow_the_reference() -> None:
    assert math.isnan(ev("0.0 / 0"))  # type: ignore[arg-type]
    assert ev("1e309") == math.inf
    assert ev("1e308 + 1e308") is Error  # +inf from arithmetic is an error
    assert ev("-1e308 - 1e308") == -math.inf


def test_scoping_my_target_and_matchmaking_fallback() -> None:
    my = ClassAd.parse_new('[a = 1; r = TARGET.b + c; c = 10; m = MY.c; back = TARGET.back2]')
    tg = ClassAd.parse_new('[b = 2; c = 100; z = 7; back2 = MY.c + TARGET.c; uses_a = a]')
    assert ev("r", my, tg) == 12
    assert ev("TARGET.back2", my, tg) == 110
    assert ev("back", my, tg) == 110
    assert ev("m", my, tg) == 10
    assert ev("TARGET.m", my, tg) is Undefined
    # unscoped names missing in MY are looked up in TARGET (HTCondor matchmaking)
    assert ev("z", my, tg) == 7
    assert ev("TARGET.uses_a", my, tg) == 1
    assert ev("MY.z", my, tg) is Undefined
    assert isinstance(ev("MY", my, tg), ClassAd) and ev("TARGET.MY.z", my, tg) == 7


def test_nested_records_see_enclosing_scopes() -> None:
    assert ev("[a=1; b=[c=a]].b.c") == 1
    assert ev("[a=1; b=[a=2; c=a]].b.c") == 2
    ad = ClassAd.parse_new("[d = [e = f]; f = 3]")
    assert ev("d.e", ad) == 3
    assert ad.evaluate("d").evaluate("e") == 3  # type: ignore[union-attr]
    assert ev('[a=1]["A"]') == 1
    assert ev("{[a=1],[a=2]}.a") == [1, 2]
    assert ev("{1,2}.a") == [Error, Error]


def test_lists_are_evaluated_lists() -> None:
    my = ClassAd({"x": 5})
    assert ev("{1, x, 1/0, {2}}", my) == [1, 5, Error, [2]]
    assert ev("{1,2,3}[1]") == 2


def test_circular_references_are_undefined_not_hangs() -> None:
    # (tests/classad/test_differential_cycles.py compares many more with classad2)
    ad = ClassAd.parse_new("[a = b; b = a; s = s + 1; ok = 1; uses = ok + a;"
                           " self = isUndefined(self); elvis = elvis ?: 3]")
    assert ad.evaluate("a") is Undefined
    assert ad.evaluate("s") is Undefined
    assert ad.evaluate("uses") is Undefined
    assert ad.evaluate("ok") == 1
    assert ad.evaluate("elvis") == 3
    # the attribute asked for is evaluated afresh by its inner reference, which meets the
    # cycle: isUndefined(undefined) there, then isUndefined(true) outside
    assert ad.evaluate("self") is False
    assert parse_expr("self").evaluate(ad) is True
    # a cycle through TARGET
    my = ClassAd.parse_new("[x = TARGET.y]")
    tg = ClassAd.parse_new("[y = TARGET.x]")
    assert my.evaluate("x", tg) is Undefined


def test_long_attribute_chains_do_not_raise() -> None:
    ad = ClassAd({f"a{i}": parse_expr(f"a{i + 1} + 1") for i in range(3000)})
    ad["a3000"] = 0
    # nesting is capped (MAX_ATTR_DEPTH): too deep a chain is an error, never a crash
    assert ad.evaluate("a0") is Error
    assert ad.evaluate("a2950") == 50
    # the same through function calls, which take more of Python's stack per hop
    ad = ClassAd({f"a{i}": parse_expr(f"strcat(a{i + 1})") for i in range(3000)})
    ad["a3000"] = "x"
    assert ad.evaluate("a0") is Error
    assert ad.evaluate("a2950") == "x"


def test_call_context_supplies_the_clock() -> None:
    ctx = CallContext(now=lambda: 1000.0)
    e = parse_expr("time() - 400")
    value = e.evaluate(None, None, ctx)
    assert value == 600


def test_unknown_function_and_bad_arity_are_errors() -> None:
    assert ev("nosuchfunc(1)") is Error
    assert ev("ifThenElse(true, 1)") is Error


def test_lazy_special_functions() -> None:
    my = ClassAd.parse_new('[x = y + 2.5; y = 1; s = "y * 4"; l = {[v = 1], [v = 5]}]')
    assert ev("ifThenElse(true, 1, 1/0)") == 1
    assert ev("ifThenElse(undefined, 1, 2)") is Undefined
    assert ev("eval(s)", my) == 4
    assert ev('eval("1 +")') is Error
    assert ev("unparse(x)", my) == "y + 2.500000000000000E+00"  # the reference's spelling
    assert ev("evalInEachContext(v * 2, l)", my) == [2, 10]
    assert ev("countMatches(v > 2, l)", my) == 1
    assert ev("debug(y)", my) == 1
    # (what classad2 answers: MY.w is looked up in MY, TARGET.q printed without TARGET)
    assert ev("unresolved(x)", ClassAd.parse_new("[x = y + z + MY.w + TARGET.q; y = 1]")) \
        == "q,w,z"
    assert ev("unparse(nope)", my) == "" and ev("unparse(1 + 2)") is Error
    assert ev("eval(1.5)") == 1.5 and ev("eval(undefined)") is Error


def test_references_and_sub_expressions() -> None:
    e = parse_expr("MY.Memory > TARGET.RequestMemory && (KeyboardIdle > 15 * 60)")
    assert e.references() == {"memory", "requestmemory", "keyboardidle"}
    refs = e.scoped_references()
    assert refs["my"] == {"memory"} and refs["target"] == {"requestmemory"}
    my = ClassAd({"Memory": 4096, "KeyboardIdle": 10})
    job = ClassAd({"RequestMemory": 2048})
    node = e.node
    assert isinstance(node, Binary)
    assert Expr.from_node(node.left).evaluate(my, job) is True
    assert Expr.from_node(node.right).evaluate(my, job) is False
    assert e.evaluate(my, job) is False


def test_constant_subtrees_are_folded() -> None:
    e = parse_expr("15 * 60 + 2")
    assert e.evaluate() == 902 and e.is_constant


def test_time_values() -> None:
    t = AbsTime(10.0)
    ad = ClassAd({"t": t, "d": RelTime(5.0)})
    assert ev("t + d", ad) == AbsTime(15.0)
    assert ev("t - t", ad) == RelTime(0.0)
    assert ev("d * 2", ad) == RelTime(10.0)
    assert ev("t == t", ad) is True
    assert ev("d == 5", ad) is Error


def test_evaluation_never_raises_on_generated_expressions() -> None:
    from tests.classad.test_differential_ops import MY_AD, TARGET_AD, gen
    my, tg = ClassAd.parse_new(MY_AD), ClassAd.parse_new(TARGET_AD)
    rng = random.Random(3)
    for _ in range(500):
        try:
            e = parse_expr(gen(rng, 4))
        except Exception:
            continue
        e.evaluate(my, tg)


def test_eval_compiles_each_text_once_in_a_bounded_table() -> None:
    from condorpy.classad import compiler, expr
    my = ClassAd({"x": 2})
    for i in range(compiler._TEXTS_MAX + 5):
        assert ev(f'eval("x + {i}")', my) == 2 + i
    table = expr._compiler()._texts
    assert 0 < len(table) <= compiler._TEXTS_MAX
    assert ev('eval("x + 3")', my) == 5 and ev('eval("x +")', my) is Error


def test_fused_and_or_closure_keeps_three_valued_logic() -> None:
    # "leaf && (a || b)" and "(a - b) <= k" compile to fused closures; every mix of
    # values must give what the operators give one at a time
    from condorpy.classad import ops
    values = ["true", "false", "undefined", "error", "1", "0", '"s"', "2.5"]
    for x in ["2", "0", "undefined", '"s"', "1 + 1"]:
        for a in values:
            for b in values:
                my = ClassAd()
                my.set_expr("x", x)
                my.set_expr("a", a)
                my.set_expr("b", b)
                got = ev("x > 1 && (a || b)", my)
                xv, av, bv = (my.evaluate(n) for n in "xab")
                want = ops.logical_and(ops.BINARY[">"](xv, 1),
                                       lambda: ops.logical_or(av, lambda: bv))
                assert repr(got) == repr(want), (x, a, b)
    for a in ["3", "1.5", "undefined", '"s"', "true", "9223372036854775807"]:
        for b in ["1", "0.5", "error", "-1"]:
            my = ClassAd()
            my.set_expr("a", a)
            my.set_expr("b", b)
            av, bv = my.evaluate("a"), my.evaluate("b")
            want = ops.BINARY["<="](ops.BINARY["-"](av, bv), 2)
            assert repr(ev("(a - b) <= 2", my)) == repr(want), (a, b)
