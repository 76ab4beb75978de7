"""The job's scratch directory ``EXECUTE/dir_<pid>``: made, handed to the job's user,
measured and removed.

The directory belongs to the job's user while the job runs, and a job can leave
processes behind that keep changing it, so root never follows a name in it: every
step goes through a descriptor (:mod:`condorpy.starter.safefs`). Removal first runs
as the job's user, in a child that can do nothing the job could not (where the
directory holds no directory, its entries are unlinked below the descriptor instead,
which is no more than the job could do, and no child is forked), and root then
removes what is left below its descriptor of the directory and the directory itself
relative to its descriptor of EXECUTE, whose own mode is never changed.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
from collections.abc import Callable
from dataclasses import dataclass

from condorpy.errors import StarterError
from condorpy.starter import safefs
from condorpy.starter.users import JobUser

JOB_AD_FILE = ".job.ad"
MACHINE_AD_FILE = ".machine.ad"
# the job ad attribute naming a scratch directory made for the job beforehand
PREPARED_SCRATCH_ATTR = "CondorpyPreparedScratch"
# the names the daemon gives the scratch directories it makes (startd/poolside/transfer.py)
PREPARED_PREFIX = "dir_pool_"


@dataclass(frozen=True)
class Sandbox:
    path: str
    # made and removed by someone else (the daemon, around a pool job's file transfer)
    prepared: bool = False

    @property
    def job_ad(self) -> str:
        return os.path.join(self.path, JOB_AD_FILE)

    @property
    def machine_ad(self) -> str:
        return os.path.join(self.path, MACHINE_AD_FILE)


class SandboxRefused(StarterError):
    """The scratch directory the job's ad names is not one to use; the job is held,
    naming it (a machine that cannot make sandboxes is a StarterError, not a hold)."""

    def __init__(self, message: str, path: str, errno_: int = 0) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno_


def _open_execute(execute: str) -> int:
    try:
        return os.open(execute, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise StarterError(f"execute directory {execute}: {exc.strerror}") from None


def _write_ads(dir_fd: int, texts: tuple[tuple[str, str], ...], *, exclusive: bool,
               user: JobUser) -> None:
    for name, text in texts:
        flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
        try:
            fd = safefs.open_regular(name, flags, 0o600, dir_fd=dir_fd)
        except safefs.NotRegularFile:
            raise SandboxRefused(f"{name} in the scratch directory is not a regular "
                                 "file", name) from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode())
            if user.switch:
                os.fchown(fh.fileno(), user.uid, user.gid)


def create_sandbox(execute: str, user: JobUser, *, job_ad_text: str,
                   machine_ad_text: str, tag: str | None = None,
                   mount: Callable[[str], None] | None = None) -> Sandbox:
    """``mount``: called with the new directory's path before anything is written in
    it (the job's scratch volume goes there); what it raises is raised, the directory
    removed."""
    name = f"dir_{os.getpid() if tag is None else tag}"
    path = os.path.join(execute, name)
    exec_fd = _open_execute(execute)
    try:
        try:
            os.mkdir(name, 0o700, dir_fd=exec_fd)
        except FileExistsError:
            raise StarterError(f"sandbox {path} already exists (left by another "
                               "starter?)") from None
        except OSError as exc:
            raise StarterError(f"cannot create sandbox {path}: {exc.strerror}") from None
        if mount is not None:
            try:
                mount(path)
            except BaseException:
                safefs.remove_dir_at(exec_fd, name, path)
                raise
        try:
            fd = safefs.open_dir_at(exec_fd, name)
            try:
                if os.fstat(fd).st_uid != os.geteuid():
                    raise OSError(errno.EPERM, "not the directory just made")
                _write_ads(fd, ((JOB_AD_FILE, job_ad_text),
                                (MACHINE_AD_FILE, machine_ad_text)), exclusive=True, user=user)
                if user.switch:
                    os.fchown(fd, user.uid, user.gid)
                os.fchmod(fd, 0o700)
            finally:
                os.close(fd)
        except OSError as exc:
            # still root's alone: nobody else could have put anything in it
            safefs.remove_dir_at(exec_fd, name, path)
            raise StarterError(f"cannot set up sandbox {path}: {exc.strerror}") from None
    finally:
        os.close(exec_fd)
    return Sandbox(path)


def _chown_tree(fd: int, user: JobUser, where: str) -> None:
    """Give the daemon-made tree below fd to the job's user, by descriptors only. A
    file with other links is not ours to give away and is refused."""
    os.fchown(fd, user.uid, user.gid)
    with os.scandir(fd) as it:
        names = [entry.name for entry in it]
    for name in names:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            sub = safefs.open_dir_at(fd, name)
            try:
                _chown_tree(sub, user, f"{where}/{name}")
            finally:
                os.close(sub)
        elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            raise SandboxRefused(f"{where}/{name} has {st.st_nlink} links; not giving it "
                                 "to the job's user", where)
        else:
            os.chown(name, user.uid, user.gid, dir_fd=fd, follow_symlinks=False)


def adopt_sandbox(path: str, execute: str, user: JobUser, *, job_ad_text: str,
                  machine_ad_text: str) -> Sandbox:
    """A scratch directory the daemon made and filled (a pool job's input files),
    handed to the job's user whole; the daemon sends the outputs and removes it.

    Only a directory the daemon made qualifies: named ``dir_pool_<n>`` directly in
    EXECUTE, a real directory (not a link), owned by the daemon's own account and not
    yet given to any job's user (so not another starter's). The daemon never takes
    this attribute from a submitter, but a starter does not rely on that."""
    execute_abs = os.path.abspath(execute)
    parent, name = os.path.split(os.path.abspath(path))
    if parent != execute_abs or not name.startswith(PREPARED_PREFIX) or \
            not name[len(PREPARED_PREFIX):].isdigit():
        raise SandboxRefused(f"scratch directory {path} is not a {PREPARED_PREFIX}<n> "
                             f"directory made by the daemon in {execute}", path)
    exec_fd = _open_execute(execute)
    try:
        try:
            fd = safefs.open_dir_at(exec_fd, name)
        except OSError as exc:
            raise SandboxRefused(f"scratch directory {path}: {exc.strerror}", path,
                                 exc.errno or 0) from None
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
                raise SandboxRefused(
                    f"scratch directory {path} is owned by uid {st.st_uid} with mode "
                    f"{stat.S_IMODE(st.st_mode):04o}: not a private directory of this "
                    "daemon's (already in use by another job?)", path)
            _write_ads(fd, ((JOB_AD_FILE, job_ad_text), (MACHINE_AD_FILE, machine_ad_text)),
                       exclusive=False, user=user)
            if user.switch:
                _chown_tree(fd, user, path)
            os.fchmod(fd, 0o700)
        except RecursionError:
            raise SandboxRefused(f"scratch directory {path} is too deep to hand over",
                                 path) from None
        except OSError as exc:
            raise SandboxRefused(f"scratch directory {path}: {exc.strerror}", path,
                                 exc.errno or 0) from None
        finally:
            os.close(fd)
    finally:
        os.close(exec_fd)
    return Sandbox(os.path.join(execute_abs, name), prepared=True)


def _unlink_flat(fd: int) -> bool:
    """Where the directory open as fd holds no directory (most jobs leave a few files,
    or nothing but the ads), unlink its entries here: unlinking a name below a held
    descriptor, never following it, removes only what the job itself could have
    removed, without a child to become the job's user. False where a directory is
    there or an entry would not go: the child does the rest."""
    try:
        with os.scandir(fd) as it:
            entries = list(it)
        if any(e.is_dir(follow_symlinks=False) for e in entries):
            return False
        for e in entries:
            try:
                os.unlink(e.name, dir_fd=fd)
            except FileNotFoundError:
                pass
    except OSError:
        return False
    return True


def _empty_as(user: JobUser, fd: int, where: str) -> list[str]:
    """Empty the directory open as fd in a child that has become the job's user:
    whatever it removes, the job could have removed. What it could not remove is
    root's descriptor walk's to try next; only what that leaves is reported."""
    if _unlink_flat(fd):
        return []
    try:
        pid = os.fork()
    except OSError:
        return []           # root's descriptor walk does it all
    if pid == 0:
        code = 1
        try:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            signal.set_wakeup_fd(-1)
            # nothing of the starter's (sockets, EXECUTE) goes along
            os.closerange(3, fd)
            os.closerange(fd + 1, 65536)
            os.setgroups(list(user.groups))
            os.setgid(user.gid)
            os.setuid(user.uid)
            safefs.empty_tree(fd, where)
            code = 0
        finally:
            os._exit(code)
    os.waitpid(pid, 0)
    return []


def remove_sandbox(box: Sandbox, user: JobUser | None = None) -> list[str]:
    """Remove the scratch directory; returns what was left and why, one line each.

    With ``user`` (a root starter's job user) the contents go first as that user;
    without (the daemon's own scratch directories) root's descriptor walk does it all.
    """
    execute, name = os.path.split(os.path.abspath(box.path))
    try:
        exec_fd = os.open(execute, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    try:
        first = None
        if user is not None and user.switch and os.geteuid() == 0:
            def first(fd: int) -> list[str]:
                return _empty_as(user, fd, box.path)
        return safefs.remove_dir_at(exec_fd, name, box.path, empty=first)
    finally:
        os.close(exec_fd)
