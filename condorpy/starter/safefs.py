"""File operations that root (the daemon, a root starter) can do on a user's behalf
without being turned against itself.

Two rules: a file a job names is opened with ``O_NOFOLLOW|O_NONBLOCK`` and checked by
``fstat`` (a FIFO can neither block the opener nor pass for a log; only regular files
and ``/dev/null`` are accepted), and a directory tree a user could write is only ever
walked through descriptors: each directory opened relative to its parent's descriptor
with ``O_DIRECTORY|O_NOFOLLOW``, each name unlinked relative to the descriptor it was
listed from. A name the user swaps for a symbolic link is then unlinked as a link, and
a directory the user renames away takes nothing outside the tree with it: whatever
the walk touches was reachable below the tree's root without following a link.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Callable

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_DEVNULL = os.makedev(1, 3)
# Directories deeper than this below the walk's root are moved up to the root and
# emptied from there: the walk holds one descriptor per level it is in.
MAX_DEPTH = 64
# Each pass flattens MAX_DEPTH levels; a tree deeper than this many passes is left.
MAX_PASSES = 1000
# How often one directory is listed again while a racing job refills it.
ROUNDS = 10

# called with (directory path, entry name) before each entry is handled: tests use it
# to change the tree between the walk's steps, as a racing job would
Hook = Callable[[str, str], None]


def kind_of(mode: int) -> str:
    """What a file that is not regular is, in words for a hold reason or a log line."""
    for test, words in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
                        (stat.S_ISLNK, "a symbolic link"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return "not a plain file"


class NotRegularFile(OSError):
    """A job's log, input or output that is not a regular file (nor /dev/null)."""

    def __init__(self, path: str, kind: str) -> None:
        code = {"a directory": errno.EISDIR, "a symbolic link": errno.ELOOP}.get(
            kind, errno.EINVAL)
        super().__init__(code, f"it is {kind}, not a regular file", path)
        self.kind = kind


def is_devnull(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == _DEVNULL


def open_regular(path: str, flags: int, mode: int = 0o644, *, follow: bool = False,
                 allow_devnull: bool = False, dir_fd: int | None = None) -> int:
    """Open a file a job named, refusing anything but a regular file (and /dev/null
    where allowed). Never blocks: a FIFO is refused, not waited on. The descriptor is
    close-on-exec and blocking again (a dup2 onto 0-2 clears close-on-exec)."""
    how = flags | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, how, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            # ELOOP: the name is a link (O_NOFOLLOW); ENXIO: a FIFO nobody reads.
            try:
                st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                raise exc from None
            if not stat.S_ISREG(st.st_mode):
                raise NotRegularFile(path, kind_of(st.st_mode)) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) and not (allow_devnull and is_devnull(st)):
            raise NotRegularFile(path, kind_of(st.st_mode))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_below(root: str, path: str, flags: int = os.O_RDONLY) -> int:
    """Open ``path``, a file below the directory ``root``, one component at a time
    through descriptors (no link followed anywhere on the way), as a regular file
    owned by root's owner: what root reads from a job's directory is the job's own
    (a hard link to another's file, or a link out of the tree, is refused)."""
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if os.path.isabs(rel) or ".." in parts or parts == ["."]:
        raise OSError(errno.EXDEV, f"not below {root}", path)
    dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        owner = os.fstat(dfd).st_uid
        for part in parts[:-1]:
            nfd = open_dir_at(dfd, part)
            os.close(dfd)
            dfd = nfd
        fd = open_regular(parts[-1], flags, dir_fd=dfd)
    finally:
        os.close(dfd)
    if os.fstat(fd).st_uid != owner:
        os.close(fd)
        raise OSError(errno.EPERM, f"not owned by the owner of {root}", path)
    return fd


def open_dir_at(parent_fd: int, name: str) -> int:
    """A directory below parent_fd, never through a link."""
    return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


