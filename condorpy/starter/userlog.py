"""The job event log (``StarterUserLog``) in HTCondor's text format.

Each event is ``NNN (cluster.proc.subproc) YYYY-MM-DD HH:MM:SS text``, indented detail
lines and a ``...`` terminator; ``htcondor2.JobEventLog`` reads it back. Times are
local, as HTCondor writes them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum

from condorpy.starter import safefs
from condorpy.starter.libc import check, libc


class Event(IntEnum):
    SUBMIT = 0
    EXECUTE = 1
    EVICTED = 4
    TERMINATED = 5
    IMAGE_SIZE = 6
    SUSPENDED = 10
    UNSUSPENDED = 11
    ABORTED = 9
    HELD = 12
    RELEASED = 13


def usage_text(seconds: float) -> str:
    """``Usr D HH:MM:SS`` style span."""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days} {hours:02d}:{minutes:02d}:{secs:02d}"


def _usage_line(user: float, system: float, label: str) -> str:
    return f"\t\tUsr {usage_text(user)}, Sys {usage_text(system)}  -  {label}\n"


def _open_log(path: str) -> int:
    return safefs.open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


# setgroups, setresuid, setresgid: the raw system calls, which change the calling
# thread's credentials only (glibc's wrappers change every thread's)
_THREAD_CALLS = {"x86_64": (116, 117, 119), "aarch64": (159, 147, 149)}
_KEEP = 0xFFFFFFFF          # (uid_t) -1: leave this id as it is


def _syscall(number: int, *args: object) -> None:
    check(libc().syscall(ctypes.c_long(number), *args))


@contextmanager
def _thread_ids(uid: int, gid: int, groups: tuple[int, ...]) -> Iterator[None]:
    """This thread alone takes the user's effective ids and groups, then root's back."""
    setgroups, setresuid, setresgid = _THREAD_CALLS[platform.machine()]
    saved, saved_gid = os.getgroups(), os.getegid()

    def groups_of(ids: list[int] | tuple[int, ...]) -> tuple[ctypes.c_size_t, object]:
        return ctypes.c_size_t(len(ids)), (ctypes.c_uint * max(1, len(ids)))(*ids)

    _syscall(setgroups, *groups_of(groups))
    try:
        _syscall(setresgid, ctypes.c_uint(_KEEP), ctypes.c_uint(gid), ctypes.c_uint(_KEEP))
        try:
            _syscall(setresuid, ctypes.c_uint(_KEEP), ctypes.c_uint(uid),
                     ctypes.c_uint(_KEEP))
            try:
                yield
            finally:
                _syscall(setresuid, ctypes.c_uint(_KEEP), ctypes.c_uint(0),
                         ctypes.c_uint(_KEEP))
        finally:
            _syscall(setresgid, ctypes.c_uint(_KEEP), ctypes.c_uint(saved_gid),
                     ctypes.c_uint(_KEEP))
    finally:
        _syscall(setgroups, *groups_of(saved))


def _open_in_child(path: str, ids: tuple[int, int, tuple[int, ...]]) -> int:
    """The log opened by a forked child that has become the user, its descriptor
    passed back over a socket pair; the child's errno comes back if it failed."""
    uid, gid, groups = ids
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            ours.close()
            try:
                os.setgroups(list(groups))
                os.setgid(gid)
                os.setuid(uid)
                fd = _open_log(path)
                socket.send_fds(theirs, [b"ok"], [fd])
            except safefs.NotRegularFile as exc:
                theirs.sendall(f"kind {exc.kind}".encode())
            except OSError as exc:
                theirs.sendall(f"errno {exc.errno or errno.EIO}".encode())
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    try:
        msg, fds, _flags, _addr = socket.recv_fds(ours, 256, 1)
    finally:
        ours.close()
        os.waitpid(pid, 0)
    if fds:
        return fds[0]
    word, _, value = msg.decode(errors="replace").partition(" ")
    if word == "kind":
        raise safefs.NotRegularFile(path, value)
    code = int(value) if word == "errno" and value.isdigit() else errno.EIO
    raise OSError(code, os.strerror(code), path)


