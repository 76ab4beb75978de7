"""The pristine-Debian lane: the built .deb, installed with apt into a minbase Debian 12
that has nothing but Debian's archive (tests/debian/bookworm.py), imports every module,
runs its daemon and an ordinary user's job, and is purged leaving nothing.

This is what the real-kernel lane cannot show: its VM sees the host's Python packages,
so a dependency the package forgets is found there anyway (issue #24: the daemon's
``ModuleNotFoundError: No module named 'cryptography'`` on a real Debian 12).

A chroot has no systemd and no cgroup tree of its own (a fresh sysfs has an empty
/sys/fs/cgroup): the daemon runs in the foreground, as ``condorpy startd -f`` does
outside systemd, and its jobs without cgroup limits. The tests run in order on one
chroot (a module fixture): install, import, run, purge. Run with ``pytest -m debian
tests/debian`` (bin/test does, beside the pool lane); without ``-m debian`` they are
skipped, and where the chroot cannot be had (not root, no archive) they are skipped
with the reason, unless CONDORPY_REQUIRE_DEBIAN=1.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.debian.bookworm import (ENV, Chroot, Unavailable, cache_dir, fresh_root,
                                   remove_run, run_dir)

pytestmark = pytest.mark.debian

REPO = Path(__file__).resolve().parents[2]
USER = "alice"
# Only what a site would set for a daemon outside systemd on a shared host: the
# metrics port is the host's (a chroot shares its network), so a free one.
DAEMON_ENV = ["_CONDOR_CONDORPY_METRICS_ADDRESS=127.0.0.1:0"]

# Paths dpkg and apt own, or that the test itself writes (the user's home, /tmp):
# what changes there between before the install and after the purge is not the
# package's leftover.
NOT_THE_PACKAGES = ("proc", "sys", "dev", "tmp", "var/lib/dpkg", "var/lib/apt",
                    "var/cache/apt", "var/cache/debconf", "var/cache/ldconfig",
                    "var/log/apt", "var/log/dpkg.log", "var/log/alternatives.log",
                    "etc/ld.so.cache", f"home/{USER}", "root", "etc/resolv.conf")


def _unavailable(reason: str) -> None:
    if os.environ.get("CONDORPY_REQUIRE_DEBIAN") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass
class Pristine:
    root: Path
    log: Path
    deb: Path          # inside the chroot
    built: Path        # on the host
    before: set[str] = field(default_factory=set)
    listed: list[str] = field(default_factory=list)
    daemon: subprocess.Popen[bytes] | None = None

    def run(self, *argv: str, user: str | None = None, check: bool = True,
            timeout: float = 600, env: list[str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
        """A command in the chroot, as root or ``user`` (a login shell's environment
        of its own either way)."""
        inner = list(argv)
        if user is not None:
            inner = ["su", "-s", "/bin/sh", "-l", user, "-c", " ".join(_quote(a) for a in argv)]
        cmd = ["chroot", str(self.root), *ENV, *(env or []), *inner]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
        with open(self.log, "a") as out:
            out.write(f"$ {' '.join(argv)} (user {user or 'root'}) -> {res.returncode}\n"
                      f"{res.stdout}{res.stderr}")
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({res.returncode}):\n"
                                 f"{res.stdout[-3000:]}{res.stderr[-3000:]}")
        return res

    def files(self) -> set[str]:
        """Every path in the chroot but those dpkg, apt and the test own."""
        out: set[str] = set()
        for top, dirs, names in os.walk(self.root):
            rel_top = os.path.relpath(top, self.root)
            keep = []
            for d in dirs:
                rel = os.path.normpath(os.path.join(rel_top, d))
                if not rel.startswith(NOT_THE_PACKAGES):
                    keep.append(d)
                    out.add(rel + "/")
            dirs[:] = keep
            for n in names:
                rel = os.path.normpath(os.path.join(rel_top, n))
                if not rel.startswith(NOT_THE_PACKAGES):
                    out.add(rel)
        return out

    def stop_everything(self) -> None:
        """Every process whose root is this chroot (the daemon, starters, jobs): this
        test started them all."""
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(60)
            except subprocess.TimeoutExpired:
                pass
        for pid in _pids_in(self.root):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.daemon is not None:
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                pass


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def _pids_in(root: Path) -> list[int]:
    want = os.stat(root)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{entry}/root")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino):
            pids.append(int(entry))
    return pids


def _wait(what: str, cond: Callable[[], bool], timeout: float,
          explain: Callable[[], str] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.5)
    raise AssertionError(f"{what} (after {timeout:.0f} s)"
                         + (f":\n{explain()}" if explain else ""))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pristine]:
    if os.geteuid() != 0:
        _unavailable("the pristine-Debian lane needs root (debootstrap, chroot, mounts)")
    work = Path(tmp_path_factory.mktemp("pristine"))
    out = work / "deb"
    res = subprocess.run([str(REPO / "packaging/build-deb"), str(out)],
                         capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        raise AssertionError(f"packaging/build-deb failed:\n{res.stderr[-3000:]}")
    deb = Path(res.stdout.strip().splitlines()[-1])
    cache = cache_dir()
    run = run_dir()
    try:
        try:
            root = fresh_root(run)
        except Unavailable as exc:
            _unavailable(f"pristine Debian 12 chroot unavailable: {exc}")
        log = work / "chroot.log"
        with Chroot(root, log, cache / "archives"):
            (root / "tmp" / deb.name).write_bytes(deb.read_bytes())
            p = Pristine(root=root, log=log, deb=Path("/tmp") / deb.name, built=deb)
            try:
                yield p
            finally:
                p.stop_everything()
    finally:
        remove_run(run)


def test_lintian_is_clean_with_pedantic(pristine: Pristine) -> None:
    # every tag that remains is overridden, with its reason, in
    # packaging/debian/condorpy.lintian-overrides
    res = subprocess.run(["lintian", "--pedantic", "-I", "-E", "--tag-display-limit", "0",
                          str(pristine.built)], capture_output=True, text=True, timeout=600)
    tags = [line for line in res.stdout.splitlines() if re.match(r"^[EWIPX]: ", line)]
    assert not tags, "lintian --pedantic:\n" + "\n".join(tags)


def test_installs_with_apt_from_debians_archive(pristine: Pristine) -> None:
    p = pristine
    # The dependencies first, as apt would resolve them for the package, so that what
    # the package itself adds (and must take away at purge) can be told apart.
    depends = p.run("dpkg-deb", "-f", str(p.deb), "Depends").stdout.strip()
    res = p.run("apt-get", "satisfy", "-y", "-q", "--no-install-recommends", depends,
                check=False)
    if res.returncode != 0:   # the cached lists went stale: the archive moved on
        p.run("apt-get", "update", "-q")
        p.run("apt-get", "satisfy", "-y", "-q", "--no-install-recommends", depends)
    # the user who submits below is the site's, made before the package comes
    p.run("useradd", "-m", "-s", "/bin/sh", USER)
    p.before = p.files()
    p.run("apt-get", "install", "-y", "-q", "--no-install-recommends", str(p.deb))
    status = p.run("dpkg-query", "-W", "-f=${Status} ${Version}", "condorpy").stdout
    assert status.startswith("install ok installed")
    p.listed = p.run("dpkg", "-L", "condorpy").stdout.split()
    for shipped in ("/usr/bin/condorpy", "/usr/share/man/man1/condorpy.1.gz",
                    "/usr/share/man/man1/condorpy-submit.1.gz",
                    "/usr/share/condorpy/prometheus/condorpy-rules.yml",
                    "/usr/share/condorpy/grafana/condorpy-dashboard.json",
                    "/usr/share/doc/condorpy/systemd.md"):
        assert shipped in p.listed


def test_runs_on_debian_12s_own_libraries(pristine: Pristine) -> None:
    versions = pristine.run("python3", "-c", (
        "import sys, lark, prometheus_client, psutil, pyroute2, cryptography;"
        "from importlib.metadata import version;"
        "print(sys.version_info[:2], lark.__version__, version('prometheus_client'),"
        " psutil.__version__, version('pyroute2'), cryptography.__version__);"
        "print(sorted(p for p in sys.path if p))")).stdout
    assert "(3, 11) 1.1.5 0.16.0 5.9.4 0.7.2 38.0.4" in versions
    # nothing of the source tree or the host's virtual environment on the path
    assert str(REPO) not in versions and ".venv" not in versions


def test_every_module_imports(pristine: Pristine) -> None:
    res = pristine.run("python3", "-c", (
        "import importlib, pkgutil, condorpy\n"
        "names = [m.name for m in pkgutil.walk_packages(condorpy.__path__, 'condorpy.')\n"
        "         if not m.name.endswith('__main__')]  # that one runs the command\n"
        "bad = []\n"
        "for n in names:\n"
        "    try:\n"
        "        importlib.import_module(n)\n"
        "    except Exception as e:\n"
        "        bad.append(f'{n}: {type(e).__name__}: {e}')\n"
        "print(len(names), 'modules')\n"
        "print('\\n'.join(bad))\n"
        "raise SystemExit(1 if bad else 0)\n"), check=False)
    assert res.returncode == 0, f"modules that do not import:\n{res.stdout}{res.stderr}"
    assert int(res.stdout.split()[0]) > 50
    help_ = pristine.run("condorpy", "--help").stdout
    assert "startd" in help_


def test_the_daemon_runs_an_ordinary_users_job(pristine: Pristine) -> None:
    p = pristine
    log = open(p.log.with_name("daemon.out"), "ab")
    p.daemon = subprocess.Popen(
        ["chroot", str(p.root), *ENV, *DAEMON_ENV, "condorpy", "startd", "-f"],
        stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    log.close()

    def daemon_said() -> str:
        text = p.log.with_name("daemon.out").read_text(errors="replace")[-3000:]
        startlog = p.root / "var/log/condorpy/StartLog"
        if startlog.exists():
            text += "\n-- StartLog:\n" + startlog.read_text(errors="replace")[-3000:]
        return text

    def answers() -> bool:
        assert p.daemon is not None and p.daemon.poll() is None, \
            f"the daemon exited ({p.daemon.poll() if p.daemon else None}):\n{daemon_said()}"
        return p.run("condorpy", "q", user=USER, check=False).returncode == 0
    _wait("the daemon did not answer `condorpy q`", answers, 120, daemon_said)

    home = p.root / "home" / USER
    (home / "job.sub").write_text(
        "executable = /bin/sh\n"
        "arguments = \"-c 'echo hello from bookworm; id -un'\"\n"
        "output = job.out\nerror = job.err\nlog = job.log\n"
        "request_memory = 64\nqueue\n")
    uid = int(p.run("id", "-u", USER).stdout)
    os.chown(home / "job.sub", uid, uid)
    sub = p.run("sh", "-c", "cd && condorpy submit job.sub", user=USER).stdout
    assert "submitted to cluster 1" in sub

    def done() -> bool:
        hist = p.run("condorpy", "history", "-af", "ClusterId", "JobStatus", "ExitCode",
                     user=USER, check=False).stdout.split()
        return hist[:3] == ["1", "4", "0"]
    _wait("the user's job did not complete", done, 180,
          lambda: p.run("condorpy", "q", "-allusers", "-long", check=False).stdout[-2000:]
          + daemon_said())
    assert (home / "job.out").read_text().split() == ["hello", "from", "bookworm", USER]
    owner = os.stat(home / "job.out").st_uid
    assert owner == uid, "the job ran as its owner"

    p.daemon.send_signal(signal.SIGTERM)
    p.daemon.wait(60)
    assert p.daemon.returncode == 0, daemon_said()
    p.daemon = None


def test_purge_leaves_nothing(pristine: Pristine) -> None:
    p = pristine
    assert p.listed and p.before, "needs the install above"
    p.run("apt-get", "purge", "-y", "-q", "condorpy")
    assert p.run("dpkg-query", "-W", "condorpy", check=False).returncode != 0 or \
        "not-installed" in p.run("dpkg-query", "-W", "-f=${Status}", "condorpy",
                                 check=False).stdout
    left = sorted(path for path in p.listed
                  if (p.root / path.lstrip("/")).exists()
                  and not (p.root / path.lstrip("/")).is_dir())
    assert not left, f"files of the package left after purge: {left}"
    left_dirs = sorted(path for path in p.listed
                       if "condorpy" in path and (p.root / path.lstrip("/")).is_dir())
    assert not left_dirs, f"directories of the package left after purge: {left_dirs}"
    new = sorted(p.files() - p.before)
    assert not new, f"left after purge (not there before the install): {new[:40]}"
