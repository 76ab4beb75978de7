"""The owner's keystroke reaches the policy at once through the input watch, and is
remembered more finely than a terminal's atime (which the kernel moves at most every
8 s)."""

from __future__ import annotations

from condorpy.clock import ManualClock
from condorpy.config import Config
from condorpy.machine.input_watch import Seen
from condorpy.machine.probe import Activity
from condorpy.machine.virtual import VIRTUAL_DETECTED, virtual_inventory
from condorpy.startd.core import Core
from condorpy.startd.metrics import Metrics
from condorpy.startd.policy_timers import PolicyTimers

CONFIG = ("NUM_CPUS = 1\nMEMORY = 1024\nRUNBENCHMARKS = False\n"
          "START = KeyboardIdle > 60\nSUSPEND = KeyboardIdle < 60\nPREEMPT = False\n"
          "KILL = False\nCONDORPY_METRICS_ADDRESS = 127.0.0.1:0\n"
          "SLOTS_CONNECTED_TO_KEYBOARD = 1\nSLOTS_CONNECTED_TO_CONSOLE = 1\n")


class FakeInput:
    def __init__(self) -> None:
        self.pending = Seen()
        self.refreshed = 0

    def drain(self) -> Seen:
        seen, self.pending = self.pending, Seen()
        return seen

    def refresh(self) -> None:
        self.refreshed += 1


def _timers(stale_idle: int = 3600) -> tuple[PolicyTimers, FakeInput, ManualClock, list[int]]:
    cfg = Config.from_text(CONFIG, source="<test>", env={}, detected=VIRTUAL_DETECTED)
    clock = ManualClock(10_000.0)
    eng = Core(cfg, virtual_inventory(cfg)).engine(clock)
    measured: list[int] = []

    def measure() -> Activity:
        measured.append(1)
        return Activity(0.0, stale_idle, None)      # the tty's atime has not moved

    owner = FakeInput()
    timers = PolicyTimers(eng, clock, Metrics.from_config(cfg, eng, clock), lambda o: None,
                          measure=measure, publish=lambda: None, cycled=lambda: None,
                          owner_input=owner)
    return timers, owner, clock, measured


def test_a_keystroke_is_measured_at_once_and_the_cycle_is_due_now() -> None:
    timers, owner, clock, measured = _timers()
    timers.probe()
    timers.cycle()
    assert timers.last_keyboard == 3600 and owner.refreshed == 1
    clock.advance(0.3)                 # between two probes
    owner.pending = Seen(keyboard=True)
    timers.on_input(None, 0)
    assert len(measured) == 2 and timers.last_keyboard == 0
    assert timers.next_cycle <= clock.monotonic()           # the policy follows at once
    timers.cycle()
    slot = timers.engine.slots["slot1"]
    assert slot.ad.evaluate("KeyboardIdle") == 0
    assert slot.ad.evaluate("START") is False               # the owner is back


def test_keystrokes_while_the_owner_is_known_present_cost_no_measurement() -> None:
    timers, owner, clock, measured = _timers()
    timers.probe()
    owner.pending = Seen(keyboard=True)
    timers.on_input(None, 0)
    count = len(measured)
    for _ in range(5):
        clock.advance(0.1)
        owner.pending = Seen(keyboard=True)
        timers.on_input(None, 0)
    assert len(measured) == count


def test_the_last_keystroke_counts_while_the_atime_lags() -> None:
    timers, owner, clock, _ = _timers(stale_idle=3600)
    owner.pending = Seen(keyboard=True, console=True)
    timers.on_input(None, 0)
    clock.advance(5.0)
    timers.probe()                     # the tty's atime still says an hour ago
    assert timers.last_keyboard == 5
    clock.advance(100.0)
    timers.probe()
    assert timers.last_keyboard == 105


def test_nothing_watched_is_the_polling_of_before() -> None:
    timers, owner, clock, measured = _timers()
    timers.owner_input = None
    timers.on_input(None, 0)
    assert measured == [] and timers.keyboard_input is None
