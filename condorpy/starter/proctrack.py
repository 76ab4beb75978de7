"""Tracking a job without cgroups: the starter as child subreaper, the job's
descendants found through /proc parentage, its session and process group.

A process that escapes the job's session (setsid after a double fork) still has a
parent chain: while its parent lives it is found as a descendant, and once orphaned
it is reparented to the nearest subreaper, which is the starter itself (it made
itself one before forking the job), not init. So, in a starter that owns its
process (one job per process, as launched by the daemon or ``condorpy starter``),
every child of the starter's other than the job is an orphan of the job. Every
process seen once is remembered by (pid, start time), so one whose parent was
killed first is still known after it moved.

The end of a job is a freeze, then a kill: SIGSTOP every member, scanning again until
a scan finds none still running (a stopped process cannot fork, so the set stops
growing; stopped parents keep their children attached where parentage can see them),
then SIGKILL sweeps until none is left, each bounded in time so that nothing, not even
a fork loop, can keep the starter from finishing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from condorpy.starter.libc import libc
from condorpy.starter.cgroup import CgroupSample, JobCgroup
from condorpy.starter.exit_report import Leftover
from condorpy.starter.usage import Usage

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
# states of a process that cannot run: stopped, traced, zombie, dead
_HALTED = frozenset("TtZXx")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    pgrp: int
    session: int
    utime_ticks: int
    stime_ticks: int
    rss_pages: int
    state: str = "R"
    cutime_ticks: int = 0        # waited-for children's CPU, as the kernel keeps it
    cstime_ticks: int = 0
    start_ticks: int = 0         # since boot: with the pid, a process's identity

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X", "x")


def parse_stat(text: str) -> ProcStat:
    """One /proc/<pid>/stat line; the command name may contain spaces and parentheses."""
    pid_text, _, rest = text.partition(" (")
    fields = rest.rpartition(") ")[2].split()
    # fields[0] is the state (field 3 of the man page).
    return ProcStat(pid=int(pid_text), ppid=int(fields[1]), pgrp=int(fields[2]),
                    session=int(fields[3]), utime_ticks=int(fields[11]),
                    stime_ticks=int(fields[12]), rss_pages=int(fields[21]),
                    state=fields[0], cutime_ticks=int(fields[13]),
                    cstime_ticks=int(fields[14]), start_ticks=int(fields[19]))


def _read_stat(proc_root: str, name: str) -> bytes | None:
    try:
        fd = os.open(f"{proc_root}/{name}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)


def process_table(proc_root: str) -> dict[int, ProcStat]:
    """Every process now in /proc (threads are not listed there)."""
    table: dict[int, ProcStat] = {}
    try:
        names = os.listdir(proc_root)
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        st = _stat_of(proc_root, name)
        if st is not None:
            table[st.pid] = st
    return table


def _stat_of(proc_root: str, pid: str) -> ProcStat | None:
    """A process's parsed stat; None when it is gone or its line cannot be read."""
    raw = _read_stat(proc_root, pid)
    if raw is None:
        return None
    try:
        return parse_stat(raw.decode(errors="replace"))
    except (ValueError, IndexError):
        return None


def family_of(table: Mapping[int, ProcStat], *, session: int, known: Mapping[int, int],
              adopter: int | None) -> dict[int, ProcStat]:
    """The job's processes in ``table``: what was seen before (``known``: pid -> start
    time, the root's from its launch, so a reused pid is not taken), members of the
    job's session or process group, the ``adopter``'s children (the starter as
    subreaper: its orphans), and every descendant of any of these. Pure: the tests give
    it made-up tables."""
    members: dict[int, ProcStat] = {}
    for st in table.values():
        if (known.get(st.pid) == st.start_ticks
                or st.session == session or st.pgrp == session
                or (adopter is not None and st.ppid == adopter)):
            members[st.pid] = st
    if adopter is not None:
        members.pop(adopter, None)          # the starter is never its own job
    children: dict[int, list[ProcStat]] = {}
    for st in table.values():
        children.setdefault(st.ppid, []).append(st)
    todo = list(members)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child.pid not in members and child.pid != adopter:
                members[child.pid] = child
                todo.append(child.pid)
    return members


