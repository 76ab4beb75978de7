"""Starting the job's process: fork, place, isolate, drop privileges, open its files,
exec, and tell the starter precisely which step failed.

Two steps, so that the costly part overlaps the daemon's record of the starter
(:class:`PendingLaunch`): :func:`prepare_launch` forks the child, which places itself
in the job's cgroup, resets its inherited limits, enters its PID namespace, session,
user and working directory, and then waits; :meth:`PendingLaunch.start` gives it the
word, and it opens the job's input and outputs (only then: a job that never starts
must not have truncated its output) and executes. Nothing the job could notice happens
before the word, and a cancelled child exits without running anything.

The child reports a failure as ``<stage> <errno>`` on a close-on-exec pipe; end of file
without a report means the exec succeeded. For a PID namespace the starter unshares
its namespace for children just around the fork, so the child is PID 1 of a new
namespace and still the starter's own child, then goes back to its original namespace
(setns) so that nothing else it forks lands there.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import os
import signal
from dataclasses import dataclass

from condorpy.starter import safefs
from condorpy.starter.libc import check, libc
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.inherited import reset_for_job
from condorpy.starter.netns import enter_isolated_network
from condorpy.starter.users import JobUser

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18

_STAGE_HOLDS: dict[str, tuple[HoldCode, str]] = {
    "cgroup": (HoldCode.FAILED_TO_CREATE_PROCESS, "cannot place the job in its cgroup"),
    "limits": (HoldCode.FAILED_TO_CREATE_PROCESS, "cannot reset the job's inherited limits"),
    "namespace": (HoldCode.FAILED_TO_CREATE_PROCESS, "cannot create the job's PID namespace"),
    "network": (HoldCode.FAILED_TO_CREATE_PROCESS,
                "cannot create the job's network namespace (NO_JOB_NETWORKING)"),
    "user": (HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT, "cannot switch to the job's user"),
    "iwd": (HoldCode.IWD_ERROR, "cannot enter the job's initial working directory"),
    "stdin": (HoldCode.UNABLE_TO_OPEN_INPUT, "cannot open the job's input file"),
    "stdout": (HoldCode.UNABLE_TO_OPEN_OUTPUT, "cannot open the job's output file"),
    "stderr": (HoldCode.UNABLE_TO_OPEN_OUTPUT, "cannot open the job's error file"),
    "exec": (HoldCode.FAILED_TO_CREATE_PROCESS, "cannot execute the job's executable"),
    "plan": (HoldCode.FAILED_TO_CREATE_PROCESS, "cannot hand the job's plan to its process"),
}


@dataclass(frozen=True)
class LaunchPlan:
    executable: str
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stdin: str
    stdout: str
    stderr: str
    user: JobUser
    cgroup_procs: str | None
    pid_namespace: bool
    net_namespace: bool = False       # NO_JOB_NETWORKING


@dataclass(frozen=True)
class Launched:
    pid: int          # the job's pid as the starter sees it
    session: int      # its session and process group id


def _child(plan: LaunchPlan, wfd: int, go_r: int, env: dict[bytes, bytes]) -> None:
    """Runs in the forked child; never returns."""
    stage = "cgroup"
    kind = "-"
    try:
        for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT,
                    signal.SIGCHLD, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if plan.cgroup_procs is not None:
            with open(plan.cgroup_procs, "w") as fh:
                fh.write("0")         # "0" is the writer itself, in any PID namespace
        stage = "limits"
        reset_for_job()               # the service's LimitNOFILE and OOMScoreAdjust
        if plan.pid_namespace:
            # PID 1 of the new namespace: a private /proc that shows only the job.
            stage = "namespace"
            c = libc()
            check(c.unshare(CLONE_NEWNS))
            check(c.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None))
            check(c.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                              None))
        if plan.net_namespace:
            stage = "network"
            enter_isolated_network()
        os.setsid()
        stage = "user"
        if plan.user.switch:
            os.setgroups(list(plan.user.groups))
            os.setgid(plan.user.gid)
            os.setuid(plan.user.uid)
        stage = "iwd"
        os.chdir(plan.cwd)
        # Nothing of the starter's is the job's; the word and the report pipes stay.
        stage = "wait"
        os.closerange(3, min(wfd, go_r))
        os.closerange(min(wfd, go_r) + 1, max(wfd, go_r))
        os.closerange(max(wfd, go_r) + 1, 65536)
        if os.read(go_r, 1) != b"g":
            os._exit(127)             # cancelled: the job is not to run
        # Opened as the job's user, never blocking, and only regular files or
        # /dev/null: a FIFO would hang the job's start (and its starter) and a
        # device is no place for output. Outputs are not followed through a link.
        stage = "stdin"
        fin = safefs.open_regular(plan.stdin, os.O_RDONLY, follow=True, allow_devnull=True)
        stage = "stdout"
        out_flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        fout = safefs.open_regular(plan.stdout, out_flags, 0o644, allow_devnull=True)
        stage = "stderr"
        if plan.stderr == plan.stdout:
            ferr = os.dup(fout)
        else:
            ferr = safefs.open_regular(plan.stderr, out_flags, 0o644, allow_devnull=True)
        for fd, target in ((fin, 0), (fout, 1), (ferr, 2)):
            os.dup2(fd, target)
        os.closerange(3, wfd)
        os.closerange(wfd + 1, 65536)
        stage = "exec"
        os.execve(plan.executable, list(plan.argv), env)
    except safefs.NotRegularFile as exc:
        code = exc.errno or errno.EINVAL
        kind = exc.kind.replace(" ", "_")
    except OSError as exc:
        code = exc.errno or errno.EINVAL
    except BaseException:
        code = errno.EINVAL
    try:
        os.write(wfd, f"{stage} {code} {kind}\n".encode())
    finally:
        os._exit(127)


def _fork(pid_namespace: bool) -> int:
    if not pid_namespace:
        return os.fork()
    c = libc()
    own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if c.unshare(CLONE_NEWPID) != 0:
            code = ctypes.get_errno()
            raise JobHold(f"cannot create the job's PID namespace: {os.strerror(code)}",
                          HoldCode.FAILED_TO_CREATE_PROCESS, code)
        pid = -1
        try:
            pid = os.fork()
        finally:
            # The parent goes back to its own namespace, so that nothing else it forks
            # (another job, a helper) lands in this job's.
            if pid != 0 and c.setns(own, CLONE_NEWPID) != 0:
                code = ctypes.get_errno()
                raise OSError(code, "setns back to the starter's PID namespace: "
                                    f"{os.strerror(code)}")
    finally:
        os.close(own)
    return pid


class PendingLaunch:
    """The job's first process, forked and set up, waiting for :meth:`start` (or
    :meth:`cancel`)."""

    def __init__(self, plan: LaunchPlan, job_id: str, pid: int, report: int,
                 go: int) -> None:
        self.plan = plan
        self.job_id = job_id
        self.pid = pid
        self._report = report
        self._go = go

    def start(self) -> Launched:
        """Let it open its files and execute; raise JobHold with HTCondor's code if any
        step (before the word or after it) failed."""
        try:
            os.write(self._go, b"g")
        except OSError:
            pass            # it failed during set-up and has exited: its report says why
        finally:
            os.close(self._go)
        chunks = []
        try:
            while True:
                data = os.read(self._report, 4096)
                if not data:
                    break
                chunks.append(data)
        finally:
            os.close(self._report)
        failure: tuple[str, int, str] | None = None
        for line in b"".join(chunks).decode().splitlines():
            word, value, kind = (line.split(" ") + ["-", "-"])[:3]
            failure = (word, int(value), kind.replace("_", " "))
        if failure is not None:
            os.waitpid(self.pid, 0)
            plan = self.plan
            stage, code, kind = failure
            hold, what = _STAGE_HOLDS.get(stage,
                                          (HoldCode.FAILED_TO_CREATE_PROCESS, stage))
            detail = {"exec": plan.executable, "iwd": plan.cwd, "stdin": plan.stdin,
                      "stdout": plan.stdout, "stderr": plan.stderr}.get(stage, "")
            where = f" {detail}" if detail else ""
            why = f"it is {kind}, not a regular file" if kind != "-" else os.strerror(code)
            raise JobHold(f"{what}{where}: {why} (errno {code})", hold, code,
                          job=self.job_id)
        return Launched(pid=self.pid, session=self.pid)

    def cancel(self) -> None:
        """The job is not to run: end the waiting child and reap it."""
        os.close(self._go)
        os.close(self._report)
        try:
            os.kill(self.pid, signal.SIGKILL)    # it may be stuck in a step; it ran nothing
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


class Vessel:
    """A child forked before its job is known (a spare starter makes one while it waits
    for its own request), waiting for the plan: :meth:`load` hands it one and returns
    the :class:`PendingLaunch`, with no fork while a job waits to start. Not for a PID
    namespace, which must be entered around the fork."""

    def __init__(self, pid: int, plan_w: int, report: int, go: int) -> None:
        self.pid = pid
        # The cgroup its starter moved into after forking it: a job without a cgroup of
        # its own runs there, as it would had the starter forked it.
        self.home: str | None = None
        self._plan_w = plan_w
        self._report = report
        self._go = go

    @classmethod
    def fork(cls) -> Vessel:
        plan_r, plan_w = os.pipe2(os.O_CLOEXEC)
        rfd, wfd = os.pipe2(os.O_CLOEXEC)
        go_r, go_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            try:
                # nothing of the forking process's is kept, its other pipes above all
                keep = sorted((plan_r, wfd, go_r))
                os.closerange(3, keep[0])
                os.closerange(keep[0] + 1, keep[1])
                os.closerange(keep[1] + 1, keep[2])
                os.closerange(keep[2] + 1, 65536)
                _rehearse()
                plan = _read_plan(plan_r)
                if plan is None:
                    os._exit(0)         # not needed after all
                env = {k.encode(): v.encode() for k, v in plan.env.items()}
            except BaseException as exc:
                # A plan it cannot use is reported as a failed start: end of file with
                # no report means the job was executed, and it was not.
                code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.EINVAL
                try:
                    os.write(wfd, f"plan {code} -\n".encode())
                finally:
                    os._exit(127)
            _child(plan, wfd, go_r, env)
        for fd in (plan_r, wfd, go_r):
            os.close(fd)
        return cls(pid, plan_w, rfd, go_w)

    def load(self, plan: LaunchPlan, *, job_id: str) -> PendingLaunch:
        data = _plan_json(plan, self.home)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._plan_w, view):]
        except OSError:
            pass            # it has gone: PendingLaunch.start reports no exec
        finally:
            os.close(self._plan_w)
        return PendingLaunch(plan, job_id, self.pid, self._report, self._go)

    def cancel(self) -> None:
        """Not needed: it exits on its plan pipe's end of file; reaped here."""
        for fd in (self._plan_w, self._report, self._go):
            os.close(fd)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _plan_json(plan: LaunchPlan, home: str | None) -> bytes:
    return json.dumps({"executable": plan.executable, "argv": list(plan.argv),
                       "env": plan.env, "cwd": plan.cwd, "stdin": plan.stdin,
                       "stdout": plan.stdout, "stderr": plan.stderr,
                       "user": dataclasses.asdict(plan.user),
                       "cgroup_procs": plan.cgroup_procs, "home": home,
                       "net_namespace": plan.net_namespace}).encode()


