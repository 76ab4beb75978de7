"""The closures of the operators' common cases: two numbers, two strings, booleans,
an attribute against a constant, and the fused shapes of the stock policy expressions
(shapes.py decides when one applies). Each runs the common case inline and hands
anything else to :mod:`condorpy.classad.ops`, so it gives exactly what ops gives.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, TypeAlias

from condorpy.classad import ops
from condorpy.classad.evaluation import MISS, NOCONST, EvalState, Fn
from condorpy.classad.lexer import INT_MAX, INT_MIN
from condorpy.classad.scope import Scope
from condorpy.classad.values import Error, Undefined

def make_ite(fns: tuple[Fn, ...], tk: Any, ek: Any) -> Fn:
    """ifThenElse(c, a, b) without the lazy-call machinery; the rules of
    :func:`condorpy.classad.functions.special.if_then_else`: a number is true when not
    zero, undefined stays undefined, anything else is an error. ``tk``/``ek``: the
    branches' constant values (NOCONST when not constant), returned without a call."""
    cf, tf, ef = fns

    def ite(s: Any, tg: Any, st: EvalState) -> Any:
        try:
            c = cf(s, tg, st)
            if c is not True and c is not False:
                t = type(c)
                if t is not int and t is not float:
                    return Undefined if c is Undefined else Error
                c = c != 0
            if c:
                return tk if tk is not NOCONST else tf(s, tg, st)
            return ek if ek is not NOCONST else ef(s, tg, st)
        except RecursionError:
            return Error
        except Exception:  # as for any built-in: an implementation bug is an error value
            return Error
    return ite


def make_ite_is(la: str, lf: Fn, k: Any, negate: bool, branches: tuple[Fn, ...],
                tk: Any, ek: Any) -> Fn:
    """make_ite whose condition is ``la is k`` (``isnt``) for a constant scalar,
    undefined or error ``k``: the test of make_identical inline; it is always a boolean."""
    tf, ef = branches
    single = k is Undefined or k is Error
    tkk = type(k)

    def ite_is(s: Any, tg: Any, st: EvalState) -> Any:
        try:
            a = MISS if s is None else s.consts.get(la, MISS)
            if a is MISS:
                a = lf(s, tg, st)
            if (a is k if single else (type(a) is tkk and a == k)) is not negate:
                return tk if tk is not NOCONST else tf(s, tg, st)
            return ek if ek is not NOCONST else ef(s, tg, st)
        except RecursionError:
            return Error
        except Exception:  # as make_ite
            return Error
    return ite_is


# (attribute, on TARGET, operator, constant (lower-cased string), its type)
Leaf: TypeAlias = "tuple[str, bool, Callable[[Any, Any], Any], Any, type]"
CMP_OPS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_lower: Callable[[Any], Any] = str.lower


