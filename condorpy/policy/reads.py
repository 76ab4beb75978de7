"""What one policy evaluation read: the attribute names it looked up in MY and in
TARGET, and whether it asked the clock; and the ads written since.

The ClassAd evaluator looks every attribute up in an ad's two maps (``consts`` for the
constant ones, ``exprs`` for all of them). While a step is recorded, each ad's maps are
swapped (:meth:`~condorpy.classad.scope.Scope.adopt`) for copies that note each name
looked up, so the record follows the path the evaluation actually took: a branch that
short-circuits is not read. Anything that walks a map whole (iterating, measuring,
copying it) cannot be followed name by name, and marks the log *opaque*: such a step
is never remembered.

Between cycles, an ad whose step is remembered has a :class:`Watched` ``exprs`` map:
every change to a ClassAd writes that map (constants included, beside ``consts``), so
a write there to a name the step read wakes whoever watches the ad.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Protocol

from condorpy.classad.scope import Scope


class ReadLog:
    """Names looked up in MY (``my``) and TARGET (``target``), in order of first read."""

    __slots__ = ("my", "target", "opaque")

    def __init__(self) -> None:
        self.my: dict[str, None] = {}
        self.target: dict[str, None] = {}
        self.opaque = False


class _Whole(dict[str, Any]):
    """A map copy on which walking the whole map marks the log opaque."""

    __slots__ = ("_log",)

    def __init__(self, src: dict[str, Any], log: ReadLog) -> None:
        super().__init__(src)
        self._log = log

    def __iter__(self) -> Iterator[str]:
        self._log.opaque = True
        return super().__iter__()

    def __len__(self) -> int:
        self._log.opaque = True
        return super().__len__()

    def keys(self) -> Any:
        self._log.opaque = True
        return super().keys()

    def items(self) -> Any:
        self._log.opaque = True
        return super().items()

    def values(self) -> Any:
        self._log.opaque = True
        return super().values()

    def copy(self) -> dict[str, Any]:
        self._log.opaque = True
        return dict(super().items())

    def __setitem__(self, key: str, value: Any) -> None:
        self._log.opaque = True      # evaluation never writes; if it does, give up
        super().__setitem__(key, value)


class _Names(_Whole):
    """A copy of ``consts`` or ``exprs`` that notes each name looked up in it."""

    __slots__ = ("_names",)

    def __init__(self, src: dict[str, Any], log: ReadLog, names: dict[str, None]) -> None:
        super().__init__(src, log)
        self._names = names

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self._names[key] = None
        return dict.get(self, key, default)

    def __getitem__(self, key: str) -> Any:
        self._names[key] = None
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._names[key] = None
        return dict.__contains__(self, key)


class _Opaque(_Whole):
    """A copy of ``spelling``: no policy decision should read it; one that does is not
    followed."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self._log.opaque = True
        return dict.get(self, key, default)

    def __getitem__(self, key: str) -> Any:
        self._log.opaque = True
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        self._log.opaque = True
        return dict.__contains__(self, key)


class Recording:
    """Swaps the maps of MY and TARGET for noting copies; :meth:`close` puts the
    originals back (the ads themselves are never replaced, so identity holds)."""

    __slots__ = ("log", "_saved")

    def __init__(self, my: Scope, target: Scope) -> None:
        log = self.log = ReadLog()
        self._saved: list[tuple[Scope, dict[str, str], dict[str, Any], dict[str, Any]]] = []
        for ad, names in ((my, log.my), (target, log.target)):
            self._saved.append((ad, ad.spelling, ad.exprs, ad.consts))
            ad.adopt(_Opaque(ad.spelling, log), _Names(ad.exprs, log, names),
                     _Names(ad.consts, log, names))

    def close(self) -> None:
        for ad, spelling, exprs, consts in reversed(self._saved):
            ad.adopt(spelling, exprs, consts)
        self._saved.clear()


class Watcher(Protocol):
    asleep: bool
    cause: Any


# What woke a watcher when more than one write (or anything but a batch) did.
MIXED: Any = object()


class Watched(dict[str, Any]):
    """An ad's ``exprs`` map that wakes its watcher on a write to one of the names it
    watches (reads stay the plain dictionary's)."""

    __slots__ = ("watcher", "names")

    def __init__(self, src: dict[str, Any]) -> None:
        super().__init__(src)
        self.watcher: Watcher | None = None
        self.names: frozenset[str] = frozenset()

    def _wake(self, cause: Any = MIXED) -> None:
        """Wake the watcher; ``cause``: the one batch map written into this ad since
        it slept (the same object for every ad that got it), else MIXED."""
        w = self.watcher
        if w is not None:
            if w.asleep:
                w.asleep = False
                w.cause = cause
            elif w.cause is not cause:
                w.cause = MIXED

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self.names:
            self._wake()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        if key in self.names:
            self._wake()
        super().__delitem__(key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        if kwargs or len(args) != 1 or type(args[0]) is not dict:
            self._wake()
        elif not self.names.isdisjoint(args[0]):
            self._wake(args[0])
        super().update(*args, **kwargs)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self.names:
            self._wake()
        return super().pop(key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key in self.names:
            self._wake()
        return super().setdefault(key, default)

    def popitem(self) -> tuple[str, Any]:
        self._wake()
        return super().popitem()

    def clear(self) -> None:
        self._wake()
        super().clear()

    def __ior__(self, other: Any) -> "Watched":  # type: ignore[misc, override]
        self._wake()
        super().__ior__(other)
        return self

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))      # a copy is a plain map, watching nothing


def watch(ad: Scope, watcher: Watcher, names: frozenset[str]) -> None:
    """Wake ``watcher`` on the next write to one of ``names`` in ``ad``."""
    exprs = ad.exprs
    if type(exprs) is not Watched:
        exprs = Watched(exprs)
        ad.adopt(ad.spelling, exprs, ad.consts)
    exprs.watcher = watcher
    exprs.names = names


class ClockReads:
    """The engine's clock as the ClassAd library's ``time()`` reads it, noting reads."""

    __slots__ = ("_source", "read")

    def __init__(self, source: Callable[[], float]) -> None:
        self._source = source
        self.read = False

    def __call__(self) -> float:
        self.read = True
        return self._source()
