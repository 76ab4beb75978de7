"""Which account a job runs as.

As root: the job's Owner when STARTER_ALLOW_RUNAS_OWNER allows it and the account
exists, else SLOT<N>_USER, else ``nobody``; root itself only when configured.
Unprivileged: the starter's own account, whatever the ad says.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.jobspec import JobIdentity, JobSpec, SlotSpec
from condorpy.starter.settings import StarterSettings


@dataclass(frozen=True)
class JobUser:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    switch: bool          # False when the starter is unprivileged and stays who it is


def _lookup(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _groups(entry: pwd.struct_passwd) -> tuple[int, ...]:
    try:
        return tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except OSError:
        return (entry.pw_gid,)


def choose_user(job: JobSpec | JobIdentity, slot: SlotSpec, settings: StarterSettings,
                *, euid: int | None = None) -> JobUser:
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        me = pwd.getpwuid(euid)
        return JobUser(me.pw_name, euid, os.getegid(), tuple(os.getgroups()), False)
    candidates: list[str] = []
    if settings.allow_runas_owner and job.owner:
        candidates.append(job.owner)
    slot_user = settings.slot_users.get(slot.slot_id)
    if slot_user:
        candidates.append(slot_user)
    candidates.append(settings.nobody_user)
    for name in candidates:
        entry = _lookup(name)
        if entry is None:
            continue
        if entry.pw_uid == 0 and not settings.allow_root_jobs:
            continue
        return JobUser(entry.pw_name, entry.pw_uid, entry.pw_gid, _groups(entry), True)
    raise JobHold(f"no account to run the job as (tried {', '.join(candidates)})",
                  HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT, job=job.job_id)


# Set by the daemon on its local queue's jobs only (it is the job's schedd and shadow):
# the account that submitted the job, taken from the control socket's peer
# credentials. Its rights, not the daemon's nor the job's, write the job's user log and
# the outputs brought back to its Iwd, as HTCondor's schedd and shadow write as the
# job's Owner. A submitter cannot set it (condorpy/starter/reserved.py).
SUBMITTER_ATTR = "CondorpySubmitter"


def submitter(name: object, *, euid: int | None = None) -> JobUser | None:
    """The local job's submitter, or None for a job that has none here (a pool job, a
    fetched one, ``condorpy starter`` run by hand). Unprivileged, the starter's own
    account, which is the only one it can act as."""
    if not isinstance(name, str) or not name:
        return None
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        me = pwd.getpwuid(euid)
        return JobUser(me.pw_name, euid, os.getegid(), tuple(os.getgroups()), False)
    entry = _lookup(name)
    if entry is None:
        raise JobHold(f"the job's submitter {name} has no account here",
                      HoldCode.FAILED_TO_ACCESS_USER_ACCOUNT)
    return JobUser(entry.pw_name, entry.pw_uid, entry.pw_gid, _groups(entry), True)
