"""Physical memory, swap and the daemon's own cgroup memory limit.

HTCondor advertises the smaller of the machine's RAM and the memory limit of the
cgroup the startd itself runs in (so a startd in a container or a limited systemd
service does not promise memory it cannot get). Its order of preference is kept:
the first line of ``/proc/self/cgroup`` that is either the v2 entry (``0::/path``) or
the v1 ``memory`` controller decides; for v2 ``memory.high`` is preferred to
``memory.max``, then the parent's; "max" and absurdly large values mean no limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from condorpy.machine.roots import HostRoots, read_text

_UNLIMITED = 1 << 60
_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class MemInfo:
    total_kb: int
    swap_total_kb: int
    swap_free_kb: int


def read_meminfo(roots: HostRoots) -> MemInfo:
    fields: dict[str, int] = {}
    for line in (read_text(roots.proc / "meminfo") or "").splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if parts and parts[0].isdigit():
            value = int(parts[0])
            if len(parts) > 1 and parts[1].lower() == "b":
                value //= 1024
            fields[key.strip()] = value
    return MemInfo(fields.get("MemTotal", 0), fields.get("SwapTotal", 0), fields.get("SwapFree", 0))


def _limit_file(path: Path) -> int:
    """Bytes in a cgroup limit file; 0 for missing, 'max' or effectively unlimited."""
    text = read_text(path)
    if text is None:
        return 0
    word = text.strip().split()[0] if text.strip() else ""
    if not word.isdigit():
        return 0
    value = int(word)
    return 0 if value > _UNLIMITED else value


def _under(root: Path, cgroup_path: str, *rest: str) -> Path:
    return root.joinpath(cgroup_path.lstrip("/"), *rest)


def cgroup_memory_limit(roots: HostRoots) -> int:
    """The daemon's own cgroup memory limit in bytes, 0 when there is none."""
    text = read_text(roots.proc / "self" / "cgroup")
    if not text:
        return 0
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            v2 = roots.cgroup
            # on a hybrid layout the v2 tree is mounted at .../unified
            if not (v2 / "cgroup.controllers").exists() and (v2 / "unified").is_dir():
                v2 = v2 / "unified"
            for candidate in (_under(v2, path, "memory.high"), _under(v2, path, "memory.max"),
                              _under(v2, path).parent / "memory.high",
                              _under(v2, path).parent / "memory.max"):
                limit = _limit_file(candidate)
                if limit:
                    return limit
            return 0
        if "memory" in controllers.split(","):
            return _limit_file(_under(roots.cgroup / "memory", path, "memory.limit_in_bytes"))
    return 0


def detected_memory_mb(roots: HostRoots) -> int:
    """DETECTED_MEMORY: RAM in MiB, capped by the daemon's cgroup limit when lower."""
    total = read_meminfo(roots).total_kb * 1024
    limit = cgroup_memory_limit(roots)
    if limit and (total == 0 or limit < total):
        total = limit
    return min(total // (1024 * 1024), _INT_MAX)


def virtual_memory_kb(roots: HostRoots) -> int:
    """VirtualMemory as HTCondor computes it on Linux: free swap plus RAM, in KiB."""
    info = read_meminfo(roots)
    return min(info.swap_free_kb + info.total_kb, _INT_MAX)
