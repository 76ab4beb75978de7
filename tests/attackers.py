"""Two ordinary users for attack tests: an attacker and a victim, real accounts.

Trust-boundary tests are written as the attack: the attacker's commands run as an
ordinary user (``as_user``), the victim's files are checked by checksum and mode. The
accounts are made once with ``useradd`` (system accounts without a home or a login
shell) and kept: making and deleting accounts in every test would race with other
tests' jobs still running as them. Everything needs root; without it the fixtures skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import select
import pwd
import shutil
import stat
import subprocess
import threading
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, Iterator, Sequence, TypeVar

import pytest

T = TypeVar("T")

ATTACKER = "cpyattacker"
VICTIM = "cpyvictim"


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: Path          # a directory of the user's own (0700) under the test's open base

    def preexec(self) -> Callable[[], None]:
        """For subprocess: become this user, with no supplementary groups of root's."""
        def become() -> None:
            os.setgroups([])
            os.setgid(self.gid)
            os.setuid(self.uid)
        return become

    def run(self, argv: Sequence[str], *, cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 120,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        """An executable as this user. The test's own Python may live where no
        ordinary user can reach it: use ``call``/``cli`` for condorpy's commands."""
        full = dict(os.environ if env is None else env)
        full.update(HOME=str(self.home), USER=self.name, LOGNAME=self.name)
        return subprocess.run(list(argv), cwd=cwd or self.home, env=full, text=True,
                              capture_output=True, timeout=timeout, input=input,
                              preexec_fn=self.preexec())

    def call(self, fn: Callable[[], T], *, cwd: Path | None = None,
             env: dict[str, str] | None = None, timeout: float = 120) -> Outcome[T]:
        """Run ``fn`` in a forked child of this process that has become this user
        (no exec: the interpreter and the modules already imported come along).
        Its return value comes back pickled; its stdout and stderr are captured."""
        # Calls may come from several threads at once (an attack running while the
        # victim works): a fork taken while another thread is inside an import or
        # tempfile holds that lock in the child for ever, and the child hangs. So the
        # preparations and the fork happen under one lock.
        with _FORKING:
            _preload()
            out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
            rfd, wfd = os.pipe()
            pid = os.fork()
        if pid == 0:                                     # the child: never returns
            code = 0
            try:
                os.close(rfd)
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = os.fdopen(1, "w", closefd=False)
                sys.stderr = os.fdopen(2, "w", closefd=False)
                if env is not None:
                    os.environ.clear()
                    os.environ.update(env)
                os.environ.update(HOME=str(self.home), USER=self.name, LOGNAME=self.name)
                self.preexec()()
                os.chdir(cwd or self.home)
                value: object = ("ok", fn())
            except SystemExit as exc:
                value = ("exit", exc.code)
            except BaseException as exc:                 # noqa: BLE001 - reported back
                import traceback
                traceback.print_exc()
                value, code = ("raised", repr(exc)), 3
            try:
                sys.stdout.flush()
                sys.stderr.flush()
                with os.fdopen(wfd, "wb") as fh:
                    pickle.dump(value, fh)
            finally:
                os._exit(code)
        os.close(wfd)
        with os.fdopen(rfd, "rb") as fh:
            deadline = time.monotonic() + timeout
            chunks = []
            while True:
                ready, _, _ = select.select([fh], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    raise AssertionError(f"{self.name}: call did not end in {timeout} s")
                chunk = os.read(fh.fileno(), 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        os.waitpid(pid, 0)
        with out, err:
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode(errors="replace")
            stderr = err.read().decode(errors="replace")
        kind, value = pickle.loads(b"".join(chunks)) if chunks else ("raised", "no result")
        return Outcome(kind, value, stdout, stderr)

    def cli(self, argv: Sequence[str], *, env: dict[str, str], cwd: Path | None = None,
            timeout: float = 120) -> Outcome[int]:
        """``condorpy ARGV`` as this user; ``.rc`` is its exit status."""
        def main() -> int:
            from condorpy.cli.main import main as cli_main
            rc = cli_main(list(argv))
            return int(rc or 0)
        return self.call(main, env=env, cwd=cwd, timeout=timeout)

    def write(self, path: Path, text: str, mode: int = 0o644) -> Path:
        path.write_text(text)
        os.chown(path, self.uid, self.gid)
        os.chmod(path, mode)
        return path


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a call as a user came to: ``kind`` is "ok" (``value`` returned), "exit"
    (``value`` is the SystemExit code) or "raised" (``value`` names the exception)."""

    kind: str
    value: Any
    stdout: str
    stderr: str

    @property
    def rc(self) -> int:
        if self.kind == "ok":
            return int(self.value or 0)
        if self.kind == "exit":
            code = self.value
            return code if isinstance(code, int) else (0 if code is None else 1)
        return 3


_FORKING = threading.Lock()


def _preload() -> None:
    """Import every condorpy module, and the standard modules they import late, while
    still root: a child that has become an ordinary user may not be able to read the
    interpreter's library (it can live under /root)."""
    import importlib
    import pkgutil

    import condorpy
    for mod in pkgutil.walk_packages(condorpy.__path__, "condorpy."):
        if mod.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(mod.name)
        except Exception:               # noqa: BLE001 - optional extras (systemd, nvml)
            pass
    for name in ("getpass", "json", "socket", "shlex", "glob", "fnmatch", "argparse",
                 "encodings.idna", "traceback", "locale", "gettext"):
        importlib.import_module(name)


def ensure_account(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    # test workers (pytest-xdist) may come here at once on a fresh machine: one makes
    # the account, the others wait for it and find it
    with open("/tmp/condorpy-test-accounts.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
        made = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir",
                               "/nonexistent", "--shell", "/usr/sbin/nologin",
                               "--user-group", name], check=False, capture_output=True,
                              text=True)
        try:
            return pwd.getpwnam(name)
        except KeyError:
            raise RuntimeError(f"cannot make the test account {name}: "
                               f"{made.stderr.strip()}") from None


def fingerprint(path: Path) -> tuple[str, int, int, int]:
    """What a victim's file is: content checksum, mode, owner and group (never
    following a link)."""
    st = os.lstat(path)
    digest = ""
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    return digest, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A directory every user can traverse (pytest's tmp_path lives under a 0700
    directory of root's, which no job's user could reach)."""
    if os.geteuid() != 0:
        pytest.skip("attack tests need root: they make and act as ordinary users")
    base = Path(tempfile.mkdtemp(prefix="cpy-attack-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def attacker(open_base: Path) -> User:
    return _user(ATTACKER, open_base)


@pytest.fixture
def victim(open_base: Path) -> User:
    return _user(VICTIM, open_base)


def _user(name: str, base: Path) -> User:
    try:
        pw = ensure_account(name)
    except KeyError:
        pytest.skip(f"cannot make the account {name} (useradd failed)")
    home = base / name
    home.mkdir(mode=0o700)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    return User(name, pw.pw_uid, pw.pw_gid, home)