def set_child_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux 3.4 and later)."""
    try:
        return int(libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def is_child_subreaper() -> bool:
    try:
        flag = ctypes.c_int(0)
        if int(libc().prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)) != 0:
            return False
        return flag.value != 0
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class FamilyUsage:
    user_s: float
    system_s: float
    rss_bytes: int
    count: int
    pss_bytes: int | None = None     # None: no member's smaps_rollup could be read


def pss_bytes(proc_root: str, pid: int) -> int | None:
    """A process's proportional set size (the ``Pss:`` of /proc/<pid>/smaps_rollup),
    None where the kernel does not say (no such file, not allowed, gone)."""
    try:
        with open(f"{proc_root}/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class ProcessFamily:
    """The job's processes as the starter (without cgroups) knows them.

    ``adopter`` is the starter's pid when the starter owns its process and is a child
    subreaper: then its children are the job's. A starter sharing its process (a thread
    of a test) passes None and relies on parentage and the session alone."""

    def __init__(self, proc_root: str, root: int, session: int, *,
                 adopter: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.proc_root = proc_root
        self.root = root
        self.session = session
        self.adopter = adopter
        self.clock = clock
        self.sleep = sleep
        first = _read_stat(proc_root, str(root))
        self.known: dict[int, int] = {}
        if first is not None:
            try:
                self.known[root] = parse_stat(first.decode(errors="replace")).start_ticks
            except (ValueError, IndexError):
                pass
        self.reaped_user_s = 0.0         # orphans the starter itself reaped
        self.reaped_system_s = 0.0
        self.root_reaped = False         # wait4 on the root is the starter's own

    def members(self) -> dict[int, ProcStat]:
        table = process_table(self.proc_root)
        found = family_of(table, session=self.session, known=self.known,
                          adopter=self.adopter)
        self.known = {pid: st.start_ticks for pid, st in found.items()}
        return found

    def reap(self, members: Iterable[ProcStat] | None = None) -> int:
        """Reap the starter's own zombies among the members (orphans that ended), their
        CPU added to the job's. The root is left to the starter's wait4."""
        me = os.getpid()
        count = 0
        for st in list(members if members is not None else self.members().values()):
            if st.ppid != me or st.pid == self.root or not st.zombie:
                continue
            try:
                pid, _status, rusage = os.wait4(st.pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if pid == st.pid:
                self.reaped_user_s += rusage.ru_utime
                self.reaped_system_s += rusage.ru_stime
                self.known.pop(st.pid, None)
                count += 1
        return count

    def usage(self) -> FamilyUsage:
        members = self.members()
        ticks = os.sysconf("SC_CLK_TCK")
        page = os.sysconf("SC_PAGE_SIZE")
        live = [m for m in members.values() if not m.zombie]
        user = sum(m.utime_ticks + m.cutime_ticks for m in members.values()) / ticks
        system = sum(m.stime_ticks + m.cstime_ticks for m in members.values()) / ticks
        # summed before this scan's zombies are reaped: their time is in the table now
        # and joins reaped_* only once they are gone from it
        pss = [p for p in (pss_bytes(self.proc_root, m.pid) for m in live) if p is not None]
        out = FamilyUsage(user_s=user + self.reaped_user_s,
                          system_s=system + self.reaped_system_s,
                          rss_bytes=sum(m.rss_pages for m in live) * page, count=len(live),
                          pss_bytes=sum(pss) if pss else None)
        self.reap(members.values())
        return out

    def signal(self, sig: int) -> int:
        """Send ``sig`` to every live member; how many were signalled."""
        count = 0
        for st in self.members().values():
            if not st.zombie and _send(st.pid, sig):
                count += 1
        return count

    def _childless(self) -> bool:
        """The starter as subreaper with no child left, not even a zombie: every
        descendant's orphan would have come to it, so the job has no process (and no
        scan of /proc is needed to say so)."""
        if self.adopter is None or self.adopter != os.getpid():
            return False
        try:
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return False

    def kill_all(self, *, timeout_s: float = 10.0) -> int:
        """Freeze, then kill, every member; reap what is the starter's. Returns how many
        live members remain when the time is up (0 when the family is gone)."""
        if self._childless():
            return 0
        deadline = self.clock() + timeout_s
        freeze_until = self.clock() + timeout_s / 2
        # Freeze: until one scan finds every member halted.
        delay = 0.0005
        while self.clock() < freeze_until:
            running = [st for st in self.members().values() if st.state not in _HALTED]
            if not running:
                break
            for st in running:
                _send(st.pid, signal.SIGSTOP)
            self.sleep(delay)            # a stop takes effect when the target next runs
            delay = min(delay * 2, 0.02)
        delay = 0.0005
        while True:
            members = self.members()
            live = [st for st in members.values() if not st.zombie]
            for st in live:
                _send(st.pid, signal.SIGKILL)
            self.reap(members.values())
            if not live:
                return 0
            if self.clock() >= deadline:
                return len(live)
            self.sleep(delay)
            delay = min(delay * 2, 0.02)


def _send(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


class JobProcesses:
    """The job's processes as one thing to stop, continue, kill and sample: its cgroup
    where it has one (the kernel's view), else its family (the starter's view)."""

    def __init__(self, root: int, *, cgroup: JobCgroup | None = None,
                 family: ProcessFamily | None = None,
                 say: Callable[[str], None] = lambda _text: None) -> None:
        assert (cgroup is None) != (family is None)
        self.root = root
        self.cgroup = cgroup
        self.family = family
        self.say = say
        self.left = 0        # live processes the last kill could not end (family only)

    @property
    def kind(self) -> str:
        """``cgroup``, ``subreaper`` (orphans come to the starter) or ``session``
        (parentage, session and process group only)."""
        if self.family is None:
            return "cgroup"
        return "subreaper" if self.family.adopter is not None else "session"

    def stop(self) -> int:
        """Suspend; how many processes were stopped."""
        if self.cgroup is not None:
            npids = len(self.cgroup.pids())
            if not self.cgroup.freeze():
                self.say("the job's cgroup did not report frozen within 5 s")
            return npids
        assert self.family is not None
        return self.family.signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.cgroup is not None:
            self.cgroup.thaw()
        else:
            assert self.family is not None
            self.family.signal(signal.SIGCONT)

    def kill(self, *, root_alive: bool, timeout_s: float) -> None:
        """Kill every process of the job. ``root_alive``: the job's first process has
        not been reaped yet, so its pid is still its own to signal."""
        if self.cgroup is not None:
            self.cgroup.kill()
            return
        if root_alive:
            _send(self.root, signal.SIGKILL)
        assert self.family is not None
        left = self.left = self.family.kill_all(timeout_s=timeout_s)
        if left:
            self.say(f"{left} process(es) of the job still alive after {timeout_s:g} s "
                     "of SIGKILL sweeps")

    def leftovers(self, proc_root: str = "/proc") -> list[Leftover]:
        """The job's processes still alive after its final kill (the cgroup's, or the
        family's when the last sweep left some): what the startd is told."""
        if self.cgroup is not None:
            pids = self.cgroup.pids()
        elif self.family is not None and self.left:
            pids = [pid for pid, st in self.family.members().items() if not st.zombie]
        else:
            return []
        out = []
        for pid in sorted(set(pids)):
            st = _stat_of(proc_root, str(pid))
            if st is not None and not st.zombie:
                out.append(Leftover(pid, st.start_ticks, st.state))
        return out

    def sample(self, usage: Usage) -> CgroupSample | None:
        if self.cgroup is not None:
            sample = self.cgroup.sample()
            usage.add_cgroup(sample)
            return sample
        assert self.family is not None
        fam = self.family.usage()
        usage.add_session(fam.user_s, fam.system_s, fam.rss_bytes, fam.count,
                          pss_bytes=fam.pss_bytes)
        return None

    @property
    def reaped_user_s(self) -> float:
        return self.family.reaped_user_s if self.family is not None else 0.0

    @property
    def reaped_system_s(self) -> float:
        return self.family.reaped_system_s if self.family is not None else 0.0
