"""What a starter could not clean up, told to the startd when it ends.

HTCondor's starter says it with its exit status (``STARTER_EXIT_IMMORTAL_LVM`` and the
codes beside it) and the startd looks at the job's leftover processes itself. A
condorpy starter's exit status is seen only by the fork server, so the same word goes
in a small record beside the starter's socket, ``starter_<pid>.exit`` in EXECUTE,
written (whole, by rename) just before the starter exits and only when something was
left behind; the startd reads and removes it when it reaps the starter, and keeps it
when it is away (a restarted startd reads it then). The code is HTCondor's; the rest
(which processes, which volume) is what the startd needs to check whether the cause
still holds.

The startd decides what breaks a slot (condorpy.slots.broken); the starter reports.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

from condorpy.errors import StarterError
from condorpy.machine.volumes import VolumeRemovalFailed
from condorpy.starter.ads import write_atomically

REPORT_SUFFIX = ".exit"


class StarterExit(IntEnum):
    """HTCondor's starter exit statuses that mean the slot may have to break (exit.h);
    condorpy.slots.broken keeps the same numbers (a test holds them equal)."""

    NORMAL = 0
    IMMORTAL_LVM = 15           # the job's logical volume could not be removed
    IMMORTAL_JOB_PROCESS = 16   # job processes outlived the final kill
    CGROUP_LOCKED = 18          # the job's cgroup could not be removed


@dataclass(frozen=True)
class Leftover:
    """A job process still there after the final kill: pid and start time (clock ticks
    since boot), which together name it even once the pid is reused."""

    pid: int
    start_ticks: int
    state: str = "?"            # as /proc says it (D: uninterruptible sleep)


@dataclass(frozen=True)
class CleanupReport:
    """What one starter left behind. ``code`` is the HTCondor exit status it stands for."""

    code: StarterExit
    job_id: str
    boot_id: str = ""
    leftovers: tuple[Leftover, ...] = ()
    cgroup: str | None = None               # a job cgroup that could not be removed
    volume_group: str | None = None         # a job volume that could not be removed
    volume: str | None = None
    volume_encrypted: bool = False
    problems: tuple[str, ...] = field(default_factory=tuple)   # for the log

    def to_json(self) -> str:
        d = asdict(self)
        d["code"] = int(self.code)
        return json.dumps(d, sort_keys=True)

    @staticmethod
    def from_json(text: str, source: str) -> CleanupReport:
        try:
            d: dict[str, Any] = json.loads(text)
            return CleanupReport(
                code=StarterExit(int(d["code"])), job_id=str(d["job_id"]),
                boot_id=str(d.get("boot_id", "")),
                leftovers=tuple(Leftover(int(x["pid"]), int(x["start_ticks"]),
                                         str(x.get("state", "?")))
                                for x in d.get("leftovers", ())),
                cgroup=_opt(d.get("cgroup")), volume_group=_opt(d.get("volume_group")),
                volume=_opt(d.get("volume")),
                volume_encrypted=bool(d.get("volume_encrypted", False)),
                problems=tuple(str(p) for p in d.get("problems", ())))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StarterError(f"{source}: not a starter's cleanup report ({exc})") from None


def _opt(v: object) -> str | None:
    return None if v is None else str(v)


def exit_code(*, volume_left: bool, leftovers: bool, cgroup_left: bool) -> StarterExit:
    """The exit status HTCondor's starter would end with. A volume left behind wins (its
    starter upgrades any lower status to it); then processes, then the cgroup that
    held them (a cgroup with processes in it cannot be removed, so the processes are
    the cause)."""
    if volume_left:
        return StarterExit.IMMORTAL_LVM
    if leftovers:
        return StarterExit.IMMORTAL_JOB_PROCESS
    if cgroup_left:
        return StarterExit.CGROUP_LOCKED
    return StarterExit.NORMAL


def build_report(job_id: str, *, leftovers: list[Leftover], cgroup_left: str | None,
                 volume_left: VolumeRemovalFailed | None, problems: list[str],
                 proc_root: str = "/proc") -> CleanupReport | None:
    """The report of a starter's clean-up; None when it left nothing behind."""
    code = exit_code(volume_left=volume_left is not None, leftovers=bool(leftovers),
                     cgroup_left=cgroup_left is not None)
    if code is StarterExit.NORMAL and not problems:
        return None
    return CleanupReport(
        code, job_id, boot_id=boot_id(proc_root), leftovers=tuple(leftovers),
        cgroup=cgroup_left,
        volume_group=volume_left.volume_group if volume_left is not None else None,
        volume=volume_left.volume if volume_left is not None else None,
        volume_encrypted=volume_left.encrypted if volume_left is not None else False,
        problems=tuple(problems[:20]))


def boot_id(proc_root: str = "/proc") -> str:
    try:
        with open(os.path.join(proc_root, "sys/kernel/random/boot_id")) as fh:
            return fh.read().strip()
    except OSError:
        return ""


def report_path(socket_path: str) -> str:
    """Where the starter listening on ``socket_path`` leaves its report."""
    base = socket_path[:-5] if socket_path.endswith(".sock") else socket_path
    return base + REPORT_SUFFIX


def write_report(path: str, report: CleanupReport) -> None:
    write_atomically(path, report.to_json() + "\n")


def take_report(path: str) -> CleanupReport | None:
    """Read and remove the report at ``path``; None when there is none (nothing was
    left behind). A report that cannot be read raises StarterError (and is removed:
    it would say the same next time)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 20)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StarterError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return CleanupReport.from_json(text, path)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
