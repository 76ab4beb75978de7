"""Where the daemon keeps its state, log and control socket.

The configuration says (LOCAL_DIR, SPOOL, LOG, LOCK, EXECUTE, and condorpy's
``CONDORPY_CONTROL_SOCKET``, default ``$(LOCK)/condorpy_startd.sock``). An ordinary
user running the daemon (a personal execution point, the README's first command)
usually cannot write the system directories the shipped configuration names; then
every directory that is not writable is taken under ``$XDG_STATE_HOME/condorpy``
(``~/.local/state/condorpy``) instead, and the daemon logs the substitution. Clients
find a system daemon and a personal one alike, and a command that names its file
reaches that file's daemon (:func:`client_socket`).
"""

from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from condorpy.config import DEFAULT_CONFIG_PATH, Config, KnobReader
from condorpy.errors import ConfigError, StartdError
from condorpy.startd.client import DaemonUnreachable, call

SOCKET_NAME = "condorpy_startd.sock"


@dataclass(frozen=True)
class StatePaths:
    spool: Path
    log: Path
    lock: Path
    execute: Path
    socket: Path

    def start_log(self) -> Path:
        return self.log / "StartLog"


def configured_paths(cfg: KnobReader) -> StatePaths:
    """The configured paths. Built-in defaults under an undefined LOCAL_DIR (``/log``,
    ``/spool``: CONDOR_CONFIG=ONLY_ENV with no _CONDOR_LOCAL_DIR) are refused, for the
    daemon and its clients alike, rather than used or guessed."""
    if not cfg.get("LOCAL_DIR"):
        unset = [n for n in ("LOG", "SPOOL", "EXECUTE") if cfg.where(n) is None]
        if unset:
            raise ConfigError(
                f"LOCAL_DIR is not set, so {', '.join(unset)} would be the built-in "
                f"{', '.join(f'/{n.lower()}' for n in unset)}: set LOCAL_DIR (the package "
                f"uses /var/lib/condorpy) or each of LOG, SPOOL and EXECUTE", name=unset[0])

    def path(name: str, default: str) -> Path:
        return Path(cfg.get(name) or default)

    local = path("LOCAL_DIR", "/var/lib/condorpy")
    log = path("LOG", str(local / "log"))
    lock = path("LOCK", str(log))
    return StatePaths(spool=path("SPOOL", str(local / "spool")), log=log, lock=lock,
                      execute=path("EXECUTE", str(local / "execute")),
                      socket=path("CONDORPY_CONTROL_SOCKET", str(lock / SOCKET_NAME)))


