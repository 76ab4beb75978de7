"""A local job's file transfer: the daemon is the job's schedd and shadow, so its files
are copied between the submitter's Iwd and the job's scratch directory on this machine.

Root never opens a path on either side. Each copy is two children joined by a pipe: a
reader that has become the account whose files are read (the submitter for input, the
job's user for output) streams the entries, and a writer that has become the account
whose directory is written (the job's user for input, the submitter for output)
creates them. Whatever either could reach, its account could reach without condorpy.
The children report what they moved and what failed on a second pipe; the starter
turns a failure into the hold HTCondor's shadow would give
(:mod:`condorpy.starter.transferlist`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from condorpy.starter import safefs
from condorpy.starter.transferlist import Source
from condorpy.starter.users import JobUser

Ids = tuple[int, int, tuple[int, ...]]
CHUNK = 1 << 20


@dataclass
class CopyResult:
    copied: list[str] = field(default_factory=list)
    # (path, errno, on the writing side)
    failures: list[tuple[str, int, bool]] = field(default_factory=list)


def _become(ids: Ids | None, keep: tuple[int, ...]) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGCHLD,
                signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)
    if ids is not None and os.geteuid() == 0:
        uid, gid, groups = ids
        os.setgroups(list(groups))
        os.setgid(gid)
        os.setuid(uid)


def _header(out: BinaryIO, record: dict[str, object]) -> None:
    out.write(json.dumps(record).encode() + b"\n")


def _send_file(out: BinaryIO, path: str, name: str, executable: str | None) -> None:
    try:
        # O_NONBLOCK: a FIFO named as input must not hang the transfer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        _header(out, {"fail": path, "errno": exc.errno or 5})
        return
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _header(out, {"fail": path, "errno": 21 if stat.S_ISDIR(st.st_mode) else 22})
            return
        os.set_blocking(fd, True)
        mode = 0o755 if name == executable else (st.st_mode & 0o777)
        _header(out, {"file": name, "mode": mode, "size": st.st_size})
        left = st.st_size
        while left > 0:
            chunk = fh.read(min(CHUNK, left))
            if not chunk:
                # the file shrank while read: the promised size is kept
                chunk = b"\0" * min(CHUNK, left)
            out.write(chunk)
            left -= len(chunk)


def _walk(out: BinaryIO, path: str, name: str, executable: str | None) -> None:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        _header(out, {"fail": path, "errno": exc.errno or 5})
        return
    for entry in entries:
        wire = f"{name}/{entry.name}" if name else entry.name
        if entry.is_dir(follow_symlinks=False):
            _header(out, {"dir": wire})
            _walk(out, entry.path, wire, None)
        elif entry.is_file(follow_symlinks=True):
            _send_file(out, entry.path, wire, None)


def _read(out: BinaryIO, items: list[Source], executable: str | None) -> None:
    for src in items:
        try:
            st = os.stat(src.path)
        except OSError as exc:
            _header(out, {"fail": src.path, "errno": exc.errno or 5})
            continue
        if stat.S_ISDIR(st.st_mode):
            if not src.contents_only:
                _header(out, {"dir": src.name})
            _walk(out, src.path, src.name, None)
        else:
            _send_file(out, src.path, src.name, executable)
    _header(out, {"end": 1})


def _records(inp: BinaryIO) -> Iterator[dict[str, object]]:
    while True:
        line = inp.readline()
        if not line:
            return
        record = json.loads(line)
        if not isinstance(record, dict) or "end" in record:
            return
        yield record


def _write(inp: BinaryIO, report: BinaryIO, dest: Callable[[str], str]) -> None:
    for rec in _records(inp):
        if "fail" in rec:
            _header(report, {"fail": rec["fail"], "errno": rec["errno"], "writing": False})
        elif "dir" in rec:
            path = dest(str(rec["dir"]))
            try:
                os.makedirs(path, 0o755, exist_ok=True)
                _header(report, {"ok": rec["dir"]})
            except OSError as exc:
                _header(report, {"fail": path, "errno": exc.errno or 5, "writing": True})
        elif "file" in rec:
            size = int(str(rec["size"]))
            path = dest(str(rec["file"]))
            try:
                # never blocks on a FIFO put where an output goes
                fd: int | None = safefs.open_regular(
                    path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600, follow=True)
            except OSError as exc:
                fd = None
                _header(report, {"fail": path, "errno": exc.errno or 5, "writing": True})
            left = size
            while left > 0:
                chunk = inp.read(min(CHUNK, left))
                if not chunk:
                    raise EOFError("the reader ended inside a file")
                left -= len(chunk)
                if fd is not None:
                    os.write(fd, chunk)
            if fd is not None:
                os.fchmod(fd, int(str(rec["mode"])))
                os.close(fd)
                _header(report, {"ok": rec["file"]})
        report.flush()


def _child(run: Callable[[], None], ids: Ids | None, keep: tuple[int, ...],
           cwd: int | None = None) -> int:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _become(ids, keep)
            if cwd is not None:
                os.fchdir(cwd)
            run()
            code = 0
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    return pid


def copy_as(items: list[Source], *, reader: Ids | None, writer: Ids | None,
            dest: Callable[[str], str], executable: str | None = None,
            reader_cwd: int | None = None, writer_cwd: int | None = None) -> CopyResult:
    """Copy ``items`` (read as ``reader``) to ``dest(name)`` (written as ``writer``);
    ``None`` stays this process's own account. The file named ``executable`` arrives
    executable, as HTCondor makes it. ``reader_cwd`` and ``writer_cwd``: directory
    descriptors a side works in, for relative paths."""
    data_r, data_w = os.pipe()
    rep_r, rep_w = os.pipe()

    def read_side() -> None:
        with os.fdopen(data_w, "wb", buffering=CHUNK) as out:
            _read(out, items, executable)

    def write_side() -> None:
        with os.fdopen(data_r, "rb", buffering=CHUNK) as inp, \
                os.fdopen(rep_w, "wb") as report:
            _write(inp, report, dest)

    pids = []
    try:
        keep_r = (data_w,) if reader_cwd is None else (data_w, reader_cwd)
        keep_w = (data_r, rep_w) if writer_cwd is None else (data_r, rep_w, writer_cwd)
        pids.append(_child(read_side, reader, keep_r, reader_cwd))
        pids.append(_child(write_side, writer, keep_w, writer_cwd))
    finally:
        for fd in (data_r, data_w, rep_w):
            os.close(fd)
    result = CopyResult()
    with os.fdopen(rep_r, "rb") as report:
        for line in report:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "ok" in rec:
                result.copied.append(str(rec["ok"]))
            elif "fail" in rec:
                result.failures.append((str(rec["fail"]), int(rec["errno"]),
                                        bool(rec["writing"])))
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    if any(os.waitstatus_to_exitcode(s) != 0 for s in statuses) and not result.failures:
        result.failures.append(("(the copy ended early)", 5, True))
    return result


def intermediate_dir(path: str, owner: JobUser) -> int | None:
    """A descriptor of the job's spool directory for ON_EXIT_OR_EVICT, made by root in
    the daemon's own job directory (no user can write there) and given to the
    submitter, 0700; one that is a link or another account's is not used. The copies
    reach it through the descriptor (their working directory), so the submitter needs
    no way into the daemon's SPOOL."""
    uid = owner.uid if owner.switch else os.geteuid()
    try:
        os.mkdir(path, 0o700)
        if owner.switch:
            os.chown(path, owner.uid, owner.gid, follow_symlinks=False)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if os.fstat(fd).st_uid != uid:
        os.close(fd)
        return None
    return fd


def empty_as(ids: Ids | None, dir_fd: int) -> None:
    """Remove what is in the directory open as ``dir_fd``, as ``ids`` (the
    submitter's spooled files)."""
    def run() -> None:
        for entry in os.scandir("."):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.name, ignore_errors=True)
            else:
                os.unlink(entry.name)
    os.waitpid(_child(run, ids, (dir_fd,), cwd=dir_fd), 0)
