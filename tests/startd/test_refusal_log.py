"""The daemon log's analysis of a refused claim request: the false clauses of START,
one line per refusal, a few per minute at most."""

from __future__ import annotations

import logging

import pytest

from condorpy.classad import ClassAd
from condorpy.clock import ManualClock
from condorpy.startd.refusal_log import BURST, WINDOW, RefusalLog, false_clauses
from tests.policy.engines import engine_from_text

CFG = 'NUM_SLOTS = 1\nSTART = (Memory > 1000000) && (TARGET.Owner == "bob") && True\n'


def _job() -> ClassAd:
    ad = ClassAd()
    for k, v in {"ClusterId": 3, "ProcId": 0, "Owner": "alice", "JobUniverse": 5,
                 "RequestMemory": 16}.items():
        ad[k] = v
    ad["Requirements"] = True
    return ad


def test_names_the_false_clauses_of_start() -> None:
    eng = engine_from_text(CFG)
    slot = eng.slots["slot1"]
    got = false_clauses(eng, slot.ad, _job())
    assert got == ["START: (Memory > 1000000) is false",
                   'START: (TARGET.Owner == "bob") is false']


def test_one_line_per_refusal_and_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    eng = engine_from_text(CFG)
    clock = ManualClock(0.0)
    rl = RefusalLog(lambda: eng, clock)
    with caplog.at_level(logging.INFO, logger="condorpy.startd"):
        for _ in range(BURST + 5):
            rl.refused("slot1", _job(), "START is not True for this job", "<10.0.0.1:9618>")
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == BURST
        assert lines[0].startswith("slot1: claim request from <10.0.0.1:9618> for job 3.0 "
                                   "(alice) refused: START: ")
        assert 'TARGET.Owner == "bob"' in lines[0]
        clock.advance(WINDOW)
        rl.refused("slot1", _job(), "START is not True for this job", "x")
        assert "(5 more refusals not analysed)" in caplog.records[-1].getMessage()
        # refusals for other reasons are not analysed
        rl.refused("slot1", _job(), "startd is shutting down", "x")
        assert len(caplog.records) == BURST + 1
