"""Where the probes look: the host's pseudo-filesystems and clocks, injectable for tests.

Every probe in this package takes a :class:`HostRoots` instead of reaching for ``/proc``
or ``time.time`` itself, so a test can build a fake ``/proc``, ``/sys`` and ``/dev`` in a
temporary directory and pin the clock.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Uname:
    """The five fields of uname(2)."""

    sysname: str
    nodename: str
    release: str
    version: str
    machine: str

    @classmethod
    def of_host(cls) -> "Uname":
        u = os.uname()
        return cls(u.sysname, u.nodename, u.release, u.version, u.machine)


# the NVIDIA driver's own libraries, by their sonames
CUDA_LIBRARY = "libcuda.so.1"
NVML_LIBRARY = "libnvidia-ml.so.1"


@dataclass(frozen=True)
class HostRoots:
    """The paths and system calls the probes read; defaults are the real host's."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    dev: Path = Path("/dev")
    cgroup: Path = Path("/sys/fs/cgroup")
    etc: Path = Path("/etc")
    # utmp is tried in this order, as HTCondor does on Linux
    utmp: tuple[Path, ...] = (Path("/var/run/utmp"), Path("/var/adm/utmp"))
    clock: Callable[[], float] = time.time
    uname: Callable[[], Uname] = Uname.of_host
    fqdn: Callable[[str], str] = socket.getfqdn
    # environment consulted for DETECTED_CPUS_LIMIT (OMP_THREAD_LIMIT, SLURM_CPUS_ON_NODE);
    # None means the process environment
    env: Mapping[str, str] | None = None
    # directories searched for nvidia-smi; None means $PATH
    search_path: tuple[Path, ...] | None = None
    # whether the GPU driver's libraries (CUDA, NVML) may be tried; tests of fake trees
    # turn it off
    use_nvml: bool = True
    cuda_library: str = CUDA_LIBRARY
    nvml_library: str = NVML_LIBRARY

    def environ(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env

    def which(self, program: str) -> Path | None:
        dirs = self.search_path
        if dirs is None:
            dirs = tuple(Path(p) for p in self.environ().get("PATH", os.defpath).split(os.pathsep) if p)
        for d in dirs:
            cand = d / program
            if cand.is_file() and os.access(cand, os.X_OK):
                return cand
        return None


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is missing or unreadable (probes degrade, never crash)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


