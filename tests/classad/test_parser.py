"""Reading expressions: grammar edge cases, the tree, errors with their position, and
agreement of the fast parser with the lark grammar (grammar.lark)."""

from __future__ import annotations

import random

import pytest

from condorpy.classad import Error, Undefined, parse_expr
from condorpy.classad.ast import (AttrRef, Binary, Call, Cond, Elvis, ListExpr, Literal,
                                  Paren, RecordExpr, Select, Subscript, Unary, unparse)
from condorpy.classad.lark_grammar import lark_parse
from condorpy.classad.parser import MAX_DEPTH, parse_node
from condorpy.errors import ClassAdSyntaxError
from tests.classad.test_differential_ops import gen


@pytest.mark.parametrize("text,value", [
    ("007", 7), ("0x1F", 0), ("08.5", 8.5), ("1e3", 1000.0), (".5", 0.5), ("1E+3", 1000.0),
    ("9223372036854775808", 0), ("-9223372036854775808", -(1 << 63)),
    ("-9223372036854775809", 0), ('"a\\101b"', "aAb"), ('"\\x41"', "x41"), ('"\\1"', "\x01"),
    ('"\\400"', " 0"), ('"\\q"', "q"), ('"a\\nb\\tc\\\\d\\"e"', 'a\nb\tc\\d"e'),
    ("TRUE", True), ("False", False), ("UNDEFINED", Undefined), ("Error", Error),
    ("1 /* a comment */ + 2", 3),
])
def test_literal_forms(text: str, value: object) -> None:
    assert parse_expr(text).evaluate() == value or parse_expr(text).evaluate() is value


@pytest.mark.parametrize("text", [
    "09", "5.", "1.e5", "1e", "0x", "1 2", "1 )", "{1,}", "[;]", "f(1)(2)", "a.true", "5.x",
    '"\\0"', '"abc', "1 // x", "1 # x", "@1", "$x", "1 ! 2", "true ? 1", "1 +", "1 ?: !0",
    "1 ?: -x", "", "   ", "(1", "[a = ]", "[a 1]", "'", "''",
])
def test_refused(text: str) -> None:
    with pytest.raises(ClassAdSyntaxError):
        parse_expr(text)


def test_time_literals_are_read_while_parsing() -> None:
    from condorpy.classad import AbsTime, RelTime
    assert parse_node('absTime("2020-01-01T00:00:00Z")') == Literal(AbsTime(1577836800, 0))
    assert parse_node('relTime("1+00:01:30")') == Literal(RelTime(86490.0))
    assert str(parse_expr('relTime("90")')) == 'relTime("01:30")'
    assert parse_node("absTime(x)") == Call("absTime", (AttrRef("x"),))
    for bad in ['absTime("garbage")', 'relTime("soon")']:
        with pytest.raises(ClassAdSyntaxError):
            parse_expr(bad)


def test_tree_shapes() -> None:
    assert parse_node("1 + 2 * 3") == Binary("+", Literal(1), Binary("*", Literal(2), Literal(3)))
    assert parse_node("1-5") == Binary("-", Literal(1), Literal(5))
    assert parse_node("-5") == Literal(-5)
    assert parse_node("- 5") == Unary("-", Literal(5))
    assert parse_node("MY.x") == AttrRef("x", "MY")
    assert parse_node("target.x.y") == Select(AttrRef("x", "target"), "y")
    assert parse_node("a =?= b") == Binary("is", AttrRef("a"), AttrRef("b"))
    assert parse_node("a ISNT b") == Binary("isnt", AttrRef("a"), AttrRef("b"))
    assert parse_node("l[0]") == Subscript(AttrRef("l"), Literal(0))
    assert parse_node("StrCat(1, x)") == Call("StrCat", (Literal(1), AttrRef("x")))
    assert parse_node("a ? b : c ? d : e") == Cond(AttrRef("a"), AttrRef("b"),
                                                    Cond(AttrRef("c"), AttrRef("d"), AttrRef("e")))
    # Elvis binds tighter than everything, as in the reference
    assert parse_node("-x ?: 5") == Unary("-", Elvis(AttrRef("x"), Literal(5)))
    assert parse_node("7 ?: 2 * 3") == Binary("*", Elvis(Literal(7), Literal(2)), Literal(3))
    assert parse_node("(1)") == Paren(Literal(1))
    assert parse_node("{}") == ListExpr(())
    assert parse_node("[a=1;;b=2;]") == RecordExpr((("a", Literal(1)), ("b", Literal(2))))
    # a repeated name: the later value, the first spelling
    assert parse_node("[A=1;a=3]") == RecordExpr((("A", Literal(3)),))
    assert parse_node("'a b' + 1") == Binary("+", AttrRef("a b"), Literal(1))


