"""A running job's pressure stall information in its slot's ad (``JobPressure*``) and in
the metrics, from the starter's usage reports (every CONDORPY_USAGE_INTERVAL, the rate
the job's load is measured at); undefined again once the job is gone."""

from __future__ import annotations

from typing import Callable

from condorpy.errors import PolicyError
from condorpy.machine.pressure import JOB_PREFIX, Pressure
from condorpy.policy.engine import PolicyEngine


class JobPressure:
    def __init__(self, engine: Callable[[], PolicyEngine], clock: Callable[[], float]) -> None:
        self._engine, self._clock = engine, clock
        self._seen: dict[str, frozenset[str]] = {}   # by slot: the attributes its ad holds
        # the metrics' side (Metrics.job_pressure), wired by the daemon
        self.export: Callable[[str, Pressure | None], None] = lambda slot, p: None

    def report(self, slot: str, pressure: Pressure | None) -> None:
        if pressure is None:
            return
        new = pressure.attributes(JOB_PREFIX)
        # a line the kernel no longer gives goes undefined rather than stale
        attrs: dict[str, object] = dict.fromkeys(self._seen.get(slot, frozenset()) - set(new))
        attrs.update(new)
        self._set(slot, attrs)
        self._seen[slot] = frozenset(new)
        self.export(slot, pressure)

    def ended(self, slot: str) -> None:
        """The slot's job is gone: its readings are undefined, not stale."""
        self.export(slot, None)
        held = self._seen.pop(slot, None)
        if held:
            self._set(slot, dict.fromkeys(held))

    def _set(self, slot: str, attrs: dict[str, object]) -> None:
        try:
            self._engine().set(self._clock(), attrs, slot=slot)
        except PolicyError:
            pass            # the d-slot went with its job
