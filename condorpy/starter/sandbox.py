"""The job's scratch directory ``EXECUTE/dir_<pid>``: made, handed to the job's user,
measured and removed."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from condorpy.errors import StarterError
from condorpy.starter.users import JobUser

JOB_AD_FILE = ".job.ad"
MACHINE_AD_FILE = ".machine.ad"
# the job ad attribute naming a scratch directory made for the job beforehand
PREPARED_SCRATCH_ATTR = "CondorpyPreparedScratch"


@dataclass(frozen=True)
class Sandbox:
    path: str
    # made and removed by someone else (the daemon, around a pool job's file transfer)
    prepared: bool = False

    @property
    def job_ad(self) -> str:
        return os.path.join(self.path, JOB_AD_FILE)

    @property
    def machine_ad(self) -> str:
        return os.path.join(self.path, MACHINE_AD_FILE)


def create_sandbox(execute: str, user: JobUser, *, job_ad_text: str,
                   machine_ad_text: str, tag: str | None = None) -> Sandbox:
    if not os.path.isdir(execute):
        raise StarterError(f"execute directory {execute} does not exist")
    path = os.path.join(execute, f"dir_{os.getpid() if tag is None else tag}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        raise StarterError(f"sandbox {path} already exists (left by another starter?)") from None
    except OSError as exc:
        raise StarterError(f"cannot create sandbox {path}: {exc.strerror}") from None
    box = Sandbox(path)
    for file, text in ((box.job_ad, job_ad_text), (box.machine_ad, machine_ad_text)):
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
    if user.switch:
        for file in (path, box.job_ad, box.machine_ad):
            os.chown(file, user.uid, user.gid, follow_symlinks=False)
    os.chmod(path, 0o700)
    return box


def adopt_sandbox(path: str, execute: str, user: JobUser, *, job_ad_text: str,
                  machine_ad_text: str) -> Sandbox:
    """A scratch directory the daemon made and filled (a pool job's input files),
    handed to the job's user whole; the daemon sends the outputs and removes it."""
    real, base = os.path.realpath(path), os.path.realpath(execute)
    if os.path.dirname(real) != base or not os.path.isdir(real) or os.path.islink(path):
        raise StarterError(f"scratch directory {path} is not a directory in {execute}")
    box = Sandbox(real, prepared=True)
    for file, text in ((box.job_ad, job_ad_text), (box.machine_ad, machine_ad_text)):
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
    if user.switch:
        for root, dirs, files in os.walk(real, followlinks=False):
            os.chown(root, user.uid, user.gid, follow_symlinks=False)
            for name in files + dirs:
                os.chown(os.path.join(root, name), user.uid, user.gid,
                         follow_symlinks=False)
    os.chmod(real, 0o700)
    return box


def disk_usage_kb(path: str) -> int:
    """Allocated KiB below path, not following symlinks (a job can plant them)."""
    total = 0
    for root, dirs, files in os.walk(path, followlinks=False):
        for name in dirs + files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += st.st_blocks * 512
    return (total + 1023) // 1024


def remove_sandbox(box: Sandbox) -> None:
    # A job may have left directories without write or search permission for root's
    # rmtree to walk; make them traversable first. Never follows symlinks.
    def fix(func: object, path: str, exc: object) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass
    if os.path.isdir(box.path):
        shutil.rmtree(box.path, onerror=fix)
