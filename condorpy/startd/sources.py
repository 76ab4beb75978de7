"""The loop's sources (:class:`condorpy.startd.loop.Source`) over the daemon's parts:
the starters' sockets (also the resource manager's starter channel), signals, and a
:class:`Ticker` that makes any part with a ``tick`` and a deadline a source."""

from __future__ import annotations

import logging
import os
import selectors
import signal
from dataclasses import dataclass
from typing import Any, Callable

from condorpy.errors import CondorpyError
from condorpy.startd.starter_handle import Origin
from condorpy.startd.starters import StarterLink

log = logging.getLogger("condorpy.startd")

Deliver = Callable[[Origin, list[dict[str, Any]], bool], None]


class StarterLinks:
    """The starter channel port over each starter's control socket (tag ``starter``):
    what a starter sends goes to ``deliver`` (the resource manager)."""

    def __init__(self, selector: selectors.BaseSelector) -> None:
        self.selector = selector
        self.links: dict[Origin, StarterLink] = {}
        self.deliver: Deliver = lambda origin, msgs, closed: None

    def connect(self, origin: Origin, socket_path: str) -> bool:
        link = StarterLink(socket_path)
        try:
            ok = link.connect()
        except CondorpyError as exc:
            log.warning("job %s: %s", origin, exc)
            return False
        if ok:
            self.links[origin] = link
            self.selector.register(link.fileno(), selectors.EVENT_READ, ("starter", origin))
        return ok

    def send(self, origin: Origin, command: str) -> bool:
        link = self.links.get(origin)
        return link is not None and link.send(command)

    def close(self, origin: Origin) -> None:
        link = self.links.pop(origin, None)
        if link is None:
            return
        try:
            self.selector.unregister(link.fileno())
        except (KeyError, ValueError):
            pass
        link.close()

    def on_ready(self, handle: object, mask: int) -> None:
        link = self.links.get(handle)       # type: ignore[call-overload]
        if link is None:
            return
        self.deliver(handle, link.receive(), link.closed)   # type: ignore[arg-type]

    def next_deadline(self) -> float | None:
        return None

    def tick(self, now: float) -> None:
        pass


class Signals:
    """SIGTERM/SIGINT (stop), SIGHUP (reconfig), SIGCHLD (reap hook children), through
    a self-pipe (tag ``signal``)."""

    def __init__(self, selector: selectors.BaseSelector,
                 handlers: dict[int, Callable[[int], None]]) -> None:
        self.handlers = handlers
        self.pending: list[int] = []
        self.read_fd, self.write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.selector = selector

    def install(self) -> None:
        for sig in self.handlers:
            signal.signal(sig, self._on_signal)
        signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        self.selector.register(self.read_fd, selectors.EVENT_READ, ("signal", None))

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.pending.append(signum)

    def on_ready(self, handle: object, mask: int) -> None:
        try:
            os.read(self.read_fd, 512)
        except BlockingIOError:
            pass

    def next_deadline(self) -> float | None:
        return None

    def tick(self, now: float) -> None:
        while self.pending:
            sig = self.pending.pop(0)
            self.handlers[sig](sig)


@dataclass
class Ticker:
    """A source made of callables: ``tick`` once per pass, ``deadline`` for the wait,
    ``ready`` for its descriptors' events."""

    tick_fn: Callable[[float], None]
    deadline: Callable[[], float | None] = lambda: None
    ready: Callable[[object, int], None] | None = None

    def on_ready(self, handle: object, mask: int) -> None:
        if self.ready is not None:
            self.ready(handle, mask)

    def next_deadline(self) -> float | None:
        return self.deadline()

    def tick(self, now: float) -> None:
        self.tick_fn(now)
