from __future__ import annotations

import pytest

from condorpy.errors import JobAdError
from condorpy.starter.arguments import job_arguments, job_environment, split_v1, split_v2


@pytest.mark.parametrize("text,words", [
    ("a b  c", ["a", "b", "c"]),
    ("'one two' three", ["one two", "three"]),
    ("'it''s' x", ["it's", "x"]),
    ("pre'quoted mid'post", ["prequoted midpost"]),
    ("''", [""]),
    ('say "hi"', ["say", '"hi"']),
    ("", []),
])
def test_v2_words(text: str, words: list[str]) -> None:
    assert split_v2(text) == words


def test_v2_unterminated_quote_names_attribute() -> None:
    with pytest.raises(JobAdError, match="Arguments"):
        split_v2("'open")


def test_v1_raw_is_split_at_whitespace_only() -> None:
    # Args holds condor_submit's raw V1 form (the submit file's \" already undone):
    # HTCondor's starter splits it at whitespace and keeps every other character.
    assert split_v1('a "b" c') == ["a", '"b"', "c"]
    assert split_v1(r'a\"b') == ['a\\"b']
    assert split_v1("  x\ty ") == ["x", "y"]


def test_new_syntax_wins_over_old() -> None:
    assert job_arguments("'a b'", "c d") == ["a b"]
    assert job_arguments(None, "c d") == ["c", "d"]
    assert job_arguments(None, None) == []


def test_environment_both_syntaxes() -> None:
    assert job_environment("A=1 B='x y' C=", None) == {"A": "1", "B": "x y", "C": ""}
    assert job_environment(None, "A=1;B=two words;") == {"A": "1", "B": "two words"}
    assert job_environment("X=1", "Y=2") == {"X": "1"}


def test_environment_entry_without_equals() -> None:
    with pytest.raises(JobAdError, match="NAME=value"):
        job_environment("JUSTANAME", None)
