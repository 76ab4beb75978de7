"""The exposition side of the startd's metrics: the latest snapshot
(:mod:`.metric_records`) as fresh metric families, built at every scrape on
prometheus-client's thread. Imported only when a scrape comes: prometheus-client
brings the standard library's HTTP, e-mail and TLS modules with it, about 12 MB that a
daemon nobody scrapes has no use for.

Names follow Prometheus's conventions: the ``condorpy_`` prefix, base units (seconds,
bytes), ``_total`` only on counters, labels from small fixed sets and never a job, a
user or a d-slot name.
"""

from __future__ import annotations

import platform
from typing import Callable, Iterable, Iterator

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily, InfoMetricFamily, Metric)

from condorpy import __version__
from condorpy.policy.states import State
from condorpy.slots.ads import HTCONDOR_VERSION
from condorpy.startd.metric_records import Snapshot

# Resource name in a slot -> (metric, factor to base units). Memory is MiB, Disk KiB.
_BUILTIN_RESOURCES = {"Cpus": ("condorpy_cpus", 1.0),
                      "Memory": ("condorpy_memory_bytes", 1024.0 * 1024.0),
                      "Disk": ("condorpy_disk_bytes", 1024.0),
                      "GPUs": ("condorpy_gpus", 1.0)}
_STATES = tuple(s.value for s in State)


