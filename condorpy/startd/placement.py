"""Where starters, and so their jobs, live in the cgroup v2 tree.

Jobs must outlive the daemon: ``systemctl restart condorpy`` (and the watchdog's
restart) kills what is left in the service's cgroup, and a restarted service whose
cgroup still holds job cgroups with controllers would not even start (its main process
goes back to the top cgroup, an interior node by then). So, as Slurm does with
``slurmstepd.scope``, starters and jobs live in a unit of their own:

* **Under systemd** (root, started by systemd: ``INVOCATION_ID`` set and
  ``/run/systemd/system`` present) the daemon makes sure a delegated scope exists,
  ``condorpy-jobs.scope`` by default (knob ``CONDORPY_JOBS_SCOPE``), created once per
  boot with ``systemd-run --scope -p Delegate=yes -p TasksMax=infinity`` around a
  keep-alive ``sleep infinity`` (a scope with no process ends; started through
  ``setsid --fork``, so it is nobody's child but init's). The keep-alive steps
  into ``<scope>/init.leaf`` so the scope itself holds no process; starters go into
  ``<scope>/starters.leaf`` and create their jobs' cgroups beside it
  (``<scope>/job_<n>.slice/job.scope``, limits on the slice). A restarted daemon
  finds the scope running and uses it as it is. The daemon itself steps into
  ``<service>/daemon.leaf`` before saying READY (systemd 252 has no
  ``DelegateSubgroup=``), leaving the service's top cgroup to systemd's ``.control``.
* **Without systemd**, in a cgroup of its own that it may write to (delegated), the
  daemon and its launcher step into ``<own>/daemon.leaf`` and starters go into
  ``<own>/starters.leaf``, so neither sits in a cgroup whose children get
  controllers; in the root cgroup (a VM, a container's init) the daemon stays put
  and starters go into ``/condorpy.starters.leaf``.
* Otherwise (cgroup v1 or hybrid, a cgroup not delegated to us) starters stay in the
  daemon's cgroup and the daemon says so in one warning; each starter then decides
  on its own whether its job gets a cgroup.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from condorpy.config import KnobReader
from condorpy.errors import StartdError
from condorpy.starter.cgroup import STARTER_LEAF, own_cgroup

log = logging.getLogger("condorpy.startd")

DEFAULT_SCOPE = "condorpy-jobs.scope"
DAEMON_LEAF = "daemon.leaf"
KEEPALIVE_LEAF = "init.leaf"
ROOT_STARTERS = "condorpy.starters.leaf"
SCOPE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Placement:
    """``starters`` is the absolute cgroup directory each starter enters (None: stay
    in the daemon's); ``unit`` the jobs' scope, when there is one."""
    starters: str | None
    describe: str
    unit: str | None = None


class SystemdApi(Protocol):
    """The two things asked of systemd: a unit's cgroup, and a new scope."""

    def unit_cgroup(self, unit: str) -> str | None:
        """The cgroup (mount-relative path) of an active unit, else None."""
        ...

    def start_scope(self, unit: str) -> None:
        """Start a delegated scope around a keep-alive process; return once active."""
        ...


class SystemdRun:
    """systemd's own tools: ``systemctl show`` and ``systemd-run --scope``."""

    def __init__(self, timeout_s: float = SCOPE_TIMEOUT_S,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.timeout_s = timeout_s
        self.sleep = sleep

    def unit_cgroup(self, unit: str) -> str | None:
        try:
            out = subprocess.run(["systemctl", "show", "--property=ActiveState,ControlGroup",
                                  unit], capture_output=True, text=True,
                                 timeout=self.timeout_s, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise StartdError(f"systemctl show {unit}: {exc}") from None
        props = dict(line.partition("=")[::2] for line in out.stdout.splitlines())
        if out.returncode != 0 or props.get("ActiveState") != "active":
            return None
        return props.get("ControlGroup") or None

    def start_scope(self, unit: str) -> None:
        # A scope that failed before is in the way of a new one of the same name.
        subprocess.run(["systemctl", "reset-failed", unit], capture_output=True,
                       timeout=self.timeout_s, stdin=subprocess.DEVNULL)
        sleep = shutil.which("sleep", path="/usr/bin:/bin") or "/bin/sleep"
        with tempfile.TemporaryFile() as err:
            try:
                # setsid --fork: the keep-alive is not our child (nothing of ours waits
                # for it, so it must not turn into our zombie) and is in a session of
                # its own (nothing sent to the daemon's group reaches it).
                subprocess.run(
                    ["setsid", "--fork", "systemd-run", "--scope", "--quiet",
                     f"--unit={unit}",
                     "--description=condorpy jobs: starters and the jobs they run",
                     "--property=Delegate=yes", "--property=TasksMax=infinity",
                     "--", sleep, "infinity"],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                    close_fds=True, check=True, timeout=self.timeout_s)
            except (OSError, subprocess.SubprocessError) as exc:
                raise StartdError(f"cannot run systemd-run: {exc}") from None
            deadline = time.monotonic() + self.timeout_s
            while self.unit_cgroup(unit) is None:
                if time.monotonic() > deadline:
                    err.seek(0)
                    why = err.read().decode(errors="replace").strip().splitlines()
                    raise StartdError(f"systemd-run --scope --unit={unit} did not start "
                                      f"it within {self.timeout_s:g} s: "
                                      f"{why[-1] if why else 'no message'}")
                self.sleep(0.05)


def under_systemd(env: Mapping[str, str], run_dir: str = "/run/systemd/system") -> bool:
    """Started by systemd as a service (sd_booted() and an invocation id)."""
    return bool(env.get("INVOCATION_ID")) and os.path.isdir(run_dir)


def _directory(mount: str, path: str) -> str:
    return os.path.join(mount, path.lstrip("/"))


def _procs(directory: str) -> list[int]:
    try:
        with open(os.path.join(directory, "cgroup.procs")) as fh:
            return [int(p) for p in fh.read().split()]
    except OSError:
        return []


def move(directory: str, pids: Iterable[int]) -> None:
    """Put ``pids`` into the cgroup ``directory``, creating it."""
    try:
        os.makedirs(directory, exist_ok=True)
        for pid in pids:
            fd = os.open(os.path.join(directory, "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(fd, str(pid).encode())
            except ProcessLookupError:
                pass            # gone meanwhile
            finally:
                os.close(fd)
    except OSError as exc:
        raise StartdError(f"cannot move processes into cgroup {directory}: "
                          f"{exc.strerror}") from None


def _step_aside(mount: str, own: str, ours: list[int]) -> None:
    """Move our processes out of ``own`` into its daemon leaf, when ``own`` is not
    the root and holds nothing but them."""
    top = _directory(mount, own)
    if own == "/" or os.path.basename(own) == DAEMON_LEAF:
        return
    move(os.path.join(top, DAEMON_LEAF), [p for p in ours if p in _procs(top)])


def jobs_scope(api: SystemdApi, unit: str, mount: str) -> str:
    """The jobs' scope's cgroup directory, starting the scope when it is not running."""
    cgroup = api.unit_cgroup(unit)
    started = cgroup is None
    if cgroup is None:
        api.start_scope(unit)
        cgroup = api.unit_cgroup(unit)
        if cgroup is None:
            raise StartdError(f"{unit} was started but is not active")
    scope = _directory(mount, cgroup)
    # The keep-alive steps down into a leaf (as one left at the top by hand): the
    # scope's children get controllers, so the scope itself holds no process.
    stray = _procs(scope)
    if stray:
        move(os.path.join(scope, KEEPALIVE_LEAF), stray)
    if started:
        log.info("started %s (keep-alive pid %s) for starters and jobs", unit,
                 " ".join(map(str, stray)) or "?")
    return scope


def place(cfg: KnobReader, env: Mapping[str, str], ours: list[int], *,
          mount: str = "/sys/fs/cgroup", proc_root: str = "/proc",
          api: SystemdApi | None = None, systemd: bool | None = None,
          root: bool | None = None) -> Placement:
    """Decide where starters go, moving the daemon's own processes (``ours``: the
    daemon and its launcher) where they belong. Never raises: a problem means
    starters stay with the daemon, with one warning saying why."""
    def fallback(why: str) -> Placement:
        log.warning("starters stay in the daemon's cgroup (%s): restarting the daemon's "
                    "service may end running jobs", why)
        return Placement(None, f"the daemon's cgroup ({why})")

    if not os.path.exists(os.path.join(mount, "cgroup.controllers")):
        return fallback(f"{mount} is not a cgroup v2 hierarchy")
    own = own_cgroup(proc_root)
    if own is None:
        return fallback(f"{proc_root}/self/cgroup names no cgroup v2 path")
    if systemd is None:
        systemd = under_systemd(env)
    if root is None:
        root = os.geteuid() == 0
    if systemd and root:
        unit = cfg.get("CONDORPY_JOBS_SCOPE") or DEFAULT_SCOPE
        if not unit.endswith(".scope"):
            unit += ".scope"
        try:
            scope = jobs_scope(api or SystemdRun(), unit, mount)
            _step_aside(mount, own, ours)
            return Placement(os.path.join(scope, STARTER_LEAF), f"{unit} ({scope})", unit)
        except StartdError as exc:
            log.warning("no scope for jobs: %s", exc)
    if own == "/":
        return Placement(os.path.join(mount, ROOT_STARTERS), f"{mount}/{ROOT_STARTERS}")
    top = _directory(mount, own)
    if os.path.basename(own) == DAEMON_LEAF:
        top = os.path.dirname(top)
    if not os.access(os.path.join(top, "cgroup.procs"), os.W_OK) or \
            not os.access(top, os.W_OK):
        return fallback(f"cgroup {own} is not delegated to this user")
    others = [p for p in _procs(top) if p not in ours]
    if others:
        return fallback(f"cgroup {own} holds other processes {others[:5]}")
    try:
        _step_aside(mount, own, ours)
    except StartdError as exc:
        return fallback(str(exc))
    where = os.path.join(top, STARTER_LEAF)
    if systemd:
        log.warning("starters and jobs live in the service's own cgroup (%s): "
                    "restarting the service ends them", where)
    return Placement(where, where)
