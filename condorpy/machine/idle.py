"""Owner activity: seconds since the last keyboard, terminal and console use.

The model is HTCondor's: a device's idle time is ``now - atime``; terminals are the
ttys that utmp lists for logged-in users (or every /dev/tty*, /dev/pty* and /dev/pts/*
when ``STARTD_HAS_BAD_UTMP`` is true); console devices are the ``CONSOLE_DEVICES``
(default ``mouse, console``) plus, in condorpy, the /dev/input event and mouse devices.
``ConsoleIdle`` is the minimum over console devices; ``KeyboardIdle`` the minimum over
terminals and console devices. A device that is missing or unreadable counts as never
used (idle since the epoch), as in HTCondor; so do devices that share /dev/null's major
number (null, zero, mem), which a stat of any process touches.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from condorpy.machine.roots import HostRoots

_INT_MAX = 2**31 - 1
_UTMP_RECORD = 384          # sizeof(struct utmp) on Linux (glibc, all 64-bit ABIs)
_USER_PROCESS = 7


@dataclass(frozen=True)
class IdleTimes:
    keyboard_idle: int            # KeyboardIdle
    console_idle: int | None      # ConsoleIdle; None when no console device is configured


def utmp_ttys(roots: HostRoots) -> list[str] | None:
    """The tty lines of logged-in users, or None when no utmp file can be read."""
    for path in roots.utmp:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        lines = []
        for off in range(0, len(data) - _UTMP_RECORD + 1, _UTMP_RECORD):
            (ut_type,) = struct.unpack_from("<h", data, off)
            if ut_type != _USER_PROCESS:
                continue
            raw = data[off + 8: off + 40].split(b"\0", 1)[0]
            line = raw.decode("ascii", "replace")
            if line:
                lines.append(line)
        return lines
    return None


def all_ttys(roots: HostRoots) -> list[str]:
    names: list[str] = []
    try:
        names.extend(sorted(n for n in os.listdir(roots.dev) if n.startswith(("tty", "pty"))))
    except OSError:
        pass
    pts = roots.dev / "pts"
    if pts.is_dir():
        try:
            names.extend(f"pts/{n}" for n in sorted(os.listdir(pts)))
        except OSError:
            pass
    return names


def input_devices(roots: HostRoots) -> list[str]:
    """/dev/input event devices and mice, relative to the dev root."""
    inp = roots.dev / "input"
    try:
        entries = sorted(os.listdir(inp))
    except OSError:
        return []
    return [f"input/{n}" for n in entries if n.startswith(("event", "mouse", "mice"))]


class _DeviceClock:
    """atime-based idle seconds of devices under one /dev root."""

    def __init__(self, roots: HostRoots, now: int) -> None:
        self.dev = roots.dev
        self.now = now
        try:
            st = os.stat(roots.dev / "null")
            self.null_major: int | None = (os.major(st.st_rdev)
                                           if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                                           else None)
        except OSError:
            self.null_major = None

    def idle(self, name: str) -> int:
        if not name or name.startswith("unix:"):
            return self.now
        name = name.removeprefix("/dev/")
        try:
            st = os.stat(self.dev / name)
            atime = int(st.st_atime)
        except OSError:
            atime = 0
        else:
            is_dev = stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            if atime and is_dev and self.null_major is not None and os.major(st.st_rdev) == self.null_major:
                atime = 0
        if atime > self.now:
            return 0
        return self.now - atime


@dataclass(frozen=True)
class OwnerDevices:
    """The devices whose use is the owner's activity, relative to the dev root."""

    ttys: tuple[str, ...]           # KeyboardIdle's terminals
    consoles: tuple[str, ...]       # ConsoleIdle's devices (also KeyboardIdle's)


def owner_devices(roots: HostRoots, console_devices: Iterable[str] = ("mouse", "console"),
                  bad_utmp: bool = False, include_input: bool = True) -> OwnerDevices:
    ttys = all_ttys(roots) if bad_utmp else utmp_ttys(roots)
    consoles = [d.removeprefix("/dev/") for d in console_devices if d]
    if include_input:
        consoles += [d for d in input_devices(roots) if d not in consoles]
    return OwnerDevices(tuple(ttys or ()), tuple(consoles))


def null_like(roots: HostRoots, name: str) -> bool:
    """A device sharing /dev/null's major number (null, zero, mem): any process's stat
    touches it, so it never counts as the owner's."""
    try:
        null, st = os.stat(roots.dev / "null"), os.stat(roots.dev / name)
    except OSError:
        return False
    return all(stat.S_ISCHR(s.st_mode) or stat.S_ISBLK(s.st_mode) for s in (null, st)) and \
        os.major(st.st_rdev) == os.major(null.st_rdev)


def measure_idle(roots: HostRoots, console_devices: Iterable[str] = ("mouse", "console"),
                 bad_utmp: bool = False, include_input: bool = True) -> IdleTimes:
    now = int(roots.clock())
    clock = _DeviceClock(roots, now)
    devices = owner_devices(roots, console_devices, bad_utmp, include_input)
    keyboard = _INT_MAX
    for tty in devices.ttys:
        keyboard = min(keyboard, clock.idle(tty))

    consoles = devices.consoles
    console: int | None = None
    for dev in consoles:
        t = clock.idle(dev)
        console = t if console is None else min(console, t)

    # HTCondor also folds in "now - last X event", which is `now` without a kbdd
    keyboard = min(keyboard, now)
    if console is not None:
        keyboard = min(keyboard, console)
    return IdleTimes(keyboard, console)


def slot_idle(idle: IdleTimes, connected: bool, startd_started: float, now: float,
              boost: int) -> IdleTimes:
    """What a slot not connected to the keyboard/console reports (SLOTS_CONNECTED_TO_*).

    Such a slot sees no owner activity: its idle time runs from the startd's start,
    plus DISCONNECTED_KEYBOARD_IDLE_BOOST seconds.
    """
    if connected:
        return idle
    since = max(int(now - startd_started), 0) + boost
    return IdleTimes(since, since)
