"""Long flat operator chains are length, not nesting: they parse, evaluate, unparse and
compile up to the parser's limit on an expression's tokens (HTCondor's parser takes
them at any length; condorpy's daemon must not stall on one), with no recursion per
term, and past it they are refused clearly; real nesting stays refused at parse
time."""

from __future__ import annotations

import sys

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.classad.ast import unparse
from condorpy.classad.expr import parse_expr_uncached
from condorpy.classad.lark_grammar import lark_parse
from condorpy.classad.lexer import tokenize
from condorpy.classad.parser import Parser, parse_node
from condorpy.classad.parser_limits import MAX_EXPR_TOKENS
from condorpy.errors import ClassAdSyntaxError
from tests.classad.oracle import classad2

CHAINS = {
    "owners": lambda n: " || ".join(f'Owner == "u{i}"' for i in range(n)),
    "owners, no spaces": lambda n: "||".join(f'Owner=="u{i}"' for i in range(n)),
    "and": lambda n: " && ".join(f"x != {i}" for i in range(n)),
    "plus": lambda n: " + ".join(str(i) for i in range(n)),
    "mixed precedence": lambda n: " + ".join(f"{i} * x - {i} / 2" for i in range(n)),
    "mixed, no spaces": lambda n: "+".join(f"{i}*x-{i}%7" for i in range(n)),
    "comparisons": lambda n: " || ".join(f"x - {i} < {i} && y >= {i} - 1 == true"
                                         for i in range(n)),
    "bits": lambda n: " | ".join(f"{i} & x ^ {i} << 1" for i in range(n)),
    "is": lambda n: " || ".join(f"Owner =?= \"u{i}\"" for i in range(n)),
    "with a list (the Parser reads it)": lambda n: " + ".join(f"size({{{i}}})"
                                                              for i in range(n)),
}
ATTRS = {"Owner": "u5", "x": 3, "y": 2}


def _expected(name: str, n: int) -> object:
    x, y = 3, 2
    if name.startswith("owners") or name == "is":
        return n > 5
    if name == "and":
        return n <= 3
    if name == "plus":
        return n * (n - 1) // 2
    if name == "mixed precedence":
        return sum(i * x - i // 2 for i in range(n))
    if name == "mixed, no spaces":
        return sum(i * x - i % 7 for i in range(n))
    if name == "comparisons":
        return any(x - i < i and (y >= i - 1) == 1 for i in range(n))
    if name == "bits":
        out = 0
        for i in range(n):
            out |= (i & x) ^ (i << 1)
        return out
    return n


def _longest(name: str) -> int:
    """The most terms of the chain ``name`` within the limit on an expression's
    tokens."""
    one, two = (len(tokenize(CHAINS[name](n))[0]) - 1 for n in (1, 2))
    return (MAX_EXPR_TOKENS - one) // (two - one) + 1


@pytest.mark.parametrize("n", [300, 3000, 0])
@pytest.mark.parametrize("name", list(CHAINS))
def test_long_chains_parse_evaluate_and_unparse(name: str, n: int) -> None:
    n = n or _longest(name)            # 0: the longest the limit allows (12,500 to 25,000)
    text = CHAINS[name](n)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # nothing may recurse per term
    try:
        e = parse_expr_uncached(text)
        assert e.evaluate(ClassAd(ATTRS)) == _expected(name, n)
        back = unparse(e.node)
        assert parse_node(back) == e.node
        assert hash(parse_node(back)) == hash(e.node)
        assert Parser(text).expr() == e.node
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize("name", list(CHAINS))
def test_a_chain_past_the_limit_is_refused_saying_so(name: str) -> None:
    for n in (_longest(name) + 1, 4 * _longest(name)):
        with pytest.raises(ClassAdSyntaxError,
                           match=f"expression of more than {MAX_EXPR_TOKENS} tokens") as info:
            parse_expr_uncached(CHAINS[name](n))
        assert len(str(info.value)) < 400          # never the text itself


@pytest.mark.parametrize("name", list(CHAINS))
def test_long_chains_agree_with_the_grammar(name: str) -> None:
    text = CHAINS[name](300)
    assert lark_parse(text) == parse_node(text)


@pytest.mark.differential
@pytest.mark.parametrize("name", list(CHAINS))
def test_long_chains_agree_with_the_reference(name: str) -> None:
    # classad2 parses such chains at any length but evaluates them only up to a few
    # hundred terms ("failed to evaluate expression" beyond)
    if classad2 is None:
        pytest.skip("classad2 not installed")
    for n in (300, 100):  # some chains fail to evaluate there already at 300
        text = CHAINS[name](n)
        try:
            ref = classad2.ExprTree(text).eval(classad2.ClassAd(ATTRS))
        except Exception:
            continue
        assert parse_expr(text).evaluate(ClassAd(ATTRS)) == ref
        return
    pytest.fail("the reference evaluates none of the lengths")


def test_a_long_start_in_an_old_format_ad() -> None:
    start = CHAINS["owners"](3000)
    ad = ClassAd.parse_old(f"Owner = \"u2999\"\nStart = {start}\n")
    assert ad.evaluate("Start") is True
    assert ClassAd.parse_old(ad.to_old()).evaluate("Start") is True


def test_constant_chains_fold() -> None:
    e = parse_expr_uncached(CHAINS["plus"](3000))
    e.compile()
    assert e.is_constant and e.const == 3000 * 2999 // 2
