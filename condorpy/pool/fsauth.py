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
from condorpy.pool.security import Op, Receive, Send

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


def server_exchange(fs: Rendezvous, peer: str) -> Generator[Op, bytes | None, str]:
    """Authenticate the client by FS; returns the owner's name (without a domain)."""
    path = fs.new_path()
    yield Send(Writer().put_string(path).payload())
    got = yield Receive("the FS client's result")
    assert got is not None
    if len(got) > MAX_RESULT_MESSAGE:
        raise WireError("the FS client's result is oversized", peer=peer)
    r = Reader(got, peer)
    result = r.get_int("the FS client's result")
    r.end("the FS client's result")
    if not path:
        why = f"no rendezvous path could be made in {fs.directory} (FS_LOCAL_DIR)"
        owner = ""
    elif result == -1:
        owner, why = "", f"the client could not make {path}"
    else:
        owner, why = fs.owner(path)
    yield Send(Writer().put_int(0 if owner else -1).payload())
    if not owner:
        raise SecurityError(f"FS authentication failed: {why}", peer=peer)
    return owner
