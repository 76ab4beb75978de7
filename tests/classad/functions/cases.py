"""Argument pools for the differential tests: generic values of every type, and per
function the arguments that reach its interesting branches."""

from __future__ import annotations

import random
from typing import Any

from condorpy.classad.values import AbsTime, Error, RelTime, Undefined

GENERIC: list[Any] = [
    0, 1, -1, 2, 3, 7, 10, -7, 100, 1 << 40, 1.5, -2.5, 0.0, -0.0, 0.1, 2.0, 1e10, 3.7,
    1e-5, 123456789.0, "", "abc", "ABC", "a,b,c", "a b", " 1 , 2 ", "1.2.3", "1.10", "x",
    "3.5", "0x10", "true", "é", True, False, Undefined, Error, [], [1, 2], [1, "a"],
    [1.5, 2], [Undefined, 1], ["a", "b"], [True, 2], [Error, 1], [[1], "a"], {"a": 1},
    {}, AbsTime(0, 0), AbsTime(1720000000, 3600), AbsTime(86399, -5400), RelTime(90.0),
    RelTime(-3661.5), RelTime(100000.0), 'q"b\\c\n\t', (1 << 63) - 1, -(1 << 63),
    [{"a": 1}, "x"], {"a": [1, 2], "b": "x"}, 1e300, -1e-300,
]

PATTERNS = ["a", "^a", "b$", "a.c", "(a)(b)?", "[abc]+", "A", "x*", r"\d+", r"(\w+)@(\w+)",
            "[", "a|b", "^b", "(?i)B", "a b", "[[:digit:]]+", r"a\z", "(?<n>b)", "^.$",
            "^..$", "é", r"\w+", r"\Qa.b\E", "É", "(.)", r"(\w)\1"]
TARGETS = ["abc", "ABC", "a\nb", "xabcx", "bbb", "user@host", "", "123", "aab", "é", "aéb",
           "a.b"]
SUBSTS = ["X", "[\\0]", "<\\1>", "\\2", "$1", "", "\\\\", "-\\1-\\0-"]
OPTIONS = ["", "i", "g", "ig", "m", "s", "x", "z", "f", "I", "ms"]
VERSIONS = ["1.2", "1.10", "1.02", "8.9.7", "10.0.0", "", "abc", "a1b", "a01b", "000",
            "00", "1.0a", "1.0-rc1", "1.0", "1.00", "b9", "b10", "0.1", "0.01", "x01"]
SLISTS = ["a,b,c", "a, ,b", "", " a ; b ", "1,2,3", "1,2.5", "1, x", "3,1,2", "A,b",
          "b,a,c", "a", "1x", "0x10", " 1 , 2 ", "-5, 10, 2", "a;b;c", "a b c", ",a,"]
DELIMS = [",", ";", " ,", "", ", ", ":;"]
ITEMS = ["a", "A", "b", "", "x", "1"]
SPLITS = ["a b,c  d", "a,,b", ",a,", "a, ,b", ":a:", "a::b", "::", ",,", " , ", "a ,b",
          "a\tb\nc", "user@host", "slot1_2@host", "noat", "@x", "a@b@c"]
EPOCHS = [0, 1, -1, 86399, 951782400, 1720000000, 1704067199, 2000000000, 1.5, -0.5]
ABSTIMES = [AbsTime(e, o) for e in (0, 951782400, 1720000000, -86400)
            for o in (0, 3600, -18000, 34200)]
RELTIMES = [RelTime(x) for x in (0.0, 5.5, 59.0, 61.0, 3600.0, 3661.0, 86400.0, 90061.5,
                                 -90.0, -90061.5, -0.5, -90000.0, 1e10)]
FORMATS = ["%Y-%m-%d %H:%M:%S", "%c", "%j %a %A %b %B %p %y %e", "%Z %z", "", "%%",
           "%D %T %R %u %w %U %W", "plain text"]
ENV_V1 = ["A=1;B=2", "A=1 2;B='x'", "", "bad", "Z=1;A=2;;M=3", "A==1", "=1", "A=1|B=2",
          'A="q"', "PATH=/bin:/usr/bin;HOME=/home/u"]
ENV_V2 = ["A=1 B=2", "B=3 C=4", "A='x y'", "bad", "Z=1 A=2", "'A=1", "", "A=1;B=2",
          "A='it''s'", "  A=1   B=2  "]
