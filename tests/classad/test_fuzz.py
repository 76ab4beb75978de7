"""No input, however malformed, raises anything but ClassAdSyntaxError (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from condorpy.classad import ClassAd, parse_expr
from condorpy.classad.formats import parse_old_many
from condorpy.errors import ClassAdError, ClassAdSyntaxError

# Text made of the language's own pieces finds deeper paths than arbitrary characters.
PIECES = st.sampled_from([
    "1", "0", "-", "+", "*", "/", "%", "(", ")", "[", "]", "{", "}", ",", ";", ".", "=",
    "?", ":", "?:", "!", "~", "&&", "||", "==", "=?=", "=!=", "is", "isnt", "<<", ">>>",
    "a", "MY", "TARGET", "true", "undefined", "error", '"s"', "'q'", "1.5", "1e3", "007",
    "0x1F", "/*", "*/", '"', "'", "\\", "\n", " ", "ifThenElse", "eval", "strcat", "\0",
    "9223372036854775808", "-9223372036854775808", ".5", "5.",
])
TEXT = st.one_of(st.text(max_size=60), st.lists(PIECES, max_size=40).map("".join))
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(TEXT)
def test_parse_expr_raises_only_syntax_errors(text: str) -> None:
    try:
        e = parse_expr(text)
    except ClassAdSyntaxError as err:
        assert err.line >= 1 and err.column >= 1
        return
    e.evaluate(ClassAd({"a": 1}), ClassAd({"a": 2}))
    str(e)


@SETTINGS
@given(TEXT)
def test_ad_readers_raise_only_classad_errors(text: str) -> None:
    for reader in (ClassAd.parse_old, ClassAd.parse_new, ClassAd.from_json, parse_old_many):
        try:
            reader(text)
        except ClassAdError:
            pass


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["A", "b", "Cc", "'q r'"]), TEXT), max_size=5))
def test_old_format_lines(lines: list[tuple[str, str]]) -> None:
    text = "\n".join(f"{n} = {v}" for n, v in lines)
    try:
        ad = ClassAd.parse_old(text)
    except ClassAdSyntaxError:
        return
    assert ClassAd.parse_old(ad.to_old()).to_old() == ad.to_old()
    for name in ad:
        ad.evaluate(name)
