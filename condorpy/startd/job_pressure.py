"""A running job's pressure stall information in its slot's ad (``JobPressure*``) and in
the metrics, from the starter's usage reports (every CONDORPY_USAGE_INTERVAL, the rate
the job's load is measured at); undefined again once the job is gone."""

from __future__ import annotations

from typing import Callable

from condorpy.errors import PolicyError
from condorpy.machine.pressure import JOB_PREFIX, Pressure, attribute_names
from condorpy.policy.engine import PolicyEngine

_CLEARED = dict.fromkeys(attribute_names(JOB_PREFIX))


class JobPressure:
    def __init__(self, engine: Callable[[], PolicyEngine], clock: Callable[[], float]) -> None:
        self._engine, self._clock = engine, clock
        self._seen: set[str] = set()          # slots whose ad holds a job's readings
        # the metrics' side (Metrics.job_pressure), wired by the daemon
        self.export: Callable[[str, Pressure | None], None] = lambda slot, p: None

    def report(self, slot: str, pressure: Pressure | None) -> None:
        if pressure is None:
            return
        attrs: dict[str, object] = dict(_CLEARED) if slot in self._seen else {}
        attrs.update(pressure.attributes(JOB_PREFIX))
        self._set(slot, attrs)
        self._seen.add(slot)
        self.export(slot, pressure)

    def ended(self, slot: str) -> None:
        """The slot's job is gone: its readings are undefined, not stale."""
        self.export(slot, None)
        if slot in self._seen:
            self._seen.discard(slot)
            self._set(slot, dict(_CLEARED))

    def _set(self, slot: str, attrs: dict[str, object]) -> None:
        try:
            self._engine().set(self._clock(), attrs, slot=slot)
        except PolicyError:
            pass            # the d-slot went with its job
