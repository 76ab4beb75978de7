"""Events of local jobs written into each job's own user log, as its owner."""

from __future__ import annotations

import logging
import os
import pwd
from typing import Callable

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.queue.jobstore import JobStatus
from condorpy.starter.userlog import UserLog

log = logging.getLogger("condorpy.startd")


class JobLog:
    def __init__(self, uid: int, clock: Clock) -> None:
        self.uid = uid
        self.clock = clock

    def stopped(self, ad: ClassAd, status: JobStatus, reason: str, code: int,
                subcode: int = 0) -> None:
        """The queue removed or held the job."""
        if status is JobStatus.REMOVED:
            self.event(ad, lambda ul: ul.aborted(reason))
        elif status is JobStatus.HELD:
            self.event(ad, lambda ul: ul.held(reason, code, subcode))

    def released(self, ad: ClassAd, reason: str) -> None:
        self.event(ad, lambda ul: ul.released(reason))

    def submitted(self, ad: ClassAd, schedd: str) -> None:
        self.event(ad, lambda ul: ul.submitted(schedd))

    def event(self, ad: ClassAd, write: Callable[[UserLog], None]) -> None:
        """Write one event to the job's user log as its owner (never as root). A log
        that cannot be written (not a regular file: a FIFO would block this loop)
        loses the event, with one warning naming the file and the job."""
        path = ad.evaluate("UserLog")
        cluster, proc = ad.evaluate("ClusterId"), ad.evaluate("ProcId")
        if not isinstance(path, str) or not isinstance(cluster, int) or \
                not isinstance(proc, int):
            return
        uid = gid = None
        groups: tuple[int, ...] | None = None
        owner = ad.evaluate("Owner")
        if self.uid == 0:
            if not isinstance(owner, str):
                return          # root writes no log on nobody's behalf
            try:
                pw = pwd.getpwnam(owner)
                uid, gid = pw.pw_uid, pw.pw_gid
                groups = tuple(os.getgrouplist(owner, pw.pw_gid))
            except (KeyError, OSError):
                return
        try:
            ul = UserLog.open(path, cluster, proc, uid=uid, gid=gid, groups=groups,
                              wall=self.clock.time)
        except OSError as exc:
            log.warning("job %d.%d: cannot write its log %s: %s", cluster, proc, path,
                        exc.strerror)
            return
        try:
            write(ul)
        except OSError as exc:
            log.warning("job %d.%d: cannot write its log %s: %s", cluster, proc, path,
                        exc.strerror)
        finally:
            ul.close()
