"""The Docker runtime, driven through its command-line client (the ``DOCKER`` knob).

Two halves. The parsers and classifiers at the top are pure: they turn what the client
printed (``docker -v``, ``docker images``, ``docker inspect``, a failed ``docker
create``'s exit status and error text) into records, and are tested on the host
without a daemon. :class:`DockerCli` below runs the client, always with an argument
list (never a shell) and a timeout, and hands its output to them.

Every container condorpy creates carries HTCondor's label (``org.htcondorproject=True``,
so HTCondor's own clean-up recognises it too) and condorpy's, whose value is the
execute directory of the startd it ran for: a startd that starts after a crash finds
the containers its predecessor left behind by that label and removes those whose
starter is gone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from condorpy.errors import MachineError

DEFAULT_DOCKER = "/usr/bin/docker"          # HTCondor's default for DOCKER
HTCONDOR_LABEL = "org.htcondorproject=True"
EXECUTE_LABEL = "org.condorpy.execute"      # value: the startd's execute directory
JOB_LABEL = "org.condorpy.job"              # value: the job's id
# the runtime's short commands (version, inspect, pause); a create that pulls or a
# removal of a large container gets longer
SHORT_TIMEOUT_S = 20.0
LONG_TIMEOUT_S = 300.0


class DockerError(MachineError):
    """The docker client could not be run, or its output made no sense."""


@dataclass(frozen=True)
class DockerSettings:
    """The knobs of the docker runtime (HTCondor's names and defaults)."""
    path: str = DEFAULT_DOCKER                      # DOCKER
    volumes: tuple[str, ...] = ()                   # DOCKER_MOUNT_VOLUMES, each
    # DOCKER_VOLUME_DIR_<name> made "host:inside[:ro]"
    drop_capabilities: bool = True                  # DOCKER_DROP_ALL_CAPABILITIES
    run_under_init: bool = True                     # DOCKER_RUN_UNDER_INIT
    log_driver_none: bool = True                    # DOCKER_LOG_DRIVER_NONE
    networks: tuple[str, ...] = ()                  # DOCKER_NETWORKS (beyond none/host/nat)
    shm_size: int | None = None                     # DOCKER_SHM_SIZE (bytes)
    extra_args: tuple[str, ...] = ()                # DOCKER_EXTRA_ARGUMENTS
    # docker's cgroup driver when known (the startd's probe); None: asked per job
    cgroup_driver: str | None = None


def volume_spec(path: str) -> str:
    """A DOCKER_VOLUME_DIR_<name> value: ``/p`` is mounted at the same place."""
    return path if ":" in path else f"{path}:{path}"


# --- parsers (pure) -----------------------------------------------------------------

_VERSION = re.compile(r"^Docker version (\d+)\.(\d+)")


def parse_version(text: str) -> str | None:
    """The line ``docker -v`` prints, when it is Docker's (HTCondor advertises it
    whole as DockerVersion); None for anything else (another program, several lines)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1 or len(lines[0]) > 1024:
        return None
    line = lines[0].strip()
    return line if _VERSION.match(line) else None


def version_numbers(version: str) -> tuple[int, int] | None:
    m = _VERSION.match(version)
    return (int(m.group(1)), int(m.group(2))) if m else None


_SIZE = re.compile(r"^\s*([0-9.]+)\s*([kKMGT]?B)\s*$")
_UNIT = {"B": 1, "kB": 1000, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}


def parse_size_bytes(text: str) -> int | None:
    """A size as docker prints it (``1.24MB``, ``512kB``: decimal units)."""
    m = _SIZE.match(text)
    if m is None or m.group(2) not in _UNIT:
        return None
    try:
        return int(float(m.group(1)) * _UNIT[m.group(2)])
    except ValueError:
        return None


def parse_images_size_mb(text: str) -> int:
    """DockerCachedImageSizeMb: the images listed by ``docker images --format
    '{{.ID}} {{.Size}}'``, each counted once, in MB (rounded up)."""
    seen: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        size = parse_size_bytes(parts[1])
        if size is not None:
            seen[parts[0]] = size
    total = sum(seen.values())
    return -(-total // 1_000_000)


@dataclass(frozen=True)
class ContainerState:
    """What ``docker inspect`` says of a container's state."""
    status: str                 # created, running, paused, exited, dead, ...
    running: bool
    paused: bool
    exit_code: int
    oom_killed: bool
    error: str                  # the runtime's error starting it ("" if none)
    pid: int
    labels: tuple[tuple[str, str], ...] = ()

    def label(self, key: str) -> str | None:
        return dict(self.labels).get(key)


def parse_inspect(text: str) -> ContainerState:
    """The first container of ``docker inspect``'s JSON output."""
    try:
        data = json.loads(text)
        item = data[0] if isinstance(data, list) else data
        state = item["State"]
        labels = (item.get("Config") or {}).get("Labels") or {}
        return ContainerState(
            status=str(state.get("Status", "")), running=bool(state.get("Running")),
            paused=bool(state.get("Paused")), exit_code=int(state.get("ExitCode", 0)),
            oom_killed=bool(state.get("OOMKilled")), error=str(state.get("Error") or ""),
            pid=int(state.get("Pid") or 0),
            labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise DockerError(f"docker inspect printed no container state: {exc}") from None


def wait_status(exit_code: int) -> int:
    """A container's exit code as a wait status, as HTCondor's starter reads it: above
    128 the container's process died by the signal ``code - 128``."""
    if exit_code > 128:
        return exit_code - 128
    return (exit_code & 0xFF) << 8


class FailureKind(Enum):
    """Whose failure a failed container start is."""
    RUNTIME_DOWN = "runtime-down"    # the daemon is unreachable: the runtime is unhealthy
    RUNTIME = "runtime"              # this start failed for the machine's sake: requeue
    JOB = "job"                      # the job's own (a malformed image name, no such
    # executable in the image): it would fail the same anywhere; held


@dataclass(frozen=True)
class StartFailure:
    kind: FailureKind
    reason: str


_DAEMON_DOWN = ("cannot connect to the docker daemon", "is the docker daemon running",
                "connect: no such file or directory", "connection refused",
                "permission denied while trying to connect")
_JOB_FAULTS = ("invalid reference format", "executable file not found",
               "exec format error", "invalid argument for \"--",
               "not a valid repository/tag")


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line[:400]
    return (lines[-1] if lines else "")[:400]


def classify_failure(exit_code: int | None, stderr: str, *, step: str) -> StartFailure:
    """A failed ``docker create``/``docker start``, told apart as HTCondor 24.3 tells a
    container runtime failure from the job's own. ``exit_code`` is the client's (125:
    the daemon or client failed; 126, 127: the container's command could not be
    invoked or found) or None when the client could not be run at all."""
    detail = _first_error(stderr)
    low = stderr.lower()
    if exit_code is None:
        return StartFailure(FailureKind.RUNTIME_DOWN, f"cannot run the docker client for "
                                                      f"{step}: {detail or 'no output'}")
    if any(s in low for s in _DAEMON_DOWN):
        return StartFailure(FailureKind.RUNTIME_DOWN,
                            f"docker {step}: the Docker daemon is unreachable: {detail}")
    if exit_code in (126, 127) or any(s in low for s in _JOB_FAULTS):
        return StartFailure(FailureKind.JOB, f"docker {step}: {detail or f'exit {exit_code}'}")
    return StartFailure(FailureKind.RUNTIME,
                        f"docker {step} failed (exit {exit_code}): {detail or 'no message'}")


def classify_state_error(error: str) -> FailureKind:
    """A container that never ran its command, by the runtime's State.Error: the image
    lacks the command (the job's) or the runtime failed (a mount, cgroups: the
    machine's)."""
    low = error.lower()
    if any(s in low for s in _JOB_FAULTS) or ("exec:" in low and "not found" in low):
        return FailureKind.JOB
    return FailureKind.RUNTIME


def names_of(text: str) -> list[str]:
    """The names ``docker ps --format '{{.Names}}'`` lists."""
    return [line.strip() for line in text.splitlines() if line.strip()]


# --- the client ---------------------------------------------------------------------

@dataclass(frozen=True)
class Ran:
    code: int | None            # None: the client could not be run (or timed out)
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0


class DockerCli:
    """The docker client at ``path``. Every call is an argument list with a timeout;
    the environment is the caller's minus what a job must not give the client."""

    def __init__(self, path: str = DEFAULT_DOCKER, *,
                 env: dict[str, str] | None = None) -> None:
        self.path = path
        self.env = env

    def argv(self, *args: str) -> list[str]:
        return [self.path, *args]

    def run(self, args: Sequence[str], *, timeout: float = SHORT_TIMEOUT_S) -> Ran:
        try:
            done = subprocess.run(self.argv(*args), capture_output=True, text=True,
                                  timeout=timeout, env=self.env, stdin=subprocess.DEVNULL,
                                  check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return Ran(None, "", str(exc))
        return Ran(done.returncode, done.stdout, done.stderr)

    def version(self) -> str | None:
        ran = self.run(["-v"])
        return parse_version(ran.out) if ran.ok else None

    def server_ok(self) -> tuple[bool, str]:
        """Whether the daemon answers (HTCondor's startd tests the runtime likewise);
        with the reason when it does not."""
        ran = self.run(["info", "--format", "{{.ServerVersion}}"])
        if ran.ok and ran.out.strip():
            return True, ""
        return False, _first_error(ran.err) or f"docker info exited {ran.code}"

    def cgroup_driver(self) -> str | None:
        ran = self.run(["info", "--format", "{{.CgroupDriver}}"])
        return ran.out.strip() or None if ran.ok else None

    def images_size_mb(self) -> int | None:
        ran = self.run(["images", "--format", "{{.ID}} {{.Size}}"])
        return parse_images_size_mb(ran.out) if ran.ok else None

    def has_image(self, image: str) -> bool:
        ran = self.run(["images", "-q", image])
        return ran.ok and bool(ran.out.strip())

    def create(self, args: Sequence[str]) -> Ran:
        return self.run(["create", *args], timeout=LONG_TIMEOUT_S)

    def start_argv(self, name: str) -> list[str]:
        """The attached start whose process the starter watches as the job's: it
        streams the container's output to its own, forwards signals, and exits when the
        container does."""
        return self.argv("start", "-a", name)

    def inspect(self, name: str) -> ContainerState | None:
        ran = self.run(["inspect", "--type", "container", name])
        if not ran.ok:
            return None
        return parse_inspect(ran.out)

    def pause(self, name: str) -> Ran:
        return self.run(["pause", name])

    def unpause(self, name: str) -> Ran:
        return self.run(["unpause", name])

    def kill(self, name: str, signum: int) -> Ran:
        return self.run(["kill", "--signal", str(signum), name])

    def remove(self, name: str) -> Ran:
        return self.run(["rm", "-f", "-v", name], timeout=LONG_TIMEOUT_S)

    def left_behind(self, execute_dir: str) -> list[str]:
        """The containers, running or not, made for the startd of ``execute_dir``."""
        ran = self.run(["ps", "-a", "--filter", f"label={EXECUTE_LABEL}={execute_dir}",
                        "--format", "{{.Names}}"])
        return names_of(ran.out) if ran.ok else []


def client_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the client runs with: the caller's PATH, HOME and DOCKER_* (a
    DOCKER_HOST names a daemon elsewhere), nothing of a job's."""
    source = os.environ if environ is None else environ
    keep = {k: v for k, v in source.items()
            if k in ("PATH", "HOME", "LANG", "TMPDIR") or k.startswith("DOCKER_")}
    keep.setdefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    return keep


# --- the slot ad's view ---------------------------------------------------------------

@dataclass(frozen=True)
class DockerFacts:
    """What the machine's ads say of the runtime: present (a Docker client answers
    ``-v``), healthy (its daemon answers), the images it caches."""
    version: str | None
    healthy: bool
    reason: str = ""
    cached_mb: int | None = None

    def attrs(self) -> dict[str, object]:
        # Apptainer is not packaged for this platform: condorpy runs container-universe
        # jobs through Docker only and says so rather than leave the attribute unset.
        out: dict[str, object] = {"HasSingularity": False}
        if self.version is None:
            out["HasContainer"] = False
            return out
        out["HasDocker"] = self.healthy
        out["DockerVersion"] = self.version
        out["HasContainer"] = self.healthy
        out["HasDockerURL"] = self.healthy       # a docker:// container image runs
        if self.cached_mb is not None:
            out["DockerCachedImageSizeMb"] = self.cached_mb
        if not self.healthy:
            out["DockerOfflineReason"] = self.reason or "the Docker daemon does not answer"
        return out

    def failed(self, reason: str) -> DockerFacts:
        """After a starter's container runtime failure: unhealthy until the next check."""
        return DockerFacts(self.version, False, reason, self.cached_mb)


def probe_docker(cli: DockerCli) -> DockerFacts:
    version = cli.version()
    if version is None:
        return DockerFacts(None, False)
    ok, why = cli.server_ok()
    return DockerFacts(version, ok, why, cli.images_size_mb() if ok else None)
