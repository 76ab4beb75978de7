"""The daemon's commands: what ``condorpy q``, ``rm``, ``drain``... and the pool's own
tools (through :mod:`condorpy.startd.poolside`) ask of it.

Every handler is named for its command in :data:`condorpy.startd.control.COMMANDS` and
answers through the daemon's engine, job store and job lifecycle, so the local CLI and
the pool's tools take one road. Authorisation happens before dispatch (the control
socket by peer credentials, the command port by its ALLOW lists); what is left here is
the per-job ownership check of :meth:`Commands._select`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from condorpy.classad import ClassAd, Expr, Undefined
from condorpy.classad.formats import parse_old, parse_old_nonempty
from condorpy.clock import Clock
from condorpy.config import Config
from condorpy.errors import ClassAdError, QueueError, RequestError
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import DrainRefused, DrainStarted, Output
from condorpy.queue.matchmaker import LocalSchedd
from condorpy.queue.edit import EditRules, check_edit
from condorpy.queue.submit_checks import costly_expression
from condorpy.queue.limits import QueueLimits
from condorpy.queue.projection import project, projected_chunks
from condorpy.startd import control, job_tail
from condorpy.queue.jobstore import JobId, JobRecord, JobStatus, JobStore, parse_constraint
from condorpy.queue.records import Differ, ad_text, record_of
from condorpy.queue.staging import SUBMIT_PART_TIMEOUT, OpenSubmissions
from condorpy.queue.submit_parts import PART_LINES, part_lines
from condorpy.startd.job_log import JobLog
from condorpy.startd.reconfig_report import ReconfigReport
from condorpy.startd.starter_handle import StarterHandle
from condorpy.starter import reserved

log = logging.getLogger("condorpy.startd")

# How `condorpy restart` treats running jobs: keep them running (the new daemon
# re-adopts them), or end them first as `condorpy off -graceful/-fast/-peaceful` does.
RESTART_HOW = ("keep", "graceful", "fast", "peaceful")


class Handles(Protocol):
    """The starter handles, as the commands show them."""

    def of_claim(self, claim_id: str) -> StarterHandle | None: ...

    def job(self, job_id: JobId) -> StarterHandle | None: ...

    def __len__(self) -> int: ...


@dataclass
class CommandPorts:
    """Everything the control commands use, and nothing more."""

    engine: PolicyEngine
    store: JobStore
    schedd: LocalSchedd
    handles: Handles
    clock: Clock
    job_log: JobLog
    config: Callable[[], Config]                 # the daemon's configuration now
    apply: Callable[[list[Output]], None]        # carry out the engine's outputs
    reconfig: Callable[[], ReconfigReport]
    cycle_times: Callable[[], list[float]]
    metrics_bound: Callable[[], tuple[str, int] | None]
    socket: Path
    log_dir: Path
    uid: int
    started_at: float
    # ``condorpy restart``: check that a new daemon would start, then restart in place
    # once the jobs are settled as ``how`` says (see Startd.restart); None: not offered
    restart: Callable[[str], None] | None = None

    def schedd_name(self) -> str:
        return f"condorpy@{self.engine.hostname}"


class Commands:
    def __init__(self, ports: CommandPorts) -> None:
        self.d = ports
        # parts of submissions staged before this start never get their last part
        if not ports.store.readonly:
            ports.store.staged.clear()
        # submissions in parts under way, each tied to its connection: the daemon
        # wires ``closed`` to the control socket and ``tick`` to the loop
        self.submissions = OpenSubmissions(ports.store.staged, lambda: ports.config(
        ).get_float("CONDORPY_SUBMIT_PART_TIMEOUT", SUBMIT_PART_TIMEOUT))

    def dispatch(self, command: str, args: dict[str, Any], peer: control.Peer) -> Any:
        if command not in control.COMMANDS:
            raise RequestError(f"unknown command {command!r}")
        handler: Callable[[dict[str, Any], control.Peer], Any] = getattr(self, command)
        return handler(args, peer)

    def _admin(self, peer: control.Peer) -> bool:
        return control.is_admin(peer, self.d.uid, self.d.config().get("CONDORPY_ADMIN_GROUP"))

    # Read-only commands ------------------------------------------------------
    def ping(self, args: dict[str, Any], peer: control.Peer) -> Any:
        files = self.d.config().files
        return {"pid": os.getpid(), "since": self.d.started_at, "user": peer.user,
                # which configuration this daemon runs from: a client that names one
                # makes sure it reached the daemon of that file (paths.client_socket)
                "config": os.path.realpath(files[0])
                if files and os.path.isfile(files[0]) else None,
                "slots": len(self.d.engine.slots), "running": len(self.d.handles),
                "cycle_seconds": list(self.d.cycle_times()), "metrics": self.d.metrics_bound()}

    # q, history and status stream their ads (control.Streamed): each ad is turned into
    # text only as the reply is written, and the loop serves others in between.
    def q(self, args: dict[str, Any], peer: control.Peer) -> Any:
        # a chunk of the queue at a time, the loop's turn given back between chunks:
        # a long queue is never held whole, and others are answered meanwhile
        head = {"schedd": self.d.schedd_name(), "address": str(self.d.socket),
                "now": self.d.clock.time()}
        # each ad as stored, or only the names the client reads cut from its text:
        # no ad is parsed that the constraint does not need (queue.projection)
        texts = projected_chunks(self.d.store.row_chunks(), args.get("projection") or None,
                                 parse_constraint(args.get("constraint")),
                                 path=self.d.store.path, limit=args.get("limit"),
                                 clock=self.d.clock.time)
        return control.Streamed(head, "ads", _paused_texts(texts))

    def history(self, args: dict[str, Any], peer: control.Peer) -> Any:
        # newest first, read only as far as the limit needs (history -limit N), each
        # ad turned into text only as the reply is written
        chunks = self.d.store.history.chunks(parse_constraint(args.get("constraint")),
                                             limit=args.get("limit"))
        return control.Streamed({}, "ads", _paused(chunks, _ad_text(args)))

    def status(self, args: dict[str, Any], peer: control.Peer) -> Any:
        return control.Streamed({"now": self.d.clock.time()}, "ads",
                                (ad.to_old() for ad in self.d.engine.ads()))

    def who(self, args: dict[str, Any], peer: control.Peer) -> Any:
        ads = []
        dirs: dict[str, str] = {}
        for ad in self.d.engine.ads():
            cid = ad.evaluate("ClaimId")
            rj = self.d.handles.of_claim(cid) if isinstance(cid, str) else None
            if rj is not None:
                # the slot publishes the job's id (pool jobs' too); a claim being
                # activated may not have it yet
                job_id = ad.evaluate("JobId")
                if not isinstance(job_id, str):
                    job_id = rj.name
                    ad["JobId"] = job_id
                if rj.launched is not None:
                    ad["StarterPid"] = rj.launched.pid
                if rj.job_pid is not None:
                    ad["JobPid"] = rj.job_pid
                where = _job_dir(rj)
                if where is not None:
                    dirs[job_id] = where
                rec = self.d.store.job(rj.job_id) if rj.job_id is not None else None
                if rec is not None:
                    ad["JobCmd"] = rec.ad.evaluate("Cmd")
            ads.append(ad.to_old())
        return {"now": self.d.clock.time(), "name": self.d.schedd_name(), "pid": os.getpid(),
                "log": str(self.d.log_dir), "ads": ads, "job_dirs": dirs}

    def config_val(self, args: dict[str, Any], peer: control.Peer) -> Any:
        out = {}
        for name in args.get("names", []):
            where = self.d.config().where(str(name))
            out[str(name)] = {"value": self.d.config().get(str(name)),
                              "where": f"{where[0]}:{where[1]}" if where else None}
        return out

    # Jobs --------------------------------------------------------------------
    def new_cluster(self, args: dict[str, Any], peer: control.Peer) -> Any:
        # reserved for this peer: only its uid may submit into it (see submit)
        why = QueueLimits.from_config(self.d.config()).new_cluster_refusal(
            sum(self.d.store.counts().values()))
        if why is not None:
            raise RequestError(why)
        return self.d.store.new_cluster_id(owner_uid=peer.uid)

    def submit(self, args: dict[str, Any], peer: control.Peer) -> Any:
        if args.get("abort") is True and isinstance(args.get("cluster"), int):
            # the client gave up part-way: what it staged goes (its own cluster only)
            try:
                self.d.store.stage(args["cluster"], (), owner_uid=peer.uid)
            except QueueError as exc:
                raise RequestError(str(exc.message)) from None
            self.d.store.staged.clear(args["cluster"])
            self.submissions.ended(args["cluster"])
            return {"cluster": args["cluster"], "staged": 0}
        if "common" in args:
            return self._submit_part(args, peer)
        texts = args.get("ads")
        if not isinstance(texts, list) or not texts or \
                not all(isinstance(t, str) for t in texts):
            raise RequestError("'ads' must be a non-empty list of job ads")
        _parse_bounded(texts)
        cluster = args.get("cluster")       # an integer or null (control.ARGS)
        now = int(self.d.clock.time())
        ads = []
        for i, text in enumerate(texts):
            try:
                ad = parse_old_nonempty(text, f"submitted job ad {i}")
            except ClassAdError as exc:
                raise RequestError(str(exc)) from None
            ads.append(self._admitted(ad, i, peer, now))
        self._within_limits(peer, len(ads), whole=True)
        for ad in ads:
            ad["TotalSubmitProcs"] = len(ads)
        self._not_costly(ads, peer)
        try:
            cluster_id = self.d.store.submit(ads, cluster, owner_uid=peer.uid)
        except QueueError as exc:
            raise RequestError(f"submission by {peer.user} refused: {exc.message}") from None
        return self._queued(cluster_id, len(ads), peer)

    def _submit_part(self, args: dict[str, Any], peer: control.Peer) -> Any:
        """A part of a submission sent in parts (condorpy submit's way): the cluster's
        common ad, each job's differences from it, the index of the first, the
        submission's total, and whether more parts follow. Parts are staged
        (:mod:`condorpy.queue.staging`) and the last queues them all in one
        transaction; a part refused drops what was staged, so nothing is queued."""
        cluster, common, procs = args.get("cluster"), args.get("common"), args.get("procs")
        first, total, more = args.get("first", 0), args.get("total"), args.get("more")
        if not isinstance(cluster, int) or not isinstance(common, str) or \
                not isinstance(procs, list) or not all(isinstance(p, str) for p in procs) \
                or not isinstance(first, int) or not isinstance(total, int) or \
                not isinstance(more, bool) or total < 1:
            raise RequestError("a submission part needs 'cluster', 'common', 'procs' "
                               "(strings), 'first', 'total' and 'more'")
        unset = args.get("unset") or {}
        if not isinstance(unset, dict):
            raise RequestError("'unset' must map job indexes to attribute names")
        _parse_bounded(procs)
        store = self.d.store
        if first == 0:
            try:      # the cluster's own client's only: then what it had staged goes
                store.stage(cluster, (), owner_uid=peer.uid)
            except QueueError as exc:
                raise RequestError(f"submission by {peer.user} refused: "
                                   f"{exc.message}") from None
            self.submissions.began(cluster, peer, f"{peer.user} (pid {peer.pid})",
                                   self.d.clock.monotonic())
        else:
            # its earlier parts came on this connection and are still staged
            why = self.submissions.part(cluster, peer, self.d.clock.monotonic())
            if why is not None:
                raise RequestError(why)
        try:
            if first == 0:
                store.staged.clear(cluster)
                self._within_limits(peer, total, whole=True)
            self._within_limits(peer, first + len(procs), whole=False)
            base = parse_old_nonempty(common, "the submission's common ad")
            now = int(self.d.clock.time())
            rows = []
            admitted: list[ClassAd] = []
            like: tuple[Differ, str] | None = None
            for k, text in enumerate(procs):
                i = first + k
                ad = base.copy()
                ad.update(parse_old(text, f"submitted job ad {i}"))
                for name in unset.get(str(k), ()):
                    if isinstance(name, str) and name in ad:
                        del ad[name]
                ad = self._admitted(ad, i, peer, now)
                ad["TotalSubmitProcs"] = total
                admitted.append(ad)
                if like is None:
                    # the part's first job, as stored, is what the others' rows repeat
                    first_ad = store.prepared(ad, cluster, i, now)
                    first_text = ad_text(first_ad)
                    if "\\" not in first_text:
                        like = (Differ(first_ad), first_text)
                rows.append(store.row_of(ad, cluster, i, now, like))
            self._not_costly(admitted, peer)
            staged = store.stage(cluster, rows, owner_uid=peer.uid)
            if more:
                return {"cluster": cluster, "staged": staged}
            if staged != total:
                raise RequestError(f"{staged} job(s) arrived of the {total} announced; "
                                   "nothing was submitted")
            self._within_limits(peer, total, whole=True)
            count = store.submit_staged(cluster, owner_uid=peer.uid)
        except ClassAdError as exc:
            self._drop_staged(cluster)
            raise RequestError(str(exc)) from None
        except QueueError as exc:
            self._drop_staged(cluster)
            raise RequestError(f"submission by {peer.user} refused: {exc.message}") from None
        except RequestError:
            self._drop_staged(cluster)
            raise
        self.submissions.ended(cluster)
        return self._queued(cluster, count, peer)

    def _drop_staged(self, cluster: int) -> None:
        self.submissions.ended(cluster)
        self.d.store.staged.clear(cluster)

    def _not_costly(self, ads: list[ClassAd], peer: control.Peer) -> None:
        """Refuse the ads whose expressions cannot be evaluated within their budget
        (submit_checks.costly_expression); a submission in parts, part by part."""
        costly = costly_expression(ads, next((s.ad for s in self.d.engine.slots.values()),
                                             None),
                                   self.d.engine.settings.eval_step_limit,
                                   self.d.clock.monotonic)
        if costly is not None:
            log.warning("submission by %s (uid %d) refused: %s", peer.user, peer.uid, costly)
            raise RequestError(f"{costly}; nothing was submitted")

    def _admitted(self, ad: ClassAd, i: int, peer: control.Peer, now: int) -> ClassAd:
        """A submitted job ad as the queue takes it, or the reason it is refused."""
        source = f"submitted job ad {i}"
        user = peer.user        # whoever is on the other end of the socket, never the ad
        universe = ad.evaluate("JobUniverse")
        if universe not in (5, Undefined):
            raise RequestError(f"job ad {i}: only the vanilla universe (5) runs here, "
                               f"not {universe}")
        refusal = reserved.submission_refusal(ad)
        if refusal is not None:
            attr, why = refusal
            log.warning("submission by %s (uid %d) refused: %s sets %s",
                        user, peer.uid, source, attr)
            raise RequestError(f"{source} sets {attr}: {why}; nothing was submitted")
        said = ad.evaluate("Owner")
        if isinstance(said, str) and said != user:
            # HTCondor refuses such an Owner (qmgmt.cpp SetAttribute); condorpy's
            # client takes the name from the environment ($USER), so it is replaced.
            log.warning("%s from %s (uid %d) names Owner %r: the job is %s's",
                        source, user, peer.uid, said, user)
        full_user = f"{user}@{self.d.config().get('UID_DOMAIN') or self.d.engine.hostname}"
        return reserved.admit_submitted(ad, owner=user, user=full_user, now=now)

    def _within_limits(self, peer: control.Peer, adding: int, *, whole: bool) -> None:
        """MAX_JOBS_PER_SUBMISSION (and, for a ``whole`` submission, the queue's and the
        owner's limits) as the schedd checks them, refused in condor_submit's words."""
        limits = QueueLimits.from_config(self.d.config())
        if whole:
            queued = sum(self.d.store.counts().values())
            why = limits.proc_refusal(queued=queued, owners=self.d.store.queued_by(peer.user),
                                      adding=adding)
        else:
            why = limits.proc_refusal(queued=0, owners=0, adding=adding)
        if why is not None:
            log.warning("submission by %s (uid %d) refused: %s", peer.user, peer.uid,
                        why.splitlines()[-1])
            raise RequestError(f"{why}; nothing was submitted")

    def _queued(self, cluster_id: int, count: int, peer: control.Peer) -> Any:
        log.info("%d job(s) submitted to cluster %d by %s", count, cluster_id, peer.user)
        for row in self.d.store.cluster_rows(cluster_id):
            # an ad is read only when it has a user log to write or a priority: the
            # rest of a large cluster goes to the matchmaker by id alone
            lower = row[4].lower()
            if "userlog" in lower or "jobprio" in lower or row[2] != JobStatus.IDLE:
                rec = record_of(row, self.d.store.path)
                self.d.job_log.submitted(rec.ad, self.d.schedd_name())
                self.d.schedd.submitted((rec,))
            else:
                self.d.schedd.queued_row(row)
        return {"cluster": cluster_id, "count": count}

    def _select(self, args: dict[str, Any], peer: control.Peer) -> list[JobRecord]:
        """The jobs a rm, hold or release acts on. Jobs named by id or owner must all be
        the caller's (or the caller an admin); a constraint (``-all`` is ``true``) from
        a non-admin means the caller's own jobs that match, as the schedd ANDs the
        owner into it (schedd.cpp actOnJobs: a job that fails OwnerCheck is passed
        over), so another user's job matching is not a reason to do nothing."""
        ids = {str(x) for x in args.get("ids", [])}
        owners = {str(x) for x in args.get("owners", [])}
        constraint = args.get("constraint")
        named = bool(ids or owners)
        admin = self._admin(peer)
        chosen = []
        for rec in self.d.store.jobs(constraint if isinstance(constraint, str) else None):
            jid = rec.job_id
            if named:
                if str(jid) not in ids and str(jid.cluster) not in ids and \
                        rec.ad.evaluate("Owner") not in owners:
                    continue
            elif constraint is None:
                continue
            if not admin and rec.ad.evaluate("Owner") != peer.user:
                if not named:
                    continue
                raise RequestError(f"job {jid} belongs to {rec.ad.evaluate('Owner')}, not "
                                   f"{peer.user}: permission denied")
            chosen.append(rec)
        return chosen

    def rm(self, args: dict[str, Any], peer: control.Peer) -> Any:
        done = []
        for rec in self._select(args, peer):
            if rec.status in (JobStatus.COMPLETED, JobStatus.REMOVED):
                # finished, and kept in the queue by LeaveJobInQueue: rm lets it go
                self.d.store.to_history(rec.job_id)
                done.append(str(rec.job_id))
                continue
            reason = str(args.get("reason") or f"via condorpy rm (by user {peer.user})")
            self.d.schedd.stop_job(rec, JobStatus.REMOVED, reason, 0)
            done.append(str(rec.job_id))
        return done

    def hold(self, args: dict[str, Any], peer: control.Peer) -> Any:
        done = []
        for rec in self._select(args, peer):
            if rec.status in (JobStatus.HELD, JobStatus.COMPLETED, JobStatus.REMOVED):
                continue
            reason = str(args.get("reason") or f"via condorpy hold (by user {peer.user})")
            self.d.schedd.stop_job(rec, JobStatus.HELD, reason, 1)
            done.append(str(rec.job_id))
        return done

    def release(self, args: dict[str, Any], peer: control.Peer) -> Any:
        done = []
        for rec in self._select(args, peer):
            if rec.status is not JobStatus.HELD:
                continue
            reason = str(args.get("reason") or f"via condorpy release (by user {peer.user})")
            self.d.schedd.release(rec, reason)
            done.append(str(rec.job_id))
        self.d.schedd.wake()
        return done

    def qedit(self, args: dict[str, Any], peer: control.Peer) -> Any:
        """condor_qedit: set attributes of the jobs named, all or none, as the schedd's
        SetAttribute allows (:mod:`condorpy.queue.edit`)."""
        attrs, values = args.get("attrs", []), args.get("values", [])
        if not attrs or len(attrs) != len(values):
            raise RequestError("'attrs' and 'values' must name the same, non-zero "
                               "number of edits")
        admin = self._admin(peer)
        rules = EditRules.from_knobs(self.d.config().get)
        edits = [check_edit(rules, str(a), str(v), superuser=admin)
                 for a, v in zip(attrs, values)]
        chosen = self._edit_targets(args, peer, admin)
        if args.get("dry_run"):
            return {"count": len(chosen), "jobs": [str(r.job_id) for r in chosen]}
        self.d.store.update_many({rec.job_id: {e.attr: e.value for e in edits}
                                  for rec in chosen})
        for rec in chosen:
            now = self.d.store.job(rec.job_id)
            if now is not None and now.status is JobStatus.IDLE:
                self.d.schedd.job_back(now)      # the next match sees the new ad
        log.info("qedit by %s: %s on job(s) %s", peer.user,
                 ", ".join(f"{e.attr} = {e.text}" for e in edits),
                 " ".join(str(r.job_id) for r in chosen))
        return {"count": len(chosen), "jobs": [str(r.job_id) for r in chosen]}

    def _edit_targets(self, args: dict[str, Any], peer: control.Peer,
                      admin: bool) -> list[JobRecord]:
        """The jobs a qedit names: by id (a cluster or cluster.proc), by owner, and by
        constraint, all that are given ANDed (condor_qedit's restriction list). A job
        named by id or owner that is not the caller's refuses the whole edit; by a
        constraint alone, a non-superuser's edit reaches their own jobs only."""
        ids = {str(x) for x in args.get("ids", [])}
        owners = {str(x) for x in args.get("owners", [])}
        constraint = args.get("constraint")
        if not ids and not owners and not isinstance(constraint, str):
            raise RequestError("name the jobs to edit (an id, an owner or a "
                               "constraint)")
        for one in ids:
            cluster, dot, proc = one.partition(".")
            if not cluster.isdigit() or (dot and not proc.isdigit()):
                raise RequestError(f"{one!r} is not a job id")
            if dot and self.d.store.job(JobId(int(cluster), int(proc))) is None:
                raise RequestError(f"Modifying attribute in nonexistent job {one}")
        chosen = []
        for rec in self.d.store.jobs(constraint if isinstance(constraint, str) else None):
            jid = rec.job_id
            if ids and str(jid) not in ids and str(jid.cluster) not in ids:
                continue
            owner = rec.ad.evaluate("Owner")
            if owners and owner not in owners:
                continue
            if not admin and owner != peer.user:
                if not ids and not owners:
                    continue
                raise RequestError(f"User {peer.user} may not change attributes for jobs "
                                   f"they do not own (job {jid})")
            chosen.append(rec)
        if not chosen:
            raise RequestError("no matching jobs found")
        return chosen

    def tail(self, args: dict[str, Any], peer: control.Peer) -> Any:
        """condor_tail: bytes of a running job's stdout (or stderr), for its owner or
        root only. The file is reached through the job's own descriptor, never a path
        (:mod:`condorpy.startd.job_tail`)."""
        text = str(args.get("id", ""))
        cluster, dot, proc = text.partition(".")
        if not cluster.isdigit() or (dot and not proc.isdigit()):
            raise RequestError(f"Invalid Job ID: {text}")
        jid = JobId(int(cluster), int(proc) if dot else 0)
        rec = self.d.store.job(jid)
        if rec is None:
            raise RequestError(f"No such job: {jid}")
        if peer.uid != 0 and rec.ad.evaluate("Owner") != peer.user:
            raise RequestError(f"{peer.user} is not authorized for access to the starter "
                               f"for job {jid}")
        rj = self.d.handles.job(jid)
        # a job retiring or being vacated still runs and writes: it is tailed too
        if rj is None or rj.launched is None or rj.job_pid is None:
            raise RequestError(f"Job {jid} is not running.")
        offset = args.get("offset")
        maxbytes = args.get("maxbytes") or job_tail.DEFAULT_MAXBYTES
        try:
            chunk = job_tail.tail(rj.job_pid, rj.launched.pid, 2 if args.get("stderr") else 1,
                                  offset if isinstance(offset, int) else None, int(maxbytes))
        except job_tail.TailError as exc:
            raise RequestError(f"job {jid}: {exc}") from None
        return chunk.to_wire()

    # Administration ------------------------------------------------------------
    def vacate(self, args: dict[str, Any], peer: control.Peer) -> Any:
        slots: list[str | None] = [str(s).split("@")[0] for s in args.get("slots", [])]
        for name in slots or [None]:
            self.d.apply(self.d.engine.vacate(self.d.clock.time(), name, bool(args.get("fast"))))
        return "ok"

    def drain(self, args: dict[str, Any], peer: control.Peer) -> Any:
        out = self.d.engine.drain(self.d.clock.time(), str(args.get("how", "graceful")),
                                str(args.get("on_completion", "nothing")),
                                args.get("reason") or f"by command (user {peer.user})",
                                None, args.get("check"), args.get("start"))
        self.d.apply(out)
        refused = [o for o in out if isinstance(o, DrainRefused)]
        if refused:
            raise RequestError(refused[0].reason)
        started = [o for o in out if isinstance(o, DrainStarted)]
        return {"request_id": started[0].request_id if started else None}

    def cancel_drain(self, args: dict[str, Any], peer: control.Peer) -> Any:
        self.d.apply(self.d.engine.cancel_drain(self.d.clock.time(), args.get("request_id")))
        self.d.schedd.wake()
        return "ok"

    def off(self, args: dict[str, Any], peer: control.Peer) -> Any:
        how = str(args.get("how", "graceful"))
        log.info("condorpy off -%s by %s", how, peer.user)
        self.d.apply(self.d.engine.off(self.d.clock.time(), how))
        return "ok"

    def on(self, args: dict[str, Any], peer: control.Peer) -> Any:
        return "already running"

    def reconfig(self, args: dict[str, Any], peer: control.Peer) -> Any:
        report = self.d.reconfig()
        if args.get("report"):
            return report.to_reply()
        return list(report.changed)     # what clients before reports read

    def restart(self, args: dict[str, Any], peer: control.Peer) -> Any:
        how = str(args.get("how") or "keep")
        if how not in RESTART_HOW:
            raise RequestError(f"how must be one of {', '.join(RESTART_HOW)}, not {how!r}")
        if self.d.restart is None:
            raise RequestError("this daemon cannot restart itself")
        log.info("condorpy restart (%s) by %s", how, peer.user)
        self.d.restart(how)          # refuses (raises) when a new daemon would not start
        return {"pid": os.getpid(), "since": self.d.started_at, "how": how,
                "running": len(self.d.handles)}


def _ad_text(args: dict[str, Any]) -> Callable[[ClassAd], str]:
    """How a job ad is sent: whole, or cut to the attributes the client reads (its
    ``projection``, such as condor_q -af's) and those they refer to."""
    names = args.get("projection")
    if not names:
        return lambda ad: ad.to_old()
    return lambda ad: project(ad, names).to_old()


def _paused(chunks: Iterator[list[JobRecord]], text: Callable[[ClassAd], str]
            ) -> Iterator[Any]:
    """Each chunk's ads as text, then a pause: a long search that finds little gives
    the loop back between chunks."""
    for chunk in chunks:
        for rec in chunk:
            yield text(rec.ad)
        yield control.PAUSE


def _paused_texts(chunks: Iterator[list[str]]) -> Iterator[Any]:
    """:func:`_paused` for ads already text."""
    for chunk in chunks:
        yield from chunk
        yield control.PAUSE


def _job_dir(rj: StarterHandle) -> str | None:
    """The job's working directory, as condor_who shows it: the job process's cwd
    when it can be read, else the sandbox its starter made."""
    if rj.job_pid is not None:
        try:
            return os.readlink(f"/proc/{rj.job_pid}/cwd")
        except OSError:
            pass
    if rj.launched is not None:
        return os.path.dirname(rj.launched.socket_path)
    return None



def _parse_bounded(texts: list[str]) -> None:
    """Refuse, before any is parsed, job texts whose lines all told would hold the loop
    (each ad is held to the parser's own limits as it is read)."""
    n = part_lines(texts)
    if n > PART_LINES:
        raise RequestError(f"a submission request of {n} lines of job ads, more than "
                           f"{PART_LINES}: send it in parts (condorpy submit does); "
                           "nothing was submitted")
