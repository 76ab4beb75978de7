"""The starter launcher: one preloaded process that forks a starter per job.

A starter is a separate process (a job, or a starter, must never take the startd down,
and a restarted startd re-adopts starters that kept running), but a Python start-up per
job costs far more than the job's launch itself. So the startd starts this fork server
once (:meth:`ForkServer.start`); it imports the starter and everything it needs, warms
the ClassAd and configuration code, freezes the garbage collector's view of all that
(so children share those pages instead of copying them), and then serves launch
requests on a Unix socketpair.

Protocol: one JSON object per line in each direction, strictly request then reply
(:mod:`.forkserver_wire`: the records and their encoding, pure and tested alone). The
server first sends ``{"event": "ready", ...}``; then each ``{"op": "launch", ...}``
gets ``{"ok": true, ...}`` (a :class:`Launched`) or ``{"ok": false, "job": ...,
"error": ...}``. A request the server cannot use is answered, never fatal.

How a starter comes to be: the server keeps one starter forked ahead of its launch
(a spare, forked once the server has been quiet for ``SPARE_AFTER_MS``, or at the launch
when none waits), which has already called ``setsid`` (a session and process group of
its own, so signals meant for the startd's group never reach it), reset its signal
mask, dropped ``NOTIFY_SOCKET`` and ``INVOCATION_ID``, put ``/dev/null`` on its standard
descriptors, closed every other descriptor (the startd's socketpair above all: a
starter holding it would hide the server's exit from the startd) and forked its job's
first process (:class:`condorpy.starter.launcher.Vessel`), which waits for its plan.
The server checks the request's paths and hands the request line to the spare, which
parses both ads and the knobs (read through :class:`condorpy.config.Config` as the
STARTER subsystem and cached by value), appends to its slot's StarterLog (the
request's ``log_path``; without one, ``EXECUTE/starter_<pid>.log``), moves itself into
the requested cgroup, and only then tells the server "ready" on a pipe and runs
:class:`Starter`. A request it cannot use it reports as refused, and the server answers
with the reason; while quiet the server reads the last launch's configuration itself,
so that the next spares inherit it read. The server answers the startd once "ready" (or the reason it
failed) has arrived, so a set-up failure is an error reply, not a starter that
silently died.

Held launches: a request that says ``"hold": true`` gets a starter that, once set up
and reported, waits for ``{"op": "release", "pid": N}`` before it runs anything (the
reply is ``{"ok": true, "released": N}``). The startd holds every launch and releases
the starter once the job store records it: a startd killed between the fork and that
record closes the socketpair, the server exits, the held starter sees its release pipe
close and exits without starting the job, and the next startd (which finds no record)
runs the job once, from the queue. Without the hold, such a starter would run the job
unknown to anyone while the next startd ran it again.

Exit and reaping: the starter is the server's child, in its own session; the server
reaps it (SIGCHLD, ``waitpid(-1, WNOHANG)``), so no zombie stays while the server
lives. When the server is gone (it exits when the startd's end of the socketpair
closes, and never kills a starter), the kernel re-parents running starters to init or
to the nearest child subreaper, which reaps them in turn. The startd is never a
starter's parent, so it learns of an exit without ``waitpid``: the starter's control
socket sends ``done`` then closes, and :func:`open_pidfd` gives a descriptor that
becomes readable when the starter has exited (pidfds work for any process). The final
job ad is written to ``result_path`` (temporary file + rename) before the starter
exits, so once the pid is gone the file is either whole or absent. A restarted startd
re-adopts from its records (pid, start time in clock ticks, boot id, paths):
:func:`same_process` true means the starter still runs (connect to its socket); false
with a result file means it finished; false without one means it died (its log says
why). The log file is the startd's to remove once it has read the result.
"""

from __future__ import annotations

import argparse
import gc
import os
import pwd
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.errors import CondorpyError, RequestError, StartdError, StarterError
from condorpy.starter.ads import (ad_values, custom_memory_limit, final_ad_text,
                                  write_atomically)
from condorpy.starter.knobs import settings_from_knobs
from condorpy.starter.launcher import Vessel
from condorpy.starter.libc import libc
from condorpy.starter.settings import StarterSettings
from condorpy.starter.starter import Abandoned, Starter
from condorpy.startd.starter_logs import open_starter_log
from condorpy.startd.forkserver_wire import (MAX_MESSAGE, PROTOCOL_VERSION, LaunchFailed,
                                             Launched, LaunchRequest, LineBuffer, Ready,
                                             Release, Released, Reply, decode_reply,
                                             decode_request, encode_release, encode_reply,
                                             encode_request, request_job_id)

