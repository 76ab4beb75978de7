"""Tracking a job without cgroups: by its session and process group, from /proc.

Best effort, as in HTCondor without cgroups: a process that leaves the session
(setsid after a double fork) escapes.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    pgrp: int
    session: int
    utime_ticks: int
    stime_ticks: int
    rss_pages: int


def parse_stat(text: str) -> ProcStat:
    """One /proc/<pid>/stat line; the command name may contain spaces and parentheses."""
    pid_text, _, rest = text.partition(" (")
    fields = rest.rpartition(") ")[2].split()
    # fields[0] is the state (field 3 of the man page).
    return ProcStat(pid=int(pid_text), ppid=int(fields[1]), pgrp=int(fields[2]),
                    session=int(fields[3]), utime_ticks=int(fields[11]),
                    stime_ticks=int(fields[12]), rss_pages=int(fields[21]))


def session_members(proc_root: str, session: int) -> list[ProcStat]:
    """Every process in the session or process group. Reads raw bytes and parses only
    the matches: this runs at every job's end and must stay cheap on a busy host."""
    found: list[ProcStat] = []
    try:
        names = os.listdir(proc_root)
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"{proc_root}/{name}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            raw = os.read(fd, 1024)
        except OSError:
            continue
        finally:
            os.close(fd)
        fields = raw.rpartition(b") ")[2].split(None, 4)
        try:
            if int(fields[2]) != session and int(fields[3]) != session:
                continue
            found.append(parse_stat(raw.decode(errors="replace")))
        except (ValueError, IndexError):
            continue
    return found


def kill_session(proc_root: str, session: int, sig: int) -> int:
    """Signal the job's process group, then every straggler of its session."""
    count = 0
    try:
        os.killpg(session, sig)
        count += 1
    except (ProcessLookupError, PermissionError):
        pass
    for st in session_members(proc_root, session):
        try:
            os.kill(st.pid, sig)
            count += 1
        except (ProcessLookupError, PermissionError):
            pass
    return count


def session_usage(proc_root: str, session: int) -> tuple[float, float, int, int]:
    """(user seconds, system seconds, RSS bytes, process count) of the live session."""
    ticks = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    members = session_members(proc_root, session)
    user = sum(m.utime_ticks for m in members) / ticks
    system = sum(m.stime_ticks for m in members) / ticks
    rss = sum(m.rss_pages for m in members) * page
    return user, system, rss, len(members)


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)
