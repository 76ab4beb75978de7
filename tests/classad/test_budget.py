"""Every evaluation runs under a budget: costly expressions give error and say so."""

from __future__ import annotations

import itertools

import pytest

from condorpy.classad import Budget, CallContext, ClassAd, Error, Undefined, parse_expr
from condorpy.classad.budget import DEFAULT_STEPS


def _still() -> float:
    """A clock that never moves: only the step count can run out (deterministic)."""
    return 0.0


_FRESH = itertools.count()


def _fresh(text: str) -> str:
    """The same expression with a distinct literal, so no parse or compile cache helps."""
    return f"({text}) && {next(_FRESH)} >= 0"


def chain(levels: int, leaf: str, step: str) -> ClassAd:
    """A0 = leaf; Ai = step with {p} the previous level (each level names it twice)."""
    lines = [f"A0 = {leaf}"]
    lines += [f"A{i} = " + step.format(p=f"A{i - 1}") for i in range(1, levels + 1)]
    return ClassAd.parse_old("\n".join(lines))


def test_exponential_attribute_chain_is_error_after_the_step_budget() -> None:
    ad = chain(40, "1", "{p} + {p}")   # 2**40 attribute evaluations unbounded
    budget = Budget(20_000, 3600.0, _still)
    assert ad.evaluate("A40", None, CallContext(budget=budget)) is Error
    assert budget.exceeded
    assert 20_000 <= budget.used < 21_000
    # a shallow level of the same ad is cheap and exact
    fresh = Budget(20_000, 3600.0, _still)
    assert ad.evaluate("A10", None, CallContext(budget=fresh)) == 1024
    # one step per attribute expression evaluated (A0 is a constant: free)
    assert not fresh.exceeded and fresh.used == 2 ** 10 - 2


def test_no_budget_given_means_the_default_one() -> None:
    ad = chain(40, "1", "{p} + {p}")
    assert ad.evaluate("A40") is Error
    assert parse_expr("A40").evaluate(ad) is Error


def test_string_doubling_is_bounded_by_its_size() -> None:
    ad = chain(40, '"' + "x" * 1000 + '"', "strcat({p}, {p})")
    budget = Budget(100_000, 3600.0, _still)
    assert ad.evaluate("A40", None, CallContext(budget=budget)) is Error
    assert budget.exceeded
    # the strings built before it ran out add up to about 64 characters a step
    assert budget.used < 100_000 + 2 * (1 << 20 >> 6)
    ok = Budget(100_000, 3600.0, _still)
    assert ad.evaluate("A6", None, CallContext(budget=ok)) == "x" * 64 * 1000
    assert not ok.exceeded


def test_a_swallowed_error_still_leaves_the_budget_exceeded() -> None:
    ad = chain(40, "1", "{p} + {p}")
    budget = Budget(5_000, 3600.0, _still)
    assert parse_expr("isError(A40)").evaluate(ad, ctx=CallContext(budget=budget)) is True
    assert budget.exceeded


def test_a_spent_budget_fails_every_later_evaluation_sharing_it() -> None:
    ad = chain(12, "1", "{p} + {p}")   # A9: 510 steps
    budget = Budget(800, 3600.0, _still)
    ctx = CallContext(budget=budget)
    assert ad.evaluate("A9", None, ctx) == 512
    assert not budget.exceeded
    assert ad.evaluate("A9", None, ctx) is Error
    assert budget.exceeded
    assert ad.evaluate("A2", None, ctx) is Error   # (A1 = A0 + A0 is free: constants)


@pytest.mark.parametrize("pattern, subject", [
    ("(a|aa)+$", "a" * 40 + "!"),        # backtracks exponentially in the regex module too
    ("(a+)+$", "a" * 30 + "b"),
    ("(a|a)*b", "a" * 30),
    ("^(\\w+\\s?)*$", "a" * 30 + "!"),
])
def test_catastrophic_regexps_end_within_the_budget(pattern: str, subject: str) -> None:
    budget = Budget(DEFAULT_STEPS, 0.05)
    text = f"regexp({pattern!r}, strcat({subject!r}, \"\"))".replace("'", '"')
    got = parse_expr(_fresh(text)).evaluate(ctx=CallContext(budget=budget))
    # either the engine sees through it (no match), or the match ran out of time: error
    assert got is False or (got is Error and budget.exceeded)


def test_a_regexp_out_of_time_is_error_and_spends_the_budget() -> None:
    budget = Budget(DEFAULT_STEPS, 0.05)
    ctx = CallContext(budget=budget)
    subject = "a" * 40 + "!"
    for call in (f'regexp("(a|aa)+$", "{subject}")',
                 f'regexps("(a|aa)+$", "{subject}", "x")',
                 f'replaceAll("(a|aa)+$", "{subject}", "x")',
                 f'stringList_regexpMember("(a|aa)+$", "{subject}")'):
        assert parse_expr(call).evaluate(ctx=ctx) is Error, call
        assert budget.exceeded
    # an element of regexpMember's list whose match fails does not match (HTCondor)
    member = Budget(DEFAULT_STEPS, 0.05)
    got = parse_expr(f'regexpMember("(a|aa)+$", {{"{subject}", "b"}})').evaluate(
        ctx=CallContext(budget=member))
    assert got is False and member.exceeded


