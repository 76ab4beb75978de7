"""What the startd's metrics carry between the loop and a scrape: the frozen records
of one snapshot. Free of prometheus-client: the families, and the collector the
private registry asks at every scrape, are :mod:`.metric_families`'s, imported by the
first scrape.
"""

from __future__ import annotations

from dataclasses import dataclass

from condorpy.machine.pressure import Pressure
from condorpy.startd.metric_sources import PoolFigures


@dataclass(frozen=True)
class HistogramView:
    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]     # per bound, then +Inf (= the count)
    sum: float

    def buckets(self) -> list[tuple[str, float]]:
        out = [(_le(b), float(c)) for b, c in zip(self.bounds, self.cumulative)]
        out.append(("+Inf", float(self.cumulative[-1])))
        return out


def _le(bound: float) -> str:
    return repr(float(bound))


@dataclass(frozen=True)
class StatsView:
    """The counters at one moment (what a snapshot carries)."""

    jobs_started: int
    exits: tuple[tuple[str, int], ...]
    holds: tuple[tuple[str, int], ...]
    evictions: tuple[tuple[str, int], ...]
    adoptions: tuple[tuple[str, int], ...]
    hooks: tuple[tuple[str, int, int], ...]     # (hook, runs, failures)
    cron: tuple[tuple[str, int, int], ...]      # (job, runs, failures)
    cycle: HistogramView
    latency: HistogramView
    last_cycle: float                           # wall time of the last policy cycle
    cycle_failures: int = 0
    reconfigs: tuple[tuple[str, int], ...] = ()
    last_reconfig_success: float = 0.0          # wall time; the start counts as one
    last_reconfig_ok: bool = True


# ------------------------------------------------------------------ the snapshot
@dataclass(frozen=True)
class Snapshot:
    """Everything a scrape reports, as the loop saw it at ``at`` (wall time)."""

    at: float
    slots: tuple[tuple[tuple[str, str, str], int], ...]      # (state, activity, type)
    resources: tuple[tuple[str, str, float], ...]            # (resource, state, amount)
    machine: tuple[tuple[str, float], ...]                   # (resource, total)
    keyboard_idle: float | None
    console_idle: float | None
    load_average: float
    jobs_load_average: float
    drain_how: str | None
    drain_started: float
    shutting_down: bool
    badput: float
    unclaimed: float
    preempting_since: float
    starters: int
    stats: StatsView
    queue: tuple[tuple[str, int], ...] = ()          # (JobStatus name, jobs)
    cgroup: tuple[tuple[str, bool], ...] = ()        # (controller, enforced)
    policy_errors: tuple[tuple[str, int], ...] = ()  # (expression, ERROR results)
    pool: PoolFigures | None = None                  # None: not in a pool
    machine_pressure: Pressure = Pressure()          # empty: no PSI
    job_pressure: tuple[Pressure, ...] = ()          # one per running job that has it
