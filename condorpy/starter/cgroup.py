"""cgroup v2 for one job: a delegated base, an interior ``.slice`` carrying the limits
and a leaf ``.scope`` holding the processes.

Everything takes the cgroup mount root, so tests can point it at a fake tree; the
kernel-specific behaviour (freeze, kill, OOM) is tested in the real-kernel lane.
"""

from __future__ import annotations

import errno
import os
import posixpath
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from condorpy.errors import CgroupError

NEEDED_CONTROLLERS = ("cpu", "memory", "pids")
STARTER_LEAF = "starters.leaf"


class CgroupUnavailable(CgroupError):
    """No delegated, writable cgroup v2 subtree with the controllers jobs need."""


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def parse_keyed(text: str) -> dict[str, int]:
    """``key value`` lines (cpu.stat, memory.stat, memory.events, cgroup.events)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        try:
            out[key] = int(value)
        except ValueError:
            continue
    return out


def own_cgroup(proc_root: str = "/proc", pid: str = "self") -> str | None:
    """The unified-hierarchy path of a process (``0::/path``), or None."""
    try:
        text = _read(os.path.join(proc_root, pid, "cgroup"))
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def _procs(directory: str) -> list[int]:
    try:
        return [int(p) for p in _read(os.path.join(directory, "cgroup.procs")).split()]
    except OSError:
        return []


@dataclass(frozen=True)
class CgroupTree:
    """A delegated cgroup under which the starter may create job cgroups."""
    mount: str
    base: str             # path relative to the mount, "/"-rooted

    @property
    def directory(self) -> str:
        return os.path.join(self.mount, self.base.lstrip("/"))


def resolve_base(own: str, base: str | None) -> str:
    """Where job cgroups go. The anchor is the starter's own cgroup, or its parent when
    the starter sits in a ``*.leaf`` (the daemon's convention for stepping out of the
    way of its delegated service cgroup). An absolute BASE_CGROUP is taken as it is,
    a relative one is below the anchor."""
    anchor = own
    if posixpath.basename(own).endswith(".leaf"):
        anchor = posixpath.dirname(own) or "/"
    if base is None or not base.strip("/"):
        return anchor
    if base.startswith("/"):
        return posixpath.normpath(base)
    return posixpath.normpath(posixpath.join(anchor, base))


def open_tree(mount: str, base: str | None, *, proc_root: str = "/proc") -> CgroupTree:
    """Check and prepare the delegated subtree; raise CgroupUnavailable saying why.

    From the nearest ancestor that has the controllers down to the base, each cgroup
    gets them in its ``cgroup.subtree_control``. That is allowed only for cgroups without
    processes (the root excepted): if one of them holds only the starter itself, the
    starter first steps into a leaf of it; any other process there means no.
    """
    if not os.path.exists(os.path.join(mount, "cgroup.controllers")):
        unified = os.path.join(mount, "unified")
        if os.path.exists(os.path.join(unified, "cgroup.controllers")):
            have = _read(os.path.join(unified, "cgroup.controllers")).split()
            raise CgroupUnavailable(
                f"hybrid cgroup hierarchy: {mount} is cgroup v1, and the cgroup v2 tree at "
                f"{unified} has controllers [{' '.join(have)}], not "
                f"{', '.join(NEEDED_CONTROLLERS)} (boot with systemd.unified_cgroup_hierarchy=1)")
        raise CgroupUnavailable(f"{mount} is not a cgroup v2 mount (no cgroup.controllers)")
    own = own_cgroup(proc_root)
    if own is None:
        raise CgroupUnavailable(f"{proc_root}/self/cgroup names no cgroup v2 path")
    tree = CgroupTree(mount, resolve_base(own, base))

    def directory(path: str) -> str:
        return os.path.join(mount, path.lstrip("/"))

    top = tree.directory
    if not os.path.isdir(top):
        try:
            os.mkdir(top)
        except OSError as exc:
            raise CgroupUnavailable(f"cannot create the base cgroup {tree.base}: "
                                    f"{exc.strerror} (is it delegated to this user?)") from None
    chain = [tree.base]                     # the base and its ancestors, bottom-up
    while chain[-1] != "/":
        chain.append(posixpath.dirname(chain[-1]) or "/")
    # Find the highest point from which every needed controller must be handed down.
    start = len(chain) - 1
    for i, path in enumerate(chain):
        try:
            available = set(_read(os.path.join(directory(path),
                                               "cgroup.controllers")).split())
        except OSError as exc:
            raise CgroupUnavailable(f"cannot read the controllers of cgroup {path}: "
                                    f"{exc.strerror}") from None
        if all(c in available for c in NEEDED_CONTROLLERS):
            start = i
            break
    else:
        have = _read(os.path.join(mount, "cgroup.controllers")).split()
        raise CgroupUnavailable(f"the cgroup v2 root has controllers [{' '.join(have)}], "
                                f"not {', '.join(NEEDED_CONTROLLERS)}")
    for path in reversed(chain[:start + 1]):
        _hand_down(directory(path), path)
    return tree


def _hand_down(directory: str, path: str) -> None:
    """Enable the needed controllers for the children of one cgroup."""
    try:
        enabled = set(_read(os.path.join(directory, "cgroup.subtree_control")).split())
    except OSError as exc:
        raise CgroupUnavailable(f"cannot read cgroup {path}: {exc.strerror}") from None
    want = [c for c in NEEDED_CONTROLLERS if c not in enabled]
    if not want:
        return
    procs = _procs(directory)
    if procs and path != "/":
        if set(procs) != {os.getpid()}:
            raise CgroupUnavailable(
                f"cgroup {path} holds processes {procs[:5]}, so its controllers cannot be "
                "handed down (no internal processes); set BASE_CGROUP to a delegated "
                "cgroup without processes")
        # Only the starter itself is here: step aside into a leaf.
        leaf = os.path.join(directory, STARTER_LEAF)
        os.makedirs(leaf, exist_ok=True)
        _write(os.path.join(leaf, "cgroup.procs"), str(os.getpid()))
    try:
        _write(os.path.join(directory, "cgroup.subtree_control"),
               " ".join("+" + c for c in want))
    except OSError as exc:
        raise CgroupUnavailable(f"cannot enable {', '.join(want)} in cgroup {path}: "
                                f"{exc.strerror} (not delegated to this user?)") from None


@dataclass(frozen=True)
class CgroupLimits:
    memory_max: int | None = None      # bytes
    memory_high: int | None = None
    memory_low: int | None = None      # CGROUP_LOW_MEMORY_LIMIT: protected from reclaim
    swap_max: int | None = None
    oom_group: bool = True
    cpu_weight: int = 100
    cpu_max: str | None = None
    pids_max: int | None = None


@dataclass(frozen=True)
class CgroupSample:
    user_usec: int
    system_usec: int
    memory_bytes: int          # anon + shmem: what the job itself holds
    peak_bytes: int | None     # memory.peak (includes page cache), None on old kernels
    pids: int
    oom_kills: int
    memory_events: int = 0     # high + max + oom of memory.events: pressure on the limits
    limit_ooms: int = 0        # "oom" of memory.events: the job's own limit ran out


def peak_memory(peak: int | None, stat: dict[str, int], ignore_cache: bool) -> int | None:
    """memory.peak as the job's peak: with CGROUP_IGNORE_CACHE_MEMORY the page cache
    (``file``) and the inactive anonymous pages, which the kernel may reclaim and which
    HTCondor does not blame on the job, are taken off it (never below zero)."""
    if peak is None or not ignore_cache:
        return peak
    cache = stat.get("file", 0) + stat.get("inactive_anon", 0)
    return peak - cache if peak > cache else peak


def slice_settings(limits: CgroupLimits) -> list[tuple[str, str]]:
    """The files written in the job's slice, which carries its limits."""
    settings: list[tuple[str, str]] = [("cpu.weight", str(limits.cpu_weight))]
    if limits.memory_max is not None:
        settings.append(("memory.max", str(limits.memory_max)))
    if limits.memory_high is not None:
        settings.append(("memory.high", str(limits.memory_high)))
    if limits.memory_low is not None:
        settings.append(("memory.low", str(limits.memory_low)))
    if limits.swap_max is not None:
        settings.append(("memory.swap.max", str(limits.swap_max)))
    if limits.oom_group:
        # an OOM kill, the job's own or the machine's, takes the whole job
        settings.append(("memory.oom.group", "1"))
    if limits.cpu_max is not None:
        settings.append(("cpu.max", limits.cpu_max))
    if limits.pids_max is not None:
        settings.append(("pids.max", str(limits.pids_max)))
    return settings


