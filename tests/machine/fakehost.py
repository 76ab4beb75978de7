"""Builders for fake /proc, /sys, /dev and /etc trees under a tmp directory."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from condorpy.config import Config, DetectedFacts
from condorpy.machine.roots import HostRoots, Uname

NOW = 1_800_000_000.0


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def cpuinfo(entries: list[tuple[int, int | None, int | None]]) -> str:
    """(processor, physical id, core id) per logical CPU."""
    blocks = []
    for proc, phys, core in entries:
        lines = [f"processor\t: {proc}", "cpu family\t: 6", "model\t\t: 85", "cache size\t: 1024 KB"]
        if phys is not None:
            lines.append(f"physical id\t: {phys}")
        if core is not None:
            lines.append(f"core id\t\t: {core}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def topology(sys_root: Path, cpus: list[tuple[int, int, int]]) -> None:
    """(cpu, package, core) per logical CPU, plus the online list."""
    base = sys_root / "devices" / "system" / "cpu"
    write(base / "online", f"0-{len(cpus) - 1}\n")
    for cpu, pkg, core in cpus:
        write(base / f"cpu{cpu}" / "topology" / "physical_package_id", f"{pkg}\n")
        write(base / f"cpu{cpu}" / "topology" / "core_id", f"{core}\n")


def meminfo(total_kb: int, swap_total_kb: int = 0, swap_free_kb: int = 0) -> str:
    return (f"MemTotal:       {total_kb} kB\nMemFree:        1000 kB\n"
            f"SwapTotal:      {swap_total_kb} kB\nSwapFree:       {swap_free_kb} kB\n")


def utmp_record(ut_type: int, line: str, user: str = "alice") -> bytes:
    rec = bytearray(384)
    struct.pack_into("<hxxi", rec, 0, ut_type, 1234)
    rec[8:8 + len(line)] = line.encode()
    rec[44:44 + len(user)] = user.encode()
    return bytes(rec)


def touch(path: Path, atime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.utime(path, (atime, atime))
    return path


def roots(tmp: Path, **kw: object) -> HostRoots:
    base = dict(proc=tmp / "proc", sys=tmp / "sys", dev=tmp / "dev", cgroup=tmp / "sys/fs/cgroup",
                etc=tmp / "etc", utmp=(tmp / "run/utmp",), clock=lambda: NOW,
                uname=lambda: Uname("Linux", "node1", "6.1.0-18-amd64", "#1 SMP", "x86_64"),
                fqdn=lambda n: f"{n}.example.org", env={}, search_path=(tmp / "bin",),
                use_nvml=False)
    base.update(kw)
    return HostRoots(**base)  # type: ignore[arg-type]


# the computed knobs of the fake host that topology(8 threads) and meminfo(32 GiB) build
FAKE_FACTS = DetectedFacts(full_hostname="node1.example.org", cpus=8, cores=8,
                           physical_cpus=4, memory_mb=32768)


def knobs(values: dict[str, str]) -> Config:
    """A real configuration holding ``values`` (as lines of ``test.conf``)."""
    return Config.from_mapping(values, source="test.conf", detected=FAKE_FACTS)


class OpaqueConfig:
    """Knob text that cannot list its names (what a filtering view may give)."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = {k.upper(): v for k, v in values.items()}

    def get(self, name: str) -> str | None:
        return self.values.get(name.upper())

    def names(self) -> list[str]:
        return []
