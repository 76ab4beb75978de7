"""CPU counting: logical CPUs, physical cores and packages.

Logical CPUs come from ``/sys/devices/system/cpu/online``; cores are the distinct
(package, core) pairs of the sysfs topology. Without a topology (some containers and
VMs), ``/proc/cpuinfo`` supplies ``physical id``/``core id``; without those either,
every logical CPU is taken to be a core, as HTCondor does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from condorpy.machine.roots import HostRoots, read_text


@dataclass(frozen=True)
class CpuCounts:
    logical: int          # DETECTED_CORES: what the OS schedules (hyperthreads included)
    physical: int         # DETECTED_PHYSICAL_CPUS: distinct cores
    packages: int = 1
    model_number: int | None = None
    family: int | None = None
    cache_kb: int | None = None

    def detected_cpus(self, count_hyperthreads: bool) -> int:
        return self.logical if count_hyperthreads else self.physical


def parse_cpu_list(text: str) -> list[int]:
    """``0-3,8,10-11`` -> [0, 1, 2, 3, 8, 10, 11]."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            continue
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out.extend(range(lo, hi + 1))
    return out


def _cpuinfo_blocks(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                blocks.append(cur)
                cur = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            cur[key.strip()] = value.strip()
    if cur:
        blocks.append(cur)
    return [b for b in blocks if "processor" in b]


def _int_or_none(s: str | None) -> int | None:
    if s is None:
        return None
    m = re.match(r"\s*(\d+)", s)
    return int(m.group(1)) if m else None


def count_cpus(roots: HostRoots) -> CpuCounts:
    cpu_dir = roots.sys / "devices" / "system" / "cpu"
    cpuinfo = read_text(roots.proc / "cpuinfo") or ""
    blocks = _cpuinfo_blocks(cpuinfo)
    first = blocks[0] if blocks else {}
    model = _int_or_none(first.get("model"))
    family = _int_or_none(first.get("cpu family"))
    cache = _int_or_none(first.get("cache size"))

    online_text = read_text(cpu_dir / "online")
    online = parse_cpu_list(online_text) if online_text else []
    if not online and blocks:
        online = [int(b["processor"]) for b in blocks if b["processor"].isdigit()]
    if not online:
        # nothing readable at all: one CPU is the only safe claim
        return CpuCounts(1, 1, 1, model, family, cache)

    cores: set[tuple[str, str]] = set()
    packages: set[str] = set()
    topology_ok = True
    for cpu in online:
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        pkg = read_text(topo / "physical_package_id")
        core = read_text(topo / "core_id")
        if pkg is None or core is None:
            topology_ok = False
            break
        cores.add((pkg.strip(), core.strip()))
        packages.add(pkg.strip())

    if not topology_ok:
        cores.clear()
        packages.clear()
        by_proc = {b["processor"]: b for b in blocks}
        for cpu in online:
            b = by_proc.get(str(cpu))
            if b is None or "physical id" not in b or "core id" not in b:
                cores.clear()
                break
            cores.add((b["physical id"], b["core id"]))
            packages.add(b["physical id"])

    logical = len(online)
    physical = len(cores) if cores else logical
    return CpuCounts(logical, min(physical, logical), max(len(packages), 1), model, family, cache)
