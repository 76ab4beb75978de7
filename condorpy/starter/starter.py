"""One job from start to end: sandbox, cgroup, launch, watch, obey commands, account,
log, clean up. The outcome is the set of attributes to merge into the final job ad.
"""

from __future__ import annotations

import math
import os
import selectors
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from condorpy.errors import CgroupError
from condorpy.starter import proctrack
from condorpy.starter.cgroup import (CgroupSample, CgroupTree, CgroupUnavailable, JobCgroup,
                                     compute_limits, open_tree)
from condorpy.starter.environment import job_environment
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.jobspec import JobIdentity, JobSpec, SlotSpec
from condorpy.starter.launcher import LaunchPlan, Launched, launch
from condorpy.starter.localxfer import LocalTransfer
from condorpy.starter.protocol import PROTOCOL_VERSION, Command, Connection, ControlServer
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR, Sandbox, SandboxRefused, \
    adopt_sandbox, create_sandbox, remove_sandbox
from condorpy.starter.settings import StarterSettings
from condorpy.starter.usage import MIB, DiskWatch, Usage, disk_limit_kb
from condorpy.starter.userlog import UserLog
from condorpy.starter.transferlist import SPOOL_ATTR, LocalPlan, transfer_wanted
from condorpy.starter.users import SUBMITTER_ATTR, JobUser, choose_user, submitter


class JobState(Enum):
    STARTING = "starting"
    RUNNING = "running"
    SUSPENDED = "suspended"
    EXITED = "exited"


@dataclass
class Outcome:
    attributes: dict[str, object]
    hold: JobHold | None = None
    vacated: bool = False
    notices: list[str] = field(default_factory=list)


# How long the end of a job may take to freeze and kill its processes without cgroups.
KILL_SWEEP_S = 10.0


def _stderr_notice(text: str) -> None:
    print(f"condorpy starter: {text}", file=sys.stderr, flush=True)