def test_regexps_with_constant_arguments_are_not_folded_at_compile_time() -> None:
    e = parse_expr(_fresh('regexp("(a|aa)+$", "' + "a" * 40 + '!")'))
    e.compile()
    assert not e.is_constant   # evaluated under each caller's budget instead
    # (folding itself still happens)
    folded = parse_expr(_fresh('strcat("a", "b") == "ab"'))
    folded.compile()
    assert folded.is_constant


def test_normal_expressions_are_unaffected() -> None:
    slot = ClassAd.parse_old("\n".join([
        "Memory = 4096", "Cpus = 4", 'Arch = "X86_64"', 'OpSys = "LINUX"',
        "KeyboardIdle = 1000", "LoadAvg = 0.1", "CondorLoadAvg = 0.0",
        'State = "Unclaimed"', 'Names = "alice,bob,carol"',
        "START = (KeyboardIdle > 15 * 60) && (((LoadAvg - CondorLoadAvg) <= 0.3) "
        '|| (State != "Unclaimed" && State != "Owner"))',
    ]))
    job = ClassAd.parse_old("\n".join([
        'Owner = "bob"', "RequestMemory = 2048", "RequestCpus = 2",
        'Cmd = "/bin/sleep"',
        "Requirements = TARGET.Memory >= MY.RequestMemory && TARGET.Cpus >= RequestCpus "
        '&& TARGET.Arch == "X86_64" && stringListMember(Owner, TARGET.Names) '
        '&& regexp("^/bin/", Cmd)',
        "Rank = TARGET.Memory + TARGET.Cpus * 10",
    ]))
    budget = Budget(1_000, 3600.0, _still)
    ctx = CallContext(budget=budget)
    assert job.evaluate("Requirements", slot, ctx) is True
    assert job.evaluate("Rank", slot, ctx) == 4136
    assert slot.evaluate("START", job, ctx) is True
    assert not budget.exceeded and budget.used < 20
    # and the same without a budget of their own
    assert job.evaluate("Requirements", slot) is True
    assert slot.evaluate("START", job) is True


def test_eval_and_count_matches_are_charged() -> None:
    budget = Budget(1_000, 3600.0, _still)
    ctx = CallContext(budget=budget)
    big = "1 + " * 20_000 + "1"
    assert parse_expr(f'eval("{big}")').evaluate(ctx=ctx) is Error
    assert budget.exceeded
    # (5,000 records: 35,000 tokens, under the parser's limit of an expression)
    items = ", ".join("[a = 1]" for _ in range(5_000))
    each = Budget(100, 3600.0, _still)
    assert parse_expr(f"countMatches(a == 1, {{{items}}})").evaluate(
        ctx=CallContext(budget=each)) is Error
    assert each.exceeded


def test_seconds_are_read_from_the_clock_given_and_count_inside_evaluations() -> None:
    now = [100.0]
    step = [0.0]

    def clock() -> float:
        now[0] += step[0]
        return now[0]

    budget = Budget(10_000_000, 1.0, clock)
    ad = chain(30, "1", "{p} + {p}")
    ctx = CallContext(budget=budget)
    assert ad.evaluate("A9", None, ctx) == 512      # 510 steps: the clock was read
    now[0] += 1000.0    # time between evaluations (the caller's) is not theirs
    assert ad.evaluate("A9", None, ctx) == 512
    assert not budget.exceeded and budget.spent == 0.0
    step[0] = 0.4       # now each look at the clock, every 256 steps, finds 0.4 s more
    assert ad.evaluate("A12", None, ctx) is Error
    assert budget.exceeded and budget.spent >= 1.0 and budget.used < 3_000


def test_one_evaluation_may_spend_only_its_share_of_the_seconds() -> None:
    now = [0.0]
    step = [0.0]

    def clock() -> float:
        now[0] += step[0]
        return now[0]

    budget = Budget(10_000_000, 100.0, clock, each=1.0)
    ad = chain(30, "1", "{p} + {p}")
    ctx = CallContext(budget=budget)
    step[0] = 0.3
    assert ad.evaluate("A9", None, ctx) == 512      # one look at the clock: nothing spent
    assert ad.evaluate("A10", None, ctx) == 1024    # 0.3 s, 0.6 s: under its 1 s
    assert not budget.exceeded
    assert ad.evaluate("A12", None, ctx) is Error   # 16 looks: over 1 s, under 100 s
    assert budget.exceeded and budget.spent < 100.0


