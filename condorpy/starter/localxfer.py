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
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.jobspec import JobSpec
from condorpy.starter.transferlist import LocalPlan, Source, When, catalog, input_failure, \
    output_failure, sources
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


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
                    try:
                        _write_all(fd, chunk)
                    except OSError as exc:      # a full disk, a quota: the rest is read
                        os.close(fd)
                        fd = None
                        _header(report, {"fail": path, "errno": exc.errno or 5,
                                         "writing": True})
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


def _ids(user: JobUser) -> Ids | None:
    return (user.uid, user.gid, user.groups) if user.switch else None


class LocalTransfer:
    """One local job's files, from its input to its output: what the starter of a job
    of the daemon's own queue does as that job's shadow (``docs/starter.md``, "File
    transfer for local jobs")."""

    def __init__(self, plan: LocalPlan, scratch: str, *, submitter: JobUser,
                 user: JobUser, access_point: str, slot: str, job_id: str,
                 spool: str | None) -> None:
        self.plan = plan
        self.scratch = scratch
        self.submitter = submitter
        self.user = user
        self.access_point = access_point
        self.slot = slot
        self.job_id = job_id
        self.spool_path = spool
        self.spool: int | None = None          # ON_EXIT_OR_EVICT's intermediate files
        self.spooled: frozenset[str] = frozenset()
        self.before: dict[str, tuple[int, int]] = {}

    def _hold(self, reason: str, code: int, subcode: int) -> JobHold:
        return JobHold(reason, HoldCode(code), subcode, job=self.job_id)

    def bring_in(self, job: JobSpec) -> JobSpec:
        """The input copied from the submitter's Iwd into the scratch directory (read
        as the submitter, written as the job's user), with what an eviction spooled;
        the job as it runs there. Raises JobHold (TransferInputError)."""
        plan, sub = self.plan, self.submitter
        items = sources(list(plan.inputs), plan.iwd)
        if plan.when is When.ON_EXIT_OR_EVICT and self.spool_path:
            self.spool = intermediate_dir(self.spool_path, sub)
            if self.spool is not None:
                self.spooled = frozenset(os.listdir(self.spool))
                if self.spooled:
                    # the reader works in the spool directory: "." is its descriptor
                    items.append(Source(".", "", contents_only=True))
        result = copy_as(items, reader=_ids(sub), writer=_ids(self.user),
                         dest=lambda name: os.path.join(self.scratch, name),
                         executable=plan.executable,
                         reader_cwd=self.spool if self.spooled else None)
        if result.failures:
            path, err, writing = result.failures[0]
            f = input_failure(path, err, access_point=self.access_point, slot=self.slot,
                              writing=writing)
            raise self._hold(f.reason, f.code, f.subcode)
        self.before = catalog(self.scratch, regular_only=True)
        return plan.job_in_scratch(job, self.scratch)

    def send_out(self, *, final: bool) -> JobHold | None:
        """The output copied back to Iwd (remapped), read as the job's user and written
        as the submitter; what can be copied is, and the first failure is the hold
        returned (TransferOutputError). At an eviction (``final`` false) it goes to
        the job's spool directory instead, and nothing missing is a failure."""
        plan, sub, user = self.plan, self.submitter, self.user
        after = catalog(self.scratch, regular_only=True)
        srcs = plan.output_sources(self.scratch, self.before, after, spooled=self.spooled,
                                   final=final)
        if not final:
            if self.spool is not None:
                copy_as(srcs, reader=_ids(user), writer=_ids(sub), dest=lambda name: name,
                        writer_cwd=self.spool)
            return None
        result = copy_as(srcs, reader=_ids(user), writer=_ids(sub), dest=plan.destination)
        if not result.failures:
            if self.spool is not None and self.spooled:
                empty_as(_ids(sub), self.spool)
            return None
        path, err, writing = result.failures[0]
        f = output_failure(path, err, access_point=self.access_point, slot=self.slot,
                           writing=writing)
        return self._hold(f.reason, f.code, f.subcode)

    def close(self) -> None:
        if self.spool is not None:
            os.close(self.spool)
            self.spool = None
