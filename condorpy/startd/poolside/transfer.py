"""A pool job's files: its scratch directory, the input sandbox before it runs and the
output sandbox after (``docs/pool.md``, "File transfer"; the protocol is
:mod:`condorpy.pool.filetransfer`).

A job that transfers files (``ShouldTransferFiles`` YES, or IF_NEEDED from another
``FILESYSTEM_DOMAIN``) runs in ``EXECUTE/dir_pool_<n>`` (its ``Iwd`` and
``_CONDOR_SCRATCH_DIR``), with its stdout and stderr in ``_condor_stdout`` and
``_condor_stderr`` there, which the shadow maps back to ``Out`` and ``Err``. The
daemon makes the directory, fills it, hands it to the starter (which gives it to the
job's user and leaves it), sends the outputs and removes it.

Each transfer runs on a thread of its own over a blocking connection: a 200 MB
sandbox is seconds of socket and AES work, and the daemon's event loop (policy
cycle, other claims, collector updates) must not wait for it. The thread touches
nothing of the daemon's: it owns its socket and the scratch directory, and when it
ends it writes one byte to a pipe the event loop watches; the loop then reads its
outcome. A process per transfer would isolate as well but would have to be handed
the session key and the job ad; a thread shares them read-only at no cost.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError, PoolError
from condorpy.pool import filetransfer as ft
from condorpy.pool.connection import Connection
from condorpy.pool.security import Op, resume
from condorpy.pool.shadow import SessionInfo
from condorpy.pool.sharedport import CCB_REFUSAL
from condorpy.pool.sinful import parse_address
from condorpy.starter import safefs, transferlist
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR, Sandbox, remove_sandbox

log = logging.getLogger("condorpy.startd.pool")

WAIT_TIMEOUT = 320.0       # a wait for the shadow: its go-ahead can be queued 300 s
SKIPPED = transferlist.SKIPPED


def _text(ad: ClassAd, name: str) -> str:
    v = ad.evaluate(name)
    return v if isinstance(v, str) else ""


def _flag(ad: ClassAd, name: str, default: bool) -> bool:
    v = ad.evaluate(name)
    return v if isinstance(v, bool) else default


def wants_transfer(ad: ClassAd, filesystem_domain: str) -> bool:
    """Whether the job's files travel (``JICShadow::initFileTransfer``): YES always,
    IF_NEEDED when the job comes from another file system domain, NO never; and only
    when the shadow named its transfer server."""
    how = _text(ad, "ShouldTransferFiles").upper()
    if not _text(ad, "TransferSocket") or not _text(ad, "TransferKey"):
        return False
    if how == "YES":
        return True
    if how == "IF_NEEDED":
        return _text(ad, "FileSystemDomain").lower() != filesystem_domain.lower()
    return False


def url_refusal(ad: ClassAd) -> str | None:
    """A hold reason for output this execution point cannot send: it has no file
    transfer plugins, so an output remapped to a URL or an OutputDestination fails as
    in HTCondor without the plugin."""
    dest = _text(ad, "OutputDestination")
    targets = [dest] if dest else []
    for part in _text(ad, "TransferOutputRemaps").split(";"):
        if "=" in part:
            targets.append(part.split("=", 1)[1].strip())
    for t in targets:
        if "://" in t:
            scheme = t.split(":", 1)[0]
            return f"FILETRANSFER:1:FILETRANSFER: plugin for type {scheme} not found!"
    return None


@dataclass
class Scratch:
    """One job's scratch directory and what the input left in it."""

    path: Path
    executable: str = ""
    catalog: dict[str, tuple[int, int]] = field(default_factory=dict)


def new_scratch(ad: ClassAd, execute: Path, number: int) -> Scratch:
    """The job's scratch directory, made empty."""
    cmd = _text(ad, "Cmd")
    exe = os.path.basename(cmd) if cmd and _flag(ad, "TransferExecutable", True) else ""
    return Scratch(make_scratch(execute, number), exe)


def make_scratch(execute: Path, number: int) -> Path:
    path = execute / f"dir_pool_{number}"
    if path.exists():
        remove_sandbox(Sandbox(str(path)))
    try:
        path.mkdir(mode=0o700)
    except OSError as exc:
        raise PoolError(f"cannot make scratch directory {path}: {exc.strerror}") from None
    return path


def remove_scratch(path: Path) -> None:
    try:
        remove_sandbox(Sandbox(str(path)))
    except OSError as exc:
        log.warning("pool: cannot remove scratch directory %s: %s", path, exc)


