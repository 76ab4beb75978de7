"""How much work one evaluation (or one request's evaluations together) may do.

A ClassAd expression has no loops, yet it can cost exponential time: attributes that
name each other twice (``a1 = a2 + a2; a2 = a3 + a3; ...``) are evaluated afresh at each
reference, a string can double at each such level, and a backtracking regular
expression can take seconds on a 30-character subject. The daemon evaluates users'
expressions (constraints of q, rm, hold; a job's Requirements and Rank; the slot's START
against the job's ad) on its one loop, so every evaluation runs under a :class:`Budget`:

* a number of steps: one per attribute expression evaluated, and for functions one per
  64 characters (or list items) they are given or return;
* a number of seconds spent inside the evaluations, measured on a monotonic clock the
  caller passes in, checked every few hundred steps and handed to each
  regular-expression match as its timeout.

When either runs out the budget is ``exceeded`` and stays so: every further attribute or
charged call gives ``error``, so the evaluation unwinds at once. A caller that must tell
"false" from "too costly" (a user's constraint) reads ``exceeded`` afterwards, since an
``error`` can be swallowed on the way up (``isError(...)``).

An evaluation given no budget (``CallContext.budget`` unset) gets a fresh one of its own,
made by the context's :class:`Allowance` when it has one (the daemon's, sized by
``CONDORPY_EVAL_STEP_LIMIT``), else with the defaults below, so nothing, trusted or not,
evaluates without bound; a request's evaluations share the one the caller made, so a
constraint over many ads is bounded as a whole. An allowance counts the evaluations
that ran out, so a caller that only sees ``error`` (a claim's START or Requirements, a
job's periodic expression) can tell "too costly" from "error" and say so.
"""

from __future__ import annotations

import time as _time
from typing import Callable

__all__ = ["Allowance", "AllowedBudget", "Budget", "DEFAULT_SECONDS", "DEFAULT_STEPS", "USER_SECONDS", "USER_STEPS",
           "USER_SECONDS_EACH", "CHARS_PER_STEP_SHIFT"]

# A single evaluation with no budget of its own. Generous: no policy or job expression
# met in practice comes near a thousand steps; this stops only the pathological.
DEFAULT_STEPS = 250_000
DEFAULT_SECONDS = 0.1
# A user's request (a constraint over the whole queue): in all, and in any one of its
# evaluations (so that one costly ad is refused at once, while a cheap constraint over
# a long queue has room).
USER_STEPS = 1_000_000
USER_SECONDS = 1.0
USER_SECONDS_EACH = 0.1
# Sized charges: one step per 2**6 characters or list items.
CHARS_PER_STEP_SHIFT = 6
# Steps between two looks at the clock.
_TICK = 256


