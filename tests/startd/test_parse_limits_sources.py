"""The parser's limits where the daemon reads text from others (issue 25): a fetch-work
hook's reply and an ad from a pool peer whose expression is too big to parse are
refused with an error naming the hook's line or the peer, and quickly."""

from __future__ import annotations

import pytest

from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.wire_ad import get_classad
from condorpy.startd.hookproto import HookError, parse_reply_ad

HUGE = {
    "nested": "(" * 100_000 + "1" + ")" * 100_000,
    "long": "+".join(["a"] * 1_000_000),
    "wide": "{" + ",".join(["1"] * 1_000_000) + "}",
    "a 50 MB string": '"' + "a" * 50_000_000 + '"',
}


@pytest.mark.parametrize("case", list(HUGE))
def test_a_hooks_reply_too_big_to_parse_is_refused_naming_its_line(case: str) -> None:
    reply = f'Cmd = "/bin/true"\nRequirements = {HUGE[case]}\n'
    with pytest.raises(HookError) as info:
        parse_reply_ad(reply, "FETCH_WORK hook")
    said = str(info.value)
    assert "FETCH_WORK hook, line 2" in said and ("tokens" in said or "characters" in said)
    assert len(said) < 600


@pytest.mark.parametrize("case", list(HUGE))
def test_an_ad_from_the_wire_too_big_to_parse_is_refused_naming_the_peer(
        case: str) -> None:
    w = Writer()
    w.put_int(2)
    w.put_string('Name = "slot1@x"')
    w.put_string(f"Requirements = {HUGE[case]}")
    w.put_string("")
    w.put_string("")
    with pytest.raises(WireError) as info:
        get_classad(Reader(w.payload(), "10.0.0.9:9618"), "the claim request")
    said = str(info.value)
    assert "10.0.0.9:9618" in said and "the claim request" in said, said[:300]
    assert "tokens" in said or "characters" in said, said[:300]
    assert len(said) < 600
