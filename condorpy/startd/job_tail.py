"""Reading a running job's standard output or error for ``condorpy tail``.

The daemon runs as root and the job's files are the job's: root must read only what
the job itself writes, never a file a user named or linked. So the file is not found
by a path at all: it is the very file the job holds open as descriptor 1 (or 2),
reopened through ``/proc/<pid>/fd/<n>`` below a descriptor of ``/proc/<pid>`` that
pins the process. That process must still be the job (a child of its starter: a pid
reused by another process has another parent), and the file it holds must be a
regular file owned by the job's own user, which that user can read in any case (a
job that points its stdout at a file it may only write gets nothing back). A pipe, a
terminal or ``/dev/null`` is refused before a byte is read.
"""

from __future__ import annotations

import base64
import errno
import os
import stat
from dataclasses import dataclass

from condorpy.errors import StartdError

DEFAULT_MAXBYTES = 1024          # condor_tail's default
MAX_MAXBYTES = 1 << 20           # one reply's worth, whatever is asked


class TailError(StartdError):
    """The job's output cannot be read (the message says why, for its owner)."""


@dataclass(frozen=True)
class Chunk:
    """Bytes of the file from ``start``; ``offset`` is where the next read begins."""

    data: bytes
    start: int
    offset: int
    size: int

    def to_wire(self) -> dict[str, object]:
        return {"data": base64.b64encode(self.data).decode("ascii"), "start": self.start,
                "offset": self.offset, "size": self.size}


def _ppid(pid_fd: int) -> int:
    fd = os.open("stat", os.O_RDONLY | os.O_CLOEXEC, dir_fd=pid_fd)
    try:
        text = os.read(fd, 4096).decode("ascii", "replace")
    finally:
        os.close(fd)
    # the command name may hold spaces and parentheses: fields follow the last ')'
    return int(text.rpartition(")")[2].split()[1])


def open_stream(pid: int, starter_pid: int, which: int, *, proc: str = "/proc") -> int:
    """A read-only descriptor of the file job process ``pid`` (a child of
    ``starter_pid``) holds as descriptor ``which`` (1: stdout, 2: stderr)."""
    name = "stdout" if which == 1 else "stderr"
    try:
        pid_fd = os.open(f"{proc}/{int(pid)}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise TailError("the job's process has ended") from None
    try:
        try:
            if _ppid(pid_fd) != starter_pid:
                raise TailError("the job's process has ended")
            job_uid = os.fstat(pid_fd).st_uid
            # the magic link is followed on purpose: it names no path, only the open
            # file; O_NONBLOCK so that a FIFO is refused, not waited on
            fd = os.open(f"fd/{which}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=pid_fd)
        except (OSError, ValueError, IndexError) as exc:
            if isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.ESRCH):
                raise TailError(f"the job has no {name} open") from None
            raise TailError(f"cannot open the job's {name}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    finally:
        os.close(pid_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TailError(f"the job's {name} is not a file")
        if st.st_uid != job_uid:
            raise TailError(f"the job's {name} is not a file of the job's user")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_chunk(fd: int, offset: int | None, maxbytes: int) -> Chunk:
    """At most ``maxbytes`` of the file: its last ones when ``offset`` is None (the
    first look), else from ``offset`` on (following). A file that shrank below
    ``offset`` was truncated: reading starts again at its beginning."""
    maxbytes = max(1, min(maxbytes, MAX_MAXBYTES))
    size = os.fstat(fd).st_size
    if offset is None:
        start = max(0, size - maxbytes)
    else:
        start = 0 if offset > size else max(0, offset)
    data = os.pread(fd, min(maxbytes, max(0, size - start)), start)
    return Chunk(data, start, start + len(data), size)


def tail(pid: int, starter_pid: int, which: int, offset: int | None, maxbytes: int, *,
         proc: str = "/proc") -> Chunk:
    fd = open_stream(pid, starter_pid, which, proc=proc)
    try:
        return read_chunk(fd, offset, maxbytes)
    finally:
        os.close(fd)