class Budget:
    """Steps and seconds left to the evaluations that share it. Not thread-safe (an
    evaluation runs on one thread)."""

    __slots__ = ("ticks", "steps", "seconds", "each", "clock", "spent", "exceeded", "_used",
                 "_chunk", "_since", "_spent_here")

    def __init__(self, steps: int = DEFAULT_STEPS, seconds: float = DEFAULT_SECONDS,
                 clock: Callable[[], float] = _time.monotonic, *,
                 each: float | None = None) -> None:
        """``steps`` and ``seconds`` for all the evaluations together; ``each``: seconds
        for any one of them (default: ``seconds``)."""
        self.steps = steps
        self.seconds = seconds
        self.each = seconds if each is None else min(each, seconds)
        self.clock = clock
        # Seconds spent inside evaluations. Only time between two looks at the clock in
        # one evaluation counts: what a caller does between evaluations (reading the
        # next ad of a long queue) is not the expression's cost. Most evaluations never
        # take _TICK steps and so never read the clock at all.
        self.spent = self._spent_here = 0.0   # (_spent_here: by the evaluation under way)
        self._since: float | None = None
        self.exceeded = False
        self._used = 0
        # charges left before the next look at the clock (the evaluator decrements it
        # inline; tick() settles the account when it reaches zero)
        self._chunk = self.ticks = _TICK if steps >= _TICK else steps

    @classmethod
    def for_user(cls, clock: Callable[[], float] = _time.monotonic) -> Budget:
        """What one request of a user (a constraint over a queue) may spend, in all and
        on any one ad."""
        return cls(USER_STEPS, USER_SECONDS, clock, each=USER_SECONDS_EACH)

    def describe(self) -> str:
        """The limits, for a refusal: "1000000 steps, 1 s, 0.1 s on one job"."""
        return f"{self.steps} steps, {self.seconds:g} s, {self.each:g} s on one job"

    @property
    def used(self) -> int:
        """Steps spent so far."""
        return self._used + self._chunk - self.ticks

    def begin(self) -> None:
        """An evaluation starts spending this budget (the evaluator calls this)."""
        self._since = None
        self._spent_here = 0.0

    def settle(self) -> bool:
        """Count the time since the last look at the clock in this evaluation; True when
        the budget is spent."""
        now = self.clock()
        if self._since is not None:
            d = now - self._since
            self.spent += d
            self._spent_here += d
        self._since = now
        if self.spent >= self.seconds or self._spent_here >= self.each:
            return self.exhaust()
        return self.exceeded

    def tick(self) -> bool:
        """Settle the steps charged since the last call; True when the budget is spent."""
        if self.exceeded:
            self.ticks = 0
            return True
        self._used += self._chunk - self.ticks
        left = self.steps - self._used
        if left <= 0 or self.settle():
            return self.exhaust()
        self._chunk = self.ticks = min(_TICK, left)
        return False

    def charge(self, n: int) -> bool:
        """Spend ``n`` steps; True when the budget is (now) spent."""
        t = self.ticks - n
        self.ticks = t
        return t <= 0 and self.tick()

    def charge_size(self, size: int) -> bool:
        """Spend the steps for ``size`` characters or items of work."""
        n = size >> CHARS_PER_STEP_SHIFT
        return n > 0 and self.charge(n)

    def timeout(self) -> float | None:
        """Seconds left for one uninterruptible operation (a regular-expression match;
        call :meth:`settle` after it); None when the budget is spent."""
        if self.exceeded or self.settle():
            return None
        return min(self.seconds - self.spent, self.each - self._spent_here)

    def exhaust(self) -> bool:
        """Mark the budget spent (an operation ran out of time); returns True."""
        if not self.exceeded:
            self._used += self._chunk - self.ticks
            self._chunk = 0
            self.exceeded = True
            self.ran_out()
        self.ticks = 0
        return True

    def ran_out(self) -> None:
        """Told once, when the budget is first spent (an allowance's budget counts it)."""

    def __repr__(self) -> str:
        state = "exceeded" if self.exceeded else "ok"
        return (f"Budget({self.used}/{self.steps} steps, {self.spent:.3f}/{self.seconds}s "
                f"({self.each}s each), {state})")


class Allowance:
    """What each evaluation made with a context may spend on its own (a budget per
    evaluation, not shared), and how many of them ran out: a caller compares
    ``exceeded`` before and after an evaluation to tell "too costly" from a plain
    ``error``. A reconfiguration changes ``steps`` in place (:meth:`resize`)."""

    __slots__ = ("steps", "seconds", "clock", "exceeded", "ticks")

    def __init__(self, steps: int = DEFAULT_STEPS, seconds: float = DEFAULT_SECONDS,
                 clock: Callable[[], float] = _time.monotonic) -> None:
        if steps < 1 or seconds <= 0:
            raise ValueError(f"an evaluation budget needs steps >= 1 and seconds > 0, "
                             f"not {steps} and {seconds}")
        self.seconds = seconds
        self.clock = clock
        self.exceeded = 0
        self.resize(steps)

    def resize(self, steps: int) -> None:
        """Each later evaluation may take ``steps`` (a reconfiguration)."""
        if steps < 1:
            raise ValueError(f"an evaluation budget needs steps >= 1, not {steps}")
        self.steps = steps
        self.ticks = min(_TICK, steps)      # what a budget starts with before its first tick

    def budget(self) -> Budget:
        """A fresh budget for one evaluation."""
        return AllowedBudget(self)

    def describe(self) -> str:
        """The limits, for a reason: "250000 steps, 0.1 s"."""
        return f"{self.steps} steps, {self.seconds:g} s"

    def __repr__(self) -> str:
        return f"Allowance({self.steps} steps, {self.seconds}s, {self.exceeded} exceeded)"


class AllowedBudget(Budget):
    """One evaluation's budget made from an :class:`Allowance`, counted there when it
    runs out. One is made for every evaluation the daemon's policy runs, so it copies
    the allowance's prepared fields rather than going through Budget's arguments
    (a third of the cost: measured on the policy benchmark)."""

    __slots__ = ("allowance",)

    def __init__(self, allowance: Allowance) -> None:
        self.allowance = allowance
        self.steps = allowance.steps
        self.seconds = self.each = allowance.seconds
        self.clock = allowance.clock
        self.spent = self._spent_here = 0.0
        self._since = None
        self.exceeded = False
        self._used = 0
        self._chunk = self.ticks = allowance.ticks

    def ran_out(self) -> None:
        self.allowance.exceeded += 1