class Starter:
    def __init__(self, job_ad: Mapping[str, object], slot_ad: Mapping[str, object],
                 settings: StarterSettings, *, job_ad_text: str = "",
                 machine_ad_text: str = "", tag: str | None = None,
                 notice: Callable[[str], None] = _stderr_notice,
                 handle_signals: bool = False, own_process: bool | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.job_ad = job_ad
        self.slot_ad = slot_ad
        self.settings = settings
        self.job_ad_text = job_ad_text
        self.machine_ad_text = machine_ad_text
        self.tag = tag or str(os.getpid())
        self.notice = notice
        self.handle_signals = handle_signals
        # One job per process (the daemon's starters, ``condorpy starter``): the starter
        # may be the subreaper of its job and count every child as the job's.
        self.own_process = handle_signals if own_process is None else own_process
        self.clock = clock
        self.wall = wall
        self.state = JobState.STARTING
        self.usage = Usage()
        self.cgroup: JobCgroup | None = None
        self.proc: Launched | None = None
        self.server: ControlServer | None = None
        self.userlog: UserLog | None = None
        self.sandbox: Sandbox | None = None
        self.user: JobUser | None = None      # whose sandbox it is, for its removal
        self.submitter: JobUser | None = None  # a local job's: see users.SUBMITTER_ATTR
        self.xfer: LocalTransfer | None = None  # a local job's file transfer
        self.notices: list[str] = []
        self.kill_deadline: float | None = None
        self.vacating = False
        self.suspended_since: float | None = None
        self.suspended_total = 0.0
        self.pending: list[Command] = []
        self.logged_image_kb = 0
        self.memory_limit: int | None = None
        self.reaped = False
        self.processes: proctrack.JobProcesses | None = None
        self.disk: DiskWatch | None = None
        self.disk_hold: JobHold | None = None

    @property
    def socket_path(self) -> str:
        return os.path.join(self.settings.execute, f"starter_{self.tag}.sock")

    def _say(self, text: str) -> None:
        self.notices.append(text)
        self.notice(text)

    # --- set-up ---------------------------------------------------------------------

    def _cgroup_tree(self) -> CgroupTree | None:
        if not self.settings.use_cgroups:
            self._say("cgroups are turned off by configuration: memory, CPU and process "
                      "limits are NOT enforced; the job's processes are tracked through "
                      "/proc")
            return None
        try:
            return open_tree(self.settings.cgroup_mount, self.settings.cgroup_base,
                             proc_root=self.settings.proc_root)
        except CgroupUnavailable as exc:
            self._say(f"memory, CPU and process limits are NOT enforced: {exc}; "
                      "the job's processes are tracked through /proc")
            return None

    def _open_userlog(self, job: JobSpec, user: JobUser, iwd: str) -> None:
        if job.user_log is None:
            return
        path = job.user_log if os.path.isabs(job.user_log) else os.path.join(iwd, job.user_log)
        # a local job's log is its submitter's (HTCondor's shadow writes it as the
        # Owner), whoever the job runs as; a pool job's StarterUserLog is in its sandbox
        who = self.submitter or user
        try:
            self.userlog = UserLog.open(path, job.cluster, job.proc,
                                        uid=who.uid if who.switch else None,
                                        gid=who.gid if who.switch else None,
                                        groups=who.groups, wall=self.wall)
        except OSError as exc:
            raise JobHold(f"cannot open the job event log {path}: {exc.strerror}",
                          HoldCode.UNABLE_TO_INIT_USER_LOG, exc.errno or 0,
                          attribute="StarterUserLog", job=job.job_id) from None

    def _plan(self, job: JobSpec, slot: SlotSpec, user: JobUser, box: Sandbox,
              pid_ns: bool) -> LaunchPlan:
        iwd = job.iwd or box.path

        def rel(path: str | None) -> str:
            if path is None:
                return os.devnull
            return path if os.path.isabs(path) else os.path.join(iwd, path)

        executable = job.cmd if os.path.isabs(job.cmd) else os.path.join(iwd, job.cmd)
        env = job_environment(job, slot, scratch=box.path, job_ad_path=box.job_ad,
                              machine_ad_path=box.machine_ad, iwd=iwd,
                              thread_vars=self.settings.num_threads_env)
        return LaunchPlan(executable=executable, argv=(executable, *job.args), env=env,
                          cwd=iwd, stdin=rel(job.stdin), stdout=rel(job.stdout),
                          stderr=rel(job.stderr), user=user,
                          cgroup_procs=self.cgroup.procs_file if self.cgroup else None,
                          pid_namespace=pid_ns)

    # --- the run ----------------------------------------------------------------------

    def run(self) -> Outcome:
        ident = JobIdentity.from_ad(self.job_ad)
        user: JobUser | None = None
        # From the very start, not only while watching: a SIGTERM that comes while the
        # sandbox is made (a startd vacating a job it has just launched) must become a
        # soft kill, carried out once the job runs, rather than end the starter and
        # leave a job nobody watches.
        early: dict[int, Any] = {}
        if self.handle_signals:
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
                early[int(signum)] = signal.signal(signum, self.on_signal)
        try:
            job = JobSpec.from_ad(self.job_ad)
            if job.kill_sig_note is not None:
                self._say(f"job {job.job_id}: {job.kill_sig_note}")
            slot = SlotSpec.from_ad(self.slot_ad)
            user = choose_user(job, slot, self.settings)
            self.submitter = submitter(self.job_ad.get(SUBMITTER_ATTR))
            return self._run(job, slot, user)
        except JobHold as hold:
            return self._held_before_start(hold, ident, user)
        finally:
            self._cleanup(ident.job_id)
            for signum_int, handler in early.items():
                signal.signal(signum_int, handler)

    def _open_log_for_hold(self, hold: JobHold, ident: JobIdentity,
                           user: JobUser | None) -> None:
        """A job held before its log was opened still gets its held event, as in
        HTCondor; written with the job user's credentials or not at all."""
        if (self.userlog is not None or ident.user_log is None
                or hold.code is HoldCode.UNABLE_TO_INIT_USER_LOG):
            return
        path = ident.user_log
        if not os.path.isabs(path):
            if ident.iwd is None:
                return        # relative to a sandbox that never existed
            path = os.path.join(ident.iwd, path)
        if self.submitter is not None:
            user = self.submitter
        if user is None:
            try:
                user = choose_user(ident, SlotSpec.from_ad(self.slot_ad), self.settings)
            except JobHold:
                self._say(f"job {ident.job_id}: held event not written to {path}: "
                          "no account to write it as")
                return
        try:
            self.userlog = UserLog.open(path, ident.cluster, ident.proc,
                                        uid=user.uid if user.switch else None,
                                        gid=user.gid if user.switch else None,
                                        groups=user.groups, wall=self.wall)
        except OSError as exc:
            self._say(f"job {ident.job_id}: held event not written to {path}: "
                      f"{exc.strerror}")

    def _held_before_start(self, hold: JobHold, ident: JobIdentity,
                           user: JobUser | None) -> Outcome:
        self._open_log_for_hold(hold, ident, user)
        if self.userlog is not None:
            self.userlog.held(hold.reason, int(hold.code), hold.hold_subcode)
        attrs = hold_attributes(hold)
        if self.server is not None:
            self.server.broadcast({"event": "done", "ad": attrs})
        return Outcome(attrs, hold=hold, notices=self.notices)

    def _run(self, job: JobSpec, slot: SlotSpec, user: JobUser) -> Outcome:
        pid_ns = self.settings.use_pid_namespaces
        if pid_ns and os.geteuid() != 0:
            self._say("USE_PID_NAMESPACES needs root; the job runs in the starter's "
                      "PID namespace")
            pid_ns = False
        tree = self._cgroup_tree()
        self._make_sandbox(job, user)
        assert self.sandbox is not None
        self._open_userlog(job, user, job.iwd or self.sandbox.path)
        # listening before the input is copied: the daemon gives a starter that never
        # listens CONNECT_TIMEOUT_S, and a large input takes longer
        self.server = ControlServer(self.socket_path)
        job = self._transfer_in(job, slot, user)
        if tree is not None:
            self.cgroup = JobCgroup(tree, f"job_{self.tag}")
            limits = compute_limits(
                policy=self.settings.memory_policy.value, slot_memory_mb=slot.memory_mb,
                slot_vm_kb=slot.virtual_memory_kb,
                machine_memory_mb=self.settings.machine_memory_mb,
                custom_hard_mb=self.settings.custom_hard_mb,
                custom_soft_mb=self.settings.custom_soft_mb,
                disable_swap=self.settings.disable_swap, cpus=slot.cpus,
                pids_max=self.settings.pids_max,
                enforce_cpu_max=self.settings.enforce_cpu_max)
            self.cgroup.create(limits)
            self.memory_limit = limits.memory_max
        plan = self._plan(job, slot, user, self.sandbox, pid_ns)
        subreaper = False
        if self.cgroup is None and self.own_process:
            # Before the fork: orphans of the job come to the starter, not to init.
            subreaper = proctrack.set_child_subreaper()
            if not subreaper:
                self._say("cannot become the child subreaper of the job (prctl); a "
                          "process that leaves the job's session may escape")
        self.disk = DiskWatch(self.sandbox.path,
                              disk_limit_kb(self.slot_ad, self.job_ad)
                              if self.settings.enforce_disk else None,
                              self.settings.update_interval_s, self.clock)
        start = self.clock()
        self.proc = launch(plan, job_id=job.job_id)
        family = None if self.cgroup is not None else proctrack.ProcessFamily(
            self.settings.proc_root, self.proc.pid, self.proc.session,
            adopter=os.getpid() if subreaper else None)
        self.processes = proctrack.JobProcesses(self.proc.pid, cgroup=self.cgroup,
                                                family=family, say=self._say)
        self.state = JobState.RUNNING
        if self.userlog is not None:
            self.userlog.execute(self.settings.hostname, slot.name)
        self.server.broadcast(self._hello())
        status, rusage = self._watch(job)
        duration = self.clock() - start
        return self._finish(job, status, rusage, duration)

    def _make_sandbox(self, job: JobSpec, user: JobUser) -> None:
        """A scratch directory the job's ad names and the starter refuses holds the job:
        it would meet the same refusal on every restart. A machine that cannot make
        sandboxes at all is the machine's failure (StarterError), not the job's."""
        prepared = self.job_ad.get(PREPARED_SCRATCH_ATTR)
        if not (isinstance(prepared, str) and prepared):
            self.user = user
            self.sandbox = create_sandbox(self.settings.execute, user,
                                          job_ad_text=self.job_ad_text,
                                          machine_ad_text=self.machine_ad_text, tag=self.tag)
            return
        # a pool job whose files were transferred in (startd/poolside/transfer.py)
        try:
            self.sandbox = adopt_sandbox(prepared, self.settings.execute, user,
                                         job_ad_text=self.job_ad_text,
                                         machine_ad_text=self.machine_ad_text)
        except SandboxRefused as exc:
            raise JobHold(f"the job's scratch directory was refused: {exc}",
                          HoldCode.IWD_ERROR, exc.errno, job=job.job_id) from None

    def _transfer_in(self, job: JobSpec, slot: SlotSpec, user: JobUser) -> JobSpec:
        """A local job that transfers files: its input copied into the scratch
        directory, and the job pointed at the copies (may hold the job)."""
        sub, box = self.submitter, self.sandbox
        assert box is not None
        if sub is None or box.prepared or job.iwd is None or not transfer_wanted(
                self.job_ad, runs_as_submitter=sub.uid == user.uid):
            return job
        spool = self.job_ad.get(SPOOL_ATTR)
        self.xfer = LocalTransfer(LocalPlan.from_ad(self.job_ad, job.iwd), box.path,
                                  submitter=sub, user=user,
                                  access_point=self.settings.hostname, slot=slot.name,
                                  job_id=job.job_id,
                                  spool=spool if isinstance(spool, str) else None)
        return self.xfer.bring_in(job)

    def _hello(self) -> dict[str, Any]:
        return {"event": "hello", "version": PROTOCOL_VERSION, "starter_pid": os.getpid(),
                "job_pid": self.proc.pid if self.proc else None,
                "state": self.state.value,
                "sandbox": self.sandbox.path if self.sandbox else None,
                "cgroup": self.cgroup.slice if self.cgroup else None,
                "containment": self.processes.kind if self.processes else None,
                "usage": self.usage_attributes()}

    def usage_attributes(self) -> dict[str, object]:
        attrs = self.usage.attributes()
        if self.cgroup is not None:
            attrs["CgroupEnforced"] = True      # as HTCondor's starter publishes it
        return attrs

    def _watch(self, job: JobSpec) -> tuple[int, Any]:
        assert self.proc is not None and self.server is not None
        sel = selectors.DefaultSelector()
        pidfd = os.pidfd_open(self.proc.pid)
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        sel.register(self.server.sock, selectors.EVENT_READ, "accept")
        wake_r = wake_w = -1
        old_handlers: dict[int, Any] = {}
        old_wakeup = -1
        if self.handle_signals:
            wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            sel.register(wake_r, selectors.EVENT_READ, "signal")
            old_wakeup = signal.set_wakeup_fd(wake_w)
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
                old_handlers[int(signum)] = signal.signal(signum, self.on_signal)
        next_sample = self.clock() + min(0.05, self.settings.update_interval_s)
        # A memory event (memory.high or memory.max reached, an OOM) is measured and
        # reported at once: the slot's memory policy acts on it without waiting.
        memory = self.cgroup.memory_event_watch() if self.cgroup is not None else None
        if memory is not None:
            sel.register(memory, selectors.EVENT_READ, "memory")
        try:
            while True:
                now = self.clock()
                deadlines = [next_sample]
                if self.kill_deadline is not None:
                    deadlines.append(self.kill_deadline)
                if self.disk is not None and self.disk_hold is None:
                    deadlines.append(self.disk.due)
                timeout = max(0.0, min(deadlines) - now)
                for key, _ in sel.select(timeout):
                    if key.data == "exit":
                        _, status, rusage = os.wait4(self.proc.pid, 0)
                        self.reaped = True
                        return status, rusage
                    if key.data == "accept":
                        conn = self.server.accept()
                        if conn is not None:
                            sel.register(conn.sock, selectors.EVENT_READ, conn)
                            conn.send(self._hello())
                    elif key.data == "memory" and memory is not None:
                        memory.drain()
                        next_sample = self.clock()
                    elif key.data == "signal":
                        try:
                            os.read(wake_r, 512)
                        except BlockingIOError:
                            pass
                    elif isinstance(key.data, Connection):
                        self._serve(key.data, sel)
                while self.pending:
                    self._apply(self.pending.pop(0), job)
                now = self.clock()
                if self.kill_deadline is not None and now >= self.kill_deadline:
                    self._say(f"job {job.job_id} did not exit within its kill timeout; "
                              "killing it")
                    self._apply(Command.HARD_KILL, job)
                if self.disk is not None and self.disk_hold is None \
                        and now >= self.disk.due:
                    self._measure_disk(job)
                now = self.clock()
                if now >= next_sample:
                    sample = self._sample()
                    self._maybe_log_image_size()
                    report: dict[str, Any] = {"event": "usage",
                                              "state": self.state.value,
                                              "usage": self.usage_attributes()}
                    if sample is not None:      # the startd updates the job ad on a rise
                        report["memory_events"] = sample.memory_events
                    self.server.broadcast(report)
                    next_sample = now + self.settings.update_interval_s
        finally:
            if memory is not None:
                memory.close()
            sel.close()
            os.close(pidfd)
            if self.handle_signals:
                signal.set_wakeup_fd(old_wakeup)
                for signum_int, handler in old_handlers.items():
                    signal.signal(signum_int, handler)
                os.close(wake_r)
                os.close(wake_w)

    def on_signal(self, signum: int, _frame: object) -> None:
        """The handler for SIGTERM and SIGINT (a soft kill) and SIGQUIT (a hard kill)."""
        self.pending.append(Command.HARD_KILL if signum == signal.SIGQUIT
                            else Command.SOFT_KILL)

    def _serve(self, conn: Connection, sel: selectors.BaseSelector) -> None:
        for msg in conn.receive():
            if "error" in msg:
                conn.send({"event": "error", "message": msg["error"]})
                continue
            try:
                cmd = Command(msg.get("cmd"))
            except ValueError:
                conn.send({"event": "error", "message": f"unknown command {msg.get('cmd')!r}"})
                continue
            if cmd is Command.STATUS:
                conn.send(self._hello())
            else:
                self.pending.append(cmd)
                conn.send({"event": "ok", "cmd": cmd.value})
        if conn.closed:
            sel.unregister(conn.sock)
            conn.close()

    # --- commands -------------------------------------------------------------------

    def _apply(self, cmd: Command, job: JobSpec) -> None:
        assert self.proc is not None and self.server is not None
        if cmd is Command.SUSPEND and self.state is JobState.RUNNING:
            self._sample()
            count = self._suspend()
            self.state = JobState.SUSPENDED
            self.suspended_since = self.clock()
            if self.userlog is not None:
                self.userlog.suspended(count)
            self.server.broadcast({"event": "state", "state": self.state.value})
        elif cmd is Command.CONTINUE and self.state is JobState.SUSPENDED:
            self._resume()
        elif cmd is Command.SOFT_KILL:
            self.vacating = True
            if self.state is JobState.SUSPENDED:
                self._resume()       # a frozen job cannot act on its soft-kill signal
            try:
                os.kill(self.proc.pid, job.kill_sig)
            except ProcessLookupError:
                pass
            except OSError as exc:   # KillSig is checked up front; never leave the job
                self._say(f"job {job.job_id}: cannot send signal {job.kill_sig}: "
                          f"{exc.strerror}; killing it")
                self._apply(Command.HARD_KILL, job)
                return
            if self.kill_deadline is None:
                timeout = job.kill_sig_timeout_s
                if timeout is None:
                    timeout = self.settings.kill_timeout_s
                self.kill_deadline = self.clock() + timeout
        elif cmd is Command.HARD_KILL:
            self.vacating = True
            self.kill_deadline = None
            self._kill_all()

    def _resume(self) -> None:
        assert self.server is not None
        self._unsuspend()
        self.state = JobState.RUNNING
        if self.suspended_since is not None:
            self.suspended_total += self.clock() - self.suspended_since
            self.suspended_since = None
        if self.userlog is not None:
            self.userlog.unsuspended()
        self.server.broadcast({"event": "state", "state": self.state.value})

    def _suspend(self) -> int:
        assert self.processes is not None
        return self.processes.stop()

    def _unsuspend(self) -> None:
        assert self.processes is not None
        self.processes.resume()

    def _kill_all(self) -> None:
        assert self.processes is not None
        self.processes.kill(root_alive=not self.reaped, timeout_s=KILL_SWEEP_S)

    # --- accounting -----------------------------------------------------------------

    def _sample(self) -> CgroupSample | None:
        assert self.processes is not None
        return self.processes.sample(self.usage)

    def _measure_disk(self, job: JobSpec) -> None:
        """One slice of the sandbox walk; a job over its disk is held and killed."""
        assert self.disk is not None
        reading = self.disk.tick()
        if reading is None:
            return
        self.usage.add_disk(reading.kb, reading.files)
        if self.disk.over(reading.kb):
            self.disk.close()
            self.disk_hold = self.disk.hold(reading, job.job_id)
            self._say(self.disk_hold.reason)
            self._apply(Command.HARD_KILL, job)

    def _maybe_log_image_size(self) -> None:
        image_kb = math.ceil(max(self.usage.image_bytes, self.usage.memory_bytes) / 1024)
        if self.userlog is not None and image_kb > self.logged_image_kb:
            self.logged_image_kb = image_kb
            self.userlog.image_size(image_kb, math.ceil(self.usage.memory_bytes / MIB),
                                    math.ceil(self.usage.rss_bytes / 1024))

    def _finish(self, job: JobSpec, status: int, rusage: Any, duration: float) -> Outcome:
        assert self.sandbox is not None and self.server is not None
        # With cgroups the counters outlive the process; without, the exited job is
        # gone from /proc and wait4's rusage below is the final word.
        sample = self._sample() if self.cgroup is not None else None
        u = self.usage
        self.state = JobState.EXITED
        self._kill_all()     # the job is over when its first process is: no stragglers
        if self.cgroup is not None:
            self.cgroup.wait_empty()
        # wait4 covers the job and what it waited for; the orphans the starter reaped
        # (during the run and in the kill just above) are added to it.
        assert self.processes is not None
        u.add_rusage(rusage.ru_utime + self.processes.reaped_user_s,
                     rusage.ru_stime + self.processes.reaped_system_s)
        if self.suspended_since is not None:
            self.suspended_total += self.clock() - self.suspended_since
        if self.disk is not None:
            last = self.disk.final()
            u.add_disk(last.kb, last.files)
            self.disk.close()
        attrs: dict[str, object] = {"JobDuration": round(duration, 3)}
        attrs.update(self.usage_attributes())
        attrs["CumulativeSuspensionTime"] = round(self.suspended_total, 3)
        signalled = os.WIFSIGNALED(status)
        sig = os.WTERMSIG(status) if signalled else None
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        if signalled:
            attrs["ExitBySignal"] = True
            attrs["ExitSignal"] = sig
        else:
            attrs["ExitBySignal"] = False
            attrs["ExitCode"] = code
        hold: JobHold | None = self.disk_hold
        if hold is not None:
            attrs.update(hold_attributes(hold))
        oom = sample.oom_kills if sample is not None else 0
        if oom > 0 and sig == signal.SIGKILL and hold is None:
            used = max(u.memory_bytes, u.image_bytes)
            limit = self.memory_limit
            limit_text = f"{limit // MIB} MB" if limit is not None else "the machine's memory"
            hold = JobHold(
                f"Job has gone over memory limit of {limit_text}: peak usage "
                f"{math.ceil(used / MIB)} MB (killed by the kernel's OOM killer "
                f"{oom} time(s) in the job's cgroup)",
                HoldCode.JOB_OUT_OF_RESOURCES, 0, job=job.job_id)
            attrs.update(hold_attributes(hold))
        if self.xfer is not None and hold is None and self.xfer.plan.output_goes(
                exited=not self.vacating, success=not signalled and code == 0):
            hold = self.xfer.send_out(final=not self.vacating)
            if hold is not None:
                attrs.update(hold_attributes(hold))
        if self.userlog is not None:
            if hold is not None:
                self.userlog.held(hold.reason, int(hold.code), hold.hold_subcode)
            elif self.vacating:
                self.userlog.evicted(u.user_s, u.system_s)
            else:
                self.userlog.terminated(exit_code=code, signal=sig, user=u.user_s,
                                        system=u.system_s)
        self.server.broadcast({"event": "done", "ad": attrs})
        return Outcome(attrs, hold=hold, vacated=self.vacating and hold is None,
                       notices=self.notices)

    # --- clean-up -------------------------------------------------------------------

    def _cleanup(self, job_id: str) -> None:
        problems: list[str] = []
        if self.proc is not None and not self.reaped:
            # The starter is giving up while its job runs (an error while watching it):
            # the job must not outlive it and the sandbox deleted below.
            try:
                self._kill_all()
            except (OSError, CgroupError) as exc:
                problems.append(f"killing the job: {exc}")
            try:
                os.waitpid(self.proc.pid, 0)
            except ChildProcessError:
                pass
            self.reaped = True
        if self.disk is not None:
            self.disk.close()            # a walk cut short holds descriptors
        if self.cgroup is not None:
            try:
                self.cgroup.kill()
                self.cgroup.wait_empty()
                self.cgroup.remove()
            except (OSError, CgroupError) as exc:
                problems.append(f"cgroup {self.cgroup.slice}: {exc}")
        if self.server is not None:
            self.server.close()
        if self.userlog is not None:
            self.userlog.close()
        if self.xfer is not None:
            self.xfer.close()
        if self.sandbox is not None and not self.sandbox.prepared:
            try:
                left = remove_sandbox(self.sandbox, self.user)
            except OSError as exc:
                left = [f"{exc.strerror or exc}"]
            problems.extend(f"sandbox {self.sandbox.path}: {text}" for text in left[:20])
            if len(left) > 20:
                problems.append(f"sandbox {self.sandbox.path}: {len(left) - 20} more")
        for text in problems:
            self._say(f"clean-up of job {job_id} incomplete: {text}")


def hold_attributes(hold: JobHold) -> dict[str, object]:
    return {"JobStatus": 5, "HoldReason": hold.reason, "HoldReasonCode": int(hold.code),
            "HoldReasonSubCode": hold.hold_subcode}

