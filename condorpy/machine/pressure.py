"""Pressure stall information (PSI): the machine's, from ``/proc/pressure/{cpu,memory,io}``,
and one job's, from its cgroup's ``{cpu,memory,io}.pressure``.

Both files have the same shape::

    some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
    full avg10=0.00 avg60=0.00 avg300=0.00 total=0

``avg*`` are percentages of wall time in which some (or all) non-idle tasks stalled on
the resource over the last 10, 60 and 300 s; ``total`` is the stall time in
microseconds since boot (or since the cgroup was made). A kernel without PSI (before
4.20, or booted with ``psi=0``) has no such files, or files that fail to read with
EOPNOTSUPP: the readings are then absent, never an error, and the attributes they would
feed stay undefined in the slot ads.

Attribute names, as the slot ads carry them: ``<Scope>Pressure<Resource><Kind><Window>``,
e.g. ``MachinePressureMemorySomeAvg10`` or ``JobPressureCpuFullTotal``, where Scope is
``Machine`` (every slot) or ``Job`` (the slot running the job), Resource ``Cpu``,
``Memory`` or ``Io``, Kind ``Some`` or ``Full``, Window ``Avg10``, ``Avg60``, ``Avg300``
(percent, a real) or ``Total`` (microseconds, an integer).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from condorpy.machine.roots import HostRoots

RESOURCES = ("cpu", "memory", "io")
KINDS = ("some", "full")
WINDOWS = ("avg10", "avg60", "avg300", "total")
MACHINE_PREFIX = "MachinePressure"
JOB_PREFIX = "JobPressure"


@dataclass(frozen=True)
class PressureLine:
    """One line of a pressure file: averages in percent, total in microseconds."""

    avg10: float
    avg60: float
    avg300: float
    total: int


@dataclass(frozen=True)
class Pressure:
    """One pressure reading: (resource, kind) -> line, only for the lines read."""

    lines: tuple[tuple[str, str, PressureLine], ...] = ()

    def get(self, resource: str, kind: str) -> PressureLine | None:
        for r, k, line in self.lines:
            if r == resource and k == kind:
                return line
        return None

    def attributes(self, prefix: str) -> dict[str, float | int]:
        """The reading as slot-ad attributes named after ``prefix``."""
        out: dict[str, float | int] = {}
        for resource, kind, line in self.lines:
            base = f"{prefix}{resource.capitalize()}{kind.capitalize()}"
            out[base + "Avg10"] = line.avg10
            out[base + "Avg60"] = line.avg60
            out[base + "Avg300"] = line.avg300
            out[base + "Total"] = line.total
        return out


def attribute_names(prefix: str) -> tuple[str, ...]:
    """Every attribute a full reading gives under ``prefix`` (for clearing them)."""
    return tuple(f"{prefix}{r.capitalize()}{k.capitalize()}{w.capitalize()}"
                 for r in RESOURCES for k in KINDS for w in WINDOWS)


def parse_pressure(text: str) -> dict[str, PressureLine]:
    """The lines of one pressure file by kind; a malformed line is left out."""
    out: dict[str, PressureLine] = {}
    for raw in text.splitlines():
        fields = raw.split()
        if not fields or fields[0] not in KINDS:
            continue
        values = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        try:
            out[fields[0]] = PressureLine(float(values["avg10"]), float(values["avg60"]),
                                          float(values["avg300"]), int(values["total"]))
        except (KeyError, ValueError):
            continue
    return out


def _read_all(read: Callable[[str], str | None]) -> Pressure:
    lines: list[tuple[str, str, PressureLine]] = []
    for resource in RESOURCES:
        text = read(resource)
        if text is None:
            continue
        parsed = parse_pressure(text)
        for kind in KINDS:
            if kind in parsed:
                lines.append((resource, kind, parsed[kind]))
    return Pressure(tuple(lines))


def _read_small(path: str) -> str | None:
    """A pseudo-file's text, or None where it cannot be read. Raw os calls: this runs
    every second, three times, and pathlib's and io's layers cost more than the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode("ascii", "replace")
    except OSError:            # EOPNOTSUPP: PSI compiled in but disabled (psi=0)
        return None
    finally:
        os.close(fd)


def read_machine_pressure(roots: HostRoots) -> Pressure:
    """The machine's pressure from ``<proc>/pressure``; empty without PSI."""
    base = f"{roots.proc}/pressure/"
    return _read_all(lambda r: _read_small(base + r))


def read_cgroup_pressure(directory: Path | str) -> Pressure:
    """One cgroup's pressure (``cpu.pressure``, ...); empty where the files are missing
    (no PSI, the cgroup gone, a controller not enabled)."""
    base = f"{directory}/"
    return _read_all(lambda r: _read_small(f"{base}{r}.pressure"))


def stalled_seconds(p: Pressure) -> Iterator[tuple[str, str, float]]:
    """(resource, kind, stall seconds) for the metrics' counters."""
    for resource, kind, line in p.lines:
        yield resource, kind, line.total / 1e6


def to_wire(p: Pressure) -> list[list[object]]:
    """The reading as the starter's usage report carries it (JSON)."""
    return [[r, k, line.avg10, line.avg60, line.avg300, line.total] for r, k, line in p.lines]


def from_wire(obj: object) -> Pressure:
    """A reading from a usage report; anything malformed is left out."""
    lines: list[tuple[str, str, PressureLine]] = []
    if isinstance(obj, list):
        for item in obj:
            if not (isinstance(item, list) and len(item) == 6 and item[0] in RESOURCES
                    and item[1] in KINDS):
                continue
            a10, a60, a300, total = item[2:]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for v in (a10, a60, a300, total)):
                lines.append((item[0], item[1],
                              PressureLine(float(a10), float(a60), float(a300), int(total))))
    return Pressure(tuple(lines))
