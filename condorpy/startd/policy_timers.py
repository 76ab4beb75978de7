"""The daemon's two policy timers: the owner-activity probe (every second) and the
policy cycle (every ``poll_interval()``; at once when the owner comes back or a part
asks for it)."""

from __future__ import annotations

import logging
from typing import Any, Callable

from condorpy.clock import Clock
from condorpy.errors import CondorpyError
from condorpy.machine.probe import Activity
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.startd.metrics import Metrics

log = logging.getLogger("condorpy.startd")

ACTIVITY_PROBE_S = 1.0


class PolicyTimers:
    def __init__(self, engine: PolicyEngine, clock: Clock, metrics: Metrics,
                 apply: Callable[[list[Output]], None], *,
                 measure: Callable[[], Activity], publish: Callable[[], None],
                 cycled: Callable[[], None]) -> None:
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
        console = act.console_idle if act.console_idle is not None else act.keyboard_idle
        now = self.clock.time()
        self.engine.set(now, {"KeyboardIdle": act.keyboard_idle, "ConsoleIdle": console,
                              "LoadAvg": act.total_load_avg})
        self.metrics.owner_activity(act.keyboard_idle, console, act.total_load_avg)
        # The owner came back: evaluate at once, not at the next POLLING_INTERVAL.
        if self.last_keyboard is not None and act.keyboard_idle < self.last_keyboard:
            self.next_cycle = now_mono
        self.last_keyboard = act.keyboard_idle

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
