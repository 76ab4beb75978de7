"""The daemon's event loop: one thread, one selector, and sources behind one small
Protocol.

A source is woken two ways: :meth:`Source.on_ready` when a descriptor it registered is
ready (registrations carry ``(tag, handle)`` as their data, and the loop hands the
handle to the source that answers for the tag), and :meth:`Source.tick` once per pass
(it does what is due by its own clock); :meth:`Source.next_deadline` says how long the
loop may sleep for it. A failure inside one source is logged and the loop carries on:
a bug must not take the machine's jobs down with it.
"""

from __future__ import annotations

import logging
import selectors
from typing import Callable, Protocol

from condorpy.clock import Clock
from condorpy.errors import CondorpyError

log = logging.getLogger("condorpy.startd")


class Source(Protocol):
    def on_ready(self, handle: object, mask: int) -> None: ...

    def next_deadline(self) -> float | None: ...

    def tick(self, now: float) -> None: ...


def guard(what: str, work: Callable[[], None]) -> None:
    try:
        work()
    except CondorpyError as exc:
        log.error("%s: %s", what, exc)
    except Exception:   # a bug must not take the machine's jobs down with it
        log.exception("%s: internal error", what)


class EventLoop:
    def __init__(self, clock: Clock, selector: selectors.BaseSelector | None = None) -> None:
        self.clock = clock
        self.selector = selector or selectors.DefaultSelector()
        self._sources: list[tuple[str, Source]] = []
        self._routes: dict[str, tuple[str, Source]] = {}

    def add(self, name: str, source: Source, *tags: str) -> None:
        """Add ``source`` (ticked in the order added); ``tags``: the tags its
        descriptors' registrations carry."""
        self._sources.append((name, source))
        for tag in tags:
            self._routes[tag] = (name, source)

    def timeout(self) -> float:
        """How long the next wait may last."""
        now = self.clock.monotonic()
        due: float | None = None
        for _name, source in self._sources:
            t = source.next_deadline()
            if t is not None and (due is None or t < due):
                due = t
        return 1.0 if due is None else max(0.0, due - now)

    def step(self, timeout: float) -> None:
        """One pass: wait for I/O up to ``timeout``, hand what is ready to its source,
        then tick every source."""
        for key, mask in self.selector.select(timeout):
            tag, handle = key.data
            route = self._routes.get(tag)
            if route is None:
                continue
            name, source = route
            guard(name, lambda: source.on_ready(handle, mask))
        for name, source in self._sources:
            guard(name, lambda: source.tick(self.clock.monotonic()))

    def close(self) -> None:
        self.selector.close()
