"""The owner's keystrokes as they happen: inotify on the devices whose use is owner
activity, so the policy hears of a keystroke at once instead of at the next probe.

A terminal's or input device's atime, which KeyboardIdle is measured from, is coarse:
the kernel updates a tty's times at most once every 8 seconds (so that they do not leak
keystroke timing), and the probe reads them once a second. inotify reports each read
of the device (``IN_ACCESS``: the shell or the X server taking the owner's input) when
it happens. Writes (a job's output to a terminal) are not the owner's and are not
watched. The directories that hold the devices (``/dev/pts``, ``/dev/input``) and the
utmp file are watched for changes that alter the set: a login, a new pty, a hot-plugged
keyboard.

The event parser is pure (:func:`parse_events`); :class:`InputWatch` is the thin shell
over the inotify descriptor, through ctypes (the standard library has no inotify).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from condorpy.machine.idle import OwnerDevices, null_like
from condorpy.machine.roots import HostRoots

IN_ACCESS = 0x001
IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_IGNORED = 0x8000
IN_Q_OVERFLOW = 0x4000
_HEADER = struct.Struct("iIII")     # wd, mask, cookie, len (struct inotify_event)

DEVICE_EVENTS = IN_ACCESS
SET_EVENTS = IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MODIFY


def parse_events(buf: bytes) -> list[tuple[int, int]]:
    """(watch descriptor, mask) of each event in a read of the inotify descriptor; a
    torn tail (never produced by the kernel) is dropped."""
    out = []
    off = 0
    while off + _HEADER.size <= len(buf):
        wd, mask, _cookie, length = _HEADER.unpack_from(buf, off)
        off += _HEADER.size + length
        if off > len(buf):
            break
        out.append((wd, mask))
    return out


@dataclass(frozen=True)
class Seen:
    keyboard: bool = False      # a terminal or console device was used
    console: bool = False       # a console device was used (ConsoleIdle too)
    changed: bool = False       # the set of devices may have changed: list them again


class InputWatch:
    """One inotify descriptor following the owner's devices."""

    def __init__(self, fd: int, libc: ctypes.CDLL) -> None:
        self.fd = fd
        self.libc = libc
        self.kinds: dict[int, str] = {}          # wd -> "tty", "console" or "set"
        self.paths: dict[Path, int] = {}

    @classmethod
    def open(cls) -> InputWatch | None:
        """None where inotify is not to be had (the probe's polling still works)."""
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(fd, libc) if fd >= 0 else None

    def fileno(self) -> int:
        return self.fd

    def follow(self, ttys: Iterable[Path], consoles: Iterable[Path],
               sets: Iterable[Path]) -> None:
        """Watch exactly these: terminals, console devices, and the files and
        directories whose change alters the set. A path that cannot be watched
        (missing, not permitted) is left to the probe's polling."""
        wanted: dict[Path, str] = {p: "set" for p in sets}
        wanted.update({p: "tty" for p in ttys})
        wanted.update({p: "console" for p in consoles})
        for path in [p for p in self.paths if p not in wanted]:
            self._drop(path)
        for path, kind in wanted.items():
            wd = self.paths.get(path)
            if wd is not None and self.kinds.get(wd) == kind:
                continue
            mask = SET_EVENTS if kind == "set" else DEVICE_EVENTS
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
            if wd < 0:
                continue
            self.paths[path] = wd
            self.kinds[wd] = kind

    def _drop(self, path: Path) -> None:
        wd = self.paths.pop(path)
        if self.kinds.pop(wd, None) is not None and wd not in self.paths.values():
            self.libc.inotify_rm_watch(self.fd, wd)

    def drain(self) -> Seen:
        """What happened since the last call (all pending events read)."""
        keyboard = console = changed = False
        while True:
            try:
                buf = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                break
            if not buf:
                break
            for wd, mask in parse_events(buf):
                if mask & IN_Q_OVERFLOW:
                    keyboard = changed = True       # lost events: assume the owner
                    continue
                kind = self.kinds.get(wd)
                if mask & (IN_IGNORED | IN_DELETE_SELF):
                    changed = True
                    if mask & IN_IGNORED:
                        self.kinds.pop(wd, None)
                        for path in [p for p, w in self.paths.items() if w == wd]:
                            del self.paths[path]
                    continue
                if kind == "set":
                    changed = True
                elif kind is not None and mask & IN_ACCESS:
                    keyboard = True
                    console = console or kind == "console"
        return Seen(keyboard, console, changed)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class OwnerWatch:
    """An :class:`InputWatch` kept on the devices the configuration names (what
    ``devices()`` lists: CONSOLE_DEVICES, STARTD_HAS_BAD_UTMP), refreshed when the set
    may have changed."""

    def __init__(self, watch: InputWatch, devices: Callable[[], OwnerDevices],
                 roots: HostRoots) -> None:
        self.watch = watch
        self.devices = devices
        self.roots = roots

    def fileno(self) -> int:
        return self.watch.fileno()

    def refresh(self) -> None:
        found = self.devices()
        dev = self.roots.dev

        def paths(names: Iterable[str]) -> list[Path]:
            return [dev / n for n in names
                    if n and not n.startswith("unix:") and not null_like(self.roots, n)]

        self.watch.follow(paths(found.ttys), paths(found.consoles),
                          [dev / "pts", dev / "input", *self.roots.utmp])

    def drain(self) -> Seen:
        seen = self.watch.drain()
        if seen.changed:
            self.refresh()
        return seen

    def close(self) -> None:
        self.watch.close()
