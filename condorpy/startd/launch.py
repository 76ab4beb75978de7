"""Launching starters as separate processes.

:class:`SubprocessLauncher` starts ``condorpy starter`` in a new session. It pays a
Python start-up per job; the preloaded fork server (:mod:`condorpy.startd.forkserver`)
replaces it where it is available.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from condorpy.errors import StartdError
from condorpy.startd.starters import LaunchRequest, Launched, boot_id, process_start_ticks

# Variables systemd gives its services that a job must never see.
_SERVICE_VARS = ("NOTIFY_SOCKET", "INVOCATION_ID", "WATCHDOG_USEC", "WATCHDOG_PID",
                 "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")


def write_inputs(request: LaunchRequest, directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    job = directory / "job.ad"
    slot = directory / "slot.ad"
    job.write_text(request.job_ad)
    slot.write_text(request.slot_ad)
    return job, slot


class SubprocessLauncher:
    def __init__(self, config_path: str | None, log_dir: Path) -> None:
        self.config_path = config_path
        self.log_dir = log_dir

    def launch(self, request: LaunchRequest) -> Launched:
        directory = Path(request.result_path).parent
        job, slot = write_inputs(request, directory)
        argv = [sys.executable, "-m", "condorpy", "starter", "--job-ad", str(job),
                "--slot-ad", str(slot), "--execute", request.execute,
                "--result", request.result_path]
        if self.config_path:
            argv += ["--config", self.config_path]
        for name, value in request.knobs.items():
            argv += ["--set", f"{name}={value}"]
        env = {k: v for k, v in os.environ.items() if k not in _SERVICE_VARS}
        try:
            log = open(directory / "StarterLog", "ab")
        except OSError as exc:
            raise StartdError(f"job {request.job_id}: cannot open its starter log: "
                              f"{exc.strerror}") from None
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True, env=env, close_fds=True)
        except OSError as exc:
            raise StartdError(f"job {request.job_id}: cannot start its starter: "
                              f"{exc.strerror}") from None
        finally:
            log.close()
        # Popen keeps a handle; the daemon follows the starter through its socket and
        # reaps it through SIGCHLD (a starter outliving a restart is not its child).
        ticks = process_start_ticks(proc.pid) or 0
        return Launched(proc.pid, ticks, boot_id(),
                        os.path.join(request.execute, f"starter_{proc.pid}.sock"),
                        request.result_path)

    def close(self) -> None:
        pass
