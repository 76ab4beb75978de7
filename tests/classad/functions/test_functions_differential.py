"""condorpy's built-in functions against HTCondor's own ClassAd library (classad2).

Seeded random calls of every function with arguments of every type (and one too few or
too many), compared by value: directly through the function table, and end to end
through condorpy's parser and evaluator. Reals agree within 1e-12 relative.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("classad2")
pytest.importorskip("htcondor2")  # registers HTCondor's additions (split, userHome, ...)

from tests.classad.functions.cases import NONDETERMINISTIC, calls  # noqa: E402
from tests.classad.functions.oracle import (  # noqa: E402
    SPECS, call_text, check, check_end_to_end, reference,
)
from condorpy.classad.functions.timefuncs import (  # noqa: E402
    parse_abstime_text, parse_reltime_text,
)
from condorpy.classad.functions.types import format_abstime  # noqa: E402
from condorpy.classad.values import RelTime  # noqa: E402

pytestmark = pytest.mark.differential

DETERMINISTIC = [s.name for k, s in SPECS.items() if k not in NONDETERMINISTIC]


def _report(bad: list[tuple[str, Any, Any]], total: int) -> str:
    lines = [f"{len(bad)} of {total} calls disagree with classad2:"]
    lines += [f"  {t}\n    classad2: {r!r}\n    condorpy: {g!r}" for t, r, g in bad[:20]]
    return "\n".join(lines)


@pytest.fixture
def local_zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run with the process's local zone set (classad2 reads it through libc too)."""
    zone: str = request.param
    old = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield zone
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_every_function_is_tested() -> None:
    from tests.classad.functions.cases import POOLS
    untested = [n for n in DETERMINISTIC if n not in POOLS]
    # functions without a dedicated pool still get generic arguments; the list keeps
    # the pools honest as functions are added
    assert set(untested) <= {
        "isUndefined", "isError", "isString", "isInteger", "isReal", "isBoolean", "isList",
        "isClassAd", "isAbstime", "isReltime", "size", "avg", "min", "max", "strcat",
        "join", "toUpper", "toLower"}, untested


def _disagreements(cases: list[tuple[str, list[Any]]], end_to_end: bool
                   ) -> list[tuple[str, Any, Any]]:
    bad: list[tuple[str, Any, Any]] = []
    unanswered = 0
    for name, args in cases:
        try:
            r = (check_end_to_end(call_text(name, args)) if end_to_end
                 else check(name, args))
        except Exception:  # classad2's bindings cannot convert a few odd results
            unanswered += 1
            continue
        if r is not None:
            bad.append(r)
    assert unanswered <= len(cases) // 100, f"classad2 failed on {unanswered} calls"
    return bad


def test_direct_calls_agree() -> None:
    cases = calls(DETERMINISTIC, 70, seed=20261122)
    bad = _disagreements(cases, end_to_end=False)
    assert not bad, _report(bad, len(cases))


def test_direct_calls_with_mostly_generic_arguments_agree() -> None:
    cases = calls(DETERMINISTIC, 30, seed=99, specific=0.25)
    bad = _disagreements(cases, end_to_end=False)
    assert not bad, _report(bad, len(cases))


def test_end_to_end_calls_agree() -> None:
    cases = calls(DETERMINISTIC, 25, seed=7)
    bad = _disagreements(cases, end_to_end=True)
    assert not bad, _report(bad, len(cases))


def test_clock_functions_agree_with_the_reference_clock() -> None:
    from condorpy.classad.functions.registry import CallContext
    from tests.classad.functions.oracle import mine
    ctx = CallContext()
    assert abs(reference("time()") - mine("time", [], ctx)) <= 2
    assert abs(reference("timeZoneOffset()").seconds
               - mine("timeZoneOffset", [], ctx).seconds) == 0
    ref_day = reference("dayTime()").seconds
    got_day = mine("dayTime", [], ctx).seconds
    assert min(abs(ref_day - got_day), 86400 - abs(ref_day - got_day)) <= 2
    ref_now = reference("currentTime()")
    assert abs(ref_now[1] - mine("currentTime", [], ctx).epoch) <= 2


TIME_FUNCTIONS = ["absTime", "splitTime", "formatTime", "getYear", "getMonth",
                  "getDayOfYear", "getDayOfMonth", "getDayOfWeek", "getHours",
                  "getMinutes", "getSeconds", "interval", "string"]


@pytest.mark.parametrize("local_zone", ["America/Chicago", "Australia/Adelaide", "UTC"],
                         indirect=True)
def test_time_functions_agree_in_other_zones(local_zone: str) -> None:
    cases = calls(TIME_FUNCTIONS, 40, seed=11)
    bad = _disagreements(cases, end_to_end=False)
    assert not bad, _report(bad, len(cases))


