"""Functions that read the CallContext: the clock, the local zone, the random source and
the user maps; and the table they are registered in."""

from __future__ import annotations

import os
import pwd
import random

from condorpy.classad import ClassAd
from condorpy.classad.functions import lists, math, misc, strings, timefuncs, types
from condorpy.classad.functions.registry import CallContext
from condorpy.classad.values import AbsTime, Error, RelTime, Undefined

NOW = 1720000000.75  # 2024-07-03T09:46:40.75Z, a Wednesday


def fixed(offset: int | None = None) -> CallContext:
    return CallContext(now=lambda: NOW, rng=random.Random(5),
                       tz_offset=None if offset is None else (lambda _t: offset))


def test_clock_functions_read_the_context_clock_and_zone() -> None:
    ctx = fixed(-18000)
    assert timefuncs.time_(ctx) == 1720000000
    assert timefuncs.current_time(ctx) == AbsTime(1720000000, -18000)
    assert timefuncs.time_zone_offset(ctx) == RelTime(-18000.0)
    # 09:46:40 UTC is 04:46:40 at UTC-5
    assert timefuncs.day_time(ctx) == RelTime(4 * 3600 + 46 * 60 + 40.0)
    assert timefuncs.abs_time(ctx) == AbsTime(1720000000, -18000)
    assert timefuncs.format_time(ctx) == "Wed Jul  3 04:46:40 2024"


def test_local_zone_from_context_drives_broken_down_times() -> None:
    east = fixed(34200)
    assert timefuncs.get_hours(east, AbsTime(0, 0)) == 9
    assert timefuncs.get_minutes(east, AbsTime(0, 0)) == 30
    # splitTime is handed what makes its record (the compiler hands it ClassAd's)
    split = timefuncs.split_time(ClassAd, east, 0)
    assert isinstance(split, ClassAd)
    assert split.evaluate("Offset") == 34200
    assert split.evaluate("Hours") == 9
    assert timefuncs.abs_time(east, 0) == AbsTime(0, 34200)


def test_zone_defaults_to_the_process_zone() -> None:
    ctx = CallContext(now=lambda: NOW)
    import time
    assert timefuncs.local_offset(ctx, NOW) == time.localtime(NOW).tm_gmtoff


def test_random_uses_the_context_source_and_stays_in_range() -> None:
    a = [math.random(fixed()) for _ in range(50)]
    b = [math.random(fixed()) for _ in range(50)]
    assert a == b  # same seed, same draws: no hidden global state
    ctx = fixed()
    ints = [math.random(ctx, 10) for _ in range(500)]
    assert all(type(i) is int and 0 <= i < 10 for i in ints)
    assert len(set(ints)) == 10
    reals = [math.random(ctx, 2.5) for _ in range(200)]
    assert all(type(r) is float and 0.0 <= r < 2.5 for r in reals)
    assert math.random(ctx, 0) is Error
    assert math.random(ctx, "x") is Error


def test_user_map_consults_the_context_maps() -> None:
    maps = {"Groups": lambda user: {"alice": ["physics", "chem"]}.get(user)}
    ctx = CallContext(user_maps=maps)
    assert misc.user_map(ctx, "Groups", "alice") == "physics,chem"
    assert misc.user_map(ctx, "groups", "alice", "CHEM") == "chem"
    assert misc.user_map(ctx, "Groups", "alice", "bio") == "physics"
    assert misc.user_map(ctx, "Groups", "bob") is Undefined
    assert misc.user_map(ctx, "Groups", "bob", "x", "nobody") == "nobody"
    assert misc.user_map(ctx, "Other", "alice") is Undefined
    assert misc.user_map(ctx, Error, "alice") is Error


def test_user_home_reads_the_password_database() -> None:
    me = pwd.getpwuid(os.getuid())
    assert misc.user_home(me.pw_name) == me.pw_dir
    assert misc.user_home("no-such-user-condorpy") is Undefined
    assert misc.user_home("no-such-user-condorpy", "/tmp") == "/tmp"


def test_tables_hold_every_function_once_with_sane_arity() -> None:
    from condorpy.classad.functions import envargs, regex, stringlists, versions
    from condorpy.classad.functions.registry import merge_tables
    merged = merge_tables(types.TABLE, lists.TABLE, strings.TABLE, timefuncs.TABLE,
                          math.TABLE, versions.TABLE, regex.TABLE, stringlists.TABLE,
                          envargs.TABLE, misc.TABLE)
    for name in ("isundefined", "member", "stringlistsintersect", "formattime", "split",
                 "versioncmp", "version_in_range", "regexps", "replaceall", "quantize",
                 "stringlist_regexpmember", "envv1tov2", "argstolist", "userhome", "usermap",
                 "splitslotname", "interval", "ceiling", "int", "real", "string", "bool"):
        assert name in merged, name
    for spec in merged.values():
        assert spec.max_args is None or spec.min_args <= spec.max_args
        assert not spec.lazy
    impure = {k for k, s in merged.items() if not s.pure}
    assert {"time", "currenttime", "random", "userhome", "usermap"} <= impure


def test_arguments_are_never_mutated() -> None:
    lst = [3, 1, "a", [1, 2]]
    snapshot = [3, 1, "a", [1, 2]]
    lists.sum_(lst)
    lists.max_(lst)
    lists.member(1, lst)
    strings.join(",", lst)
    assert lst == snapshot