class JobCgroup:
    """One job's cgroup pair. Always freshly created: memory.peak is inherited by reuse."""

    def __init__(self, tree: CgroupTree, name: str, *, ignore_cache: bool = True) -> None:
        self.slice = os.path.join(tree.directory, f"{name}.slice")
        self.scope = os.path.join(self.slice, "job.scope")
        self.ignore_cache = ignore_cache          # CGROUP_IGNORE_CACHE_MEMORY

    @property
    def procs_file(self) -> str:
        return os.path.join(self.scope, "cgroup.procs")

    def create(self, limits: CgroupLimits) -> None:
        if os.path.isdir(self.slice):
            self.kill()          # left by a dead starter with our pid: start clean
            self.remove()
        os.mkdir(self.slice)
        self._apply(self.slice, slice_settings(limits))
        # The leaf gets no memory controller of its own, so its pages are charged to
        # the slice, whose memory.low and memory.max are the job's.
        os.mkdir(self.scope)

    def _apply(self, directory: str, settings: list[tuple[str, str]]) -> None:
        for name, value in settings:
            path = os.path.join(directory, name)
            if name == "memory.swap.max" and not os.path.exists(path):
                continue         # kernel without swap accounting
            try:
                _write(path, value)
            except OSError as exc:
                raise CgroupError(f"cannot set {name}={value} in {directory}: "
                                  f"{exc.strerror}") from None

    def _file(self, name: str) -> str | None:
        try:
            return _read(os.path.join(self.slice, name))
        except OSError:
            return None

    def events(self) -> dict[str, int]:
        return parse_keyed(self._file("cgroup.events") or "")

    def memory_events(self) -> dict[str, int]:
        return parse_keyed(self._file("memory.events") or "")

    def sample(self) -> CgroupSample:
        cpu = parse_keyed(self._file("cpu.stat") or "")
        mem = parse_keyed(self._file("memory.stat") or "")
        peak_text = self._file("memory.peak")
        pids_text = self._file("pids.current")
        ev = self.memory_events()
        peak = int(peak_text) if peak_text and peak_text.strip().isdigit() else None
        return CgroupSample(
            user_usec=cpu.get("user_usec", 0), system_usec=cpu.get("system_usec", 0),
            memory_bytes=mem.get("anon", 0) + mem.get("shmem", 0),
            peak_bytes=peak_memory(peak, mem, self.ignore_cache),
            pids=int(pids_text) if pids_text and pids_text.strip().isdigit() else 0,
            oom_kills=ev.get("oom_kill", 0) + ev.get("oom_group_kill", 0),
            memory_events=ev.get("high", 0) + ev.get("max", 0) + ev.get("oom", 0),
            limit_ooms=ev.get("oom", 0))

    def memory_event_watch(self) -> MemoryEventWatch | None:
        """A descriptor that becomes readable when the job's memory.events changes;
        None where the file cannot be watched (the periodic samples still see it)."""
        try:
            return MemoryEventWatch(os.path.join(self.slice, "memory.events"))
        except OSError:
            return None

    def pids(self) -> list[int]:
        found: list[int] = []
        for root, _dirs, _files in os.walk(self.slice):
            found.extend(_procs(root))
        return found

    def freeze(self, *, timeout_s: float = 5.0,
               sleep: Callable[[float], None] = time.sleep) -> bool:
        """Freeze and wait until the kernel says ``frozen 1`` (freezing is asynchronous)."""
        _write(os.path.join(self.slice, "cgroup.freeze"), "1")
        return self._wait_event("frozen", 1, timeout_s, sleep)

    def thaw(self, *, timeout_s: float = 5.0,
             sleep: Callable[[float], None] = time.sleep) -> bool:
        _write(os.path.join(self.slice, "cgroup.freeze"), "0")
        return self._wait_event("frozen", 0, timeout_s, sleep)

    def _wait_event(self, key: str, value: int, timeout_s: float,
                    sleep: Callable[[float], None]) -> bool:
        deadline = time.monotonic() + timeout_s
        delay = 0.0005
        while True:
            if self.events().get(key) == value:
                return True
            if time.monotonic() >= deadline:
                return False
            sleep(delay)
            delay = min(delay * 2, 0.05)

    def kill(self) -> None:
        """SIGKILL everything below the slice: cgroup.kill (>= 5.14) or pid by pid."""
        if not os.path.isdir(self.slice):
            return
        if self.kill_at_once():
            return
        # Freeze first so nothing can fork between reading the pids and killing them.
        frozen = False
        try:
            frozen = self.freeze(timeout_s=1.0)
        except OSError:
            pass
        for _ in range(100):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001)
        if frozen:
            try:
                self.thaw(timeout_s=1.0)
            except OSError:
                pass

    def kill_at_once(self) -> bool:
        """SIGKILL the whole subtree through cgroup.kill; False where the kernel has no
        such file (before 5.14) or refuses the write, and the caller must go pid by pid."""
        try:
            _write(os.path.join(self.slice, "cgroup.kill"), "1")
        except OSError:
            return False
        return True

    def wait_empty(self, timeout_s: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.pids():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
        return True

    def remove(self) -> None:
        for directory in (self.scope, self.slice):
            for _ in range(200):
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        raise CgroupError(f"cannot remove cgroup {directory}: "
                                          f"{exc.strerror}") from None
                    time.sleep(0.005)


class MemoryEventWatch:
    """memory.events as a pollable descriptor. The kernel marks a cgroup file changed
    (EPOLLPRI) when a counter moves; it is re-armed by reading the file again. An epoll
    descriptor holding it is readable exactly then, so the starter's selector can
    wait on it with the rest."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.pread(self.fd, 4096, 0)
            self.ep = select.epoll(flags=select.EPOLL_CLOEXEC)
            self.ep.register(self.fd, select.EPOLLPRI)
        except OSError:
            os.close(self.fd)
            raise

    def fileno(self) -> int:
        return self.ep.fileno()

    def drain(self) -> None:
        """Take the change and re-arm."""
        try:
            self.ep.poll(0)
            os.pread(self.fd, 4096, 0)
        except OSError:
            pass

    def close(self) -> None:
        self.ep.close()
        os.close(self.fd)


def compute_limits(*, policy: str, slot_memory_mb: int | None, slot_vm_kb: int | None,
                   machine_memory_mb: int | None, custom_hard_mb: int | None,
                   custom_soft_mb: int | None, disable_swap: bool, cpus: float,
                   pids_max: int | None, enforce_cpu_max: bool,
                   low_mb: int | None = None, high_percent: int = 0) -> CgroupLimits:
    """The limits for one job, from CGROUP_MEMORY_LIMIT_POLICY and the slot.

    ``low_mb`` is CGROUP_LOW_MEMORY_LIMIT evaluated for the job (none or not positive:
    no protection); ``high_percent`` is CONDORPY_CGROUP_MEMORY_HIGH_PERCENT, a
    throttling threshold below a hard limit that no custom soft limit already sets."""
    mib = 1024 * 1024
    memory_max: int | None = None
    memory_high: int | None = None
    if policy == "hard" and slot_memory_mb is not None:
        memory_max = slot_memory_mb * mib
    elif policy == "soft":
        # The slot's share is a target, the machine's memory the ceiling.
        if machine_memory_mb is not None:
            memory_max = machine_memory_mb * mib
    elif policy == "custom":
        memory_max = custom_hard_mb * mib if custom_hard_mb is not None else None
        memory_high = custom_soft_mb * mib if custom_soft_mb is not None else None
    # under "soft" memory.max is the machine's, no limit of the job's to throttle before
    if (0 < high_percent < 100 and policy in ("hard", "custom") and memory_max is not None
            and memory_high is None):
        memory_high = memory_max * high_percent // 100
    memory_low = low_mb * mib if low_mb is not None and low_mb > 0 else None
    swap_max: int | None = None
    if policy != "none":
        if disable_swap:
            swap_max = 0
        elif slot_vm_kb is not None and slot_memory_mb is not None:
            swap_max = max(0, slot_vm_kb * 1024 - slot_memory_mb * mib)
    weight = min(10000, max(1, round(100 * cpus)))
    cpu_max = f"{max(1000, round(cpus * 100000))} 100000" if enforce_cpu_max else None
    return CgroupLimits(memory_max=memory_max, memory_high=memory_high,
                        memory_low=memory_low, swap_max=swap_max, oom_group=True,
                        cpu_weight=weight, cpu_max=cpu_max, pids_max=pids_max)
