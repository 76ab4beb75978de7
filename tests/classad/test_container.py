"""The ClassAd container, matching and ranking."""

from __future__ import annotations

import pytest

from condorpy.classad import ClassAd, Error, Expr, Undefined, match, parse_expr, rank
from condorpy.errors import ClassAdError


def test_names_are_case_insensitive_and_keep_their_spelling() -> None:
    ad = ClassAd({"Memory": 512})
    ad["memory"] = 1024
    ad["KeyboardIdle"] = 3
    assert list(ad) == ["Memory", "KeyboardIdle"]
    assert ad["MEMORY"] == 1024 and "keyboardidle" in ad and len(ad) == 2
    del ad["MEMORY"]
    assert "Memory" not in ad and list(ad) == ["KeyboardIdle"]
    with pytest.raises(KeyError):
        del ad["nope"]


def test_values_expressions_and_lookup() -> None:
    ad = ClassAd()
    ad["Start"] = parse_expr("KeyboardIdle > 15")
    ad.set_expr("Other", "Start && true")
    ad["KeyboardIdle"] = 20
    ad["List"] = [1, "a", 2.5]
    ad["Rec"] = {"x": 1}
    assert isinstance(ad["Start"], Expr) and ad["KeyboardIdle"] == 20
    assert str(ad.lookup("start")) == "KeyboardIdle > 15" and ad.lookup("none") is None
    assert ad.evaluate("Other") is True
    assert ad.evaluate("missing") is Undefined
    assert ad.evaluate("List") == [1, "a", 2.5]
    assert ad.eval_expr("Rec.x + 1") == 2
    assert ad.eval_expr(parse_expr("KeyboardIdle * 2")) == 40


def test_copy_and_update_are_independent() -> None:
    a = ClassAd({"x": 1})
    b = a.copy()
    b["x"] = 2
    assert a["x"] == 1 and b["x"] == 2
    a.update(ClassAd({"y": 3}))
    a.update({"z": 4})
    assert sorted(a) == ["x", "y", "z"]
    assert ClassAd({"a": 1}) == ClassAd({"A": 1}) and ClassAd({"a": 1}) != ClassAd({"a": 2})


def test_bad_values_name_the_attribute() -> None:
    ad = ClassAd()
    with pytest.raises(ClassAdError, match="attribute Big"):
        ad["Big"] = 1 << 70
    with pytest.raises(ClassAdError, match="attribute Obj"):
        ad["Obj"] = object()
    with pytest.raises(ClassAdError, match="attribute Bad"):
        ad.set_expr("Bad", "1 +")


def test_match_both_ways_and_rank() -> None:
    slot = ClassAd.parse_old('Memory = 4096\nRequirements = TARGET.RequestMemory <= Memory\n'
                             'Rank = TARGET.Owner == "alice" ? 10 : 1\n')
    job = ClassAd.parse_old('RequestMemory = 2048\nOwner = "alice"\n'
                            'Requirements = TARGET.Memory >= RequestMemory\nRank = TARGET.Memory\n')
    assert match(slot, job) and match(job, slot)
    assert rank(slot, job) == 10.0 and rank(job, slot) == 4096.0
    big = ClassAd.parse_old("RequestMemory = 8192\nRequirements = true\n")
    assert not match(slot, big)
    assert not match(slot, ClassAd({"RequestMemory": 1}))  # no Requirements: undefined
    assert rank(ClassAd({"Rank": "x"}), job) == 0.0
    assert rank(ClassAd({"Rank": Error}), job) == 0.0
    assert rank(ClassAd(), job) == 0.0


def test_resetting_a_literal_keeps_the_new_type_and_replaces_expressions() -> None:
    # 1, True and 1.0 compare equal in Python; a ClassAd must still keep each one's type.
    ad = ClassAd()
    for value in (1, True, 1.0, 1, "1", 1):
        ad["X"] = value
        got = ad.evaluate("X")
        assert got == value and type(got) is type(value)
    ad.set_expr("Y", "1 + 1")
    ad["Y"] = 2
    assert str(ad.lookup("Y")) == "2"
    assert ad.evaluate("Y") == 2
