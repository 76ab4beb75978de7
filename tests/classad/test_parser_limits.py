"""The parser's limits on untrusted text (issue 25): an expression too long, with too
many tokens or nested too deeply, and an ad of too many lines, are refused as syntax
errors naming the source, the attribute and the line, in a message of bounded length,
never a RecursionError, a MemoryError or a parse of seconds; what jobs and pools
really carry (a megabyte of arguments, a START naming thousands of owners) still
reads."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd, parse_expr
from condorpy.classad.parser_limits import MAX_AD_LINES, MAX_EXPR_CHARS, MAX_EXPR_TOKENS
from condorpy.errors import ClassAdSyntaxError

WORST = {
    "100,000 nested parentheses": "(" * 100_000 + "1" + ")" * 100_000,
    "100,000 nested lists": "{" * 100_000 + "}" * 100_000,
    "100,000 prefix operators": "!" * 100_000 + "x",
    "100,000 nested conditionals": "a ? " * 100_000 + "1" + " : 2" * 100_000,
    "a 50 MB string literal": '"' + "a" * 50_000_000 + '"',
    "a list of 10**6 elements": "{" + ",".join(["1"] * 1_000_000) + "}",
    "a+a+...+a, 10**6 long": "+".join(["a"] * 1_000_000),
    "a call of 10**6 arguments": "size(" + ",".join(["1"] * 1_000_000) + ")",
    "10,000 nested parentheses (tokens within the limit)": "(" * 10_000 + "1" + ")" * 10_000,
}
SAYS = ("nested too deeply", f"more than {MAX_EXPR_TOKENS} tokens",
        f"more than the {MAX_EXPR_CHARS}")


@pytest.mark.parametrize("case", list(WORST))
def test_the_worst_expressions_are_refused_saying_why(case: str) -> None:
    with pytest.raises(ClassAdSyntaxError) as info:
        parse_expr(WORST[case])
    said = str(info.value)
    assert any(s in said for s in SAYS), said[:300]
    assert len(said) < 400


@pytest.mark.parametrize("case", list(WORST))
def test_in_an_ad_the_refusal_names_the_source_the_attribute_and_the_line(
        case: str) -> None:
    text = 'Owner = "alice"\nCmd = "/bin/true"\nRequirements = ' + WORST[case] + "\n"
    with pytest.raises(ClassAdSyntaxError) as info:
        ClassAd.parse_old(text, source="submitted job ad 7")
    said = str(info.value)
    assert "submitted job ad 7" in said and "Requirements" in said and "line 3" in said, \
        said[:300]
    assert len(said) < 600


def test_an_ad_of_too_many_lines_is_refused_before_they_are_read() -> None:
    for n in (MAX_AD_LINES + 1, 1_000_000):
        text = "".join(f"A{i} = {i}\n" for i in range(n))
        with pytest.raises(ClassAdSyntaxError, match="attribute lines") as info:
            ClassAd.parse_old(text, source="the hook's reply")
        assert "the hook's reply" in str(info.value)
    ad = ClassAd.parse_old("".join(f"A{i} = {i}\n" for i in range(MAX_AD_LINES)))
    assert len(ad) == MAX_AD_LINES
    # blank lines and comments are not attributes
    spaced = "".join(f"# note\nA{i} = {i}\n\n" for i in range(1000))
    assert len(ClassAd.parse_old(spaced)) == 1000


def test_what_jobs_and_pools_carry_still_reads() -> None:
    megabyte = "x" * (1 << 20)
    ad = ClassAd.parse_old(f'Arguments = "{megabyte}"\nEnv = "A={megabyte};B=\\"q\\""\n')
    assert ad.evaluate("Arguments") == megabyte
    owners = " || ".join(f'Owner == "u{i}"' for i in range(3000))
    assert ClassAd.parse_old(f'Owner = "u2999"\nSTART = {owners}\n').evaluate("START") is True
    children = "{" + ", ".join(f'"slot1_{i}@host"' for i in range(4096)) + "}"
    assert len(ClassAd.parse_old(f"ChildName = {children}\n").evaluate("ChildName")) == 4096
    nested = "(" * 150 + "1" + ")" * 150
    assert parse_expr(nested).evaluate() == 1


def test_a_long_line_in_an_error_is_cut_around_the_place() -> None:
    text = "x" * 5000 + " + ) " + "y" * 5000
    with pytest.raises(ClassAdSyntaxError) as info:
        parse_expr(text)
    said = str(info.value)
    assert len(said) < 400 and "+ )" in said and said.count("...") == 2, said
    caret = said.splitlines()[-1]
    shown = said.splitlines()[-2]
    assert shown[caret.index("^")] == ")"