def _counter_by(name: str, doc: str, label: str,
                pairs: Iterable[tuple[str, float]]) -> CounterMetricFamily:
    fam = CounterMetricFamily(name, doc, labels=[label])
    for key, value in pairs:
        fam.add_metric([key], value)
    return fam


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _gauge_by(name: str, doc: str, label: str,
              pairs: Iterable[tuple[str, float]]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in pairs:
        fam.add_metric([key], value)
    return fam


_WINDOWS = (("10s", "avg10"), ("60s", "avg60"), ("300s", "avg300"))


def _pressure(snap: Snapshot) -> Iterator[Metric]:
    """PSI: the machine's stall counters and averages, and the highest averages among
    the running jobs (a job is never a label). Nothing without PSI."""
    mp = snap.machine_pressure
    if mp.lines:
        stalled = CounterMetricFamily(
            "condorpy_machine_pressure_stalled_seconds_total", "Seconds in which some "
            "(or, kind=full, all) non-idle tasks stalled on the resource "
            "(/proc/pressure, MachinePressure*Total).", labels=["resource", "kind"])
        ratio = GaugeMetricFamily(
            "condorpy_machine_pressure_ratio", "Share of time stalled on the resource "
            "over the window (MachinePressure*Avg*, divided by 100).",
            labels=["resource", "kind", "window"])
        for resource, kind, line in mp.lines:
            stalled.add_metric([resource, kind], line.total / 1e6)
            for window, field in _WINDOWS:
                ratio.add_metric([resource, kind, window], getattr(line, field) / 100.0)
        yield stalled
        yield ratio
    if snap.job_pressure:
        worst: dict[tuple[str, str, str], float] = {}
        for p in snap.job_pressure:
            for resource, kind, line in p.lines:
                for window, field in _WINDOWS:
                    key = (resource, kind, window)
                    worst[key] = max(worst.get(key, 0.0), getattr(line, field) / 100.0)
        fam = GaugeMetricFamily(
            "condorpy_job_pressure_max_ratio", "The highest share of time stalled on the "
            "resource over the window among running jobs (JobPressure*Avg*, divided by "
            "100).", labels=["resource", "kind", "window"])
        for key, value in sorted(worst.items()):
            fam.add_metric(list(key), value)
        yield fam


def families(snap: Snapshot) -> Iterator[Metric]:
    """The metric families of one snapshot."""
    st = snap.stats
    info = InfoMetricFamily("condorpy_build", "condorpy's version, the HTCondor version "
                            "it speaks for, and Python's.")
    info.add_metric([], {"version": __version__, "condor_version": HTCONDOR_VERSION,
                         "python_version": platform.python_version()})
    yield info
    yield _gauge("condorpy_snapshot_timestamp_seconds",
                 "When the event loop last published these figures (Unix time); it "
                 "does so at least every second while it runs.", snap.at)

    slots = GaugeMetricFamily("condorpy_slots", "Slots by state, activity and type "
                              "(d-slots counted, never named).",
                              labels=["state", "activity", "type"])
    for (state, activity, kind), n in snap.slots:
        slots.add_metric([state, activity, kind], n)
    yield slots

    fams: dict[str, GaugeMetricFamily] = {}
    custom = GaugeMetricFamily("condorpy_custom_resources", "Custom machine resources "
                               "held by slots in each state.", labels=["resource", "state"])
    for name, doc in (("condorpy_cpus", "CPUs"), ("condorpy_memory_bytes", "Memory"),
                      ("condorpy_disk_bytes", "Disk"), ("condorpy_gpus", "GPUs")):
        fams[name] = GaugeMetricFamily(name, f"{doc} held by slots in each state (a "
                                       "partitionable slot holds what is not carved).",
                                       labels=["state"])
    for res, state, amount in snap.resources:
        known = _BUILTIN_RESOURCES.get(res)
        if known is not None:
            fams[known[0]].add_metric([state], amount * known[1])
        else:
            custom.add_metric([res, state], amount)
    if not any(r == "GPUs" for r, _s, _a in snap.resources):
        for state in _STATES:
            fams["condorpy_gpus"].add_metric([state], 0.0)
    yield from fams.values()
    yield custom

    mfams: dict[str, GaugeMetricFamily] = {}
    mcustom = GaugeMetricFamily("condorpy_machine_custom_resources",
                                "Custom resources the machine offers in all.",
                                labels=["resource"])
    for name, doc in (("condorpy_machine_cpus", "CPUs"),
                      ("condorpy_machine_memory_bytes", "Memory"),
                      ("condorpy_machine_disk_bytes", "Disk (free under EXECUTE)"),
                      ("condorpy_machine_gpus", "GPUs")):
        mfams[name] = GaugeMetricFamily(name, f"{doc} the machine offers to slots in all.")
    for res, amount in snap.machine:
        known = _BUILTIN_RESOURCES.get(res)
        if known is not None:
            mfams["condorpy_machine" + known[0][len("condorpy"):]].add_metric(
                [], amount * known[1])
        else:
            mcustom.add_metric([res], amount)
    if not any(r == "GPUs" for r, _a in snap.machine):
        mfams["condorpy_machine_gpus"].add_metric([], 0.0)
    yield from mfams.values()
    yield mcustom

    if snap.keyboard_idle is not None:
        yield _gauge("condorpy_keyboard_idle_seconds", "Seconds since the keyboard or "
                     "mouse was last used (KeyboardIdle).", snap.keyboard_idle)
    if snap.console_idle is not None:
        yield _gauge("condorpy_console_idle_seconds", "Seconds since the console was last "
                     "used (ConsoleIdle).", snap.console_idle)
    yield _gauge("condorpy_load_average", "The machine's load average (TotalLoadAvg).",
                 snap.load_average)
    yield _gauge("condorpy_jobs_load_average", "The part of the load that the jobs make "
                 "(TotalCondorLoadAvg).", snap.jobs_load_average)
    yield from _pressure(snap)

    draining = GaugeMetricFamily("condorpy_draining", "1 while the machine drains, by "
                                 "how.", labels=["how"])
    for how in ("graceful", "quick", "fast"):
        draining.add_metric([how], 1.0 if snap.drain_how == how else 0.0)
    yield draining
    yield _gauge("condorpy_drain_start_timestamp_seconds", "When the current drain "
                 "started (Unix time); 0 when not draining.", snap.drain_started)
    yield _gauge("condorpy_shutting_down", "1 while the daemon shuts down (condorpy off).",
                 1.0 if snap.shutting_down else 0.0)
    yield CounterMetricFamily("condorpy_drain_badput_cpu_seconds_total", "CPU-seconds of "
                              "jobs evicted by draining (TotalMachineDrainingBadput).",
                              value=snap.badput)
    yield CounterMetricFamily("condorpy_drain_unclaimed_cpu_seconds_total", "CPU-seconds "
                              "left unused while draining "
                              "(TotalMachineDrainingUnclaimedTime).", value=snap.unclaimed)
    yield _gauge("condorpy_preempting_since_timestamp_seconds", "When the slot that has "
                 "been Preempting longest entered that state (Unix time); 0 when none is.",
                 snap.preempting_since)
    yield _gauge("condorpy_starters", "Starters the daemon follows (running jobs).",
                 snap.starters)

    yield CounterMetricFamily("condorpy_jobs_started_total", "Jobs started (starters "
                              "launched; a re-adopted starter is not counted again).",
                              value=st.jobs_started)
    yield _counter_by("condorpy_jobs_exited_total", "Job runs ended, by outcome.",
                      "outcome", st.exits)
    yield _counter_by("condorpy_job_holds_total", "Jobs put on hold, by HoldReasonCode.",
                      "code", st.holds)
    yield _counter_by("condorpy_evictions_total", "Running jobs sent back to the queue "
                      "because their slot was taken, by cause.", "cause", st.evictions)
    yield _counter_by("condorpy_starters_adopted_total", "Starters found at start-up, by "
                      "what became of them.", "result", st.adoptions)
    runs = CounterMetricFamily("condorpy_hook_runs_total", "Job hook runs, by hook type.",
                               labels=["hook"])
    fails = CounterMetricFamily("condorpy_hook_failures_total", "Job hook runs that "
                                "failed (exit status, timeout, bad output).",
                                labels=["hook"])
    for k, r, f in st.hooks:
        runs.add_metric([k], r)
        fails.add_metric([k], f)
    yield runs
    yield fails
    runs = CounterMetricFamily("condorpy_cron_runs_total", "Startd cron job runs.",
                               labels=["name"])
    fails = CounterMetricFamily("condorpy_cron_failures_total", "Startd cron job runs "
                                "that failed.", labels=["name"])
    for k, r, f in st.cron:
        runs.add_metric([k], r)
        fails.add_metric([k], f)
    yield runs
    yield fails
    yield HistogramMetricFamily("condorpy_policy_cycle_duration_seconds", "Time to "
                                "evaluate the policy of every slot once.",
                                buckets=st.cycle.buckets(), sum_value=st.cycle.sum)
    yield HistogramMetricFamily("condorpy_job_start_latency_seconds", "From a claim's "
                                "activation to its starter reporting the job's process.",
                                buckets=st.latency.buckets(), sum_value=st.latency.sum)
    yield _gauge("condorpy_last_policy_cycle_timestamp_seconds", "When the policy was "
                 "last evaluated (Unix time).", st.last_cycle)
    yield _counter_by("condorpy_policy_evaluation_errors_total", "Policy expressions "
                      "that evaluated to ERROR, by expression.", "expression",
                      snap.policy_errors)
    yield CounterMetricFamily("condorpy_policy_cycle_failures_total", "Policy cycles "
                              "that failed without deciding (the log says why).",
                              value=st.cycle_failures)
    yield _counter_by("condorpy_reconfigs_total", "Reconfigurations (SIGHUP, condorpy "
                      "reconfig), by result: failed ones keep the old configuration.",
                      "result", st.reconfigs)
    yield _gauge("condorpy_last_reconfig_success_timestamp_seconds", "When the "
                 "configuration was last read and applied (Unix time; the start counts).",
                 st.last_reconfig_success)
    yield _gauge("condorpy_last_reconfig_successful", "1 if the last reconfiguration "
                 "was applied, 0 if it was refused.", 1.0 if st.last_reconfig_ok else 0.0)
    yield _gauge_by("condorpy_queue_jobs", "Jobs in the local queue, by JobStatus.",
                    "status", snap.queue)
    yield _gauge_by("condorpy_cgroup_limits_enforced", "1 if jobs get cgroup limits of "
                    "this controller, 0 if not (no delegated cgroup v2 subtree, or the "
                    "controller is not delegated).", "controller",
                    ((c, 1.0 if ok else 0.0) for c, ok in snap.cgroup))
    if snap.pool is not None:
        pool = snap.pool
        yield _counter_by("condorpy_pool_collector_updates_total", "Ad updates to the "
                          "pool's collector, by result.", "result",
                          (("sent", pool.updates_sent), ("failed", pool.updates_failed)))
        yield _gauge_by("condorpy_pool_claims", "Claims the pool's schedds hold here, by "
                        "HTCondor claim state.", "state", pool.claims)
        yield CounterMetricFamily("condorpy_pool_shadow_reconnects_total", "Shadows that "
                                  "reconnected to a job running here.",
                                  value=pool.reconnects)


class StartdCollector:
    """Builds fresh metric families from the latest snapshot at every scrape."""

    def __init__(self, latest: Callable[[], Snapshot | None]) -> None:
        self.latest = latest

    def describe(self) -> list[Metric]:
        # Names are known, but returning them would make the registry call collect()
        # at registration, before the first snapshot; duplicates are ruled out by the
        # registry being private.
        return []

    def collect(self) -> Iterator[Metric]:
        snap = self.latest()       # one read: the loop swaps whole snapshots
        if snap is not None:
            yield from families(snap)
