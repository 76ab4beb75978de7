"""A job run for a pool's shadow, on the shadow's side of the conversation: this
daemon answers the shadow as HTCondor's starter would (:mod:`condorpy.pool.shadow`):
the job's ad, the starter's info, the input files, the go-ahead, the job's news and
its exit, the output files (transfer.py); the job itself runs under the daemon's own
starter (``JobHost.launch_pool_job``)."""

from __future__ import annotations

import logging
import selectors
from collections.abc import Callable, Generator
from typing import Any, Protocol

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.errors import CondorpyError
from condorpy.pool import filetransfer as ft
from condorpy.pool import shadow as wire
from condorpy.pool.connection import AsyncExchange
from condorpy.pool.security import Await, Op
from condorpy.pool.sinful import parse_address
from condorpy.queue.claim_rows import PoolClaimRows
from condorpy.slots.ads import CONDOR_VERSION
from condorpy.starter import reserved
from condorpy.starter.sandbox import PREPARED_SCRATCH_ATTR
from condorpy.startd.paths import StatePaths
from condorpy.startd.poolside import transfer
from condorpy.startd.poolside.claims import ClaimTable, PoolJob
from condorpy.startd.poolside.exchanges import EXCHANGE_TIMEOUT, Exchanges, unregister
from condorpy.startd.poolside.reconnect import Leases

log = logging.getLogger("condorpy.startd.pool")


class JobHost(Protocol):
    """What the daemon does for a job a shadow runs here."""

    paths: StatePaths

    @property
    def pool_rows(self) -> PoolClaimRows: ...


    def launch_pool_job(self, eid: str, slot: str, job_ad: ClassAd, number: int) -> None: ...

    def signal_pool_job(self, eid: str, command: str) -> None: ...

    def pool_command(self, command: str, args: dict[str, Any], user: str) -> Any: ...


def pool_job_ad(ad: ClassAd, eid: str, peer: str, what: str) -> ClassAd:
    """A pool's job ad without the attributes only condorpy sets (condorpy/starter/
    reserved.py): a schedd's user could otherwise steer this daemon's starter."""
    clean, dropped = reserved.strip_internal(ad)
    if dropped:
        log.warning("pool: claim %s, job %s.%s: dropped %s from %s of %s (only condorpy "
                    "sets them)", eid, ad.get("ClusterId"), ad.get("ProcId"),
                    ", ".join(dropped), what, peer)
    return clean