# Hand-picked expressions: formatting corners and the documented oddities.
EDGE_CASES = [
    "string(1.5)", "string(1e100)", "string(0.1)", "string(1.0)", "string(-0.0)",
    "string(1e-5)", "string(0.0)", "string(5e-324)", "string(123456789012345678.0)",
    'string(real("INF"))', 'string(real("NaN"))', 'strcat(real("-INF"), 1.0/3)',
    'string({1, "a\\"b", 2.5, true, undefined, error})', "string(relTime(90061))",
    "string(relTime(-3600))", "string(absTime(0, -5400))", "strcat([a = 1; b = {2}])",
    'int("0x10")', 'int("1e3")', 'int(" +5")', "int(1e30)", 'real("1.5x")', 'real(" -")',
    'bool("TRUE")', 'bool("yes")', "bool(relTime(5))",
    "pow(-2, 3)", "pow(2, 63)", "pow(3, 39)", "pow(0, -1)", "quantize(-7, 3)",
    "quantize(7, {5, 6})", "quantize(-1, 2.5)", "round(2.5)", "round(-0.5)", "floor(-2.5)",
    "sum({9223372036854775807, 1})", "avg({1, undefined, 2})", "max({true})",
    'member("A", {"a"})', 'identicalMember("A", {"a"})', "member(1, {error, 1})",
    'anyCompare("<", {undefined, 1}, 100)', 'anyCompare("<", {1, undefined}, 100)',
    'allCompare("<", {}, 1)', 'anyCompare("IS", {1}, 1)',
    'substr("abcdef", -2, 1)', 'substr("abcdef", 2, -1)', 'substr("abc", 1099511627776)',
    'split("a, ,b")', 'split(",,a")', 'split("xaab", "ab")', 'split("a;,;b", ";,")',
    'join(",", "", "a", "")', 'join({"a", "b"})', 'strcmp("a", "A")', 'stricmp("a", "B")',
    'versioncmp("1.2.3", "1.2")', 'versioncmp("1", "000")', 'versioncmp("é", "a")',
    'version_in_range("2.0", "1.0", "2.0")',
    'regexps("a(b)c", "xabcx", "[\\\\1]")', 'regexps("b", "bbb", "x", "g")',
    'regexps("z", "abc", "y", "f")', 'replace("(a)|(b)", "b", "<\\\\1>")',
    'replace("(a)(b)?", "a", "\\\\2")', 'replaceAll("x*", "abc", "-")',
    'regexp("[[:digit:]]+", "a1")', 'regexp("(?<n>a)\\\\k<n>", "aa")', 'regexp("a\\\\z", "a")',
    'regexp("^b", "a\\nb", "m")', 'regexp("A", "a", "I")', 'regexpMember("[", {"x"})',
    'stringListMax("-5,-3")', 'stringListMax("-5.5,-3")', 'stringListAvg("1,2")',
    'stringListSum("")', 'stringListSubsetMatch(",", "b")', 'stringListSubsetMatch("", "b")',
    'stringListsIntersect("a, b", " b")', 'stringList_regexpMember("a", "")',
    'envV1ToV2("Z=1;A=2;;M=3")', 'envV1ToV2("A=1 2;B=\'x\'")',
    'mergeEnvironment("A=1 B=2", undefined, "B=3 C=4")', 'listToArgs({"a", "b c", "d\'e", ""})',
    'listToArgs({"a b"}, 1)', 'argsToList("a \'b c\' \'\'\'\'")', 'argsToList("a \'b c\'", 1)',
    'userHome("root")', 'userHome("nosuchuserxyz", "dflt")', 'userMap("m", "u", "p", "d")',
    "interval(100000)", "interval(-90061)", "interval(1e10)", "splitTime(relTime(-3661.5))",
    "splitTime(absTime(0, 3600))", 'formatTime(absTime(0, 3600), "%H %Z %z %c")',
    "getDayOfYear(absTime(0))", "getDayOfWeek(absTime(0))", "getSeconds(relTime(-90))",
    "absTime(4294967296)", "absTime(3e9)", "relTime(2147483648)",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_case_agrees(text: str) -> None:
    assert check_end_to_end(text) is None, check_end_to_end(text)


RELTIME_LITERALS = ["1+00:00:01", "01:00", "5", "1d2h3m4s", "-1+00:00:01", "1:02:03", "1.5",
                    "2d", "-90", "1+1", " 5 ", "3m4s", "00:00:01.5", "+5", "5s", "1:2:3:4",
                    "junk", "1.5h"]
ABSTIME_LITERALS = ["2020-01-01T00:00:00+02:00", "2020-01-01T00:00:00", "2020-01-01",
                    "20200101T000000Z", "2020-01-01T12:30", "2020-01-01 00:00:00", "2020",
                    "2020-13-01", "2020-02-30", "2020-01-01T25:00:00", "1960-01-01",
                    "2020-01-01T00:00:00-0530", "2020-07-01T00:00:00", "1969-12-31T23:59:59Z",
                    "2020-01-01T00:00:00.5", "junk"]


def _reference_or_none(text: str) -> Any:
    try:
        return reference(text)
    except Exception:  # classad2 refuses the literal when parsing
        return None


@pytest.mark.parametrize("text", RELTIME_LITERALS)
def test_reltime_literal_reads_as_classad2(text: str) -> None:
    ref = _reference_or_none(f'relTime("{text}")')
    got = parse_reltime_text(text)
    assert (None if got is None else got) == (None if ref is None else RelTime(ref))


@pytest.mark.parametrize("local_zone", ["America/Chicago", "UTC"], indirect=True)
@pytest.mark.parametrize("text", ABSTIME_LITERALS)
def test_abstime_literal_reads_as_classad2(text: str, local_zone: str) -> None:
    ref = _reference_or_none(f'string(absTime("{text}"))')
    got = parse_abstime_text(text)
    assert (None if got is None else format_abstime(got)) == ref