def job_ad_in_scratch(ad: ClassAd, scratch: Path) -> ClassAd:
    """The job ad the starter runs: Iwd is the scratch directory, the executable and
    stdin are the transferred copies, stdout and stderr go to the names the shadow
    maps back (``JICShadow::initWithFileTransfer``)."""
    out = ad.copy()
    out[PREPARED_SCRATCH_ATTR] = str(scratch)
    out["Iwd"] = str(scratch)
    cmd = _text(ad, "Cmd")
    if cmd and _flag(ad, "TransferExecutable", True):
        out["Cmd"] = os.path.basename(cmd)
    stdin = _text(ad, "In")
    if stdin and stdin != "/dev/null" and _flag(ad, "TransferIn", True):
        out["In"] = os.path.basename(stdin)
    stdout, stderr = _text(ad, "Out"), _text(ad, "Err")
    if stdout and stdout != "/dev/null" and not _flag(ad, "StreamOut", False):
        out["Out"] = ft.STDOUT_NAME
        out["TransferOriginalOutput"] = stdout
    if stderr and stderr != "/dev/null" and not _flag(ad, "StreamErr", False):
        out["Err"] = ft.STDOUT_NAME if stderr == stdout else ft.STDERR_NAME
        out["TransferOriginalError"] = stderr
    return out


def catalog(scratch: Path) -> dict[str, tuple[int, int]]:
    return transferlist.catalog(str(scratch))


class DirSink:
    """Received items land in the scratch directory (names checked by the protocol)."""

    def __init__(self, root: Path, executable: str = "") -> None:
        self.root = root
        self.executable = executable

    def mkdir(self, name: str, mode: int) -> None:
        path = self.root / name
        try:
            os.mkdir(path, mode)
        except FileExistsError:
            if not path.is_dir() or path.is_symlink():
                raise
        os.chmod(path, mode)

    def create(self, name: str, mode: int) -> BinaryIO:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        return os.fdopen(fd, "wb")

    def finish(self, name: str, handle: BinaryIO, mode: int) -> None:
        handle.close()
        # the executable is made executable whatever its mode was (DoDownload)
        perm = 0o755 if name == self.executable else (mode & 0o7777 or 0o644)
        os.chmod(self.root / name, perm)


