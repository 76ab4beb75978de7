"""Resource monitors: the STARTD_CRON jobs with ``STARTD_CRON_<name>_METRICS``, such as
``use FEATURE : GPUs``'s GPU monitor, whose per-device samples the startd accumulates
per device and per job, as HTCondor's startd does. Pure: samples, slot names, job
identities and times come in, attribute values go out.

A monitor prints one ad per device per period, routed to the slot holding the device
(``SlotMergeConstraint``). A ``SUM:<Res>`` metric's sample is ``Uptime<Res>Seconds``,
the seconds the device was busy since the last sample; a ``PEAK:<Res>`` metric's is
``Uptime<Res>PeakUsage``, the period's peak. For each slot the startd publishes

* ``Device<Res>AverageUsage``: the slot's devices' busy seconds since the daemon
  started, over that time (SUM); ``Device<Res>PeakUsage``: their peak (PEAK);
* for the slot's running job: ``<Res>AverageUsage``, the busy seconds of the samples
  since the job started over the time they span (whole sample periods, so the average
  is exact for its period), also as ``<Res>Usage`` (the name HTCondor's manual gives
  the job: ``GPUsUsage``); and ``<Res>Usage`` for a PEAK metric, the peak of the
  samples since the job started (``GPUsMemoryUsage``).

The running job's ad gets the per-job values with its usage updates and at its end.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

JobKey = Hashable       # what tells one job on a slot from the next one


class MetricKind(Enum):
    SUM = "SUM"
    PEAK = "PEAK"


@dataclass(frozen=True)
class Metric:
    kind: MetricKind
    resource: str           # GPUs, GPUsMemory

    @property
    def sample_attr(self) -> str:
        """The attribute a monitor's sample carries for this metric."""
        suffix = "Seconds" if self.kind is MetricKind.SUM else "PeakUsage"
        return f"Uptime{self.resource}{suffix}"


def parse_metrics(text: str) -> tuple[Metric, ...]:
    """``SUM:GPUs, PEAK:GPUsMemory`` (comma or space separated); raises ValueError
    saying which entry is wrong."""
    out: list[Metric] = []
    for entry in text.replace(",", " ").split():
        kind, sep, resource = entry.partition(":")
        try:
            mk = MetricKind(kind.upper())
        except ValueError:
            raise ValueError(f"{entry!r}: the metric type must be SUM or PEAK") from None
        if not sep or not resource or not (resource[0].isalpha() and
                                           resource.replace("_", "").isalnum()):
            raise ValueError(f"{entry!r}: expected SUM:<resource> or PEAK:<resource>, "
                             "the resource an attribute name such as GPUs")
        metric = Metric(mk, resource)
        if metric not in out:
            out.append(metric)
    return tuple(out)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


@dataclass
class _Device:
    totals: dict[Metric, float] = field(default_factory=dict)   # since the daemon started
    last_update: float | None = None


@dataclass
class _JobWindow:
    """One device's samples since a slot's job started."""
    job: JobKey
    device: str
    start: dict[Metric, float] | None       # SUM totals at the start; None: no sample yet
    first_update: float | None
    last_update: float | None = None
    peaks: dict[Metric, float] = field(default_factory=dict)


