"""The daemon's two policy timers: the owner-activity probe (every second) and the
policy cycle (every ``poll_interval()``; at once when the owner comes back or a part
asks for it)."""

from __future__ import annotations

import logging
from typing import Any, Callable, Protocol

from condorpy.clock import Clock
from condorpy.errors import CondorpyError
from condorpy.machine.input_watch import Seen
from condorpy.machine.pressure import MACHINE_PREFIX
from condorpy.machine.probe import Activity
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.startd.metrics import Metrics

log = logging.getLogger("condorpy.startd")

ACTIVITY_PROBE_S = 1.0
WATCH_REFRESH_S = 60.0      # the input watch's device set listed again at least this often


class OwnerInput(Protocol):
    """The owner's keystrokes as they happen (condorpy.machine.input_watch.OwnerWatch)."""

    def drain(self) -> Seen: ...

    def refresh(self) -> None: ...


class PolicyTimers:
    def __init__(self, engine: PolicyEngine, clock: Clock, metrics: Metrics,
                 apply: Callable[[list[Output]], None], *,
                 measure: Callable[[], Activity], publish: Callable[[], None],
                 cycled: Callable[[], None], owner_input: OwnerInput | None = None) -> None:
        self.engine = engine
        self.clock = clock
        self.metrics = metrics
        self.apply = apply
        self.measure = measure          # the owner's activity, from the host
        self.publish = publish          # cron's attributes into the slot ads first
        self.cycled = cycled            # after each cycle (the matchmaker's turn)
        self.next_cycle = 0.0
        self.last_cycle = 0.0
        self.next_probe = 0.0
        self.last_keyboard: Any = None
        self.cycle_times: list[float] = []      # seconds per policy cycle, the last 100
        self.owner_input = owner_input
        # wall-clock times of the last keystroke the watch saw (finer than a tty's atime,
        # which the kernel moves at most every 8 s)
        self.keyboard_input: float | None = None
        self.console_input: float | None = None
        self.next_refresh = 0.0

    def on_input(self, handle: object, mask: int) -> None:
        """The owner used a watched device: measure at once, and the policy follows in
        the same pass when that made KeyboardIdle fall (SUSPEND, PREEMPT...)."""
        if self.owner_input is None:
            return
        seen = self.owner_input.drain()
        if not seen.keyboard:
            return
        now = self.clock.time()
        self.keyboard_input = now
        if seen.console:
            self.console_input = now
        if self.last_keyboard != 0:     # already 0: the owner is known to be there
            self.probe()

    def wake(self) -> None:
        """Evaluate the policy at once, not at the next POLLING_INTERVAL."""
        self.next_cycle = self.clock.monotonic()

    def next_deadline(self) -> float | None:
        return min(self.next_cycle, self.next_probe)

    def probe_tick(self, now: float) -> None:
        if now >= self.next_probe:
            self.probe()

    def cycle_tick(self, now: float) -> None:
        # A claim made since the last cycle shortens the interval at once
        # (UPDATE_INTERVAL while unclaimed, POLLING_INTERVAL while claimed).
        self.next_cycle = min(self.next_cycle,
                              self.last_cycle + max(1, self.engine.poll_interval()))
        if now >= self.next_cycle:
            self.cycle()

    def probe(self) -> None:
        now_mono = self.clock.monotonic()
        self.next_probe = now_mono + ACTIVITY_PROBE_S
        try:
            act = self.measure()
        except (OSError, CondorpyError) as exc:
            log.warning("cannot measure owner activity: %s", exc)
            return
        now = self.clock.time()
        if self.owner_input is not None and now_mono >= self.next_refresh:
            self.next_refresh = now_mono + WATCH_REFRESH_S
            self.owner_input.refresh()
        keyboard = _since(act.keyboard_idle, self.keyboard_input, now)
        console = act.console_idle if act.console_idle is not None else act.keyboard_idle
        console = _since(console, self.console_input, now)
        readings: dict[str, Any] = {"KeyboardIdle": keyboard, "ConsoleIdle": console,
                                    "LoadAvg": act.total_load_avg}
        # PSI at the load's rate: a value that did not move keeps its literal, so the
        # incremental cycle wakes only the slots whose policy reads one that moved
        readings.update(act.pressure.attributes(MACHINE_PREFIX))
        self.engine.set(now, readings)
        self.metrics.owner_activity(keyboard, console, act.total_load_avg, act.pressure)
        # The owner came back: evaluate at once, not at the next POLLING_INTERVAL.
        if self.last_keyboard is not None and keyboard < self.last_keyboard:
            self.next_cycle = now_mono
        self.last_keyboard = keyboard

    def cycle(self) -> None:
        t0 = self.clock.monotonic()
        self.publish()
        try:
            outputs = self.engine.cycle(self.clock.time())
        except Exception:
            self.metrics.stats.policy_cycle_failed()
            raise
        self.cycle_times.append(self.clock.monotonic() - t0)
        self.metrics.stats.policy_cycle(self.cycle_times[-1], self.clock.time())
        del self.cycle_times[:-100]
        self.apply(outputs)
        self.last_cycle = t0
        self.next_cycle = t0 + max(1, self.engine.poll_interval())
        self.cycled()


def _since(idle: int, last_input: float | None, now: float) -> int:
    return idle if last_input is None else min(idle, max(0, int(now - last_input)))
