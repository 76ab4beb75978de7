"""A real HTCondor pool for condorpy's pool tests: Debian trixie's htcondor (23.9.6:
collector, negotiator, schedd, startd, shadow and the condor_* tools) in a chroot made
with debootstrap, on loopback only; or, with ``release="forky"``, Debian forky's
``condor`` (25.14.1) in a chroot of its own (``tests/pool/.cache/forky/root``).

    python -m tests.pool.refpool build|start|start-default|start-shared|stop|status
        [--release forky]

The chroot is built once into ``tests/pool/.cache/root`` (about a minute, about 560 MB;
``CONDORPY_REFPOOL_ROOT`` puts it elsewhere) and reused. Building and running need root
(debootstrap, chroot, mounts) and, for the first build, Debian's mirror. The pool's
configuration is written at every start, so the tests own it; the collector listens on
127.0.0.1 at a free port chosen at start.

Facts and traps (``docs/pool-protocol.md``): debootstrap stops at
python3-cryptography's virtual dependency and ``apt-get -f install`` inside the chroot
finishes the job; a chroot cannot unshare mount namespaces, so ``MOUNT_UNDER_SCRATCH``
must be empty and PID namespaces off. forky, a testing suite, has a Release file
with a Valid-Until that a mirror or clock out of step makes "expired": apt inside the
chroot is told not to check it; trixie's debootstrap has no forky script, sid's serves.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = HERE / ".cache" / "root"
# A directory at the same path inside the pool and outside it: the "shared file system"
# of jobs that condorpy runs for the pool's shadow (RefPool.shared: this, suffixed per
# chroot).
SHARED = Path("/tmp/condorpy-refpool-shared")
SUITE = "trixie"

# Debian release -> (the package holding HTCondor's daemons and tools, its version,
# debootstrap's script for the suite). trixie's 23.9.6 is what most pool tests use;
# forky (and sid) ship 25.14.1 as ``condor``. debootstrap in trixie has no "forky"
# script: sid's is the one for a testing suite.
RELEASES: dict[str, tuple[str, str, str]] = {
    "trixie": ("htcondor", "23.9.6", "trixie"),
    "forky": ("condor", "25.14.1", "sid"),
}


class PoolUnavailable(Exception):
    """The reference pool cannot be built or started here (not root, no mirror, ...)."""


CONFIG = """\
# written by tests/pool/refpool.py at every start
use ROLE : Personal
CONDOR_HOST = {host}
COLLECTOR_HOST = {host}:{port}
NETWORK_INTERFACE = {host}
BIND_ALL_INTERFACES = False
# IPv4 only: with IPv6 on, the daemons also listen on the host's IPv6 address and a
# tool may pick it, which the host-based ALLOW lists (127.0.0.1) then refuse
ENABLE_IPV6 = False
{shared_port}
{security}
use FEATURE : PartitionableSlot
NUM_CPUS = 2
MEMORY = 2048
# a chroot cannot unshare mount namespaces
MOUNT_UNDER_SCRATCH =
USE_PID_NAMESPACES = False
NEGOTIATOR_INTERVAL = 5
SCHEDD_INTERVAL = 5
# A test pool's cycles as soon as asked for: HTCondor keeps 20 s between the end of
# one negotiation cycle and the start of the next (NEGOTIATOR_CYCLE_DELAY, for a big
# pool's startds to update the collector first) and 5 s between a schedd's queue
# scans, which every submitted or requeued job would wait out
NEGOTIATOR_CYCLE_DELAY = 1
NEGOTIATOR_MIN_INTERVAL = 1
SCHEDD_MIN_INTERVAL = 1
{extra}
"""


# --- security variants (tokens) ---------------------------------------------------
# "host_based": what most tests use; "default": nothing added, so the package's own
# file rules, as on a fresh install: trixie's 00-htcondor-9.0.config (use
# security:recommended_v9_0), forky's 00-security (use security:recommended from 23.10:
# READ without authentication, the rest as recommended_v9_0).
SECURITY = {
    "host_based": "use SECURITY : HOST_BASED\n"
                  "ALLOW_WRITE = 127.0.0.1 $(ALLOW_WRITE)\n"
                  "SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE",
    "default": "# security: the package default (00-htcondor-9.0.config)",
    # issue 29: the package default with daemon-to-daemon authentication by SSL only
    # (tools on the host keep FS); the certificates and map file are the test's, written
    # under the chroot's SSL_DIR before start. The daemons reach each other by address,
    # which names no host to check: they check the CA chain only.
    "ssl": "SEC_DAEMON_AUTHENTICATION_METHODS = SSL\n"
           "SEC_NEGOTIATOR_AUTHENTICATION_METHODS = SSL\n"
           "SEC_ADVERTISE_STARTD_AUTHENTICATION_METHODS = SSL\n"
           "SEC_ADVERTISE_SCHEDD_AUTHENTICATION_METHODS = SSL\n"
           "SEC_ADVERTISE_MASTER_AUTHENTICATION_METHODS = SSL\n"
           "SEC_CLIENT_AUTHENTICATION_METHODS = FS, SSL\n"
           "SSL_DIR = /etc/condor/ssl\n"
           "AUTH_SSL_SERVER_CAFILE = $(SSL_DIR)/ca.crt\n"
           "AUTH_SSL_CLIENT_CAFILE = $(SSL_DIR)/ca.crt\n"
           "AUTH_SSL_SERVER_CERTFILE = $(SSL_DIR)/host.crt\n"
           "AUTH_SSL_SERVER_KEYFILE = $(SSL_DIR)/host.key\n"
           "AUTH_SSL_CLIENT_CERTFILE = $(SSL_DIR)/host.crt\n"
           "AUTH_SSL_CLIENT_KEYFILE = $(SSL_DIR)/host.key\n"
           "CERTIFICATE_MAPFILE = $(SSL_DIR)/mapfile\n"
           "SSL_SKIP_HOST_CHECK = True",
}
# --- end security variants ---------------------------------------------------------

# --- shared port (issue 17) --------------------------------------------------------
# False: every daemon on a port of its own, the collector's fixed. True: the package
# default, every daemon behind condor_shared_port on the collector's port, which
# forwards a connection naming no sock id to the collector (SHARED_PORT_DEFAULT_ID).
SHARED_PORT = {
    False: "USE_SHARED_PORT = False",
    True: "USE_SHARED_PORT = True\nSHARED_PORT_PORT = {port}",
}
# --- end shared port ---------------------------------------------------------------


def _run(cmd: list[str], log: Path | None = None, check: bool = True,
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    out = open(log, "a") if log is not None else None
    try:
        res = subprocess.run(cmd, stdout=out or subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=timeout)
    finally:
        if out is not None:
            out.close()
    if check and res.returncode != 0:
        tail = log.read_text()[-600:] if log is not None else res.stdout[-600:]
        raise PoolUnavailable(f"{' '.join(cmd[:3])} failed ({res.returncode}): {tail}")
    return res


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# log lines that explain a job that never ran or never came back
_INTERESTING = re.compile(
    r"shadow|reconnect|lease|match|claim|STARTING UP|SIGTERM|exited|restart|error|"
    r"fail|refus|denied|EXPIRED|might still be alive", re.IGNORECASE)
_NOISE = re.compile(r"ForkWork|CHILDALIVE|ChildAlive|Calling Handle|Return from Handle|"
                   r"Number of Active|startCommand|WaitForSocket|init_local_hostname|"
                   r"Daemon Log is logging|forward resolution|is watching|\*\* [/S]")


class RefPool:
    def __init__(self, root: Path | None = None, release: str = SUITE,
                 instance: str | None = None) -> None:
        if release not in RELEASES:
            raise PoolUnavailable(f"unknown reference pool release {release!r} "
                                  f"(known: {', '.join(RELEASES)})")
        self.release = release
        # what the pool said about a failed test, taken before the test replaced it
        self.last_diagnosis: str | None = None
        self.package, self.version, self._script = RELEASES[release]
        # each release has its own chroot; the default one keeps its old place
        default = DEFAULT_ROOT if release == SUITE else HERE / ".cache" / release / "root"
        env = "CONDORPY_REFPOOL_ROOT" if release == SUITE else \
            f"CONDORPY_REFPOOL_ROOT_{release.upper()}"
        # the chroot as built: read-only once built when pools run on instances of it
        self.base = Path(os.environ.get(env, "") or root or default)
        # Several pools of one release at once (a pool-lane worker each) each run in an
        # overlay of their own on the built chroot: the config, logs, spool and lock
        # files inside are per pool, the 600 MB of packages shared. Under pytest-xdist
        # the instance is the worker's name; without one the pool runs in the chroot.
        self.instance = instance if instance is not None else \
            os.environ.get("PYTEST_XDIST_WORKER") or None
        if self.instance is not None and not re.fullmatch(r"[\w.-]+", self.instance):
            raise PoolUnavailable(f"bad reference pool instance name {self.instance!r}")
        self._layers = self.base.with_name(f"{self.base.name}.{self.instance or 'base'}")
        self.root = self._layers / "root" if self.instance else self.base
        self.port = 0
        # the address every daemon of the pool binds (a test's veth for CCB: issue 29)
        self.host = "127.0.0.1"
        self.extra = ""
        self.security = "host_based"
        self.shared_port = False
        # one per chroot: pools of other releases or worktrees running at the same time
        # must not share (and clear) each other's job directories
        digest = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:8]
        self.shared = Path(f"{SHARED}-{digest}")

    # ------------------------------------------------------------------ build
    def built(self) -> bool:
        return (self.base / "usr/sbin/condor_master").exists() and \
            (self.base / "etc/condor").is_dir()

    def build(self) -> None:
        """Build the chroot unless it is there, and mount this instance's overlay on it;
        safe to call from parallel sessions."""
        if not self.built():
            if os.geteuid() != 0:
                raise PoolUnavailable("building the reference pool needs root "
                                      "(debootstrap)")
            self.base.parent.mkdir(parents=True, exist_ok=True)
            with open(self.base.parent / "build.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not self.built():
                    self._build()
        if self.instance:
            self._overlay()

    def _overlay(self) -> None:
        """This instance's view of the built chroot: what its pool writes stays in its
        own upper layer (kept between sessions, as the chroot itself would be)."""
        if os.geteuid() != 0:
            raise PoolUnavailable("the reference pool's overlay needs root (mount)")
        if _mounted(self.root):
            return
        upper, work = self._layers / "upper", self._layers / "work"
        for d in (upper, work, self.root):
            d.mkdir(parents=True, exist_ok=True)
        _run(["mount", "-t", "overlay", "overlay", "-o",
              f"lowerdir={self.base},upperdir={upper},workdir={work}", str(self.root)])

    def close(self) -> None:
        """Stop the pool and take its overlay down (the chroot as built stays)."""
        self.stop()
        if self.instance and _mounted(self.root):
            subprocess.run(["umount", "-l", str(self.root)], check=False)

    def _build(self) -> None:
        root = self.base
        log = root.parent / "build.log"
        log.write_text("")
        if shutil.which("debootstrap") is None:
            # the real-kernel lane may be installing its own packages at this moment
            # (bin/test runs the lanes side by side): one apt at a time, by one lock
            apt = ["flock", "/tmp/condorpy-apt.lock", "apt-get",
                   "-o", "DPkg::Lock::Timeout=600"]
            _run([*apt, "update", "-qq"], log)
            _run([*apt, "install", "-y", "-qq", "debootstrap"], log)
        tmp = root.with_name(root.name + ".tmp")
        if tmp.exists():
            self._umount(tmp)
            shutil.rmtree(tmp)
        # debootstrap ends in an error at python3-cryptography's virtual dependency
        script = Path("/usr/share/debootstrap/scripts") / self._script
        _run(["debootstrap", "--variant=minbase", f"--include={self.package}",
              self.release, str(tmp), "http://deb.debian.org/debian", str(script)],
             log, check=False)
        if not (tmp / "usr/bin/apt-get").exists():
            raise PoolUnavailable(f"debootstrap failed: {log.read_text()[-600:]}")
        self._mount(tmp)
        try:
            env = "DEBIAN_FRONTEND=noninteractive"
            # A testing suite's Release carries a Valid-Until a week or two ahead; a
            # mirror or clock out of step with it makes apt refuse the index
            # ("Release file ... is expired"). The packages are still signed.
            apt = "apt-get -o Acquire::Check-Valid-Until=false"
            _run(["chroot", str(tmp), "/bin/sh", "-c",
                  f"{apt} update -qq && {env} {apt} -f install -y -qq"], log)
            _run(["chroot", str(tmp), "dpkg", "-s", self.package], log)
            _run(["chroot", str(tmp), "/bin/sh", "-c",
                  "id alice >/dev/null 2>&1 || useradd -m alice"], log)
        finally:
            self._umount(tmp)
        tmp.rename(root)

    # ------------------------------------------------------------------ mounts
    @staticmethod
    def _mount(root: Path) -> None:
        for point, args in (("proc", ["-t", "proc", "proc"]), ("sys", ["-t", "sysfs", "sys"]),
                            ("dev", ["--bind", "/dev"])):
            target = root / point
            if subprocess.run(["mountpoint", "-q", str(target)]).returncode != 0:
                _run(["mount", *args, str(target)])

    @staticmethod
    def _umount(root: Path) -> None:
        for point in ("dev", "sys", "proc"):
            target = root / point
            if subprocess.run(["mountpoint", "-q", str(target)]).returncode == 0:
                subprocess.run(["umount", "-l", str(target)], check=False)

    # ------------------------------------------------------------------ run
    @property
    def collector(self) -> str:
        if self.shared_port:      # as an administrator names it: the collector's sock id
            return f"{self.host}:{self.port}?sock=collector"
        return f"{self.host}:{self.port}"

    def condor(self, *argv: str, user: str | None = None, cwd: str | None = None,
               check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run an HTCondor tool inside the pool (as ``user`` if given)."""
        inner = " ".join(_quote(a) for a in argv)
        if cwd:
            inner = f"cd {_quote(cwd)} && {inner}"
        cmd = ["chroot", str(self.root)]
        cmd += ["su", user, "-c", inner] if user else ["/bin/sh", "-c", inner]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({res.returncode}): "
                                 f"{res.stdout[-2000:]}{res.stderr[-2000:]}")
        return res

    def start(self, extra: str = "", security: str = "host_based",
              shared_port: bool = False, host: str = "127.0.0.1") -> None:
        self.build()
        if os.geteuid() != 0:
            raise PoolUnavailable("running the reference pool needs root (chroot)")
        self.stop()
        self.port = _free_port()
        self.extra = extra
        self.security = security
        self.shared_port = shared_port
        self.host = host
        cfg = self.root / "etc/condor/config.d/99-condorpy-refpool.config"
        # only the package's own files and this one: nothing left from another harness
        for stale in (self.root / "etc/condor/config.d").glob("*"):
            if not stale.name.startswith("00-") and stale != cfg:
                stale.unlink()
        if os.environ.get("CONDORPY_REFPOOL_DEBUG"):
            # the daemons' protocol as they see it, for comparing releases
            extra += "\nALL_DEBUG = D_FULLDEBUG D_SECURITY D_COMMAND\n"
        cfg.write_text(CONFIG.format(port=self.port, extra=extra, host=host,
                                     security=SECURITY[security],
                                     shared_port=SHARED_PORT[shared_port].format(
                                         port=self.port)))
        self._mount(self.root)
        self.shared.mkdir(exist_ok=True)
        self.shared.chmod(0o1777)
        inside = self.root / str(self.shared).lstrip("/")
        inside.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["mountpoint", "-q", str(inside)]).returncode != 0:
            _run(["mount", "--bind", str(self.shared), str(inside)])
        # a fresh queue every session: no job of an earlier run may take a test's slot
        # (Debian's package keeps the queue in /var/spool/condor)
        for spool in ("var/lib/condor/spool", "var/spool/condor"):
            shutil.rmtree(self.root / spool, ignore_errors=True)
        _run(["chroot", str(self.root), "/bin/sh", "-c",
              "mkdir -p /var/log/condor /var/lib/condor/spool /var/lib/condor/execute "
              "/var/spool/condor /run/condor /var/lock/condor && chown -R condor:condor "
              "/var/log/condor /var/lib/condor /var/spool/condor /run/condor "
              "/var/lock/condor && "
              "condor_master -pidfile /run/condor/master.pid"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            res = self.condor("condor_status", "-schedd", "-af", "Name", check=False,
                              timeout=20)
            if res.returncode == 0 and res.stdout.strip():
                return
            time.sleep(0.5)
        log = self.root / "var/log/condor/MasterLog"
        tail = log.read_text()[-600:] if log.exists() else ""
        self.stop()
        raise PoolUnavailable(f"the reference pool did not come up: {tail}")

    def stop(self) -> None:
        pidfile = self.root / "run/condor/master.pid"
        try:
            pid = int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = 0
        if pid > 0 and _alive(pid):
            # fast shutdown (a test pool's jobs need no grace): a graceful one waits for
            # shadows still trying to reconnect, up to the job lease
            os.kill(pid, signal.SIGQUIT)
            end = time.monotonic() + 30
            while _alive(pid) and time.monotonic() < end:
                time.sleep(0.2)
        pidfile.unlink(missing_ok=True)
        # Whatever outlived its master (a master killed while its schedd waited on a
        # shadow) would share the next pool's spool and logs: nothing of this chroot's
        # may stay.
        for _ in range(50):
            left = self._processes()
            if not left:
                break
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.1)
        inside = self.root / str(self.shared).lstrip("/")
        if subprocess.run(["mountpoint", "-q", str(inside)]).returncode == 0:
            subprocess.run(["umount", "-l", str(inside)], check=False)
        self._umount(self.root)

    def _processes(self) -> list[int]:
        """The live processes whose root is this pool's chroot."""
        root = os.path.realpath(self.root)
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.readlink(f"/proc/{entry}/root") == root and _alive(int(entry)):
                        found.append(int(entry))
                except OSError:
                    pass
        return found

    def create_token(self, identity: str, authz: tuple[str, ...]) -> str:
        """An IDTOKEN signed by the pool's key (the collector creates the key, in
        /etc/condor/passwords.d/POOL, at its first start), as an administrator makes one
        for a new execution point: ``condor_token_create -identity ... -authz ...``."""
        argv = ["condor_token_create", "-identity", identity]
        for a in authz:
            argv += ["-authz", a]
        return self.condor(*argv).stdout.strip()

    def trust_domain(self) -> str:
        return self.condor("condor_config_val", "TRUST_DOMAIN").stdout.strip()

    def log(self, name: str) -> str:
        try:
            return (self.root / "var/log/condor" / name).read_text()
        except OSError:
            return ""

    def diagnose(self, since: float, per_log: int = 25) -> str:
        """What the pool's daemons said since ``since`` (epoch seconds), cut to what
        explains a job that never ran or never reconnected: the queue, and each log's
        lines about shadows, matches, claims, reconnects, leases and errors. Short,
        because CI shows only the end of a failing run."""
        out = []
        q = self.condor("condor_q", "-allusers", "-nobatch", "-af", "ClusterId", "ProcId",
                        "JobStatus", "RemoteHost", "LastJobLeaseRenewal", check=False,
                        timeout=20)
        out.append("condor_q (cluster proc status host lease-renewal): "
                   + (q.stdout.strip().replace("\n", "; ") or q.stderr.strip()[-300:]
                      or "empty"))
        stamp = time.strftime("%m/%d/%y %H:%M:%S", time.localtime(since))
        for name in ("MasterLog", "SchedLog", "ShadowLog", "NegotiatorLog"):
            lines = [line for line in self.log(name).splitlines()
                     if line[:17] >= stamp and _INTERESTING.search(line)
                     and not _NOISE.search(line)]
            if lines:
                out.append(f"--- {name} since {stamp} (last {per_log} of {len(lines)})")
                out += [line[:240] for line in lines[-per_log:]]
        return "\n".join(out)


def _mounted(path: Path) -> bool:
    return subprocess.run(["mountpoint", "-q", str(path)]).returncode == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


def main(argv: list[str]) -> int:
    release = SUITE
    if "--release" in argv:
        i = argv.index("--release")
        if i + 1 >= len(argv):
            print("refpool: --release needs a value "
                  f"({', '.join(RELEASES)})", file=sys.stderr)
            return 2
        release = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    try:
        pool = RefPool(release=release)
    except PoolUnavailable as exc:
        print(f"refpool: {exc}", file=sys.stderr)
        return 2
    cmd = argv[0] if argv else "status"
    try:
        if cmd == "build":
            pool.build()
            print(f"reference pool ({pool.release}, {pool.package} {pool.version}) "
                  f"built in {pool.root}")
        elif cmd in ("start", "start-default", "start-shared"):
            pool.start(security="default" if cmd == "start-default" else "host_based",
                       shared_port=cmd == "start-shared")
            print(f"reference pool up: collector {pool.collector}")
        elif cmd == "stop":
            pool.stop()
        elif cmd == "status":
            print(pool.condor("condor_status", "-any", "-af", "MyType", "Name",
                              check=False).stdout)
        else:
            print("usage: python -m tests.pool.refpool "
                  "build|start|start-default|start-shared|stop|status "
                  "[--release trixie|forky]", file=sys.stderr)
            return 2
    except PoolUnavailable as exc:
        print(f"refpool: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
