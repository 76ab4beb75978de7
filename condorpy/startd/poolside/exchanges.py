"""The open CEDAR exchanges of one kind (commands the pool sends here, messages this
daemon sends to schedds), driven by the event loop, each with what follows once it is
over."""

from __future__ import annotations

import selectors
from collections.abc import Callable, Iterator

from condorpy.clock import Clock
from condorpy.pool.connection import AsyncExchange

EXCHANGE_TIMEOUT = 20.0      # seconds for one exchange's next step (SEC_TCP_SESSION_TIMEOUT)


def unregister(sel: selectors.BaseSelector, fileobj: object) -> None:
    try:
        sel.unregister(fileobj)    # type: ignore[arg-type]
    except (KeyError, ValueError):
        pass


def moved_on(sel: selectors.BaseSelector, ex: AsyncExchange) -> bool:
    """Whether ``ex`` gave up one of its peer's addresses for the next: its new socket
    then takes the old one's place in ``sel``."""
    refused = ex.take_replaced()
    if refused is None:
        return False
    unregister(sel, refused)
    refused.close()
    sel.register(ex.sock, ex.interest(), ("pool", ex))
    return True


class Exchanges:
    def __init__(self, sel: selectors.BaseSelector, clock: Clock) -> None:
        self.sel = sel
        self.clock = clock
        self._open: dict[AsyncExchange, Callable[[AsyncExchange], None] | None] = {}

    def add(self, ex: AsyncExchange,
            done: Callable[[AsyncExchange], None] | None = None) -> None:
        self._open[ex] = done
        if ex.done:
            self.close(ex)
        else:
            self.sel.register(ex.sock, ex.interest(), ("pool", ex))

    def __contains__(self, ex: object) -> bool:
        return ex in self._open

    def __iter__(self) -> Iterator[AsyncExchange]:
        return iter(list(self._open))

    def handle(self, ex: AsyncExchange, mask: int) -> None:
        ex.handle(mask)
        if moved_on(self.sel, ex):
            return
        if ex.done:
            self.close(ex)
        else:
            self.sel.modify(ex.sock, ex.interest(), ("pool", ex))

    def close(self, ex: AsyncExchange) -> None:
        """``ex`` is over (done, failed, overdue or given up): what follows it runs."""
        if ex not in self._open:
            return
        done = self._open.pop(ex)
        unregister(self.sel, ex.sock)
        ex.close()
        if done is not None:
            done(ex)

    def wake(self, ex: AsyncExchange | None, timeout: float = EXCHANGE_TIMEOUT) -> None:
        """``ex`` waits for news (an Await) that has come: it goes on."""
        if ex is None or ex not in self._open or ex.awaiting is None:
            return
        ex.resume(self.clock.monotonic() + timeout)
        if ex.done:
            self.close(ex)
        else:
            self.sel.modify(ex.sock, ex.interest(), ("pool", ex))

    def tick(self, now: float) -> None:
        for ex in [e for e in self._open if e.overdue(now)]:
            self.close(ex)

    def due(self) -> float:
        return min((ex.deadline for ex in self._open), default=float("inf"))

    def abandon(self) -> None:
        """Close every exchange without what would follow it (the daemon stops)."""
        for ex in list(self._open):
            self._open.pop(ex)
            ex.close()
