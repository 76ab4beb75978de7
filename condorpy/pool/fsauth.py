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

25.x binds the exchange to the connection (observed with 25.14.1's tools and
library, whose clients refuse the 23.x name with "Directory name doesn't match
server's network address"): the server names ``FS_<ip>_<port>_<random>_``, its own
end of the connection, ending in ``_``; the client appends its own view of the server's
address (``ip:port``, IPv6 in brackets), makes that directory, and sends the appended
text as a string after its int result; the server checks the text names its end of
the connection and lstats the joined name. A 23.x client makes the name as sent and
sends no string, which is still accepted; condorpy's client appends only when invited.

The directory must be where both sides see the same file system: this host, or a
bind mount of FS_LOCAL_DIR (default /tmp) into a container or chroot the tool runs in.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import string
import stat
from collections.abc import Generator
from dataclasses import dataclass

from condorpy.config import Config
from condorpy.errors import SecurityError, WireError
from condorpy.pool.cedar import Reader, Writer

MAX_RESULT_MESSAGE = 64
# an int and "[IPv6]:port"
MAX_BOUND_RESULT_MESSAGE = 160


def endpoint_text(ip: str, port: int) -> str:
    """``ip:port`` as HTCondor writes an address into a channel-bound FS name."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def parse_endpoint(text: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int] | None:
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")), int(port)
    except ValueError:
        return None


@dataclass(frozen=True)
class Rendezvous:
    """The directory where FS clients prove their identity (FS_LOCAL_DIR); the small OS
    interface the exchange uses, replaceable in tests."""

    directory: str = "/tmp"

    def new_path(self, local: tuple[str, int] | None = None) -> str:
        """A name nobody holds now (made as a file, then removed, as HTCondor does);
        with ``local``, this server's end of the connection, the 25.x name bound to it
        (``FS_<ip>_<port>_<random>_``, inviting the client's extension)."""
        prefix = f"FS_{local[0]}_{local[1]}_" if local else "FS_"
        # letters and digits only: 25.x clients split the name at "_"
        alphabet = string.ascii_letters + string.digits
        import secrets      # loads OpenSSL's libcrypto: only once a client authenticates
        for _ in range(20):
            path = os.path.join(self.directory,
                                prefix + "".join(secrets.choice(alphabet) for _ in range(9)))
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                continue
            except OSError:
                return ""
            os.close(fd)
            try:
                os.unlink(path)
            except OSError:
                return ""
            return path + "_" if local else path
        return ""

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


def server_exchange(fs: Rendezvous, peer: str,
                    local: tuple[str, int] | None = None) -> Exchange:
    """Authenticate the client by FS; returns the owner's name (without a domain).
    ``local``: this server's end of the connection, to bind the name to (25.x)."""
    path = fs.new_path(local)
    yield ("send", Writer().put_string(path).payload())
    got = yield ("receive", b"the FS client's result")
    assert got is not None
    if len(got) > MAX_BOUND_RESULT_MESSAGE:
        raise WireError("the FS client's result is oversized", peer=peer)
    r = Reader(got, peer)
    result = r.get_int("the FS client's result")
    ext = r.get_string("the FS client's channel binding") if r.remaining else None
    r.end("the FS client's result")
    bad_ext = ""
    if ext is not None:
        want = parse_endpoint(endpoint_text(*local)) if local else None
        if "/" in ext or "\0" in ext or parse_endpoint(ext) is None:
            bad_ext = f"the client's channel binding {ext!r} is not an ip:port"
        elif want is None or parse_endpoint(ext) != want:
            bad_ext = (f"the client's channel binding {ext} is not this end of the "
                       "connection")
    if not path:
        why = f"no rendezvous path could be made in {fs.directory} (FS_LOCAL_DIR)"
        owner = ""
    elif bad_ext:
        owner, why = "", bad_ext
    elif result == -1:
        owner, why = "", f"the client could not make {path}{ext or ''}"
    else:
        owner, why = fs.owner(path + (ext or ""))
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
    ext = ""
    if path.endswith("_"):
        # a 25.x server binds the name to the connection: our view of its address
        at = parse_endpoint(peer)
        if at is None:
            why = f"cannot bind the FS directory to {peer}, not an ip:port"
            path = ""
        else:
            ext = endpoint_text(str(at[0]), at[1])
            path += ext
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
        w = Writer().put_int(0 if made and not why else -1)
        if ext:
            w.put_string(ext)
        yield ("send", w.payload())
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