@dataclass
class UserLog:
    """Writes to an already opened descriptor: the starter opens the log with the job
    user's credentials, so root never creates or follows a path on the user's behalf."""
    fd: int
    cluster: int
    proc: int
    wall: Callable[[], float] = time.time

    @classmethod
    def open(cls, path: str, cluster: int, proc: int, *, uid: int | None = None,
             gid: int | None = None, groups: tuple[int, ...] | None = None,
             wall: Callable[[], float] = time.time) -> UserLog:
        """Open (create) the log as the job's user when the caller is root: its ids and
        its supplementary groups (``groups``, else its primary group alone), so that the
        open reaches only what the user could. The log must be a regular file, not a
        link: a FIFO would block the opener, a device is no log. Raises OSError
        (:class:`~condorpy.starter.safefs.NotRegularFile` for those)."""
        as_user = uid is not None and gid is not None and os.geteuid() == 0
        if not as_user:
            return cls(_open_log(path), cluster, proc, wall)
        assert uid is not None and gid is not None
        ids = (uid, gid, tuple(groups) if groups is not None else (gid,))
        if threading.active_count() > 1:
            # glibc changes ids in every thread: another thread (a pool file transfer,
            # the metrics server) must not run as the user meanwhile. The kernel's
            # ids are per thread, so switch this thread's alone; where the system
            # call numbers are unknown, a child opens the log and hands it over.
            if _THREAD_CALLS.get(platform.machine()) is None:
                return cls(_open_in_child(path, ids), cluster, proc, wall)
            with _thread_ids(*ids):
                return cls(_open_log(path), cluster, proc, wall)
        saved = (os.getegid(), os.geteuid(), os.getgroups())
        try:
            os.setgroups(list(ids[2]))
            os.setegid(gid)
            os.seteuid(uid)
            fd = _open_log(path)
        finally:
            os.seteuid(saved[1])
            os.setegid(saved[0])
            os.setgroups(saved[2])
        return cls(fd, cluster, proc, wall)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _write(self, event: Event, headline: str, body: str = "") -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.wall()))
        text = (f"{int(event):03d} ({self.cluster:03d}.{self.proc:03d}.000) {stamp} "
                f"{headline}\n{body}...\n")
        # One write per event with O_APPEND, so concurrent writers never interleave.
        os.write(self.fd, text.encode())

    def submitted(self, host: str) -> None:
        self._write(Event.SUBMIT, f"Job submitted from host: <{host}>")

    def aborted(self, reason: str) -> None:
        self._write(Event.ABORTED, "Job was aborted.", f"\t{reason}\n")

    def released(self, reason: str) -> None:
        self._write(Event.RELEASED, "Job was released.", f"\t{reason}\n")

    def execute(self, host: str, slot_name: str) -> None:
        self._write(Event.EXECUTE, f"Job executing on host: <{host}>",
                    f"\tSlotName: {slot_name}\n")

    def image_size(self, image_kb: int, memory_mb: int, rss_kb: int) -> None:
        self._write(Event.IMAGE_SIZE, f"Image size of job updated: {image_kb}",
                    f"\t{memory_mb}  -  MemoryUsage of job (MB)\n"
                    f"\t{rss_kb}  -  ResidentSetSize of job (KB)\n")

    def suspended(self, npids: int) -> None:
        self._write(Event.SUSPENDED, "Job was suspended.",
                    f"\tNumber of processes actually suspended: {npids}\n")

    def unsuspended(self) -> None:
        self._write(Event.UNSUSPENDED, "Job was unsuspended.")

    def held(self, reason: str, code: int, subcode: int) -> None:
        reason = " ".join(reason.split())
        self._write(Event.HELD, "Job was held.",
                    f"\t{reason}\n\tCode {code} Subcode {subcode}\n")

    def evicted(self, user: float, system: float) -> None:
        self._write(Event.EVICTED, "Job was evicted.",
                    "\t(0) Job was not checkpointed.\n"
                    + _usage_line(user, system, "Run Remote Usage")
                    + _usage_line(0, 0, "Run Local Usage")
                    + "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n")

    def terminated(self, *, exit_code: int | None, signal: int | None, user: float,
                   system: float) -> None:
        if signal is None:
            head = f"\t(1) Normal termination (return value {exit_code})\n"
        else:
            head = f"\t(0) Abnormal termination (signal {signal})\n\t(0) No core file\n"
        body = (head
                + _usage_line(user, system, "Run Remote Usage")
                + _usage_line(0, 0, "Run Local Usage")
                + _usage_line(user, system, "Total Remote Usage")
                + _usage_line(0, 0, "Total Local Usage")
                + "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"
                + "\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n")
        self._write(Event.TERMINATED, "Job terminated.", body)