# How long the server waits for a forked starter to say it is set up. Set-up is a
# handful of system calls; only a hung file system could take this long.
SETUP_TIMEOUT_S = 10.0
# How long the server is quiet before it forks the next spare starter.
SPARE_AFTER_MS = 10
# How long a spare waits for its request before it rehearses the last launch (see
# _Server.rehearse): in a burst of launches the request comes first and no CPU goes to
# a rehearsal.
REHEARSE_AFTER_S = 0.005
# systemd's service-manager variables: they describe the daemon's service, not a starter.
_DROPPED_ENV = ("NOTIFY_SOCKET", "INVOCATION_ID", "WATCHDOG_USEC", "WATCHDOG_PID",
                "JOURNAL_STREAM")
_CONFIG_CACHE = 8
# The same exit statuses as `condorpy starter`; only the server's reaper sees them.
_EXIT_OK, _EXIT_FAILED, _EXIT_HELD, _EXIT_VACATED = 0, 1, 3, 4


# --- /proc facts ------------------------------------------------------------------------

def current_boot_id(proc_root: str = "/proc") -> str:
    with open(os.path.join(proc_root, "sys/kernel/random/boot_id")) as fh:
        return fh.read().strip()


def _stat_fields(pid: int, proc_root: str) -> list[str] | None:
    try:
        with open(os.path.join(proc_root, str(pid), "stat"), "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields resume after the last ')'.
    return data[data.rfind(b")") + 2:].decode("ascii", "replace").split()


def start_ticks(pid: int, proc_root: str = "/proc") -> int | None:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since
    boot; None when there is no such process."""
    fields = _stat_fields(pid, proc_root)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def same_process(pid: int, ticks: int, boot_id: str, *, proc_root: str = "/proc") -> bool:
    """Whether ``pid`` is still the live process launched with this start time during
    this boot. A zombie counts as gone: it has exited and will run nothing more."""
    try:
        if current_boot_id(proc_root) != boot_id:
            return False
    except OSError:
        return False
    fields = _stat_fields(pid, proc_root)
    if fields is None or len(fields) <= 19 or fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == ticks


def open_pidfd(launched: Launched, *, proc_root: str = "/proc") -> int | None:
    """A pidfd for the starter, readable once it has exited (for the startd's event
    loop); None when it is already gone. Checked after opening, so that the descriptor
    cannot refer to a later process that reused the pid."""
    try:
        fd = os.pidfd_open(launched.pid)
    except ProcessLookupError:
        return None
    if not same_process(launched.pid, launched.start_ticks, launched.boot_id,
                        proc_root=proc_root):
        os.close(fd)
        return None
    return fd


# --- the server -----------------------------------------------------------------------

class _Refused(Exception):
    """A launch that cannot go ahead; the message is for the startd."""


@dataclass(frozen=True)
class _Prepared:
    request: LaunchRequest
    job_ad: ClassAd
    job_values: dict[str, object]
    slot_values: dict[str, object]
    job_text: str
    slot_text: str
    settings: StarterSettings


def _check_paths(req: LaunchRequest) -> None:
    for name, path in (("execute", req.execute), ("result_path", req.result_path),
                       ("cgroup", req.cgroup)):
        if path is not None and not os.path.isabs(path):
            raise _Refused(f"{name} {path!r} is not an absolute path")
    if not os.path.isdir(req.execute):
        raise _Refused(f"execute directory {req.execute} does not exist")
    if not os.access(req.execute, os.W_OK | os.X_OK):
        raise _Refused(f"execute directory {req.execute} is not writable")
    parent = os.path.dirname(req.result_path)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise _Refused(f"result directory {parent} does not exist or is not writable")
    if os.path.isdir(req.result_path):
        raise _Refused(f"result path {req.result_path} is a directory")


@dataclass
class _Spare:
    """A starter forked ahead of its request: its pid and start time, and the server's
    ends of its pipes (the request in, its set-up report out, the hold's word in)."""

    pid: int
    ticks: int | None
    request: int
    report: int
    go: int

    def close(self) -> None:
        for fd in (self.request, self.report, self.go):
            try:
                os.close(fd)
            except OSError:
                pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_line(fd: int) -> bytes:
    """One request line from the server (without its newline); empty at end of file."""
    chunks: list[bytes] = []
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            return b""
        chunks.append(data)
        if data.endswith(b"\n"):
            return b"".join(chunks)[:-1]


class _Server:
    def __init__(self, sock: socket.socket, proc_root: str = "/proc") -> None:
        self.sock = sock
        self.proc_root = proc_root
        self.boot_id = current_boot_id(proc_root)
        self.buffer = LineBuffer()
        self.configs: OrderedDict[tuple[tuple[str, str], ...], Config] = OrderedDict()
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        # held starters: pid -> the write end of the pipe each waits on
        self.held: dict[int, int] = {}
        self.spare: _Spare | None = None
        self.knobs: Mapping[str, str] | None = None     # the last launch's
        self.last_request = b""                         # the last launch's, for rehearsal

    # -- preparing, in the server, so that errors become replies --------------------

    def _config(self, knobs: Mapping[str, str]) -> Config:
        key = tuple(sorted(knobs.items()))
        cfg = self.configs.get(key)
        if cfg is None:
            cfg = Config.from_mapping(dict(key), source="<startd knobs>",
                                      subsystem="STARTER")
            self.configs[key] = cfg
            while len(self.configs) > _CONFIG_CACHE:
                self.configs.popitem(last=False)
        else:
            self.configs.move_to_end(key)
        return cfg

    def prepare(self, req: LaunchRequest) -> _Prepared:
        """The request's ads parsed and its knobs read (in the spare that takes it);
        :class:`_Refused` saying what is wrong."""
        try:
            job_ad = ClassAd.parse_old(req.job_ad, source="the job ad")
            slot_ad = ClassAd.parse_old(req.slot_ad, source="the slot ad")
        except CondorpyError as exc:
            raise _Refused(f"bad ad: {exc}") from None
        try:
            cfg = self._config(req.knobs)
            settings = settings_from_knobs(
                cfg, execute=req.execute,
                custom_hard_mb=custom_memory_limit(cfg, "CGROUP_HARD_MEMORY_LIMIT_EXPR",
                                                   job_ad, slot_ad),
                custom_soft_mb=custom_memory_limit(cfg, "CGROUP_SOFT_MEMORY_LIMIT_EXPR",
                                                   job_ad, slot_ad),
                low_memory_mb=custom_memory_limit(cfg, "CGROUP_LOW_MEMORY_LIMIT",
                                                  job_ad, slot_ad))
        except CondorpyError as exc:
            raise _Refused(f"bad configuration: {exc}") from None
        # the startd sends both ads as its ClassAd.to_old wrote them: passed on as they
        # came rather than written out again
        return _Prepared(req, job_ad, ad_values(job_ad, slot_ad), ad_values(slot_ad, job_ad),
                         req.job_ad, req.slot_ad, settings)

    def rehearse(self, line: bytes) -> None:
        """Run a launch's pure steps on an earlier request, in a spare that waits, and
        drop the result: a freshly forked child pays a copy-on-write fault for each page
        those steps touch (about 3 ms for a typical job on this project's test machine,
        under 1 ms once touched), and this pays it before a job waits on it."""
        try:
            req = decode_request(line)
            if isinstance(req, LaunchRequest):
                _starter(self.prepare(req)).rehearse()
        except (RequestError, _Refused, CondorpyError, OSError):
            pass

    # -- spares ---------------------------------------------------------------------

    def fork_spare(self, *, warm: bool = False) -> _Spare:
        """A starter forked ahead of its request and set up as far as it can be
        without one; it parses the request itself when it comes. ``warm``: while the
        server is quiet (not while a launch waits)."""
        if warm and self.knobs is not None:
            # the launches' configuration read here once: the next spares inherit it
            try:
                self._config(self.knobs)
            except CondorpyError:
                pass
        req_r, req_w = os.pipe2(os.O_CLOEXEC)
        rfd, wfd = os.pipe2(os.O_CLOEXEC)
        go_r, go_w = os.pipe2(os.O_CLOEXEC)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in (req_r, req_w, rfd, wfd, go_r, go_w):
                os.close(fd)
            raise _Refused(f"cannot fork a starter: {exc.strerror}") from None
        if pid == 0:
            for fd in (req_w, rfd, go_w):
                os.close(fd)
            self._become_starter(req_r, wfd, go_r, rehearse=warm)
        for fd in (req_r, wfd, go_r):
            os.close(fd)
        # Our own child: it stays in /proc (as a zombie at worst) until we reap it.
        return _Spare(pid, start_ticks(pid, self.proc_root), req_w, rfd, go_w)

    def _drop_spare(self) -> None:
        spare, self.spare = self.spare, None
        if spare is not None:
            spare.close()
            try:
                os.waitpid(spare.pid, 0)    # it exits on its request pipe's end of file
            except ChildProcessError:
                pass

    # -- launching ----------------------------------------------------------------

    def launch(self, req: LaunchRequest, line: bytes) -> Launched:
        _check_paths(req)
        self.last_request = line
        self.knobs = req.knobs
        spare, self.spare = self.spare, None
        if spare is not None:
            try:
                _write_all(spare.request, line + b"\n")
            except OSError:             # it died waiting (killed by someone)
                spare.close()
                spare = None
        if spare is None:
            spare = self.fork_spare()
            try:
                _write_all(spare.request, line + b"\n")
            except OSError:
                pass                    # its report says why it went
        os.close(spare.request)
        try:
            launched = self._settle(req, spare)
        except BaseException:
            os.close(spare.go)          # it is not running anything: let it go
            raise
        if req.hold:
            self.held[spare.pid] = spare.go
        else:
            os.close(spare.go)
        return launched

    def _settle(self, req: LaunchRequest, spare: _Spare) -> Launched:
        """The started starter, once it has reported its set-up."""
        pid, ticks = spare.pid, spare.ticks
        report = self._read_report(spare.report)
        if report == "ready" and ticks is None:    # cannot be: only we can reap it
            raise _Refused(f"starter {pid} is running but has no /proc entry")
        if report != "ready" or ticks is None:
            if not report:
                try:
                    os.kill(pid, signal.SIGKILL)     # hung in set-up: it ran no job yet
                except ProcessLookupError:
                    pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            if report.startswith("refused "):
                raise _Refused(report.removeprefix("refused "))
            raise _Refused(f"the starter could not be set up: "
                           f"{report.removeprefix('fail ') or 'no report'}")
        return Launched(req.job_id, pid, ticks, self.boot_id,
                        os.path.join(req.execute, f"starter_{pid}.sock"), req.result_path,
                        req.log_path or os.path.join(req.execute, f"starter_{pid}.log"))

    def _read_report(self, rfd: int) -> str:
        chunks: list[bytes] = []
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return ""
                ready, _, _ = select.select([rfd], [], [], left)
                if not ready:
                    continue
                data = os.read(rfd, 4096)
                if not data:
                    break
                chunks.append(data)
        finally:
            os.close(rfd)
        text = b"".join(chunks).decode("utf-8", "replace").strip()
        return text or "fail it exited during set-up"

    def release(self, release: Release) -> Reply:
        go_w = self.held.pop(release.pid, None)
        if go_w is None:
            return LaunchFailed(None, f"no starter {release.pid} waits to be released "
                                      f"(it has exited)")
        try:
            os.write(go_w, b"g")
        except OSError:
            pass            # it died meanwhile: the startd learns that from its socket
        finally:
            os.close(go_w)
        return Released(release.pid)

    def _become_starter(self, req_r: int, wfd: int, go_r: int, *,
                        rehearse: bool = False) -> None:
        """The forked child (a spare until its request comes); never returns.
        ``rehearse``: a spare forked while the server is quiet runs the last launch's
        steps once while it waits (:meth:`rehearse`)."""
        code = _EXIT_FAILED
        try:
            try:
                stage = "setsid"
                os.setsid()
                signal.set_wakeup_fd(-1)
                # Until its request comes a spare is nobody's starter: the default
                # dispositions end it.
                for sig in (signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGCHLD,
                            signal.SIGUSR1, signal.SIGUSR2):
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                for name in _DROPPED_ENV:
                    os.environ.pop(name, None)
                # The socket object must not close a descriptor number that the
                # starter reuses later, should it ever be collected here.
                self.sock.detach()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                # the startd's socketpair above all: a starter holding it would hide
                # the server's exit from the startd
                _close_all_but(req_r, wfd, go_r)
                os.chdir("/")
                # its job's first process, forked now rather than while the job waits
                # (a spare forked for a launch that waits leaves that to its starter)
                stage = "fork"
                waiting, _, _ = select.select([req_r], [], [], 0)
                vessel = None if waiting else Vessel.fork()
            except OSError as exc:
                os.write(wfd, f"fail {stage}: {exc.strerror or exc}\n".encode())
                return
            if rehearse and not waiting and self.last_request and \
                    not select.select([req_r], [], [], REHEARSE_AFTER_S)[0]:
                self.rehearse(self.last_request)
            line = _read_line(req_r)
            os.close(req_r)
            prep: _Prepared | None = None
            refusal = ""
            if line:
                try:
                    req = decode_request(line)
                    if not isinstance(req, LaunchRequest):
                        raise RequestError("not a launch request")
                    prep = self.prepare(req)
                except (RequestError, _Refused) as exc:
                    refusal = str(exc)
            if prep is None:
                if vessel is not None:
                    vessel.cancel()
                if refusal:
                    os.write(wfd, f"refused {refusal}\n".encode())
                else:
                    code = 0            # the server is gone: a spare never used
                return
            req = prep.request
            try:
                # Once the startd knows this pid it may vacate the job at once: from
                # here on SIGTERM/SIGINT/SIGQUIT are the starter's soft and hard kill.
                starter = _starter(prep, vessel)
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
                    signal.signal(sig, starter.on_signal)
                stage = "log"
                log = open_starter_log(
                    req.log_path or os.path.join(req.execute,
                                                 f"starter_{os.getpid()}.log"),
                    req.log_max)
                # the file is the slot's, shared by its successive starters
                os.write(log, time.strftime(f"%m/%d/%y %H:%M:%S starter {os.getpid()} "
                                            f"for job {req.job_id}\n").encode())
                os.dup2(log, 1)
                os.dup2(log, 2)
                os.close(log)
                if req.cgroup is not None:
                    stage = f"cgroup {req.cgroup}"
                    _enter_cgroup(req.cgroup)
                    if vessel is not None:
                        vessel.home = req.cgroup
            except OSError as exc:
                if vessel is not None:
                    vessel.cancel()
                os.write(wfd, f"fail {stage}: {exc.strerror or exc}\n".encode())
                return
            os.write(wfd, b"ready\n")
            os.close(wfd)
            if req.hold:
                starter.gate = lambda: _released(go_r)
            else:
                os.close(go_r)
            code = _run_starter(prep, starter)
        except BaseException:       # a starter must never fall back into the server loop
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    # -- the loop ---------------------------------------------------------------------

    def reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.spare is not None and self.spare.pid == pid:
                self.spare.close()          # it died waiting
                self.spare = None
            go_w = self.held.pop(pid, None)
            if go_w is not None:
                os.close(go_w)

    def handle(self, line: bytes | None) -> Reply:
        if line is None:
            return LaunchFailed(None, f"request longer than {MAX_MESSAGE} bytes")
        job = request_job_id(line)
        try:
            req = decode_request(line)
            if isinstance(req, Release):
                return self.release(req)
            return self.launch(req, line)
        except RequestError as exc:
            return LaunchFailed(job, str(exc))
        except _Refused as exc:
            return LaunchFailed(job, str(exc))
        except Exception as exc:     # keep serving; the startd gets the reason
            print(f"condorpy fork server: job {job}: internal error", file=sys.stderr)
            traceback.print_exc()
            return LaunchFailed(job, f"internal error in the fork server: "
                                     f"{type(exc).__name__}: {exc}")

    def serve(self) -> int:
        signal.signal(signal.SIGCHLD, lambda _s, _f: None)   # wakes poll via the fd
        signal.set_wakeup_fd(self.wake_w)
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        self.sock.sendall(encode_reply(Ready(os.getpid(), PROTOCOL_VERSION)))
        while True:
            # A spare is forked once the server has been quiet a while, so that its
            # fork does not compete with a job being started.
            events = poller.poll(None if self.spare is not None else SPARE_AFTER_MS)
            if not events:
                try:
                    self.spare = self.fork_spare(warm=True)
                except _Refused as exc:
                    print(f"condorpy fork server: {exc}", file=sys.stderr)
                continue
            for fd, _ in events:
                if fd == self.wake_r:
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                    continue
                try:
                    data = self.sock.recv(1 << 16)
                except OSError:
                    data = b""
                if not data:
                    # The startd is gone or done; its starters carry on without us.
                    self._drop_spare()
                    self.reap()
                    return 0
                for line in self.buffer.feed(data):
                    reply = self.handle(line)
                    try:
                        self.sock.sendall(encode_reply(reply))
                    except OSError:
                        self._drop_spare()
                        return 0
            self.reap()


def _close_all_but(*keep: int) -> None:
    low = 3
    for fd in sorted(k for k in keep if k >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _released(go_r: int) -> bool:
    """Wait for the server's word: True once released, False when the server went
    away first (its write end closed with nothing written)."""
    try:
        return os.read(go_r, 1) == b"g"
    finally:
        os.close(go_r)


def _enter_cgroup(path: str) -> None:
    os.makedirs(path, exist_ok=True)
    # No O_CREAT: a directory that is not a cgroup has no cgroup.procs to write to.
    fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY)
    try:
        os.write(fd, b"0")      # "0" is the writer itself
    finally:
        os.close(fd)


def _starter(prep: _Prepared, vessel: Vessel | None = None) -> Starter:
    return Starter(prep.job_values, prep.slot_values, prep.settings,
                   job_ad_text=prep.job_text, machine_ad_text=prep.slot_text,
                   handle_signals=True, vessel=vessel)


def _run_starter(prep: _Prepared, starter: Starter) -> int:
    req = prep.request
    try:
        outcome = starter.run()
    except Abandoned:
        print(f"condorpy starter: job {req.job_id}: the startd went away before it "
              f"recorded this starter; the job was not started", file=sys.stderr,
              flush=True)
        return _EXIT_VACATED
    except CondorpyError as exc:
        print(f"condorpy starter: job {req.job_id}: {exc}", file=sys.stderr, flush=True)
        return _EXIT_FAILED
    text = final_ad_text(prep.job_ad, outcome.attributes)
    try:
        write_atomically(req.result_path, text)
    except OSError as exc:
        # The job has run: its final ad must not be lost with the file.
        print(f"condorpy starter: job {req.job_id}: cannot write the final ad to "
              f"{req.result_path}: {exc.strerror}; here it is:\n{text}", file=sys.stderr,
              flush=True)
        return _EXIT_FAILED
    if outcome.hold is not None:
        return _EXIT_HELD
    return _EXIT_VACATED if outcome.vacated else _EXIT_OK


def _warm_up() -> None:
    """Run once what every launch runs, so that lazily built state (the ClassAd
    parser's tables, the configuration defaults) is built here, shared by every child,
    rather than rebuilt in each one."""
    # a function call loads the ClassAd function modules (slot ads call several)
    job = ClassAd.parse_old('Cmd = "/bin/true"\nClusterId = 1\nProcId = 0\n'
                            'RequestCpus = 1 + 0\nWarm = strcat("a", "b")\n',
                            source="warm-up")
    slot = ClassAd.parse_old('Name = "slot1@warm-up"\nCpus = 1\nMemory = 128\n',
                             source="warm-up")
    ad_values(job, slot)
    ad_values(slot, job)
    final_ad_text(job, {"ExitCode": 0, "ExitBySignal": False})
    settings_from_knobs(Config.from_mapping({}, subsystem="STARTER"), execute="/")
    # The C library's name service modules and the ctypes handle are loaded on first
    # use: once here, rather than in every starter before its job can start.
    libc()
    try:
        me = pwd.getpwuid(os.geteuid())
        os.getgrouplist(me.pw_name, me.pw_gid)
    except (KeyError, OSError):
        pass


def serve_fd(fd: int) -> int:
    """The fork server's body, on an inherited socketpair descriptor."""
    for name in _DROPPED_ENV:
        os.environ.pop(name, None)
    # A Ctrl-C meant for a startd in a terminal must not kill its launcher first: the
    # server ends when the startd closes its end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    server = _Server(sock)
    _warm_up()
    gc.collect()
    gc.freeze()
    return server.serve()


# --- the startd's side ----------------------------------------------------------------

class ForkServer:
    """The startd's handle on its fork server. ``launch`` blocks for about a
    millisecond (a fork and the child's set-up), not for the job."""

    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket,
                 timeout_s: float) -> None:
        self.proc = proc
        self.sock = sock
        self.timeout_s = timeout_s
        self.buffer = LineBuffer()
        self.lines: list[bytes | None] = []
        self.unread = 0       # releases sent without waiting: their answers come first
        self.late: list[str] = []     # what those answers said went wrong

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    def start(cls, *, python: str | None = None, env: Mapping[str, str] | None = None,
              timeout_s: float = 30.0) -> ForkServer:
        """Start the server (one Python start-up, paid once) and wait until it is
        ready. ``env`` defaults to ours, less NOTIFY_SOCKET and INVOCATION_ID."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        environ = dict(os.environ if env is None else env)
        for name in _DROPPED_ENV:
            environ.pop(name, None)
        try:
            proc = subprocess.Popen(
                [python or sys.executable, "-m", "condorpy.startd.forkserver",
                 "--fd", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=environ)
        except OSError as exc:
            ours.close()
            raise StartdError(f"cannot start the fork server: {exc}") from None
        finally:
            theirs.close()
        server = cls(proc, ours, timeout_s)
        try:
            reply = server._read_reply()
            if not isinstance(reply, Ready) or reply.version != PROTOCOL_VERSION:
                raise StartdError(f"the fork server did not start properly: {reply}")
        except BaseException:
            server.close(kill=True)
            raise
        return server

    def _read_reply(self) -> Reply:
        deadline = time.monotonic() + self.timeout_s
        while not self.lines:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StartdError(f"the fork server (pid {self.pid}) did not answer "
                                  f"within {self.timeout_s:g} s")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError as exc:
                raise StartdError(f"the fork server (pid {self.pid}): {exc}") from None
            if not data:
                raise StartdError(f"the fork server (pid {self.pid}) has exited "
                                  f"(status {self.proc.poll()})")
            self.lines.extend(self.buffer.feed(data))
        line = self.lines.pop(0)
        if line is None:
            raise StartdError("the fork server sent an over-long reply")
        return decode_reply(line)

    def launch(self, request: LaunchRequest) -> Launched:
        """Start a starter for the job; :class:`StarterError` naming the job when it
        cannot be started, :class:`StartdError` when the server itself is gone."""
        try:
            self.sock.sendall(encode_request(request))
        except OSError as exc:
            raise StartdError(f"the fork server (pid {self.pid}) is gone: {exc}") from None
        self._read_unread()
        reply = self._read_reply()
        if isinstance(reply, LaunchFailed):
            raise StarterError(f"cannot start a starter: {reply.error}",
                               job=reply.job_id or request.job_id)
        if not isinstance(reply, Launched) or reply.job_id != request.job_id:
            raise StartdError(f"the fork server answered out of turn: {reply}")
        return reply

    def release(self, pid: int, *, wait: bool = True) -> None:
        """Let the held starter ``pid`` run its job; :class:`StarterError` when it is
        gone, :class:`StartdError` when the server is. ``wait=False``: the release is
        sent and its answer read with the next request's, a starter that had gone
        meanwhile then named in :attr:`late` (one round trip fewer per job: the
        starter's own socket tells the startd of its end anyway)."""
        try:
            self.sock.sendall(encode_release(Release(pid)))
        except OSError as exc:
            raise StartdError(f"the fork server (pid {self.pid}) is gone: {exc}") from None
        if not wait:
            self.unread += 1
            return
        self._read_unread()
        reply = self._read_reply()
        if isinstance(reply, LaunchFailed):
            raise StarterError(f"cannot release starter {pid}: {reply.error}")
        if reply != Released(pid):
            raise StartdError(f"the fork server answered out of turn: {reply}")

    def _read_unread(self) -> None:
        """The answers to the releases sent without waiting (the server answers in
        order, so they come before the next request's)."""
        while self.unread:
            reply = self._read_reply()
            self.unread -= 1
            if isinstance(reply, LaunchFailed):
                self.late.append(reply.error)
            elif not isinstance(reply, Released):
                raise StartdError(f"the fork server answered out of turn: {reply}")

    def close(self, *, kill: bool = False, timeout_s: float = 10.0) -> None:
        """Close our end; the server exits, leaving its starters running."""
        self.sock.close()
        if kill:
            self.proc.kill()
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m condorpy.startd.forkserver",
                                     description="condorpy's starter launcher; started "
                                     "by the startd, serving launches on --fd")
    parser.add_argument("--fd", type=int, required=True,
                        help="the inherited socketpair descriptor to serve on")
    args = parser.parse_args(argv)
    return serve_fd(args.fd)


if __name__ == "__main__":
    raise SystemExit(main())
