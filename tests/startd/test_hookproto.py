"""The hook and cron protocols, without processes."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import HookError
from condorpy.startd.hookproto import (CronMode, CronParser, HookVerdict, check_fetched,
                                       hook_status, hook_stdin, parse_mode, parse_period,
                                       parse_reply_ad, route, values)


def test_reply_is_all_or_nothing() -> None:
    ad = parse_reply_ad('Cmd = "/bin/true"\n\nRequestCpus = 2\n', "hook")
    assert ad is not None and ad.evaluate("RequestCpus") == 2
    assert parse_reply_ad("", "hook") is None
    assert parse_reply_ad("\n  \n", "hook") is None
    with pytest.raises(HookError, match=r"hook, line 2: not an attribute assignment"):
        parse_reply_ad('Cmd = "/bin/true"\ngarbage\n', "hook")
    with pytest.raises(HookError, match=r"line 1"):
        parse_reply_ad("A = (1 +\n", "hook")


def test_cron_separators_tags_and_update() -> None:
    p = CronParser("job")
    got = p.feed("Value = 1\nSlotId = 1\n- s1\nValue = 2\nSlotId = 2\n-s2 update:false\n")
    assert [(c.name, c.update) for c in got] == [("job.s1", None), ("job.s2", False)]
    assert p.feed("Value = 10\n") == []          # an ad ends at a separator...
    got = p.feed("bad line\n- update:true\n")
    assert [(c.name, c.update, values(c.ad)) for c in got] == \
        [("job", True, {"Value": 10})]
    assert p.bad and "line 8" in p.bad[0]
    p.feed("Last = 3")                           # ...or at the end of the output
    assert [values(c.ad) for c in p.close()] == [{"Last": 3}]


def test_cron_prefix_is_prepended_to_each_line() -> None:
    p = CronParser("job", prefix="gpu_")
    p.feed("Temp = 60\n")
    assert values(p.close()[0].ad) == {"gpu_Temp": 60}


def test_routing_follows_htcondors_order() -> None:
    slots = {f"slot{i}": ClassAd.parse_old(f'Name = "slot{i}@h"\nSlotId = {i}\n'
                                           f"SlotTypeId = {1 if i < 3 else 2}\nCpus = {i}")
             for i in (1, 2, 3)}
    def r(text: str, allowed: tuple[int, ...] | None = None) -> list[str]:
        return route(ClassAd.parse_old(text), slots, allowed)
    assert r("SlotId = 2") == ["slot2"]
    assert r("SlotTypeId = 1\nSlotId = 3") == ["slot1", "slot2"]
    assert r('SlotName = "slot3"\nSlotTypeId = 1') == ["slot3"]
    assert r("SlotMergeConstraint = TARGET.Cpus >= 2\nSlotId = 1") == ["slot2", "slot3"]
    assert r("X = 1") == ["slot1", "slot2", "slot3"]
    assert r("X = 1", (1, 3)) == ["slot1", "slot3"]
    assert values(ClassAd.parse_old("SlotId = 1\nX = 1 + 1")) == {"X": 2}


def test_period_and_mode() -> None:
    assert [parse_period(t, "P") for t in ("5", "5s", "2m", "1H", " 3 ")] == \
        [5, 5, 120, 3600, 3]
    for bad in ("5x", "-1", "", "1.5m"):
        with pytest.raises(HookError, match="is not a period"):
            parse_period(bad, "STARTD_CRON_x_PERIOD")
    assert parse_mode("waitforexit", "M") is CronMode.WAIT_FOR_EXIT
    assert parse_mode(None, "M") is CronMode.PERIODIC
    with pytest.raises(HookError, match="Often is not one of"):
        parse_mode("Often", "STARTD_CRON_x_MODE")


def test_fetched_job_checks() -> None:
    ok = ClassAd.parse_old('Cmd = "/bin/true"\nOwner = "u"')
    job = check_fetched(ok.copy(), "KW", partitionable=False, as_root=True, source="h")
    assert job.keyword == "KW" and job.ad.evaluate("RequestCpus") == 1
    assert job.ad.evaluate("JobUniverse") == 5
    with pytest.raises(HookError, match="no RequestCpus"):
        check_fetched(ok.copy(), "KW", partitionable=True, as_root=True, source="h")
    with pytest.raises(HookError, match="no Cmd with a full path"):
        check_fetched(ClassAd.parse_old('Cmd = "true"'), "KW", False, False, "h")
    with pytest.raises(HookError, match="no Owner"):
        check_fetched(ClassAd.parse_old('Cmd = "/bin/true"'), "KW", False, True, "h")
    own = check_fetched(ClassAd.parse_old('Cmd = "/x"\nHookKeyword = "MINE"'), "KW",
                        False, False, "h")
    assert own.keyword == "MINE"


def test_hook_status_and_stdin() -> None:
    def v(text: str) -> tuple[HookVerdict, int, str]:
        return hook_status(ClassAd.parse_old(text))
    assert v("X = 1") == (HookVerdict.GO, 0, "")
    assert v('HookStatusCode = 190\nHookStatusMessage = "bad"') == \
        (HookVerdict.HOLD, 190, "bad")
    assert v("HookStatusCode = 300")[0] is HookVerdict.REQUEUE
    text = hook_stdin(ClassAd.parse_old("A = 1"), ClassAd.parse_old("B = 2"), claim_id="c")
    assert text == 'A = 1\n-----\nB = 2\nClaimId = "c"\n'