@pytest.mark.parametrize("call", ['replace("a", "xaxa", "b")', 'regexps("a", "xaxa", "b")',
                                  'replaceAll("a", "xaxa", "b")', 'regexp("a", "xaxa")'])
def test_time_in_a_regexp_is_spent_even_when_the_scan_stops_early(call: str) -> None:
    # replace and regexps stop at the first match: the time of the scan still counts
    now = [0.0]

    def clock() -> float:
        now[0] += 0.01
        return now[0]

    budget = Budget(10_000_000, 100.0, clock)
    ctx = CallContext(budget=budget)
    for n in range(5):
        expr = parse_expr(f"({call} =!= error) && {n} >= 0")     # fresh: no cache
        assert ClassAd().eval_expr(expr, None, ctx) is True
    assert budget.spent > 0.0


def test_an_allowance_gives_each_evaluation_a_budget_of_its_own_and_counts_overruns() -> None:
    from condorpy.classad import Allowance
    ad = chain(40, "1", "{p} + {p}")
    allowance = Allowance(5_000, 3600.0, _still)
    ctx = CallContext(allowance=allowance)
    assert ad.evaluate("A11", None, ctx) == 2048     # 2046 steps, under 5000 each time
    assert ad.evaluate("A11", None, ctx) == 2048     # (a shared budget would run out)
    assert allowance.exceeded == 0
    assert ad.evaluate("A40", None, ctx) is Error
    assert ad.evaluate("A30", None, ctx) is Error
    assert allowance.exceeded == 2
    assert ad.evaluate("A3", None, ctx) == 8          # the next one starts afresh
    with pytest.raises(ValueError):
        Allowance(0)


def test_records_made_are_charged_so_nested_count_matches_stops() -> None:
    # countMatches over a list of 2000 records, nested 30 levels through attributes:
    # each level makes the 2000 records again (tens of microseconds each)
    records = ", ".join(f"[a = {i}]" for i in range(2000))
    lines = [f"L = {{{records}}}", "C0 = countMatches(a >= 0, L)"]
    lines += [f"C{i} = countMatches(C{i - 1} >= 0, L)" for i in range(1, 30)]
    ad = ClassAd.parse_old("\n".join(lines))
    budget = Budget(20_000, 3600.0, _still)
    assert ad.evaluate("C29", None, CallContext(budget=budget)) is Error
    assert budget.exceeded and budget.used < 20_000 + 64   # (one sized charge over)
    assert ad.evaluate("C0", None, CallContext(budget=Budget(50_000, 3600.0, _still))) == 2000
    made = Budget(1_000_000, 3600.0, _still)
    assert len(ad.evaluate("L", None, CallContext(budget=made))) == 2000
    assert made.used >= 2000     # a step per record


@pytest.mark.parametrize("top, lines", [
    # a reference chain far deeper than Python's stack would take
    ("A0", [f"A{i} = A{i + 1} + 1" for i in range(5000)] + ["A5000 = 1"]),
    # strings and lists grown by doubling through string and list functions
    ("A40", ['A0 = "xxxxxxxxxxxxxxxx"'] + [f"A{i} = toUpper(strcat(A{i - 1}, A{i - 1}))"
                                           for i in range(1, 41)]),
    ("A40", ['A0 = "a,b,c,d"'] + [f'A{i} = split(join(",", split(A{i - 1})) + "," + A{i - 1})'
                                  for i in range(1, 41)]),
    ("A40", ['A0 = "%s%s"'] + [f'A{i} = sprintf(A{i - 1} + A{i - 1}, "a", "b")'
                               for i in range(1, 41)]),
    # a backtracking regexp over a long subject made by doubling
    ("A24", ['A0 = "aaaaaaaaaaaaaaaa"'] + [f"A{i} = strcat(A{i - 1}, A{i - 1})"
                                           for i in range(1, 24)]
     + ['A24 = regexp("(a|aa)+$", strcat(A23, "!"))']),
])
def test_worst_cases_of_the_language_are_error_never_an_exception(
        top: str, lines: list[str]) -> None:
    ad = ClassAd.parse_old("\n".join(lines))
    assert ad.evaluate(top, None, CallContext(budget=Budget(50_000, 3600.0, _still))) is Error


@pytest.mark.parametrize("lines", [['A0 = eval("A0")'],
                                   ['A0 = eval(B)', 'B = "eval(C)"', 'C = "A0 + 1"']])
def test_eval_of_itself_is_a_circular_reference_not_a_recursion(lines: list[str]) -> None:
    ad = ClassAd.parse_old("\n".join(lines))
    got = ad.evaluate("A0", None, CallContext(budget=Budget(50_000, 3600.0, _still)))
    assert got is Undefined or got is Error
