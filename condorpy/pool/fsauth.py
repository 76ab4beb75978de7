"""HTCondor's FS authentication, server side, for the command port: how the pool's
tools on this host (``condor_vacate``, ``condor_status -direct``, ...) prove who they
are when the pool runs at its package defaults.

The exchange (htcondor/htcondor ``src/condor_io/condor_auth_fs.cpp``, as 23.x speaks
it):

1. server: ``string`` a fresh path ``<FS_LOCAL_DIR>/FS_XXXXXXXXX`` that does not exist
   (empty if none could be made), EOM;
2. client: ``mkdir(path, 0700)``; ``int`` 0 on success, -1 on failure, EOM;
3. server: ``lstat(path)``: a real directory (not a link), one or two links, mode exactly
   0700; its owner is the client's identity; ``int`` 0 (success) or -1, EOM. The client
   removes the directory.

The directory must be where both sides see the same file system: this host, or a
bind mount of FS_LOCAL_DIR (default /tmp) into a container or chroot the tool runs in.
"""

from __future__ import annotations

import os
import pwd
import stat
import tempfile
from collections.abc import Generator
from dataclasses import dataclass

from condorpy.config import Config
from condorpy.errors import SecurityError, WireError
from condorpy.pool.cedar import Reader, Writer

MAX_RESULT_MESSAGE = 64


@dataclass(frozen=True)
class Rendezvous:
    """The directory where FS clients prove their identity (FS_LOCAL_DIR); the small OS
    interface the exchange uses, replaceable in tests."""

    directory: str = "/tmp"

    def new_path(self) -> str:
        """A name nobody holds now (made as a file, then removed, as HTCondor does)."""
        try:
            fd, path = tempfile.mkstemp(prefix="FS_", dir=self.directory)
        except OSError:
            return ""
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            return ""
        return path

    def owner(self, path: str) -> tuple[str, str]:
        """(the owner's name, "") if ``path`` is a directory the client made as asked,
        else ("", why not)."""
        try:
            st = os.lstat(path)
        except OSError as exc:
            return "", f"the client made no directory {path} ({exc.strerror})"
        if (not stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)
                or st.st_nlink not in (1, 2) or stat.S_IMODE(st.st_mode) != 0o700):
            return "", f"{path} is not a directory of mode 0700 with one or two links"
        try:
            return pwd.getpwuid(st.st_uid).pw_name, ""
        except KeyError:
            return "", f"the owner of {path}, uid {st.st_uid}, has no name on this host"


def rendezvous(cfg: Config) -> Rendezvous:
    return Rendezvous((cfg.get("FS_LOCAL_DIR") or "").strip() or "/tmp")


# like condorpy.pool.idtokens: ("send", payload) and ("receive", what); the security
# modules wrap them in their Send/Receive
Exchange = Generator[tuple[str, bytes], bytes | None, str]


def _int(payload: bytes, peer: str, what: str) -> int:
    if len(payload) > MAX_RESULT_MESSAGE:
        raise WireError(f"{what} is oversized", peer=peer)
    r = Reader(payload, peer)
    value = r.get_int(what)
    r.end(what)
    return value


def server_exchange(fs: Rendezvous, peer: str) -> Exchange:
    """Authenticate the client by FS; returns the owner's name (without a domain)."""
    path = fs.new_path()
    yield ("send", Writer().put_string(path).payload())
    got = yield ("receive", b"the FS client's result")
    assert got is not None
    result = _int(got, peer, "the FS client's result")
    if not path:
        why = f"no rendezvous path could be made in {fs.directory} (FS_LOCAL_DIR)"
        owner = ""
    elif result == -1:
        owner, why = "", f"the client could not make {path}"
    else:
        owner, why = fs.owner(path)
    yield ("send", Writer().put_int(0 if owner else -1).payload())
    if not owner:
        raise SecurityError(f"FS authentication failed: {why}", peer=peer)
    return owner


def daemon_ids(cfg: Config) -> tuple[int, int] | None:
    """Whom a daemon running as root makes its FS directory as: CONDOR_IDS (``uid.gid``),
    else the ``condor`` user, as HTCondor's set_condor_priv(); None when not root or
    there is no such user (the directory is then the daemon's own)."""
    if os.geteuid() != 0:
        return None
    text = (cfg.get("CONDOR_IDS") or "").strip()
    if text:
        uid, dot, gid = text.partition(".")
        if not dot or not uid.strip().isdigit() or not gid.strip().isdigit():
            raise cfg.invalid("CONDOR_IDS", "uid.gid, two numbers")
        return int(uid), int(gid)
    try:
        pw = pwd.getpwnam("condor")
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def client_exchange(peer: str, ids: tuple[int, int] | None) -> Generator[
        tuple[str, bytes], bytes | None, None]:
    """Prove this process's user (or ``ids``) to a server on this host."""
    got = yield ("receive", b"the FS directory to make")
    assert got is not None
    r = Reader(got, peer)
    path = r.get_string("the FS directory to make") or ""
    r.end("the FS directory to make")
    made = False
    why = "the peer named no directory"
    if path:
        try:
            os.mkdir(path, 0o700)
            made = True
            if ids is not None:
                os.chown(path, ids[0], ids[1])
            why = ""
        except OSError as exc:
            why = f"cannot make a directory in {os.path.dirname(path)}: {exc.strerror}"
    try:
        yield ("send", Writer().put_int(0 if made and not why else -1).payload())
        got = yield ("receive", b"the FS verdict")
        assert got is not None
        verdict = _int(got, peer, "the FS verdict")
    finally:
        if made:
            try:
                os.rmdir(path)
            except OSError:
                pass
    if why:
        raise SecurityError(f"FS: {why}", peer=peer)
    if verdict != 0:
        # the directory, not the random name: the same failure reads the same each time
        raise SecurityError(f"FS: the peer did not find the directory it named in "
                            f"{os.path.dirname(path)} (is it on another host, or in a "
                            "container with its own file system?)", peer=peer)
