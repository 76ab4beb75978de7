"""Expression evaluation for the policy engine, on the engine's own clock.

The engine is pure, so ``time()`` inside a policy expression must read the engine's
clock (virtual in ``policy simulate``), never the host's. The ClassAd library already
takes its clock from a :class:`~condorpy.classad.CallContext` carried through every
evaluation (nested ``eval()``, ``ifThenElse`` and function arguments included); the
backend below passes the engine's context to each call, and the expression text is
never touched. The ClassAd language itself comes from :mod:`condorpy.classad`, behind
the small :class:`Backend` interface the engine uses.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable, Iterable, Mapping, Protocol

import condorpy.classad as classad
from condorpy.classad import CallContext
from condorpy.classad.values import Error as Error
from condorpy.classad.values import Undefined as Undefined
from condorpy.errors import ClassAdError, PolicyError


class Backend(Protocol):
    """The few ClassAd operations the engine needs."""

    def new_ad(self) -> Any: ...
    def set_value(self, ad: Any, name: str, value: Any) -> None: ...
    def set_expr(self, ad: Any, name: str, text: str) -> None: ...
    def literal(self, value: Any) -> Any: ...
    def set_literal(self, ad: Any, name: str, lit: Any) -> None: ...
    def literal_batch(self, items: Iterable[tuple[str, Any]]) -> Any: ...
    def set_literal_batch(self, ad: Any, batch: Any) -> None: ...
    # evaluate(ad, name, target) with ``name`` in lower case, as a plain function
    def evaluator(self) -> Callable[[Any, str, Any | None], Any]: ...
    def batch_setter(self) -> Callable[[Any, Any], None]: ...
    def compile(self, text: str) -> Any: ...
    def eval_compiled(self, expr: Any, my: Any, target: Any | None) -> Any: ...
    def evaluate(self, ad: Any, name: str, target: Any | None) -> Any: ...
    def names(self, ad: Any) -> Iterable[str]: ...
    # the expression (or value) of ``name`` in ``ad`` as it stands; None when absent
    def lookup(self, ad: Any, name: str) -> Any: ...


class _CondorpyBackend:
    """Over :mod:`condorpy.classad` (ClassAd, parse_expr), every evaluation in ``ctx``."""

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx

    def new_ad(self) -> Any:
        return classad.ClassAd()

    def set_value(self, ad: Any, name: str, value: Any) -> None:
        ad[name] = value

    def set_expr(self, ad: Any, name: str, text: str) -> None:
        ad.set_expr(name, text)

    def literal(self, value: Any) -> Any:
        return classad.Expr.literal(value)

    def set_literal(self, ad: Any, name: str, lit: Any) -> None:
        ad[name] = lit

    def literal_batch(self, items: Iterable[tuple[str, Any]]) -> Any:
        """Literals from :meth:`literal` prepared once for setting in many ads."""
        return classad.ClassAd.literal_batch(items)

    def set_literal_batch(self, ad: Any, batch: Any) -> None:
        ad.set_literals(batch)

    # The engine's per-slot, per-cycle calls, as plain functions of the ad: one call
    # less than going through this object, which counts at a thousand slots.
    def evaluator(self) -> Callable[[Any, str, Any | None], Any]:
        # functools.partial runs in C: no extra Python frame per evaluation
        return functools.partial(classad.ClassAd.evaluate_lc, ctx=self._ctx)

    def batch_setter(self) -> Callable[[Any, Any], None]:
        return classad.ClassAd.set_literals  # type: ignore[no-any-return]

    def compile(self, text: str) -> Any:
        try:
            return classad.parse_expr(text)
        except ClassAdError as exc:
            raise PolicyError(f"cannot parse expression {text!r}: {exc}",
                              expression=text) from None

    def eval_compiled(self, expr: Any, my: Any, target: Any | None) -> Any:
        return expr.evaluate(my=my, target=target, ctx=self._ctx)

    def evaluate(self, ad: Any, name: str, target: Any | None) -> Any:
        return ad.evaluate(name, target=target, ctx=self._ctx)

    def names(self, ad: Any) -> Iterable[str]:
        return list(ad.keys())

    def lookup(self, ad: Any, name: str) -> Any:
        return ad.lookup(name)


def default_backend(ctx: CallContext | None = None) -> Backend:
    return _CondorpyBackend(ctx or CallContext())


def truth(value: Any) -> bool | None:
    """ClassAd truth of a policy value: True/False, or None for undefined/error/other."""
    if value is True or value is False:
        return bool(value)
    if type(value) is int or type(value) is float:
        return value != 0
    return None


def is_true(value: Any) -> bool:
    """truth(value) is True, inline (called for every slot on every cycle)."""
    if value is True:
        return True
    t = type(value)
    return (t is int or t is float) and value != 0


def is_false(value: Any) -> bool:
    if value is False:
        return True
    t = type(value)
    return (t is int or t is float) and value == 0


def number(value: Any) -> float | None:
    if value is True or value is False:
        return float(value)
    if type(value) is int or type(value) is float:
        return float(value)
    return None


_JSON_EXPR = re.compile(r"^/Expr\((.*)\)/$", re.DOTALL)


def json_attr(value: Any) -> Any:
    """One attribute's value from JSON: ``"/Expr(text)/"`` is the expression ``text``
    (HTCondor's JSON ClassAd form), anything else stays as it is."""
    if isinstance(value, str):
        m = _JSON_EXPR.match(value)
        if m:
            return classad.parse_expr(m.group(1))
    return value


def load_ad(backend: Backend, attrs: Mapping[str, Any], where: str) -> Any:
    """A ClassAd from a JSON object: plain values, and ``"/Expr(text)/"`` strings as
    expressions (HTCondor's JSON ClassAd form)."""
    ad = backend.new_ad()
    for name, value in attrs.items():
        if isinstance(value, str):
            m = _JSON_EXPR.match(value)
            if m:
                backend.set_expr(ad, name, m.group(1))
                continue
        if value is None:
            backend.set_value(ad, name, Undefined)
        elif isinstance(value, (bool, int, float, str)):
            backend.set_value(ad, name, value)
        else:
            try:
                backend.set_expr(ad, name, _literal(value))
            except PolicyError as exc:
                raise PolicyError(f"{where}: attribute {name}: {exc}") from None
    return ad


def _literal(value: Any) -> str:
    """A JSON list/object as ClassAd literal text."""
    if isinstance(value, list):
        return "{" + ", ".join(_literal(v) for v in value) + "}"
    if isinstance(value, dict):
        return "[" + "; ".join(f"{k} = {_literal(v)}" for k, v in value.items()) + "]"
    if value is None:
        return "undefined"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def plain(value: Any) -> Any:
    """A value as JSON can carry it (undefined -> None, error -> "error")."""
    if value is Undefined:
        return None
    if value is Error:
        return "error"
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, list):
        return [plain(v) for v in value]
    return str(value)