def personal_root(env: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if env is None else env
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "condorpy"


def _usable(directory: Path) -> bool:
    """Whether ``directory`` exists and is writable, or can be created."""
    probe = directory
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def daemon_paths(cfg: KnobReader, env: Mapping[str, str] | None = None
                 ) -> tuple[StatePaths, list[str]]:
    """The paths the daemon uses, and a note for each it had to move (not root only)."""
    paths = configured_paths(cfg)
    if os.geteuid() == 0:
        return paths, []
    root = personal_root(env)
    notes: list[str] = []
    moved: dict[str, Path] = {}
    for field in ("spool", "log", "lock", "execute"):
        where: Path = getattr(paths, field)
        if not _usable(where):
            moved[field] = root / field
            notes.append(f"{field.upper()} {where} is not writable by this user: "
                         f"using {moved[field]}")
    out = replace(paths, **moved)
    if not _usable(out.socket.parent):
        out = replace(out, socket=out.lock / SOCKET_NAME)
    elif "lock" in moved and paths.socket == paths.lock / SOCKET_NAME:
        out = replace(out, socket=out.lock / SOCKET_NAME)
    return out, notes


def client_socket(cfg: Config, env: Mapping[str, str] | None = None,
                  ask: Callable[[Path], Any] | None = None) -> Path:
    """The control socket a command should talk to.

    Two daemons may share a host: root's, and an ordinary user's personal one that
    keeps its state under ``$XDG_STATE_HOME/condorpy`` because it cannot write the
    directories its file names. Where this user's daemon from ``cfg`` would listen is
    then not where the file says, and either socket may belong to the other daemon.
    With the default file, the configured socket is taken first and the personal
    one second (a system daemon and a personal one are both found). With a file of
    its own (``-config FILE``, $CONDOR_CONFIG), the daemon that answers there must
    run from that file (its ``ping`` says which), the configured socket first: never
    silently another; none running is an error naming each socket tried. ``ask``
    pings a socket (a test's fake)."""
    configured = configured_paths(cfg).socket
    own = daemon_paths(cfg, env)[0].socket
    if own == configured:
        return configured
    file = _config_file(cfg)
    if file is None or file == os.path.realpath(DEFAULT_CONFIG_PATH):
        for candidate in (configured, own):
            if candidate.exists():
                return candidate
        return configured
    ping = ask or (lambda path: call(path, "ping", {}, timeout=10))
    tried = []
    for candidate in (configured, own):
        if not candidate.exists():
            tried.append(f"no control socket at {candidate}")
            continue
        try:
            info = ping(candidate)
        except DaemonUnreachable as exc:
            tried.append(str(exc))
            continue
        theirs = info.get("config") if isinstance(info, dict) else None
        if theirs is None or theirs == file:    # a daemon that does not say: as before
            return candidate
        tried.append(f"{candidate} belongs to the daemon of {theirs}")
    raise DaemonUnreachable(f"no condorpy startd of {file} is running: "
                            f"{'; '.join(tried)}")


def _config_file(cfg: Config) -> str | None:
    """The file the configuration was read from, resolved; None when none was."""
    if not cfg.files or not os.path.isfile(cfg.files[0]):
        return None
    return os.path.realpath(cfg.files[0])


def make_dirs(paths: StatePaths) -> None:
    for d in (paths.spool, paths.log, paths.lock, paths.execute, paths.socket.parent):
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StartdError(f"cannot create {d}: {exc.strerror}") from None


INSTANCE_LOCK = ".condorpy_startd.lock"


def claim_dirs(paths: StatePaths) -> list[int]:
    """Lock EXECUTE and LOG for this daemon (descriptors: closing them lets go).

    Two execution points on one host must not share them: both would write one
    StartLog, and an HTCondor startd in either's place clears what it does not know
    from EXECUTE at its start (the layout would not survive a switch back). SPOOL is the job store's own lock; the control socket is checked where it is
    opened. The error names the directory, its knob and the daemon holding it."""
    fds: list[int] = []
    seen: set[str] = set()
    for knob, where in (("EXECUTE", paths.execute), ("LOG", paths.log)):
        real = os.path.realpath(where)
        if real in seen:
            continue
        seen.add(real)
        lock = os.path.join(real, INSTANCE_LOCK)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            release_dirs(fds)
            raise StartdError(f"{knob} {where}: cannot open {lock}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            release_dirs(fds)
            raise StartdError(
                f"{knob} {where} is in use by another condorpy startd (pid {holder}): "
                f"give each execution point on this host its own LOCAL_DIR (or "
                f"{knob})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        fds.append(fd)
    return fds


def release_dirs(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    fds.clear()


def _unsafe(path: Path, trusted: set[int], *, last: bool) -> str | None:
    """Why another user could change ``path`` (one component), or None."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if st.st_uid not in trusted:
        return f"{path} belongs to uid {st.st_uid}"
    if stat.S_ISLNK(st.st_mode):
        return None         # its directory is checked; its target is checked resolved
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and (last or not st.st_mode & stat.S_ISVTX):
        # a sticky ancestor (/tmp) lets no one rename what root made in it; the state
        # directory itself must be root's alone
        return f"{path} is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'} " \
               f"(mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def check_state_dirs(paths: StatePaths, daemon_uid: int) -> None:
    """As root, refuse state directories another user could change, or that sit
    below a directory another user could change: the daemon makes sandboxes, keeps
    the queue and listens there, and root never follows a path a user can write."""
    trusted = {0, daemon_uid}
    for name, where in (("SPOOL", paths.spool), ("LOG", paths.log), ("LOCK", paths.lock),
                        ("EXECUTE", paths.execute),
                        ("the control socket's directory", paths.socket.parent)):
        for chain in (where.absolute(), Path(os.path.realpath(where))):
            parts = [chain, *chain.parents]
            for i, component in enumerate(parts):
                why = _unsafe(component, trusted, last=i == 0)
                if why is not None:
                    raise StartdError(
                        f"{name} {where}: {why}; the daemon runs as root and keeps its "
                        f"state only where no other user can change it (make each "
                        f"directory on the way owned by root and not writable by "
                        f"others, or sticky like /tmp)")
