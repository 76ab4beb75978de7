"""The table of built-in ClassAd functions and the contract they follow.

Two kinds of function exist:

* strict functions receive their arguments already evaluated, as plain values
  (see :mod:`condorpy.classad.values`), and return a value. Most functions are strict.
  A function marked ``needs_ctx`` receives a :class:`CallContext` as its first argument
  (the clock, the random source, the user map): there is no global state.
  A function marked ``needs_budget`` receives the evaluation's
  :class:`~condorpy.classad.budget.Budget` first (before a context): one whose cost
  the evaluator cannot see from its arguments, a regular-expression match, charges it
  and bounds itself by it.
  A function marked ``makes_records`` receives, before everything else, a function that
  makes a record (a ClassAd: a class defined above this library) from a dict of plain
  values.
* lazy functions receive a :class:`LazyCall` and decide themselves what to evaluate
  (``ifThenElse``, ``eval``, ``unparse``, ``unresolved``, ``evalInEachContext``,
  ``countMatches``, ``debug``). They are implemented in :mod:`.special`,
  :mod:`.eachcontext` and :mod:`.references`.

Arity is checked by the evaluator before the call: too few or too many arguments
evaluate to ``Error``. An exception escaping an implementation is a bug, but the
evaluator still turns it into ``Error`` rather than letting it reach a user.
Names are case-insensitive: the table is keyed by the lower-case name.
"""

from __future__ import annotations

import random as _random
import time as _time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from condorpy.classad.budget import Allowance, Budget
from condorpy.classad.values import Value


class Clock(Protocol):
    def __call__(self) -> float: ...


@dataclass
class CallContext:
    """What a context-needing strict function may use. Passed in, never global."""

    now: Callable[[], float] = _time.time
    rng: _random.Random = field(default_factory=_random.Random)
    # userMap(mapname, input[, preferred[, default]]) -> list[str] | None
    user_maps: dict[str, Callable[[str], list[str] | None]] = field(default_factory=dict)
    # local zone offset in seconds east of UTC at a given epoch time
    tz_offset: Callable[[float], int] | None = None
    # What the evaluations made with this context may spend together (a user's
    # request); None: each evaluation gets a default budget of its own.
    budget: Budget | None = None
    # What each evaluation made with this context spends when it has no shared budget,
    # and how many ran out; None: the library's defaults, uncounted.
    allowance: Allowance | None = None


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    impl: Callable[..., Value]
    min_args: int
    max_args: int | None  # None: any number
    lazy: bool = False
    needs_ctx: bool = False
    # pure: same arguments give the same result, so calls with constant arguments may be
    # folded at compile time (False for time(), random(), userHome(), ...).
    pure: bool = True
    makes_records: bool = False
    needs_budget: bool = False


class FunctionTable:
    """A name -> FunctionSpec table. One instance per module that defines functions."""

    def __init__(self) -> None:
        self._specs: dict[str, FunctionSpec] = {}

    def strict(self, name: str, min_args: int = 0, max_args: int | None = 0, *,
               needs_ctx: bool = False, pure: bool = True, makes_records: bool = False,
               needs_budget: bool = False
               ) -> Callable[[Callable[..., Value]], Callable[..., Value]]:
        if needs_budget and (needs_ctx or makes_records):
            # the compiler passes a budgeted function its budget alone, first
            raise ValueError(f"{name}: needs_budget goes with neither needs_ctx nor "
                             "makes_records")

        def register(fn: Callable[..., Value]) -> Callable[..., Value]:
            self._add(FunctionSpec(name, fn, min_args, max_args, False, needs_ctx, pure,
                                   makes_records, needs_budget))
            return fn
        return register

    def lazy(self, name: str, min_args: int = 0, max_args: int | None = 0, *,
             pure: bool = False) -> Callable[[Callable[..., Value]], Callable[..., Value]]:
        def register(fn: Callable[..., Value]) -> Callable[..., Value]:
            self._add(FunctionSpec(name, fn, min_args, max_args, True, False, pure))
            return fn
        return register

    def _add(self, spec: FunctionSpec) -> None:
        key = spec.name.lower()
        if key in self._specs:
            raise ValueError(f"ClassAd function {spec.name} defined twice")
        self._specs[key] = spec

    def specs(self) -> dict[str, FunctionSpec]:
        return dict(self._specs)

    def get(self, name: str) -> FunctionSpec | None:
        return self._specs.get(name.lower())


def merge_tables(*tables: FunctionTable) -> dict[str, FunctionSpec]:
    out: dict[str, FunctionSpec] = {}
    for t in tables:
        for k, v in t.specs().items():
            if k in out:
                raise ValueError(f"ClassAd function {k} defined in two modules")
            out[k] = v
    return out


