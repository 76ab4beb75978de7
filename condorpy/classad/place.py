"""Where an evaluation stands after evalInEachContext/countMatches moved it.

HTCondor's library looks an attribute-reference argument of those functions up with
the evaluation's own state and never puts the state back: after
``countMatches(MY.RequireGPUs, TARGET.AvailableGPUs)`` the evaluation stands in the ad
where that lookup ended (the job when it found RequireGPUs there, above both matched
ads when it found nothing), and everything evaluated after the call in the same
expression is evaluated from there: ``countMatches(MY.RequireGPUs,
TARGET.AvailableGPUs) >= RequestGPUs`` is undefined when the job has no RequireGPUs.
The move ends where the library saves and restores its place: at the end of an
attribute's evaluation (an attribute's expression, a ``r.x`` selection) and in the
fresh state each record of the list is evaluated in.

condorpy keeps that place in the evaluation state's fourth slot, ``st[3]``: None while
nothing has moved, else ``(scope, target, home scope, home target)`` (home: where the
expression stood before its first move, the ad a record written in it belongs to).
The slot exists only once something moved (states are three-slot lists until then),
and only closures of expressions that contain such a call read it (the compiler wraps
them: see Compiler.compile); all other evaluation never looks at it.
"""

from __future__ import annotations

from typing import Any, Callable

Fn = Callable[[Any, Any, "list[Any]"], Any]


def moved(st: list[Any]) -> Any:
    """The place the evaluation has moved to, or None."""
    return st[3] if len(st) > 3 else None


def move(st: list[Any], s: Any, tg: Any, here: tuple[Any, Any]) -> None:
    """Record that the evaluation now stands at (s, tg); ``here``: where it stood."""
    p = st[3] if len(st) > 3 else None
    home = (p[2], p[3]) if p is not None else here
    if len(st) > 3:
        st[3] = (s, tg, home[0], home[1])
    else:
        st.append((s, tg, home[0], home[1]))


def restore(st: list[Any], saved: Any) -> None:
    if len(st) > 3:
        st[3] = saved


def home(st: list[Any], s: Any, tg: Any) -> tuple[Any, Any]:
    """Where the expression being evaluated is written (its records belong there)."""
    p = st[3] if len(st) > 3 else None
    return (s, tg) if p is None else (p[2], p[3])


def here(f: Fn) -> Fn:
    """``f`` evaluated where the evaluation stands now: a part of an expression
    evaluated after a part that may have moved it."""
    def at_place(s: Any, tg: Any, st: list[Any]) -> Any:
        if len(st) > 3:
            p = st[3]
            if p is not None:
                return f(p[0], p[1], st)
        return f(s, tg, st)
    return at_place


def contained(f: Fn) -> Fn:
    """``f`` with any move it makes undone when it returns (a selection ``x.y``: the
    library restores its place after each attribute reference)."""
    def restoring(s: Any, tg: Any, st: list[Any]) -> Any:
        saved = st[3] if len(st) > 3 else None
        try:
            return f(s, tg, st)
        finally:
            if len(st) > 3:
                st[3] = saved
    return restoring


def frame(f: Fn) -> Fn:
    """``f`` as an evaluation of its own (an attribute's expression): it starts where
    it is called, whatever moved before, and what it moves stays inside it."""
    def framed(s: Any, tg: Any, st: list[Any]) -> Any:
        if len(st) > 3:
            saved = st[3]
            st[3] = None
        else:
            saved = None
            st.append(None)
        try:
            return f(s, tg, st)
        finally:
            st[3] = saved
    return framed