class ShadowSide:
    def __init__(self, table: ClaimTable, leases: Leases, inbound: Exchanges,
                 sel: selectors.BaseSelector, clock: Clock,
                 host_of: Callable[[], JobHost | None],
                 slot_ads: Callable[[], dict[str, ClassAd]],
                 upload_timeout: Callable[[], float] = lambda: 300.0) -> None:
        self.table = table
        self.leases = leases
        self.inbound = inbound
        self.sel = sel
        self.clock = clock
        self.host_of = host_of
        self.slot_ads = slot_ads
        self.upload_timeout = upload_timeout
        self.address = table.address
        self.transfers: dict[transfer.Transfer, PoolJob] = {}   # on their threads
        self.job_seq = 0
        self.stopping = False        # no output transfer now: the shadow hears at once

    def run(self, peer: str, job: PoolJob) -> Generator[Op, bytes | None, None]:
        """The activated job's conversation with its shadow, on the activation's
        connection."""
        ad = yield from wire.get_job_info(peer)
        job.ad = pool_job_ad(ad, job.eid, peer, "the shadow's job ad")
        self._scratch_for(job)
        yield from wire.register_starter_info(peer, self.starter_info(job))
        # the job's files (transfer.py): its input before it runs
        if job.files is not None:
            session = yield from wire.get_sec_session_info(peer)
            job.transfer_session = session[1]
            yield from self._input(job, session[1])
        if not job.ended:
            yield from wire.begin_execution(peer)
            job.peer = peer
            self._start(job)
        yield from self.loop(peer, job)

    def loop(self, peer: str, job: PoolJob) -> Generator[Op, bytes | None, None]:
        """The running job's news and its exit for its shadow; a shadow that reconnects
        (reconnect.py) picks the loop up on its new connection."""
        while True:
            while job.updates:
                update = ClassAd()
                for k, v in job.updates.pop(0).items():
                    update[k] = v
                yield from wire.register_job_info(peer, update)
            self.leases.contact(job)
            if job.ended:
                break
            yield Await(f"news of job {job.name}")
        if job.files is not None and job.transfer_session is not None:
            yield from self._output(job, job.transfer_session)
        status, reason, final = wire.exit_status(job.final or {}, job.killed, job.evicted)
        if reason == wire.JOB_SHOULD_HOLD:
            try:
                yield from wire.hold(peer, job.ad, str(final.get("HoldReason") or
                                                       "held by the starter"),
                                     _int(final.get("HoldReasonCode")),
                                     _int(final.get("HoldReasonSubCode")))
            except CondorpyError as exc:
                log.info("pool: telling the shadow of the hold: %s", exc)
        log.info("pool: job %s of %s ended: reason %d, status %d", job.name, job.eid,
                 reason, status)
        try:
            yield from wire.job_exit(peer, status, reason, final)
        except CondorpyError as exc:
            if self.table.awaits_shadow(job):
                raise     # the exit is kept until the shadow reconnects or the lease ends
            # the shadow may hang up once it has the exit: nothing is lost then
            log.info("pool: after job_exit: %s", exc)
        self.table.forget_row(job.eid)      # nothing of it needs to survive a restart
        job.tell_exit()
        self.table.job_done(job)

    def starter_info(self, job: PoolJob) -> ClassAd:
        slot_ad = self.slot_ads().get(job.slot or "", ClassAd())
        info = ClassAd()
        for attr in ("UidDomain", "FileSystemDomain", "Machine", "Arch", "OpSys", "Name"):
            if slot_ad.get(attr) is not None:
                info[attr] = slot_ad.get(attr)
        info["StarterIpAddr"] = self.address
        info["CondorVersion"] = CONDOR_VERSION
        info["HasReconnect"] = True     # reconnect.py
        host = self.host_of()
        if job.files is not None:
            info["CondorScratchDir"] = str(job.files.path)
        elif host is not None:
            info["CondorScratchDir"] = str(host.paths.execute)
        return info

    # ------------------------------------------------------------------ the daemon's news
    def job_ended(self, eid: str, final: dict[str, object] | None, evicted: bool,
                  told: Callable[[], None]) -> None:
        """The job's starter ended; ``told`` once its shadow has the exit (or never
        will): the slot stays Busy until then, as HTCondor's does while its starter
        waits for the shadow (a shadow that is slow to take the exit, its schedd
        stuck, keeps the claim as the job did)."""
        job = self.table.job(eid)
        if job is None or job.ended:
            told()
            return
        job.ended = True
        job.final = dict(final or {})
        # a starter that sent the job back itself (a container runtime failure, the
        # node out of memory) names a VacateReason: an eviction, whose outputs stay
        job.evicted = evicted or "VacateReason" in job.final
        job.on_told = told
        self.leases.job_ended(job)
        if job.exchange not in self.inbound and not self.table.awaits_shadow(job):
            # its shadow is gone for good: nobody takes the exit or the outputs
            if job.files is not None:
                transfer.remove_scratch(job.files.path)
            job.tell_exit()
            return
        # the shadow's answers to the exit (and the hold) may wait for its schedd
        self.inbound.wake(job.exchange, self.upload_timeout())

    def job_update(self, eid: str, attrs: dict[str, object]) -> None:
        job = self.table.job(eid)
        if job is None or job.ended:
            return
        job.updates.append(dict(attrs))
        self.inbound.wake(job.exchange)

    def kill(self, eid: str, hard: bool) -> None:
        host = self.host_of()
        if host is not None:
            host.signal_pool_job(eid, "hard_kill" if hard else "soft_kill")

    def connection_closed(self, ex: AsyncExchange) -> None:
        """An inbound connection closed: the jobs it carried wait for their shadow to
        reconnect, or are killed (their shadow is gone and they must not run on
        unseen)."""
        jobs = [job for job in self.table.jobs() if job.exchange is ex]
        waits = any([self.leases.shadow_lost(job) for job in jobs])   # every job
        if ex.error is not None:
            # a shadow that went away from a job it can come back to is no error
            (log.info if waits else log.error)("pool: %s", ex.error)
        for job in jobs:
            if job.exchange is ex and not job.ended:
                log.warning("pool: the shadow of %s went away; killing the job", job.eid)
                job.killed = True
                self.kill(job.eid, hard=True)
            elif job.exchange is ex:
                job.tell_exit()      # an ended job's exit nobody will come for

    def _start(self, job: PoolJob) -> None:
        host = self.host_of()
        if host is None or job.slot is None:
            job.ended, job.final = True, {"HoldReason": "no slot", "HoldReasonCode": 6}
            return
        self.job_seq += 1
        self.leases.persist(job, self.job_seq)   # before the job can start
        try:
            host.launch_pool_job(job.eid, job.slot, job.ad, -self.job_seq)
        except CondorpyError as exc:
            log.error("pool: cannot start the job of %s: %s", job.eid, exc)
            job.ended = True
            job.final = {"HoldReason": str(exc), "HoldReasonCode": 6}

    # ------------------------------------------------------------------ job files
    def _scratch_for(self, job: PoolJob) -> None:
        """A scratch directory for a job whose files travel (transfer.py)."""
        slot_ad = self.slot_ads().get(job.slot or "", ClassAd())
        domain = slot_ad.get("FileSystemDomain")
        host = self.host_of()
        if host is None or not transfer.wants_transfer(
                job.ad, domain if isinstance(domain, str) else ""):
            return None
        self.job_seq += 1
        job.files = transfer.new_scratch(job.ad, host.paths.execute, self.job_seq)

    def _transfer(self, job: PoolJob, t: transfer.Transfer
                  ) -> Generator[Op, bytes | None, ft.Failure | None]:
        """Run one transfer on its thread; the shadow's exchange waits meanwhile."""
        log.info("pool: %s of %s with %s", t.label, job.eid, t.addr.hostport())
        t.start()
        self.transfers[t] = job
        self.sel.register(t.fileno(), selectors.EVENT_READ, ("pool", t))
        while not t.done:
            yield Await(f"the {t.label} of job {job.eid}")
        failure = t.failure()
        out = t.outcome
        log.info("pool: %s of %s: %s", t.label, job.eid,
                 f"failed: {failure.reason}" if failure is not None else
                 f"{len(out.files) if out else 0} file(s), {len(out.dirs) if out else 0} "
                 f"director(ies), {out.bytes if out else 0} bytes")
        return failure

    def transfer_done(self, t: transfer.Transfer) -> None:
        """A transfer's thread has signalled its end."""
        if not t.collect():
            return
        unregister(self.sel, t.fileno())
        job = self.transfers.pop(t, None)
        if job is None:
            return
        if job.exchange in self.inbound:
            # after the output transfer comes the exit, whose answer may be slow
            self.inbound.wake(job.exchange, self.upload_timeout() if job.ended else
                              EXCHANGE_TIMEOUT)
        elif job.files is not None and not self.table.awaits_shadow(job):
            transfer.remove_scratch(job.files.path)    # its shadow went away

    def _input(self, job: PoolJob, session: wire.SessionInfo
               ) -> Generator[Op, bytes | None, None]:
        assert job.files is not None
        try:
            t = transfer.input_transfer(job.ad, session, job.files, CONDOR_VERSION)
        except (CondorpyError, OSError) as exc:
            failure: ft.Failure | None = ft.Failure(str(exc), ft.DOWNLOAD_FILE_ERROR)
        else:
            failure = yield from self._transfer(job, t)
        if failure is None:
            job.files.catalog = transfer.catalog(job.files.path)
            job.ad = transfer.job_ad_in_scratch(job.ad, job.files.path)
            return
        job.ended = True
        job.evicted = failure.try_again
        job.final = {} if failure.try_again else {
            "HoldReason": f"Failed to transfer files: {failure.reason}",
            "HoldReasonCode": failure.code, "HoldReasonSubCode": failure.subcode}

    def _output(self, job: PoolJob, session: wire.SessionInfo
                ) -> Generator[Op, bytes | None, None]:
        """The outputs go back when the job ended by itself, or, for
        ``when_to_transfer_output = ON_EXIT_OR_EVICT``, when this execution point
        evicted it (into the shadow's spool: the next run gets them back as input),
        as ``JICShadow::transferOutput`` does; a job its shadow stopped sends none."""
        assert job.files is not None
        keep = False     # the outputs wait for a shadow that may reconnect (reconnect.py)
        try:
            started = job.final is not None and job.ad.lookup(
                PREPARED_SCRATCH_ATTR) is not None
            final = not job.evicted
            when = job.ad.evaluate("WhenToTransferOutput")
            at_evict = isinstance(when, str) and when.upper() == "ON_EXIT_OR_EVICT"
            if self.stopping and self.table.awaits_shadow(job):
                keep = True
                return
            if not started or job.killed or self.stopping or (job.evicted and not at_evict):
                return
            if job.evicted and job.ad.evaluate("SpoolOnEvict") is False:
                final = True
            refusal = transfer.url_refusal(job.ad)
            failure = None
            t: transfer.Transfer | None = None
            if refusal is None:
                try:
                    t = transfer.output_transfer(job.ad, session, job.files, final,
                                                 CONDOR_VERSION)
                except (CondorpyError, OSError) as exc:
                    refusal = str(exc)
            if t is not None:
                failure = yield from self._transfer(job, t)
                if failure is None and not final and t.outcome is not None:
                    # what the shadow spooled comes back as input and goes to the
                    # submitter at the final transfer (SpooledOutputFiles)
                    job.final = dict(job.final or {})
                    job.final["SpooledOutputFiles"] = transfer.spooled(t.outcome)
                where = f"STARTER at {parse_address(self.address).host} failed to send " \
                    f"file(s) to {t.addr.sinful()}: "
            else:
                failure = ft.Failure(refusal or "no output transfer", ft.UPLOAD_FILE_ERROR)
                where = ""
            if failure is not None and "HoldReasonCode" not in (job.final or {}):
                if failure.try_again:
                    job.evicted = True
                else:
                    job.final = dict(job.final or {})
                    job.final.update({
                        # ExitDoUpload's words
                        "HoldReason": f"{where}{failure.reason}",
                        "HoldReasonCode": failure.code,
                        "HoldReasonSubCode": failure.subcode})
        except GeneratorExit:
            # the shadow's connection closed mid-transfer (or the daemon stops)
            keep = self.table.awaits_shadow(job)
            raise
        finally:
            if not keep:
                transfer.remove_scratch(job.files.path)


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0
