"""What a job must not inherit from the daemon's service.

The service may run with a raised open-files limit (``LimitNOFILE=``) and a negative
``OOMScoreAdjust=`` (the kernel should kill a job before the daemon). Every process
forked below it inherits both, so the job's process sets them back, just before it
executes the job, to what systemd gives any service by default: at most 1024 open
files (soft; a program that needs more may raise it up to the hard limit, 524288, as
under any other service or a login) and an OOM score adjustment of 0. Limits are only
ever lowered here, and a positive adjustment (jobs to be killed first) is kept.
"""

from __future__ import annotations

import resource

# systemd's DefaultLimitNOFILE (since v240): soft 1024 for select(), hard 512 Ki.
NOFILE_SOFT = 1024
NOFILE_HARD = 524288


def nofile_for_job(soft: int, hard: int) -> tuple[int, int]:
    """The (soft, hard) open-files limit a job gets from the inherited one."""
    inf = resource.RLIM_INFINITY
    new_hard = NOFILE_HARD if hard == inf else min(hard, NOFILE_HARD)
    new_soft = min(NOFILE_SOFT if soft == inf else soft, NOFILE_SOFT, new_hard)
    return new_soft, new_hard


def oom_adj_for_job(current: int) -> int | None:
    """The OOM score adjustment to write, or None to leave it."""
    return 0 if current < 0 else None


def reset_for_job(proc_self: str = "/proc/self") -> None:
    """In the job's process, before exec; raises OSError naming nothing (the caller
    reports the stage)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = nofile_for_job(soft, hard)
    if want != (soft, hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, want)
    path = f"{proc_self}/oom_score_adj"
    with open(path) as fh:
        current = int(fh.read().strip() or 0)
    new = oom_adj_for_job(current)
    if new is not None:
        with open(path, "w") as fh:
            fh.write(str(new))