class MonitorUsage:
    """One resource monitor's accumulated samples, per device and per (slot, device)
    for the slot's running job."""

    def __init__(self, metrics: Sequence[Metric], started: float,
                 advertise_uptime: bool = False) -> None:
        self.metrics = tuple(metrics)
        self.started = started                  # the daemon's start (wall time)
        self.advertise_uptime = advertise_uptime
        self.devices: dict[str, _Device] = {}
        self.windows: dict[tuple[str, str], _JobWindow] = {}
        self._attrs = {m.sample_attr.lower() for m in self.metrics}

    def is_metric(self, attr: str) -> bool:
        return attr.lower() in self._attrs

    def sample(self, device: str, values: Mapping[str, Any], now: float,
               jobs: Mapping[str, JobKey | None]) -> None:
        """A device's new sample; ``jobs``: the slots it is merged into now, with the
        job each runs (None: none)."""
        lower = {k.lower(): v for k, v in values.items()}
        got = {m: n for m in self.metrics
               if (n := _number(lower.get(m.sample_attr.lower()))) is not None}
        dev = self.devices.setdefault(device, _Device())
        for slot, job in jobs.items():
            key = (slot, device)
            win = self.windows.get(key)
            if job is None:
                self.windows.pop(key, None)
            elif win is None or win.job != job:
                # The job started since the last sample: the samples from here on are
                # its (this one covers the period it started in).
                seen = dev.last_update is not None
                self.windows[key] = _JobWindow(
                    job, device, dict(dev.totals) if seen else None, dev.last_update)
        for m, n in got.items():
            old = dev.totals.get(m)
            if m.kind is MetricKind.SUM:
                dev.totals[m] = n if old is None else old + n
            else:
                dev.totals[m] = n if old is None else max(old, n)
        dev.last_update = now
        for slot, job in jobs.items():
            win = self.windows.get((slot, device))
            if win is None:
                continue
            if win.start is None:
                # No sample before the job: this one's period is unknown, so it is the
                # baseline and the job's average starts after it.
                win.start = {m: t for m, t in dev.totals.items()
                             if m.kind is MetricKind.SUM}
                win.first_update = now
            for m, n in got.items():
                if m.kind is MetricKind.PEAK:
                    win.peaks[m] = max(win.peaks.get(m, n), n)
            win.last_update = now

    def slots(self) -> set[str]:
        """The slots that have a job's samples."""
        return {slot for slot, _ in self.windows}

    def forget(self, slots: Iterable[str]) -> None:
        """Slots that are gone (a d-slot returned)."""
        gone = set(slots)
        for key in [k for k in self.windows if k[0] in gone]:
            del self.windows[key]

    def slot_values(self, slot: str, devices: Iterable[str], job: JobKey | None,
                    now: float) -> dict[str, Any]:
        """What the slot's ad carries: the devices' figures and its running job's."""
        devs = [self.devices[d] for d in devices if d in self.devices]
        out: dict[str, Any] = {}
        up = max(now - self.started, 1.0)
        for m in self.metrics:
            have = [d.totals[m] for d in devs if m in d.totals]
            if not have:
                continue
            if m.kind is MetricKind.SUM:
                out[f"Device{m.resource}AverageUsage"] = sum(have) / up
                if self.advertise_uptime:
                    out[m.sample_attr] = sum(have)
            else:
                out[f"Device{m.resource}PeakUsage"] = _tidy(max(have))
        out.update(self.job_values(slot, job))
        return out

    def job_values(self, slot: str, job: JobKey | None) -> dict[str, Any]:
        """The per-job figures of the job running on ``slot`` (none before its first
        sample)."""
        if job is None:
            return {}
        wins = [w for (s, _), w in self.windows.items() if s == slot and w.job == job]
        out: dict[str, Any] = {}
        for m in self.metrics:
            if m.kind is MetricKind.PEAK:
                peaks = [w.peaks[m] for w in wins if m in w.peaks]
                if peaks:
                    out[f"{m.resource}Usage"] = _tidy(max(peaks))
                continue
            rates = []
            for w in wins:
                dev_total = self.devices[w.device].totals.get(m)
                if dev_total is None or w.start is None or w.first_update is None or \
                        w.last_update is None or w.last_update <= w.first_update:
                    continue
                rates.append((dev_total - w.start.get(m, 0.0)) /
                             (w.last_update - w.first_update))
            if rates:
                avg = sum(rates)
                out[f"{m.resource}AverageUsage"] = avg
                out[f"{m.resource}Usage"] = avg
        return out


def _tidy(v: float) -> int | float:
    """A peak as the monitor printed it: an integer stays one."""
    return int(v) if v.is_integer() else v
