"""The parser's quick path builds exactly the Parser's tree, or leaves the text to it."""

from __future__ import annotations

import random

import pytest

from condorpy.classad.ast import AttrRef, Binary, Call, Literal, Paren
from condorpy.classad.parser import Parser
from condorpy.classad.quickparse import QUICK_MAX_STACK, quick_parse
from condorpy.errors import ClassAdSyntaxError
from tests.classad.test_differential_ops import gen

# pieces of text, the odd spellings included, to glue together with and without spaces
PIECES = [
    "1", "0", "00", "007", "08", "1.5", ".5", "5.", "1e3", "1E+3", "0x1F", "-5", "-.5",
    "9223372036854775808", "-9223372036854775808", "-", "+", "!", "~", "*", "/", "%", "^",
    "&", "|", "&&", "||", "==", "!=", "=?=", "=!=", "<", "<=", ">", ">=", "<<", ">>", ">>>",
    "is", "ISNT", "(", ")", ",", "?", ":", "?:", ".", "[", "]", "{", "}", ";", "=", "a",
    "x1", "_y", "MY", "target", "MY.a", "TARGET.b", "my.true", "x.y", "true", "False",
    "UNDEFINED", "error", "f", "ifThenElse", "time", "absTime", "relTime", '"s"', '"a (b, c)"',
    '""', '"é"', '"2020-01-01T00:00:00Z"', '"1+00:00:01"', '"no time"', '"', "'q'", "/*", "\\",
    "\t", "\n", "é", "@",
]


def _parser_tree(text: str) -> str | None:
    try:
        p = Parser(text)
        node = p.expr()
        p.expect_end()
    except ClassAdSyntaxError:
        return None
    return repr(node)  # repr tells 1 from true and 1.0, which == does not


def _texts(rng: random.Random, n: int) -> list[str]:
    out = []
    for k in range(n):
        if k % 2:
            text = gen(rng, rng.randint(1, 4))
            if rng.random() < 0.5:
                text = text.replace(" ", "")
        else:
            text = "".join(rng.choice(PIECES) + rng.choice(["", "", " "])
                           for _ in range(rng.randint(1, 12)))
        out.append(text)
    return out


def test_quick_path_agrees_with_the_parser() -> None:
    taken = 0
    for text in _texts(random.Random(5), 6000):
        quick = quick_parse(text)
        if quick is None:
            continue
        taken += 1
        assert repr(quick) == _parser_tree(text), text
    assert taken > 1000  # the comparison covers a good share of the texts


@pytest.mark.parametrize("text", [
    "((KeyboardIdle > 15 * 60) && (State != \"Unclaimed\" || TARGET.ImageSize<1024))",
    "ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0) > 90",
    "a ? b : c ? d : e", "x-1", "x -1", "- 1", "--1", "f ( 1 , g() )", "MY.x is 5",
    'absTime("2020-01-01T00:00:00Z")', "007 + 0x1F + 1e3", "true || !false",
])
def test_common_expressions_take_the_quick_path(text: str) -> None:
    quick = quick_parse(text)
    assert quick is not None
    assert repr(quick) == _parser_tree(text)


@pytest.mark.parametrize("text", [
    "a.b", "x[0]", "{1, 2}", "[a = 1]", "x ?: 1", "1 /* c */", '"a\\n"', "'q n'", "1 +",
    "(1", "1)", "f(1,)", "5.", "08", 'absTime("no")', "a b", "", "é", "MY.x.y",
    "(" * (QUICK_MAX_STACK + 1) + "1" + ")" * (QUICK_MAX_STACK + 1),
    "-" * (QUICK_MAX_STACK + 1) + "x", "a ? 1 : " * (QUICK_MAX_STACK + 1) + "2",
])
def test_what_the_quick_path_leaves_to_the_parser(text: str) -> None:
    assert quick_parse(text) is None


def test_the_tree_is_the_usual_nodes() -> None:
    node = quick_parse('f(MY.a, "s") + (2)')
    assert node == Binary("+", Call("f", (AttrRef("a", "MY"), Literal("s"))),
                          Paren(Literal(2)))
    assert hash(node) == hash(Binary("+", Call("f", (AttrRef("a", "MY"), Literal("s"))),
                                     Paren(Literal(2))))


def test_long_flat_chains_take_the_quick_path() -> None:
    for text in [" || ".join(f'Owner == "u{i}"' for i in range(3000)),
                 "+".join(f"{i}*x-{i}%7" for i in range(3000))]:
        quick = quick_parse(text)
        assert quick is not None
        assert quick == Parser(text).expr()


def test_the_node_memo_is_bounded_and_never_changes_a_tree() -> None:
    from condorpy.classad import quickparse
    text = 'Owner == "alice" && TARGET.Memory >= 1024 && -5 < x -5'
    want = repr(Parser(text).expr())
    for i in range(quickparse._MEMO_MAX + 10):  # fills the memo past its bound
        quick_parse(f"name{i} + {i}")
    # cleared when full, before a parse: at most the bound, one parse's pieces and the
    # tables of operators and punctuation the memos start from
    assert quickparse.memo_size() <= quickparse._MEMO_MAX + 3 + 64
    assert repr(quick_parse(text)) == want
    quickparse.clear_memo()  # a cold start
    assert repr(quick_parse(text)) == want
    assert repr(quick_parse(text)) == want


def test_a_memo_cleared_under_a_parse_gives_the_text_to_the_parser() -> None:
    from condorpy.classad import quickparse
    text = "ifThenElse(x, 1, 2) + f(a,b) + (y)"
    for i in range(100):  # past a cold start: whole pieces are remembered
        quick_parse(f"w{i} + 1")
    assert quick_parse(text) is not None
    quickparse._DETAILS.clear()  # as another thread clearing the memo would leave it
    assert quick_parse(text) is None
    quickparse.clear_memo()
    assert repr(quick_parse(text)) == repr(Parser(text).expr())


def test_glued_pieces_are_split_once_and_read_alike() -> None:
    text = " && ".join(f"x{i}>={i}" for i in range(2000)) + " && y==-1 && z -1 > 0"
    quick = quick_parse(text)
    assert quick is not None
    assert quick == Parser(text).expr()


def _warm() -> None:
    from condorpy.classad.quickparse import clear_memo
    clear_memo()
    for _ in range(20):       # past the cold start's token-by-token parses
        quick_parse("a + 1")


@pytest.mark.parametrize("texts", [
    ("a +-2", "+-2", "a +-2", "+-2"),
    ("f( x )", "a f( x )", "f( x )", "a f( x )"),
    ('reltime("1:00")', 'a reltime("1:00")', 'reltime("1:00")'),
])
def test_a_piece_met_where_an_operand_and_where_an_operator_belongs(
        texts: tuple[str, ...]) -> None:
    # one piece, two meanings: what it stands for as an operand must not be read back
    # as what it stands for as an operator, or the other way round
    _warm()
    for text in texts:
        quick = quick_parse(text)
        assert quick is None or repr(quick) == _parser_tree(text), text


def test_glued_pieces_in_either_place_in_any_order_agree_with_the_parser() -> None:
    rng = random.Random(11)
    glued = [a + b for a in ("+", "-", "f(", "(", "x", "2", ")", "!")
             for b in ("-2", "x", "(", ")", "+", "1", "y)", "g(")]
    _warm()
    taken = 0
    for _ in range(20000):
        text = " ".join(rng.choice(glued) for _ in range(rng.randint(1, 4)))
        quick = quick_parse(text)
        if quick is not None:
            taken += 1
            assert repr(quick) == _parser_tree(text), text
    assert taken > 500