ARG_STRINGS = ["a 'b c'", "'a''b' c", "a  b", "", "'unterminated", '"a b"',
               "x 'y z' ''", "  lead trail  "]
ARG_LISTS = [["a", "b c"], ["d'e", ""], [1, "a"], [], ["a  b", "x' y"], ['a"b'],
             ["tab\there"]]
USERS = ["root", "nosuchuserxyz", "", Undefined, 1]
COMPARE_OPS = ["<", "<=", "==", "!=", ">=", ">", "is", "isnt", "IS", "=?=", "LT"]
NUMBERS = [0, 1, 2, 3, 7, -7, 10, 2.5, -2.5, 0.5, 1.5, 3.7, -0.5, 1e30, 63, 64, -1,
           True, "2.5", " 3.9x", "x"]
QUANTA = [3, 2.5, 0, 0.0, -3, [5, 10], [5, 6], [5, 10.0], [], ["a", 10], [5, 8.5], [-2],
          True]

# per function: one pool per argument position (the last pool repeats)
POOLS: dict[str, list[list[Any]]] = {
    "regexp": [PATTERNS, TARGETS, OPTIONS],
    "regexpMember": [PATTERNS, [["abc", "b"], ["x", 1], [Undefined, "b"], ["a", Undefined],
                                [], ["ABC"]], OPTIONS],
    "regexps": [PATTERNS, TARGETS, SUBSTS, OPTIONS],
    "replace": [PATTERNS, TARGETS, SUBSTS, OPTIONS],
    "replaceAll": [PATTERNS, TARGETS, SUBSTS, OPTIONS],
    "versioncmp": [VERSIONS], "versionLT": [VERSIONS], "versionLE": [VERSIONS],
    "versionEQ": [VERSIONS], "versionGE": [VERSIONS], "versionGT": [VERSIONS],
    "version_in_range": [VERSIONS],
    "stringListSize": [SLISTS, DELIMS], "stringListSum": [SLISTS, DELIMS],
    "stringListAvg": [SLISTS, DELIMS], "stringListMin": [SLISTS, DELIMS],
    "stringListMax": [SLISTS, DELIMS],
    "stringListMember": [ITEMS, SLISTS, DELIMS], "stringListIMember": [ITEMS, SLISTS, DELIMS],
    "stringListSubsetMatch": [SLISTS, SLISTS, DELIMS],
    "stringListISubsetMatch": [SLISTS, SLISTS, DELIMS],
    "stringListsIntersect": [SLISTS, SLISTS, DELIMS],
    "stringList_regexpMember": [PATTERNS, SLISTS, DELIMS, OPTIONS],
    "split": [SPLITS, DELIMS], "splitUserName": [SPLITS], "splitSlotName": [SPLITS],
    "substr": [TARGETS + ["abcdef"], [0, 1, 2, -1, -2, 10, -10, 2.7, "1"],
               [0, 1, 2, -1, -10, 10]],
    "strcmp": [ITEMS + TARGETS], "stricmp": [ITEMS + TARGETS],
    "member": [[1, 2, "a", "A", 1.0, True, Undefined, Error],
               [[1, 2], ["a", "b"], [1.0], [Undefined, 1], [Error, 1], ["1"], [True], []]],
    "identicalMember": [[1, 2, "a", "A", 1.0, True, Undefined, Error],
                        [[1, 2], ["a", "b"], [1.0], [Undefined, 1], [Error], [True, 1]]],
    "anyCompare": [COMPARE_OPS, [[1, 2], [1, "a"], ["a", 1], [Undefined], [Error, 1], [],
                                 ["A", "b"], [1.0, 2]], [1, 2, 1.0, "a", Undefined, Error]],
    "allCompare": [COMPARE_OPS, [[1, 2], [1, "a"], ["a", 1], [Undefined], [Error, 1], [],
                                 ["A", "b"], [1.0, 2]], [1, 2, 1.0, "a", Undefined, Error]],
    "sum": [[[1, 2], [1, 2.5], [1, True], [1, Undefined], ["a"], [[1]], [],
             [(1 << 63) - 1, 1], [Undefined], [AbsTime(5, 0)]]],
    "floor": [NUMBERS], "ceil": [NUMBERS], "ceiling": [NUMBERS], "round": [NUMBERS],
    "pow": [NUMBERS], "quantize": [NUMBERS, QUANTA],
    "absTime": [EPOCHS + ABSTIMES + RELTIMES + ["2020-01-01"],
                [0, 3600, -5400, 3600.5, RelTime(60.0), "x", True]],
    "relTime": [EPOCHS + ABSTIMES + RELTIMES + ["5", "junk"]],
    "getYear": [ABSTIMES + RELTIMES], "getMonth": [ABSTIMES + RELTIMES],
    "getDayOfYear": [ABSTIMES + RELTIMES], "getDayOfMonth": [ABSTIMES + RELTIMES],
    "getDayOfWeek": [ABSTIMES + RELTIMES], "getHours": [ABSTIMES + RELTIMES],
    "getMinutes": [ABSTIMES + RELTIMES], "getSeconds": [ABSTIMES + RELTIMES],
    "getDays": [ABSTIMES + RELTIMES],
    "splitTime": [EPOCHS + ABSTIMES + RELTIMES],
    "formatTime": [EPOCHS + ABSTIMES, FORMATS],
    "interval": [[0, 59, 60, 3599, 3600, 86400, 90061, -5, -3600, -90061, 1.7, -1.7,
                  RelTime(5.0), True]],
    "envV1ToV2": [ENV_V1], "mergeEnvironment": [ENV_V2 + [Undefined]],
    "argsToList": [ARG_STRINGS, [1, 2, 0, "x"]], "listToArgs": [ARG_LISTS, [1, 2, 0, 3]],
    "userHome": [USERS, ["dflt", Undefined, 5]],
    "userMap": [["map", 1, Undefined], ["user", Undefined], ["pref"], ["dflt", 5]],
    "string": [GENERIC + [1e100, 1e-300, 5e-324, 1.0 / 3, -1e-5, 123456789012345678.0]],
    "int": [GENERIC + ["12abc", "  12", "1.9", "-1.9", "1e3", "0x", "010", "-0x10", " +5",
                       "nan", "inf", 1e30, -1e30]],
    "real": [GENERIC + ["1.5x", "  2.5  ", "abc", "inf", "-Infinity", "1e400", " -"]],
    "bool": [GENERIC + ["TRUE", "False", "yes", "1", "0"]],
}

