"""One job from start to end: sandbox, cgroup, launch, watch, obey commands, account,
log, clean up. The outcome is the set of attributes to merge into the final job ad.

The Starter carries the job through its life and holds the parts that do the rest: the
job's set-up (prepare.py), its state and the commands that change it (control.py),
what it uses (meter.py) and a local job's file transfer (localxfer.py).
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
from typing import Any

from condorpy.errors import CgroupError, CondorpyError
from condorpy.starter import proctrack
from condorpy.starter.cgroup import JobCgroup
from condorpy.starter.container_run import ContainerRun, RuntimeFailed
from condorpy.starter.devices import hide_unassigned_gpus
from condorpy.starter.exit_report import Leftover, build_report, report_path, write_report
from condorpy.starter.control import JobControl, JobState
from condorpy.starter.holds import OUT_OF_RESOURCES_MEMORY, SYSTEM_OOM_VACATE, HoldCode, \
    JobHold, OomVerdict, oom_verdict
from condorpy.starter.jobspec import JobIdentity, JobSpec, SlotSpec
from condorpy.starter.launcher import Launched, Vessel, prepare_launch
from condorpy.starter.localxfer import LocalTransfer
from condorpy.starter.meter import UsageMeter
from condorpy.starter.prepare import cgroup_limits, cgroup_tree, launch_plan, \
    open_job_log, open_log_for_hold
from condorpy.starter.protocol import PROTOCOL_VERSION, Command, Connection, ControlServer
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR, Sandbox, SandboxRefused, \
    adopt_sandbox, create_sandbox, remove_sandbox
from condorpy.machine.volumes import EXTENT_KB, job_volume_name
from condorpy.starter.scratch_volume import ScratchVolume
from condorpy.starter.settings import StarterSettings
from condorpy.starter.usage import MIB, DiskWatch, disk_limit_kb
from condorpy.starter.userlog import UserLog
from condorpy.starter.transferlist import SPOOL_ATTR, LocalPlan, transfer_wanted
from condorpy.starter.users import SUBMITTER_ATTR, JobUser, choose_user, submitter

__all__ = ["JobState", "Outcome", "Starter", "hold_attributes"]


@dataclass
class Outcome:
    attributes: dict[str, object]
    hold: JobHold | None = None
    vacated: bool = False
    notices: list[str] = field(default_factory=list)


def _stderr_notice(text: str) -> None:
    print(f"condorpy starter: {text}", file=sys.stderr, flush=True)


class Abandoned(Exception):
    """The startd went away before it recorded this starter: the job must not start
    (the next startd runs it from its queue) and nothing of it may be reported."""


class Starter:
    def __init__(self, job_ad: Mapping[str, object], slot_ad: Mapping[str, object],
                 settings: StarterSettings, *, job_ad_text: str = "",
                 machine_ad_text: str = "", tag: str | None = None,
                 notice: Callable[[str], None] = _stderr_notice,
                 handle_signals: bool = False, own_process: bool | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 vessel: Vessel | None = None) -> None:
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
        self.control = JobControl(clock=clock, say=self._say,
                                  kill_timeout_s=settings.kill_timeout_s)
        self.meter = UsageMeter()
        self.cgroup: JobCgroup | None = None
        self.stuck = False      # processes of the job outlived its final kill
        self.proc: Launched | None = None
        self.server: ControlServer | None = None
        self.userlog: UserLog | None = None
        self.sandbox: Sandbox | None = None
        self.user: JobUser | None = None      # whose sandbox it is, for its removal
        self.submitter: JobUser | None = None  # a local job's: see users.SUBMITTER_ATTR
        self.xfer: LocalTransfer | None = None  # a local job's file transfer
        self.notices: list[str] = []
        self.memory_limit: int | None = None
        self.oom_reference: int | None = None
        # the job's scratch volume (STARTD_ENFORCE_DISK_LIMITS); its removal_failure is
        # the record of a volume left behind
        self.volume: ScratchVolume | None = None
        # The startd's word that it recorded this starter (the fork server's hold):
        # asked just before the job starts or anything is reported, so that the set-up
        # (sandbox, input, cgroup) overlaps the startd's record.
        self.gate: Callable[[], bool] | None = None
        # the job's first process forked beforehand (a spare starter's), if any
        self.vessel = vessel
        self.container: ContainerRun | None = None   # a docker/container-universe job's

    @property
    def socket_path(self) -> str:
        return os.path.join(self.settings.execute, f"starter_{self.tag}.sock")

    @property
    def state(self) -> JobState:
        return self.control.state

    def on_signal(self, signum: int, frame: object) -> None:
        """The handler for SIGTERM and SIGINT (a soft kill) and SIGQUIT (a hard kill)."""
        self.control.on_signal(signum, frame)

    def usage_attributes(self) -> dict[str, object]:
        return self.meter.attributes()

    def _say(self, text: str) -> None:
        self.notices.append(text)
        self.notice(text)

    def rehearse(self) -> None:
        """Read the ads as :meth:`run` does, with no effect: a spare starter runs this
        on an earlier job's ads while it waits, so that its first real run finds those
        pages already its own (see ForkServer's spares)."""
        try:
            job = JobSpec.from_ad(self.job_ad)
            slot = SlotSpec.from_ad(self.slot_ad)
            JobIdentity.from_ad(self.job_ad)
            choose_user(job, slot, self.settings)
        except (JobHold, CondorpyError):
            pass

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
            self.container = ContainerRun.for_job(self.job_ad, job.job_id, self.settings,
                                                  say=self._say)
            return self._run(job, slot, user)
        except JobHold as hold:
            return self._held_before_start(hold, ident, user)
        except RuntimeFailed as failed:     # the runtime's failure, never the job's
            self._go()
            self._say(f"job {ident.job_id}: {failed}; the job is requeued")
            return self._end_early(failed.attributes(), vacated=True)
        finally:
            self._cleanup(ident.job_id)
            for signum_int, handler in early.items():
                signal.signal(signum_int, handler)

    def _go(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None and not gate():
            raise Abandoned("the startd went away before it recorded this starter")

    def _held_before_start(self, hold: JobHold, ident: JobIdentity,
                           user: JobUser | None) -> Outcome:
        self._go()
        if self.userlog is None:
            self.userlog = open_log_for_hold(hold, ident, self.submitter or user,
                                             self.slot_ad, self.settings, self.wall,
                                             self._say)
        if self.userlog is not None:
            self.userlog.held(hold.reason, int(hold.code), hold.hold_subcode)
        return self._end_early(hold_attributes(hold), hold=hold)

    def _end_early(self, attrs: dict[str, object], *, hold: JobHold | None = None,
                   vacated: bool = False) -> Outcome:
        if self.server is not None:
            self.server.broadcast({"event": "done", "ad": attrs})
        return Outcome(attrs, hold=hold, vacated=vacated, notices=self.notices)

    def _run(self, job: JobSpec, slot: SlotSpec, user: JobUser) -> Outcome:
        pid_ns = self.settings.use_pid_namespaces and self.container is None
        if pid_ns and os.geteuid() != 0:
            self._say("USE_PID_NAMESPACES needs root; the job runs in the starter's "
                      "PID namespace")
            pid_ns = False
        tree = cgroup_tree(self.settings, self._say)
        self._make_sandbox(job, user)
        assert self.sandbox is not None
        # a local job's log is its submitter's (HTCondor's shadow writes it as the
        # Owner), whoever the job runs as; a pool job's StarterUserLog is in its sandbox
        self.userlog = open_job_log(job, self.submitter or user,
                                    job.iwd or self.sandbox.path, self.wall)
        # listening before the input is copied: the daemon gives a starter that never
        # listens CONNECT_TIMEOUT_S, and a large input takes longer
        self.server = ControlServer(self.socket_path)
        job = self._transfer_in(job, slot, user)
        if tree is not None:
            self.cgroup = JobCgroup(tree, f"job_{self.tag}",
                                    ignore_cache=self.settings.ignore_cache_memory)
            limits = cgroup_limits(self.settings, slot)
            self.cgroup.create(limits)
            self.meter.enforced = True
            self.memory_limit = limits.memory_max
            # what an OOM is measured against when no memory.max is set (HTCondor's)
            if self.memory_limit is None and slot.memory_mb is not None:
                self.oom_reference = slot.memory_mb * MIB
        if self.settings.hide_gpu_devices:
            hide_unassigned_gpus(self.cgroup.slice if self.cgroup else None,
                                 slot.assigned_gpus, gpus_dir=self.settings.gpu_inventory_dir,
                                 dev_dir=self.settings.dev_dir, say=self._say)
        plan = launch_plan(job, slot, user, self.sandbox, pid_ns=pid_ns,
                           settings=self.settings,
                           cgroup_procs=self.cgroup.procs_file if self.cgroup else None)
        if self.container is not None:
            plan = self.container.create(job, slot, user, plan, scratch=self.sandbox.path,
                                         cgroup=self.cgroup, settings=self.settings)
        subreaper = False
        if self.cgroup is None and self.own_process:
            # Before the fork: orphans of the job come to the starter, not to init.
            subreaper = proctrack.set_child_subreaper()
            if not subreaper:
                self._say("cannot become the child subreaper of the job (prctl); a "
                          "process that leaves the job's session may escape")
        self.meter.disk = self.volume.watch(self.settings.update_interval_s, self.clock) \
            if self.volume is not None else DiskWatch(
                self.sandbox.path, disk_limit_kb(self.slot_ad, self.job_ad)
                if self.settings.enforce_disk else None,
                self.settings.update_interval_s, self.clock)
        # forked and set up while the startd records this starter; it runs the job only
        # once the startd's word has come
        vessel, self.vessel = self.vessel, None
        # a process forked before the volume's private mount namespace would not see it
        if vessel is not None and not plan.pid_namespace and self.container is None and not (
                self.volume is not None and self.volume.hidden):
            pending = vessel.load(plan, job_id=job.job_id)
        else:
            if vessel is not None:
                vessel.cancel()
            pending = prepare_launch(plan, job_id=job.job_id)
        try:
            self._go()
        except BaseException:
            pending.cancel()
            raise
        start = self.clock()
        self.proc = pending.start()
        if self.container is not None:
            processes = self.container.processes(self.proc.pid, self.cgroup,
                                                 self.settings.proc_root, self._say)
        else:
            family = None if self.cgroup is not None else proctrack.ProcessFamily(
                self.settings.proc_root, self.proc.pid, self.proc.session,
                adopter=os.getpid() if subreaper else None)
            processes = proctrack.JobProcesses(self.proc.pid, cgroup=self.cgroup,
                                               family=family, say=self._say)
        self.meter.processes = processes
        self.control.started(job, self.proc.pid, processes, self.server, self.userlog,
                             self.meter.sample)
        if self.userlog is not None:
            self.userlog.execute(self.settings.hostname, slot.name)
        self.server.broadcast(self._hello())
        status, rusage = self._watch(job)
        duration = self.clock() - start
        if self.container is not None:
            status = self.container.ended(job.job_id, status, slot.memory_mb)
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
                                          machine_ad_text=self.machine_ad_text, tag=self.tag,
                                          mount=self._volume_mount())
            return
        # a pool job whose files were transferred in (startd/poolside/transfer.py)
        try:
            self.sandbox = adopt_sandbox(prepared, self.settings.execute, user,
                                         job_ad_text=self.job_ad_text,
                                         machine_ad_text=self.machine_ad_text)
        except SandboxRefused as exc:
            raise JobHold(f"the job's scratch directory was refused: {exc}",
                          HoldCode.IWD_ERROR, exc.errno, job=job.job_id) from None

    def _volume_mount(self) -> Callable[[str], None] | None:
        """With STARTD_ENFORCE_DISK_LIMITS: how the job's volume is made at its sandbox."""
        if self.settings.lvm is None:
            return None
        volume = self.volume = ScratchVolume(self.settings.lvm, own_process=self.own_process,
                                             say=self._say)
        volume.enter_namespace()
        name = job_volume_name(str(self.slot_ad.get("Name") or "slot"), self.tag)
        disk_kb = disk_limit_kb(self.slot_ad, self.job_ad) or EXTENT_KB

        def mount(path: str) -> None:
            # root's until create_sandbox has written the ads and hands it to the user
            volume.make(name, disk_kb, path, self.job_ad, owner=None)
        return mount

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
        processes = self.control.processes
        return {"event": "hello", "version": PROTOCOL_VERSION, "starter_pid": os.getpid(),
                "job_pid": self.proc.pid if self.proc else None,
                "state": self.control.state.value,
                "sandbox": self.sandbox.path if self.sandbox else None,
                "cgroup": self.cgroup.slice if self.cgroup else None,
                "containment": processes.kind if processes else None,
                "usage": self.meter.attributes()}

    def _watch(self, job: JobSpec) -> tuple[int, Any]:
        assert self.proc is not None and self.server is not None
        control, meter = self.control, self.meter
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
                if control.kill_deadline is not None:
                    deadlines.append(control.kill_deadline)
                disk_due = meter.disk_due()
                if disk_due is not None:
                    deadlines.append(disk_due)
                timeout = max(0.0, min(deadlines) - now)
                for key, _ in sel.select(timeout):
                    if key.data == "exit":
                        _, status, rusage = os.wait4(self.proc.pid, 0)
                        control.reaped = True
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
                        control.serve(key.data, sel, self._hello)
                control.run_pending()
                now = self.clock()
                control.check_deadline(now)
                disk_due = meter.disk_due()
                if disk_due is not None and now >= disk_due:
                    hold = meter.measure_disk(job.job_id)
                    if hold is not None:
                        self._say(hold.reason)
                        control.apply(Command.HARD_KILL)
                now = self.clock()
                if now >= next_sample:
                    self.server.broadcast(meter.report(control.state.value, self.userlog))
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

    # --- the end ----------------------------------------------------------------------

    def _finish(self, job: JobSpec, status: int, rusage: Any, duration: float) -> Outcome:
        assert self.sandbox is not None and self.server is not None
        control, meter = self.control, self.meter
        # With cgroups the counters outlive the process; without, the exited job is
        # gone from /proc and wait4's rusage below is the final word.
        sample = meter.sample() if self.cgroup is not None else None
        u = meter.usage
        control.state = JobState.EXITED
        control.kill_all()   # the job is over when its first process is: no stragglers
        if self.cgroup is not None:
            self.stuck = not self.cgroup.wait_empty()
        # wait4 covers the job and what it waited for; the orphans the starter reaped
        # (during the run and in the kill just above) are added to it.
        processes = control.processes
        assert processes is not None
        u.add_rusage(rusage.ru_utime + processes.reaped_user_s,
                     rusage.ru_stime + processes.reaped_system_s)
        suspended_s = control.suspension_s()
        meter.final_disk(job.job_id)
        attrs: dict[str, object] = {"JobDuration": round(duration, 3)}
        attrs.update(meter.attributes())
        attrs["CumulativeSuspensionTime"] = round(suspended_s, 3)
        attrs.update(exit_attributes(status))
        signalled = os.WIFSIGNALED(status)
        sig = os.WTERMSIG(status) if signalled else None
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        hold: JobHold | None = meter.disk_hold
        if hold is not None:
            attrs.update(hold_attributes(hold))
        oom = sample.oom_kills if sample is not None else 0
        vacating = control.vacating
        if oom > 0 and sig == signal.SIGKILL and hold is None and sample is not None:
            used = max(u.memory_bytes, u.image_bytes)
            verdict = oom_verdict(always_hold=self.settings.always_hold_on_oom,
                                  limit_ooms=sample.limit_ooms, used_bytes=used,
                                  limit_bytes=self.memory_limit or self.oom_reference)
            if verdict is OomVerdict.HOLD:
                hold = oom_hold(job.job_id, oom, used, self.memory_limit)
                attrs.update(hold_attributes(hold))
            else:
                # not the job's fault: back to the queue, to run where memory is
                self._say(f"job {job.job_id} killed by the kernel's OOM killer while "
                          f"using {math.ceil(used / MIB)} MB, below its limit: the "
                          "worker node is out of memory; the job is requeued")
                attrs.update(SYSTEM_OOM_VACATE)
                vacating = True
        if self.xfer is not None and hold is None and self.xfer.plan.output_goes(
                exited=not vacating, success=not signalled and code == 0):
            hold = self.xfer.send_out(final=not vacating)
            if hold is not None:
                attrs.update(hold_attributes(hold))
        if self.userlog is not None:
            if hold is not None:
                self.userlog.held(hold.reason, int(hold.code), hold.hold_subcode)
            elif vacating:
                self.userlog.evicted(u.user_s, u.system_s)
            else:
                self.userlog.terminated(exit_code=code, signal=sig, user=u.user_s,
                                        system=u.system_s)
        self.server.broadcast({"event": "done", "ad": attrs})
        return Outcome(attrs, hold=hold, vacated=vacating and hold is None,
                       notices=self.notices)

    def _cleanup(self, job_id: str) -> None:
        problems: list[str] = []
        if self.vessel is not None:         # the job never came to be launched
            self.vessel.cancel()
            self.vessel = None
        if self.proc is not None and not self.control.reaped:
            # The starter is giving up while its job runs (an error while watching it):
            # the job must not outlive it and the sandbox deleted below.
            try:
                self.control.kill_all()
            except (OSError, CgroupError) as exc:
                problems.append(f"killing the job: {exc}")
            try:
                os.waitpid(self.proc.pid, 0)
            except ChildProcessError:
                pass
            self.control.reaped = True
        if self.meter.disk is not None:
            self.meter.disk.close()      # a walk cut short holds descriptors
        if self.container is not None:    # first: its cgroup lies below the job's
            problems.extend(self.container.remove())
        leftovers: list[Leftover] = []
        cgroup_left: str | None = None
        processes = self.control.processes
        if self.cgroup is not None:
            try:
                self.cgroup.kill()
                # processes the kill did not end once are given a second more only
                if self.cgroup.wait_empty(1.0 if self.stuck else 5.0):
                    self.cgroup.remove()
                elif processes is not None:     # processes the kill cannot end
                    leftovers = processes.leftovers(self.settings.proc_root)
            except (OSError, CgroupError) as exc:
                problems.append(f"cgroup {self.cgroup.slice}: {exc}")
            if os.path.isdir(self.cgroup.slice):
                cgroup_left = self.cgroup.slice
        elif processes is not None:
            leftovers = processes.leftovers(self.settings.proc_root)
        if self.server is not None:
            self.server.close()
        if self.userlog is not None:
            self.userlog.close()
        if self.xfer is not None:
            self.xfer.close()
        failure = None
        if self.volume is not None:
            # the job's volume first: the directory under it is then empty
            failure = self.volume.remove(str(self.slot_ad.get("Name") or "") or None)
            if failure is not None:
                problems.append(f"volume {failure.volume_group}/{failure.volume}: "
                                f"{failure.reason}")
        if self.sandbox is not None and not self.sandbox.prepared:
            try:
                left = remove_sandbox(self.sandbox, self.user)
            except OSError as exc:
                left = [f"{exc.strerror or exc}"]
            problems.extend(f"sandbox {self.sandbox.path}: {text}" for text in left[:20])
            if len(left) > 20:
                problems.append(f"sandbox {self.sandbox.path}: {len(left) - 20} more")
        if leftovers:
            problems.append(f"{len(leftovers)} job process(es) outlived the final kill: "
                            + ", ".join(f"{x.pid} ({x.state})" for x in leftovers[:8]))
        for text in problems:
            self._say(f"clean-up of job {job_id} incomplete: {text}")
        report = build_report(job_id, leftovers=leftovers, cgroup_left=cgroup_left,
                              volume_left=failure, problems=problems,
                              proc_root=self.settings.proc_root)
        if report is not None:      # the startd's word on what was left (exit_report.py)
            try:
                write_report(report_path(self.socket_path), report)
            except OSError as exc:
                self._say(f"cannot write the clean-up report: {exc.strerror}")


def exit_attributes(status: int) -> dict[str, object]:
    """How the job's first process ended (a wait status), as job ad attributes."""
    if os.WIFSIGNALED(status):
        return {"ExitBySignal": True, "ExitSignal": os.WTERMSIG(status)}
    return {"ExitBySignal": False,
            "ExitCode": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}


def oom_hold(job_id: str, oom_kills: int, used_bytes: int, limit: int | None) -> JobHold:
    """The hold of a job the kernel's OOM killer killed in its cgroup."""
    limit_text = f"{limit // MIB} MB" if limit is not None else "the machine's memory"
    return JobHold(
        f"Job has gone over memory limit of {limit_text}: peak usage "
        f"{math.ceil(used_bytes / MIB)} MB (killed by the kernel's OOM killer "
        f"{oom_kills} time(s) in the job's cgroup)",
        HoldCode.JOB_OUT_OF_RESOURCES, OUT_OF_RESOURCES_MEMORY, job=job_id)

def hold_attributes(hold: JobHold) -> dict[str, object]:
    return {"JobStatus": 5, "HoldReason": hold.reason, "HoldReasonCode": int(hold.code),
            "HoldReasonSubCode": hold.hold_subcode}