class _Walk:
    def __init__(self, top_fd: int, hook: Hook | None) -> None:
        self.top_fd = top_fd
        self.hook = hook
        self.problems: list[str] = []
        self.moved = 0
        self.me = os.geteuid()

    def note(self, path: str, what: str, exc: OSError) -> None:
        self.problems.append(f"{path}: cannot {what}: {exc.strerror or exc}")

    def _make_writable(self, fd: int) -> bool:
        """The walk's own directory without write or search permission (a job run as
        the walker's own user can leave one): change the mode of the open directory
        itself, never of a name. Root needs none of this, and does none of it."""
        if self.me == 0:
            return False
        st = os.fstat(fd)
        if st.st_uid != self.me or not stat.S_ISDIR(st.st_mode):
            return False
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)
        return True

    def _open_sub(self, fd: int, name: str) -> int:
        try:
            return open_dir_at(fd, name)
        except PermissionError:
            if self.me == 0:
                raise
        # no read permission on our own directory: reach it by an O_PATH descriptor
        # (which names that very inode) and change its mode through it
        pfd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        try:
            st = os.fstat(pfd)
            if st.st_uid != self.me or not stat.S_ISDIR(st.st_mode):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
            os.chmod(f"/proc/self/fd/{pfd}", stat.S_IMODE(st.st_mode) | 0o700)
        finally:
            os.close(pfd)
        return open_dir_at(fd, name)

    def _unlink(self, fd: int, name: str, path: str, *, rmdir: bool) -> bool:
        """True once the name is gone; False if it is now a directory (swapped)."""
        for attempt in (0, 1):
            try:
                if rmdir:
                    os.rmdir(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
                return True
            except FileNotFoundError:
                return True
            except IsADirectoryError:
                return False
            except NotADirectoryError:
                rmdir = False        # a directory swapped for a file or a link
            except PermissionError as exc:
                if attempt or not self._make_writable(fd):
                    self.note(path, "remove it", exc)
                    return True
            except OSError as exc:
                if exc.errno == errno.ENOTEMPTY:
                    return False     # refilled meanwhile
                self.note(path, "remove it", exc)
                return True
        return True

    def _names(self, fd: int, path: str) -> list[str] | None:
        try:
            with os.scandir(fd) as it:
                return [entry.name for entry in it]
        except PermissionError as exc:
            if not self._make_writable(fd):
                self.note(path, "list it", exc)
                return None
        with os.scandir(fd) as it:
            return [entry.name for entry in it]

    def empty(self, fd: int, path: str, depth: int) -> None:
        # Listed again until nothing new is left: a racing job can move things in
        # (or rename a directory being emptied) meanwhile. Bounded: a job that keeps
        # refilling the tree wins only a leftover, which is reported.
        given_up: set[str] = set()
        for _ in range(ROUNDS):
            names = self._names(fd, path)
            if names is None:
                return
            names = [n for n in names if n not in given_up]
            if not names:
                return
            for name in names:
                if not self._remove(fd, name, f"{path}/{name}", depth):
                    given_up.add(name)
        self.problems.append(f"{path}: still refilled after {ROUNDS} rounds; the rest "
                             "is left")

    def _remove(self, fd: int, name: str, sub_path: str, depth: int) -> bool:
        """False when the entry is left (and noted)."""
        if self.hook is not None:
            self.hook(sub_path.rsplit("/", 1)[0], name)
        count = len(self.problems)
        for _ in range(3):        # a name swapped between kinds is looked at again
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return True
            except OSError as exc:
                self.note(sub_path, "examine it", exc)
                return False
            if not stat.S_ISDIR(st.st_mode):
                if self._unlink(fd, name, sub_path, rmdir=False):
                    return len(self.problems) == count
                continue
            if depth >= MAX_DEPTH:
                self._move_up(fd, name, sub_path)
                return True
            try:
                sub = self._open_sub(fd, name)
            except (NotADirectoryError, FileNotFoundError):
                continue          # no longer a directory: look again
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    continue      # swapped for a link: look again
                self.note(sub_path, "open it", exc)
                return False
            try:
                self.empty(sub, sub_path, depth + 1)
            finally:
                os.close(sub)
            if len(self.problems) > count:
                return False      # something below is left, and said so
            if self._unlink(fd, name, sub_path, rmdir=True):
                return len(self.problems) == count
        self.problems.append(f"{sub_path}: kept changing kind; left")
        return False

    def _move_up(self, fd: int, name: str, path: str) -> None:
        self.moved += 1
        new = f".condorpy-deep-{os.getpid()}-{self.moved}"
        try:
            os.rename(name, new, src_dir_fd=fd, dst_dir_fd=self.top_fd)
        except OSError as exc:
            self.note(path, "move it up to be removed", exc)


def empty_tree(top_fd: int, where: str, *, hook: Hook | None = None) -> list[str]:
    """Remove everything below the open directory top_fd (not top_fd itself), as
    whoever calls it, through descriptors only. Returns what could not be removed, one
    line each, naming where (``where`` is top_fd's path, for the messages)."""
    walk = _Walk(top_fd, hook)
    for _ in range(MAX_PASSES):
        moved = walk.moved
        walk.empty(top_fd, where, 0)
        if walk.moved == moved:
            break
    else:
        walk.problems.append(f"{where}: more than {MAX_DEPTH * MAX_PASSES} levels deep; "
                             "the rest is left")
    return walk.problems


def remove_dir_at(parent_fd: int, name: str, where: str, *, hook: Hook | None = None,
                  empty: Callable[[int], list[str]] | None = None) -> list[str]:
    """Remove the directory ``name`` below parent_fd and everything in it. ``empty``
    may first empty it another way (as the job's user); what is left is removed here,
    through descriptors. A link at ``name`` is unlinked, never followed."""
    try:
        fd = open_dir_at(parent_fd, name)
    except FileNotFoundError:
        return []
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            return [f"{where}: cannot open it: {exc.strerror}"]
        try:
            os.unlink(name, dir_fd=parent_fd)
        except OSError as exc2:
            return [f"{where}: cannot remove it: {exc2.strerror}"]
        return [f"{where} was not a directory; the link or file itself was removed"]
    try:
        problems = empty(fd) if empty is not None else []
        problems += empty_tree(fd, where, hook=hook)
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(f"{where}: cannot remove it: {exc.strerror}; left in place")
    return problems