def make_and_leaf(leaf: Leaf, lf: Fn, rf: Fn) -> Fn:
    """make_and whose left operand is a comparison _leaf describes: when the attribute is a
    constant of the constant's type, the comparison runs here (what make_compare's closure
    would return); otherwise that closure runs."""
    slow = ops.logical_and
    la, _, pyop, k, tk = leaf
    low = tk is str

    def and_leaf(s: Any, tg: Any, st: EvalState) -> Any:
        a: Any = MISS if s is None else s.consts.get(la, MISS)
        if type(a) is tk:
            a = pyop(_lower(a), k) if low else pyop(a, k)
        else:
            a = lf(s, tg, st)
        if a is False:
            return False
        if a is True:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(True, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return and_leaf


def make_and_leaf_or(leaf: Leaf, lf: Fn, of1: Fn, of2: Fn) -> Fn:
    """make_and_leaf whose right operand is ``of1 || of2``, evaluated here as make_or's closure
    would."""
    slow_and = ops.logical_and
    slow_or = ops.logical_or
    la, _, pyop, k, tk = leaf
    low = tk is str

    def or_(s: Any, tg: Any, st: EvalState) -> Any:
        a = of1(s, tg, st)
        if a is True:
            return True
        if a is False:
            b = of2(s, tg, st)
            if b is True or b is False:
                return b
            return slow_or(False, lambda: b)
        return slow_or(a, lambda: of2(s, tg, st))

    def and_leaf_or(s: Any, tg: Any, st: EvalState) -> Any:
        a: Any = MISS if s is None else s.consts.get(la, MISS)
        if type(a) is tk:
            a = pyop(_lower(a), k) if low else pyop(a, k)
        else:
            a = lf(s, tg, st)
        if a is False:
            return False
        if a is not True:
            return slow_and(a, lambda: or_(s, tg, st))
        # b = or_(s, tg, st), inline
        b = of1(s, tg, st)
        if b is True:
            return True
        if b is False:
            c = of2(s, tg, st)
            if c is True or c is False:
                return c
            b = slow_or(False, lambda: c)
        else:
            b = slow_or(b, lambda: of2(s, tg, st))
        if b is True or b is False:
            return b
        return slow_and(True, lambda: b)
    return and_leaf_or


def make_or_leaf(leaf: Leaf, lf: Fn, rf: Fn) -> Fn:
    """make_or with the left operand tested as in make_and_leaf."""
    slow = ops.logical_or
    la, _, pyop, k, tk = leaf
    low = tk is str

    def or_leaf(s: Any, tg: Any, st: EvalState) -> Any:
        a: Any = MISS if s is None else s.consts.get(la, MISS)
        if type(a) is tk:
            a = pyop(_lower(a), k) if low else pyop(a, k)
        else:
            a = lf(s, tg, st)
        if a is True:
            return True
        if a is False:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(False, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return or_leaf


def make_cmp_ite_is(op: str, c: Any, la: str, lf: Fn, k: Any, negate: bool, tf: Fn, ef: Fn,
                    tk: Any, ek: Any) -> Fn:
    """make_ite_is followed by make_compare's cmp_num against the number ``c``."""
    pyop = PYOPS[op]
    slow = ops.BINARY[op]
    tc = type(c)
    single = k is Undefined or k is Error
    tkk = type(k)

    def cmp_ite(s: Any, tg: Any, st: EvalState) -> Any:
        try:
            a = MISS if s is None else s.consts.get(la, MISS)
            if a is MISS:
                a = lf(s, tg, st)
            if (a is k if single else (type(a) is tkk and a == k)) is not negate:
                v = tk if tk is not NOCONST else tf(s, tg, st)
            else:
                v = ek if ek is not NOCONST else ef(s, tg, st)
        except RecursionError:
            v = Error
        except Exception:  # as make_ite
            v = Error
        tv = type(v)
        if tv is tc:
            return pyop(v, c)
        if tv is int or tv is float:
            return pyop(float(v), float(c))
        return slow(v, c)
    return cmp_ite


def make_cmp_arith_aa(op: str, c: Any, aop: str, la: str, ra: str, lf: Fn, rf: Fn) -> Fn:
    """make_arith's arith_aa for ``la aop ra`` followed by make_compare's cmp_num against the
    number ``c``."""
    pyop = PYOPS[op]
    slow = ops.BINARY[op]
    apy = PYOPS[aop]
    aslow = ops.BINARY[aop]
    tc = type(c)
    lo, hi = INT_MIN, INT_MAX
    inf = float("inf")

    def cmp_arith(s: Any, tg: Any, st: EvalState) -> Any:
        if s is not None:
            consts = s.consts
            a = consts.get(la, MISS)
            if a is MISS:
                a = lf(s, tg, st)
            b = consts.get(ra, MISS)
            if b is MISS:
                b = rf(s, tg, st)
        else:
            a = lf(s, tg, st)
            b = rf(s, tg, st)
        ta = type(a)
        tb = type(b)
        if ta is int and tb is int:
            v = apy(a, b)
            if not lo <= v <= hi:
                v = aslow(a, b)
        elif (ta is float or ta is int) and (tb is float or tb is int):
            v = apy(a, b)
            if v == inf:
                v = Error
        else:
            v = aslow(a, b)
        tv = type(v)
        if tv is tc:
            return pyop(v, c)
        if tv is int or tv is float:
            return pyop(float(v), float(c))
        return slow(v, c)
    return cmp_arith


def make_and(lf: Fn, rf: Fn) -> Fn:
    slow = ops.logical_and

    def and_(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        if a is False:
            return False
        if a is True:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(True, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return and_


def make_or(lf: Fn, rf: Fn) -> Fn:
    slow = ops.logical_or

    def or_(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        if a is True:
            return True
        if a is False:
            b = rf(s, tg, st)
            if b is True or b is False:
                return b
            return slow(False, lambda: b)
        return slow(a, lambda: rf(s, tg, st))
    return or_


PYOPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}


SCALARS = (int, float, str, bool)


def make_identical(negate: bool, lf: Fn, k: Any, la: str | None) -> Fn:
    """``x is K`` / ``x isnt K`` against a constant scalar, undefined or error: never
    error then (only lists and records are), so the test is a type check and ``==``."""
    tk = type(k)
    single = k is Undefined or k is Error
    if la is not None:
        def is_attr(s: Any, tg: Any, st: EvalState) -> Any:
            a = MISS if s is None else s.consts.get(la, MISS)
            if a is MISS:
                a = lf(s, tg, st)
            r = a is k if single else (type(a) is tk and a == k)
            return r is not negate
        return is_attr

    def is_(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        r = a is k if single else (type(a) is tk and a == k)
        return r is not negate
    return is_


def make_and_n(fns: list[Fn]) -> Fn:
    """make_and folded over three or more operands, left to right."""
    slow = ops.logical_and
    first, rest = fns[0], tuple(fns[1:])

    def and_n(s: Any, tg: Any, st: EvalState) -> Any:
        a = first(s, tg, st)
        for f in rest:
            if a is False:
                return False
            if a is True:
                b = f(s, tg, st)
                a = b if b is True or b is False else slow(True, lambda: b)
            else:
                a = slow(a, lambda: f(s, tg, st))  # the thunk runs (or not) right here
        return a
    return and_n


def make_or_n(fns: list[Fn]) -> Fn:
    """make_or folded over three or more operands, left to right."""
    slow = ops.logical_or
    first, rest = fns[0], tuple(fns[1:])

    def or_n(s: Any, tg: Any, st: EvalState) -> Any:
        a = first(s, tg, st)
        for f in rest:
            if a is True:
                return True
            if a is False:
                b = f(s, tg, st)
                a = b if b is True or b is False else slow(False, lambda: b)
            else:
                a = slow(a, lambda: f(s, tg, st))
        return a
    return or_n


def make_arith(op: str, lf: Fn, rf: Fn, rc: Any, la: str | None, ra: str | None) -> Fn:
    pyop = PYOPS[op]
    slow = ops.BINARY[op]
    lo, hi = INT_MIN, INT_MAX
    inf = float("inf")
    if la is not None and ra is not None:
        def arith_aa(s: Any, tg: Any, st: EvalState) -> Any:
            if s is not None:
                c = s.consts
                a = c.get(la, MISS)
                if a is MISS:
                    a = lf(s, tg, st)
                b = c.get(ra, MISS)
                if b is MISS:
                    b = rf(s, tg, st)
            else:
                a = lf(s, tg, st)
                b = rf(s, tg, st)
            ta = type(a)
            tb = type(b)
            if ta is int and tb is int:
                r = pyop(a, b)
                if lo <= r <= hi:
                    return r
            elif (ta is float or ta is int) and (tb is float or tb is int):
                r = pyop(a, b)
                return r if r != inf else Error
            return slow(a, b)
        return arith_aa
    if type(rc) is int or type(rc) is float:
        k = rc
        ki = type(rc) is int

        def arith_c(s: Any, tg: Any, st: EvalState) -> Any:
            a = lf(s, tg, st)
            ta = type(a)
            if ta is int and ki:
                r = pyop(a, k)
                if lo <= r <= hi:
                    return r
            elif ta is float or ta is int:
                r = pyop(a, k)
                return r if r != inf else Error
            return slow(a, k)
        return arith_c

    def arith(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        b = rf(s, tg, st)
        ta = type(a)
        tb = type(b)
        if ta is int and tb is int:
            r = pyop(a, b)
            if lo <= r <= hi:
                return r
        elif (ta is float or ta is int) and (tb is float or tb is int):
            r = pyop(a, b)
            return r if r != inf else Error
        return slow(a, b)
    return arith


def make_compare(op: str, lf: Fn, rf: Fn, rc: Any, la: str | None, lt: str | None = None
                 ) -> Fn:
    pyop = PYOPS[op]
    slow = ops.BINARY[op]
    tc = type(rc)
    # A boolean constant compares as 0/1: with a boolean the Python operators agree,
    # with a number the mixed path below gives what ops.compare gives.
    if (tc is int or tc is float or tc is bool) and lt is not None:
        kt = rc
        tkt = tc

        def cmp_target_num(s: Any, tg: Any, st: EvalState) -> Any:
            a = tg.consts.get(lt, MISS) if isinstance(tg, Scope) else MISS
            if a is MISS:
                a = lf(s, tg, st)
            ta = type(a)
            if ta is tkt:
                return pyop(a, kt)
            if ta is int or ta is float:
                return pyop(float(a), float(kt))
            return slow(a, kt)
        return cmp_target_num
    if (tc is int or tc is float or tc is bool) and la is not None:
        k = rc
        tk = tc

        def cmp_attr_num(s: Any, tg: Any, st: EvalState) -> Any:
            a = MISS if s is None else s.consts.get(la, MISS)
            if a is MISS:
                a = lf(s, tg, st)
            ta = type(a)
            if ta is tk:
                return pyop(a, k)
            if ta is int or ta is float:
                return pyop(float(a), float(k))  # mixed: compared as doubles, like C
            return slow(a, k)
        return cmp_attr_num
    if tc is str and la is not None:
        ks = rc
        kl = rc.lower()

        def cmp_attr_str(s: Any, tg: Any, st: EvalState) -> Any:
            a = MISS if s is None else s.consts.get(la, MISS)
            if a is MISS:
                a = lf(s, tg, st)
            if type(a) is str:
                return pyop(a.lower(), kl)
            return slow(a, ks)
        return cmp_attr_str
    if tc is int or tc is float or tc is bool:
        c = rc

        def cmp_num(s: Any, tg: Any, st: EvalState) -> Any:
            a = lf(s, tg, st)
            ta = type(a)
            if ta is tc:
                return pyop(a, c)
            if ta is int or ta is float:
                return pyop(float(a), float(c))
            return slow(a, c)
        return cmp_num
    if tc is str:
        cs = rc
        cl = rc.lower()

        def cmp_str(s: Any, tg: Any, st: EvalState) -> Any:
            a = lf(s, tg, st)
            if type(a) is str:
                return pyop(a.lower(), cl)
            return slow(a, cs)
        return cmp_str

    def cmp(s: Any, tg: Any, st: EvalState) -> Any:
        a = lf(s, tg, st)
        b = rf(s, tg, st)
        ta = type(a)
        tb = type(b)
        if ta is tb and (ta is int or ta is float):
            return pyop(a, b)
        return slow(a, b)
    return cmp
