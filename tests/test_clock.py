"""The daemon's wall clock never goes back: a host clock stepped back holds still."""

from __future__ import annotations

from condorpy.clock import SteadyWallClock


class Stepped:
    """A host clock an administrator sets back by an hour."""

    def __init__(self) -> None:
        self.wall = 1_000_000.0
        self.mono = 50.0

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def utc_offset(self, epoch: float) -> int:
        return 3600


def test_wall_time_holds_still_while_the_host_clock_is_behind() -> None:
    host = Stepped()
    clock = SteadyWallClock(host)
    assert clock.time() == 1_000_000.0
    host.wall, host.mono = 996_400.0, 51.0        # set back an hour
    assert clock.time() == 1_000_000.0 and clock.monotonic() == 51.0
    host.wall = 1_000_010.0                       # caught up and beyond
    assert clock.time() == 1_000_010.0
    assert clock.utc_offset(0.0) == 3600


def test_a_daemon_engine_survives_a_step_back() -> None:
    from tests.policy.engines import core_from_text
    host = Stepped()
    clock = SteadyWallClock(host)
    engine = core_from_text("NUM_SLOTS = 1\n").engine(clock)
    engine.cycle(clock.time())
    host.wall -= 3600
    engine.cycle(clock.time())                    # no "clock went backwards"
    host.wall += 7200
    engine.cycle(clock.time())
    assert engine.now == host.wall