# clock-dependent or random: compared separately
NONDETERMINISTIC = {"time", "currenttime", "timezoneoffset", "daytime", "random"}


def calls(names: list[str], per_function: int, seed: int, specific: float = 0.75
          ) -> list[tuple[str, list[Any]]]:
    """Seeded random calls of each function, arities one beyond the limits included."""
    rng = random.Random(seed)
    from tests.classad.functions.oracle import SPECS
    out: list[tuple[str, list[Any]]] = []
    for name in names:
        spec = SPECS[name.lower()]
        pools = POOLS.get(name, [])
        top = spec.max_args if spec.max_args is not None else spec.min_args + 3
        for _ in range(per_function):
            lo = max(0, spec.min_args - 1)
            n = rng.randint(lo, top + 1)
            if name.lower() in ("formattime", "abstime") and n == 0:
                n = 1
            args: list[Any] = []
            for i in range(n):
                if pools and rng.random() < specific:
                    pool = pools[min(i, len(pools) - 1)]
                else:
                    pool = GENERIC
                args.append(rng.choice(pool))
            if not known_difference(spec.name, args):
                out.append((spec.name, args))
    return out


def known_difference(name: str, args: list[Any]) -> bool:
    """Calls where condorpy deliberately differs (docs/classad-functions.md)."""
    low = name.lower()
    if low == "quantize" and any(type(a) is RelTime for a in args):
        return True  # relative-time quanta: HTCondor's arithmetic there is inconsistent
    if low == "formattime" and args and isinstance(args[0], dict):
        return True  # a record as the time: HTCondor formats an all-zero struct tm
    if low == "splittime" and any(type(a) is RelTime and abs(a.seconds) >= 2 ** 31
                                  for a in args):
        return True  # relative times beyond 32 bits: HTCondor's split overflows
    if low in ("formattime", "splittime") and any(type(a) is int and abs(a) >= 2 ** 53
                                                   for a in args):
        return True  # times far beyond any calendar: HTCondor prints garbage
    if low == "userhome" and not 1 <= len(args) <= 2:
        return True  # classad2 raises instead of returning error for a wrong count
    return False
