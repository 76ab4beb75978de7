"""The one clock: wall time, monotonic time and the local zone, passed to whatever asks.

Nothing in condorpy reads the host's clock except :class:`SystemClock`. The daemon hands
one to everything; `policy simulate` and the tests hand a :class:`ManualClock`, so a
policy, a ClassAd ``time()`` or a timer gives the same answer on any host at any hour.
"""

from __future__ import annotations

import time as _time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch (what ClassAd ``time()`` and ads show)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for timers and durations)."""
        ...

    def utc_offset(self, epoch: float) -> int:
        """The local zone's offset east of UTC at ``epoch``, in seconds."""
        ...


class SystemClock:
    """The host's clocks and the process's time zone (``TZ``)."""

    def time(self) -> float:
        return _time.time()

    def monotonic(self) -> float:
        return _time.monotonic()

    def utc_offset(self, epoch: float) -> int:
        return _time.localtime(epoch).tm_gmtoff


class SteadyWallClock:
    """Another clock whose wall time never goes back. When the host's clock is stepped
    back (an NTP correction, an administrator's ``date``), the wall time holds still
    until the host's catches up: the policy engine refuses a time earlier than one it
    has seen, and a slot's state times must not run backwards. Timers and durations use
    the monotonic clock, which is not affected."""

    def __init__(self, inner: Clock) -> None:
        self._inner = inner
        self._last = float("-inf")

    def time(self) -> float:
        now = self._inner.time()
        if now < self._last:
            return self._last
        self._last = now
        return now

    def monotonic(self) -> float:
        return self._inner.monotonic()

    def utc_offset(self, epoch: float) -> int:
        return self._inner.utc_offset(epoch)


class ManualClock:
    """A clock that moves only when told: for simulations and tests.

    Both readings move together; the zone is fixed (UTC unless given), so a
    timeline's ClockMin and ClockDay do not depend on where it runs.
    """

    def __init__(self, start: float = 0.0, *, offset: int = 0) -> None:
        self._now = float(start)
        self._mono = 0.0
        self._offset = offset

    def time(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def utc_offset(self, epoch: float) -> int:
        return self._offset

    def set(self, now: float) -> None:
        """Move to ``now``; refuses to go back, as no real clock the daemon uses does."""
        if now < self._now:
            raise ValueError(f"a clock cannot go back: {now} < {self._now}")
        self._mono += now - self._now
        self._now = float(now)

    def advance(self, seconds: float) -> None:
        self.set(self._now + seconds)
