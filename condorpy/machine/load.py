"""Load averages and boot time from /proc."""

from __future__ import annotations

from dataclasses import dataclass

from condorpy.machine.roots import HostRoots, read_text


@dataclass(frozen=True)
class LoadAverages:
    one: float
    five: float
    fifteen: float


def read_loadavg(roots: HostRoots) -> LoadAverages:
    fields = (read_text(roots.proc / "loadavg") or "").split()
    try:
        return LoadAverages(float(fields[0]), float(fields[1]), float(fields[2]))
    except (IndexError, ValueError):
        return LoadAverages(0.0, 0.0, 0.0)


def boot_time(roots: HostRoots) -> float:
    """Seconds since the epoch when the kernel booted (``btime`` of /proc/stat)."""
    for line in (read_text(roots.proc / "stat") or "").splitlines():
        if line.startswith("btime "):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                break
    uptime = (read_text(roots.proc / "uptime") or "").split()
    if uptime:
        try:
            return roots.clock() - float(uptime[0])
        except ValueError:
            pass
    return 0.0
