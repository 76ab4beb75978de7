"""A pristine minbase Debian 12 (bookworm) chroot, from Debian's archive alone, for the
pristine-Debian lane (tests/debian/test_pristine.py).

    python -m tests.debian.bookworm build      # make the cached tarball (once)
    python -m tests.debian.bookworm shell      # a fresh chroot from it, and a shell

``debootstrap --variant=minbase`` makes it once and it is kept as a tarball,
``tests/debian/.cache/bookworm-minbase.tar.zst`` (``CONDORPY_PRISTINE_CACHE`` names
another directory); every run unpacks a fresh copy, so nothing one run installs is
seen by the next. The packages apt downloads are kept beside it (``archives/``, bound
at the chroot's /var/cache/apt/archives), so that a warm run downloads nothing. The
host's Python packages are not visible: the chroot has its own /usr, and commands run
in it with an environment of their own (``env -i``).

Building needs root (debootstrap, chroot, mounts) and, the first time, Debian's
archive; apt on the host goes through the lock /tmp/condorpy-apt.lock (the pool and
real-kernel lanes install packages at the same time).

Inside the chroot, /proc is the host's: a process seen there (PID 1 included) has
another root, which is how the package's maintainer scripts know to leave the host's
processes alone (packaging/debian/jobs-end.sh, ``condorpy_may_act``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIRROR = "http://deb.debian.org/debian"
SOURCES = f"""\
deb {MIRROR} bookworm main
deb {MIRROR} bookworm-updates main
deb http://security.debian.org/debian-security bookworm-security main
"""
# what commands in the chroot see: nothing of the host's environment
ENV = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "HOME=/root", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive", "TERM=dumb"]


class Unavailable(Exception):
    """The pristine chroot cannot be built or entered here (not root, no archive)."""


def cache_dir() -> Path:
    return Path(os.environ.get("CONDORPY_PRISTINE_CACHE") or HERE / ".cache")


def _run(cmd: list[str], log: Path, timeout: float = 900, check: bool = True,
         ) -> subprocess.CompletedProcess[str]:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        res = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, text=True,
                             timeout=timeout, stdin=subprocess.DEVNULL)
    if check and res.returncode != 0:
        raise Unavailable(f"{' '.join(cmd[:4])} failed ({res.returncode}): "
                          f"{log.read_text()[-1500:]}")
    return res


def tarball() -> Path:
    """The cached minbase tarball, built when missing (safe from parallel sessions)."""
    if os.geteuid() != 0:
        raise Unavailable("the pristine Debian 12 chroot needs root (debootstrap, chroot)")
    cache = cache_dir()
    tar = cache / "bookworm-minbase.tar.zst"
    if tar.exists():
        return tar
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not tar.exists():
            _build(cache, tar)
    return tar


def _build(cache: Path, tar: Path) -> None:
    log = cache / "build.log"
    log.write_text("")
    apt = ["flock", "/tmp/condorpy-apt.lock", "apt-get", "-o", "DPkg::Lock::Timeout=600"]
    need = [tool for tool, cmd in (("debootstrap", "debootstrap"), ("zstd", "zstd"))
            if shutil.which(cmd) is None]
    if need:
        _run([*apt, "update", "-qq"], log)
        _run([*apt, "install", "-y", "-qq", *need], log)
    with tempfile.TemporaryDirectory(dir=cache, prefix="build.") as tmp:
        root = Path(tmp) / "root"
        # debootstrap writes the packages' own keyring check: Debian's archive only
        _run(["debootstrap", "--variant=minbase", "bookworm", str(root), MIRROR], log,
             timeout=1800)
        (root / "etc/apt/sources.list").write_text(SOURCES)
        with Chroot(root, log):
            _run(["chroot", str(root), *ENV, "apt-get", "update", "-qq"], log)
            _run(["chroot", str(root), *ENV, "apt-get", "clean"], log)
        part = tar.with_suffix(".part")
        _run(["tar", "--zstd", "-C", str(root), "--numeric-owner", "-cpf", str(part),
              "."], log)
        part.rename(tar)


class Chroot:
    """/proc, /sys and /dev of a chroot mounted while in use; the host's resolver."""

    def __init__(self, root: Path, log: Path, archives: Path | None = None) -> None:
        self.root = root
        self.log = log
        self.archives = archives
        self.mounted: list[Path] = []

    def __enter__(self) -> Chroot:
        shutil.copyfile("/etc/resolv.conf", self.root / "etc/resolv.conf")
        mounts: list[tuple[str, list[str]]] = [
            ("proc", ["-t", "proc", "proc"]), ("sys", ["-t", "sysfs", "sys"]),
            ("dev", ["--bind", "/dev"]), ("dev/pts", ["--bind", "/dev/pts"])]
        if self.archives is not None:
            self.archives.mkdir(parents=True, exist_ok=True)
            mounts.append(("var/cache/apt/archives", ["--bind", str(self.archives)]))
        try:
            for point, args in mounts:
                target = self.root / point
                target.mkdir(parents=True, exist_ok=True)
                _run(["mount", *args, str(target)], self.log)
                self.mounted.append(target)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for target in reversed(self.mounted):
            subprocess.run(["umount", "-l", str(target)], check=False)
        self.mounted.clear()


def run_dir() -> Path:
    """A directory for one run's chroot, beside the cache (one file system for the
    unpacking); runs that were killed before cleaning up are cleaned up first."""
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for old in cache.glob("run.*"):
        pid = old.name.split(".")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            remove_run(old)
    return Path(tempfile.mkdtemp(prefix=f"run.{os.getpid()}.", dir=cache))


def remove_run(path: Path) -> None:
    """A run's directory, mounts and all."""
    prefix = str(path.resolve()) + "/"
    with open("/proc/mounts") as mounts:
        points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for point in sorted(points, reverse=True):
        subprocess.run(["umount", "-l", point], check=False)
    subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False)


def fresh_root(parent: Path) -> Path:
    """A new chroot unpacked from the cached tarball under ``parent``."""
    tar = tarball()
    root = parent / "root"
    root.mkdir(parents=True)
    log = parent / "unpack.log"
    _run(["tar", "--zstd", "-C", str(root), "--numeric-owner", "-xpf", str(tar)], log)
    return root


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        print(tarball())
        return 0
    if argv[:1] == ["shell"]:
        with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="shell.") as tmp:
            root = fresh_root(Path(tmp))
            with Chroot(root, Path(tmp) / "mount.log", cache_dir() / "archives"):
                return subprocess.call(["chroot", str(root), *ENV, "/bin/bash"])
    print("usage: python -m tests.debian.bookworm build|shell", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