def test_children_walk_every_subexpression() -> None:
    node = parse_node("ifThenElse(a > 1, {b, c[0]}, [x = d.e])")
    seen = []
    stack = [node]
    while stack:
        n = stack.pop()
        seen.append(type(n).__name__)
        stack.extend(n.children())
    assert sorted(seen) == sorted(["Call", "Binary", "AttrRef", "Literal", "ListExpr",
                                   "AttrRef", "Subscript", "AttrRef", "Literal", "RecordExpr",
                                   "Select", "AttrRef"])


@pytest.mark.parametrize("text,line,column", [
    ("1 +", 1, 4), ("a && (b ||", 1, 11), ("x =\n  1 + * 2", 2, 7), ('"abc', 1, 1),
    ("1 @ 2", 1, 3),
])
def test_error_position(text: str, line: int, column: int) -> None:
    with pytest.raises(ClassAdSyntaxError) as info:
        parse_expr(text.split("=", 1)[1] if text.startswith("x =") else text)
    if not text.startswith("x ="):
        assert (info.value.line, info.value.column) == (line, column)
        assert "^" in info.value.excerpt


def test_error_position_on_a_later_line() -> None:
    with pytest.raises(ClassAdSyntaxError) as info:
        parse_expr("a &&\n  (b || * c)")
    assert (info.value.line, info.value.column) == (2, 9)
    assert info.value.excerpt.splitlines()[1].index("^") == 4 + 8


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    for text in ["(" * 5000 + "1" + ")" * 5000, "-" * 5000 + "1",
                 "{" * 3000 + "}" * 3000, "a" + ".b" * 5000, "x" + "[0]" * 5000,
                 "a ?: " * 3000 + "1", "f(" * 3000 + ")" * 3000, "[a=" * 3000 + "]" * 3000,
                 "! " * 3000 + "x", "x ? 1 : " * 3000 + "2", "1 + (" * 3000 + "1" + ")" * 3000]:
        with pytest.raises(ClassAdSyntaxError) as info:
            parse_expr(text)
        assert "nested too deeply" in info.value.reason
        assert info.value.line == 1 and info.value.column > 1
    ok = "(" * (MAX_DEPTH // 2) + "1" + ")" * (MAX_DEPTH // 2)
    assert parse_expr(ok).evaluate() == 1


def test_unparse_reads_back_to_the_same_tree() -> None:
    rng = random.Random(7)
    for _ in range(400):
        text = gen(rng, 3)
        try:
            node = parse_node(text)
        except ClassAdSyntaxError:
            continue
        assert parse_node(unparse(node)) == node or \
            parse_expr(unparse(node)).evaluate() == parse_expr(text).evaluate()


def test_unparse_adds_parentheses_built_trees_need() -> None:
    node = Binary("*", Binary("+", Literal(1), Literal(2)), Literal(3))
    assert unparse(node) == "(1 + 2) * 3"
    assert unparse(Select(Binary("+", AttrRef("a"), AttrRef("b")), "c")) == "(a + b).c"
    assert unparse(Unary("-", Literal(-5))) == "--5"
    assert parse_node("--5") == Unary("-", Literal(-5))


def test_fast_parser_matches_the_lark_grammar() -> None:
    rng = random.Random(11)
    texts = [gen(rng, 4) for _ in range(300)]
    texts += ["1 -5", "-5 ?: 3", "true ? :1", "[]", "[a=1;]", "a is b isnt c", "MY.x.y",
              "f()", "{1,{2,[a={3}]}}", "'q n'.x", "-x ?: 5", "~-1", "1 ?: 2 ?: 3"]
    for text in texts:
        try:
            fast = parse_node(text)
        except ClassAdSyntaxError:
            with pytest.raises(ClassAdSyntaxError):
                lark_parse(text)
            continue
        assert lark_parse(text) == fast, text
    for bad in ["1 +", "{1,}", "[;]", "f(1)(2)", "1 ?: !0", "a.true", "(1"]:
        with pytest.raises(ClassAdSyntaxError):
            lark_parse(bad)