def _rehearse() -> None:
    """In a vessel waiting for its plan: decode a made-up plan and open /dev/null as a
    job's file would be opened, so that the pages this code touches are copied (fork's
    copy-on-write) now rather than between the word and the job's exec."""
    try:
        user = JobUser("nobody", os.geteuid(), os.getegid(), (), False)
        plan = _decode_plan(_plan_json(LaunchPlan(
            "/bin/true", ("true",), {"A": "b"}, "/", os.devnull, os.devnull, os.devnull,
            user, None, False), None))
        {k.encode(): v.encode() for k, v in plan.env.items()}
        os.close(safefs.open_regular(plan.stdin, os.O_RDONLY, follow=True,
                                     allow_devnull=True))
    except (OSError, ValueError, KeyError, TypeError):
        pass


def _read_plan(fd: int) -> LaunchPlan | None:
    chunks = []
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    if not chunks:
        return None
    return _decode_plan(b"".join(chunks))


def _decode_plan(data: bytes) -> LaunchPlan:
    d = json.loads(data)
    return LaunchPlan(executable=d["executable"], argv=tuple(d["argv"]), env=d["env"],
                      cwd=d["cwd"], stdin=d["stdin"], stdout=d["stdout"],
                      stderr=d["stderr"],
                      user=JobUser(**{**d["user"], "groups": tuple(d["user"]["groups"])}),
                      cgroup_procs=d["cgroup_procs"] or (
                          os.path.join(d["home"], "cgroup.procs") if d["home"] else None),
                      pid_namespace=False, net_namespace=bool(d.get("net_namespace")))


def prepare_launch(plan: LaunchPlan, *, job_id: str) -> PendingLaunch:
    """Fork the job's first process and let it set itself up; it runs nothing until
    :meth:`PendingLaunch.start`."""
    env = {k.encode(): v.encode() for k, v in plan.env.items()}
    rfd, wfd = os.pipe2(os.O_CLOEXEC)
    go_r, go_w = os.pipe2(os.O_CLOEXEC)
    try:
        pid = _fork(plan.pid_namespace)
    except BaseException:
        for fd in (rfd, wfd, go_r, go_w):
            os.close(fd)
        raise
    if pid == 0:
        os.close(rfd)
        os.close(go_w)
        _child(plan, wfd, go_r, env)
    os.close(wfd)
    os.close(go_r)
    return PendingLaunch(plan, job_id, pid, rfd, go_w)