class Files:
    """The job's outputs, read by root from a directory the job's user wrote: through
    descriptors below the scratch directory, regular files of the user's only (no
    link out of it, no FIFO to hang the transfer on, no hard link to root's files)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def open(self, path: str) -> BinaryIO:
        return os.fdopen(safefs.open_below(str(self.root), path), "rb")


def _expand(scratch: Path, name: str, items: list[ft.Item]) -> None:
    """One output entry: a file, or a directory sent whole (Mkdir, then its contents);
    ``dir/`` sends the contents only (``ExpandFileTransferList``)."""
    contents_only = name.endswith("/")
    rel = name.rstrip("/")
    path = scratch / rel
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        prefix = "" if contents_only else os.path.basename(rel)
        if prefix:
            items.append(ft.Item(prefix, str(path), st.st_mode & 0o7777, directory=True))
        for child in sorted(os.listdir(path)):
            _walk(path / child, f"{prefix}/{child}" if prefix else child, items)
    else:
        items.append(ft.Item(os.path.basename(rel), str(path), st.st_mode & 0o7777,
                             st.st_size))


def _walk(path: Path, wire: str, items: list[ft.Item]) -> None:
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        items.append(ft.Item(wire, str(path), st.st_mode & 0o7777, directory=True))
        for child in sorted(os.listdir(path)):
            _walk(path / child, f"{wire}/{child}", items)
    elif stat.S_ISREG(st.st_mode):
        items.append(ft.Item(wire, str(path), st.st_mode & 0o7777, st.st_size))


def output_items(ad: ClassAd, box: Scratch, final: bool = True
                 ) -> tuple[list[ft.Item], ft.Failure | None]:
    """What goes back (``FileTransfer::Init``, ``FindChangedFiles``): the files named
    in ``TransferOutput`` (a missing one fails the transfer), else every top-level
    file the job made or changed, and at the final transfer also those an eviction
    spooled (``SpooledOutputFiles``), changed or not; stdout and stderr in either
    case."""
    scratch = box.path
    items: list[ft.Item] = []
    failure: ft.Failure | None = None
    named = ad.lookup("TransferOutput") is not None
    if named:
        names = transferlist.transfer_list(_text(ad, "TransferOutput"))
        for std in (ft.STDOUT_NAME, ft.STDERR_NAME):
            if (scratch / std).is_file() and std not in names:
                names.append(std)
        for name in names:
            try:
                _expand(scratch, name, items)
            except OSError as exc:
                if failure is None:
                    failure = ft.Failure(
                        f"|Error: reading from {scratch / name}: (errno {exc.errno}) "
                        f"{exc.strerror}", ft.UPLOAD_FILE_ERROR, exc.errno or 0)
        return items, failure
    spooled = set(transferlist.transfer_list(_text(ad, "SpooledOutputFiles"))) \
        if final else set()
    for name, stamp in sorted(catalog(scratch).items()):
        if name in SKIPPED or name == box.executable:
            continue
        path = scratch / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue    # HTCondor sends new directories only when named
        if box.catalog.get(name) == stamp and name not in spooled:
            continue
        items.append(ft.Item(name, str(path), st.st_mode & 0o7777, st.st_size))
    return items, None


def spooled(outcome: ft.Outcome) -> str:
    """``SpooledOutputFiles`` after an eviction's transfer: the top-level files sent,
    stdout and stderr aside (``FileTransferInfo::addSpooledFile``)."""
    return ",".join(n for n in outcome.files
                    if "/" not in n and n not in (ft.STDOUT_NAME, ft.STDERR_NAME))


class Transfer:
    """One transfer with the shadow's transfer server, run on its own thread."""

    def __init__(self, label: str, ad: ClassAd, session: SessionInfo, command: int,
                 protocol: Callable[[str], Generator[Op, bytes | None, ft.Outcome]],
                 version: str) -> None:
        self.label = label
        self.addr = parse_address(_text(ad, "TransferSocket"), source="TransferSocket")
        if self.addr.ccb_id:
            # not a failure to try again elsewhere: every run would meet it
            raise PoolError(f"the shadow's transfer server {self.addr.sinful()} "
                            f"{CCB_REFUSAL}")
        self.key = _text(ad, "TransferKey")
        self.session = session
        self.command = command
        self.protocol = protocol
        self.version = version
        self.outcome: ft.Outcome | None = None
        self.error: Exception | None = None
        self.done = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        self._thread = threading.Thread(target=self._run, name=label, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def fileno(self) -> int:
        return self._r

    def _run(self) -> None:
        from condorpy.pool.aesgcm import hkdf_key      # cryptography at first use

        try:
            with Connection.connect(self.addr, WAIT_TIMEOUT) as conn:
                peer = conn.peer
                conn.run(resume(self.command, self.session.sid,
                                hkdf_key(self.session.key.encode("ascii", "replace")),
                                peer, self.version))
                conn.send(ft.start_request(self.key))
                self.outcome = conn.run(self.protocol(peer))
        except CondorpyError as exc:
            self.error = exc
        except Exception as exc:     # a bug fails this transfer, not the daemon
            log.exception("%s: internal error", self.label)
            self.error = PoolError(f"{self.label}: internal error ({exc!r})")
        finally:
            try:
                os.write(self._w, b"x")
            except OSError:
                pass

    def collect(self) -> bool:
        """Called when the pipe is readable: whether the transfer has ended."""
        try:
            os.read(self._r, 16)
        except BlockingIOError:
            return False
        self._thread.join(timeout=1)
        self.done = True
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
        return True

    def failure(self) -> ft.Failure | None:
        """Why it failed, as a hold: this side's failure or the shadow's; a broken
        connection is one to try again (the job goes back to the queue)."""
        if self.error is not None:
            return ft.Failure(f"{self.label} failed: {self.error}", ft.DOWNLOAD_FILE_ERROR
                              if self.command == ft.FILETRANS_UPLOAD
                              else ft.UPLOAD_FILE_ERROR, try_again=True)
        assert self.outcome is not None
        return self.outcome.failure


def input_transfer(ad: ClassAd, session: SessionInfo, box: Scratch, version: str
                   ) -> Transfer:
    sink = DirSink(box.path, box.executable)
    return Transfer("input transfer", ad, session, ft.FILETRANS_UPLOAD,
                    lambda peer: ft.receive(peer, sink), version)


def output_transfer(ad: ClassAd, session: SessionInfo, box: Scratch, final: bool,
                    version: str) -> Transfer:
    items, failure = output_items(ad, box, final)
    return Transfer("output transfer", ad, session, ft.FILETRANS_DOWNLOAD,
                    lambda peer: ft.send(peer, items, Files(box.path), final=final,
                                         failure=failure), version)
