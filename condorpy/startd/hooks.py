"""HTCondor's job hooks in the daemon: fetch work (``<KW>_HOOK_FETCH_WORK``,
``_REPLY_FETCH``, ``_EVICT_CLAIM``) and the starter's hooks (``_PREPARE_JOB``,
``_UPDATE_JOB_INFO``, ``_JOB_EXIT``).

A fetched job goes into the job store (so ``q``, ``who`` and ``status`` show it, and a
restarted daemon re-adopts it) and claims its slot through the same engine entry points
the local matchmaker uses (``request_claim``, ``activate``); the same starter runs it.
The local matchmaker never takes one: it is running from the moment it is stored, and
a fetched job that cannot run (or is evicted) is marked removed, never left idle,
because its work queue, not this daemon, decides what happens to it next.

The starter hooks run in the daemon rather than the starter (this daemon is the job's
schedd and shadow too), as the job's user, at the points where HTCondor's starter runs
them: before the job starts (prepare), with every usage update on
STARTER_INITIAL_UPDATE_INTERVAL / STARTER_UPDATE_INTERVAL (update), once the job has
left the slot (exit). Every hook is a :mod:`condorpy.startd.children` child: no shell,
a timeout, bounded output, never blocking the event loop.
"""

from __future__ import annotations

import logging
import os
import pwd
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from condorpy.classad import ClassAd
from condorpy.clock import Clock
from condorpy.config import Config
from condorpy.errors import ClassAdError, CondorpyError, HookError
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.records import Output
from condorpy.policy.states import State
from condorpy.queue.matchmaker import new_claim_id
from condorpy.slots.model import Refusal
from condorpy.startd.children import ChildRunner, ChildResult
from condorpy.startd.hookproto import (ExitHow, HookVerdict, check_fetched, hook_status,
                                       hook_stdin, parse_reply_ad)
from condorpy.queue.jobstore import JobId, JobRecord, JobStatus, JobStore
from condorpy.startd.metrics import MetricsStats
from condorpy.starter.knobs import initial_update_interval, update_interval
from condorpy.startd.starter_handle import Phase, StarterHandle

log = logging.getLogger("condorpy.startd")

DEFAULT_TIMEOUT_S = 30.0          # <KW>_HOOK_<TYPE>_TIMEOUT when unset
DEFAULT_FETCH_DELAY_S = 300       # FetchWorkDelay when undefined (HTCondor's 5 minutes)
HOLD_PREPARE_FAILED = 19          # CONDOR_HOLD_CODE HookPrepareJobFailure
FETCHED = "CondorpyFetchedFrom"   # marks a job that came from a fetch-work hook
_HOOK_TYPES = ("FETCH_WORK", "REPLY_FETCH", "EVICT_CLAIM", "PREPARE_JOB",
               "PREPARE_JOB_BEFORE_TRANSFER", "UPDATE_JOB_INFO", "JOB_EXIT")


@dataclass
class HookCounts:
    runs: int = 0
    failures: int = 0
    timeouts: int = 0


@dataclass
class HookStats:
    """Runs and failures per hook (``<KW>_HOOK_<TYPE>``) or cron job name, for metrics."""
    by_name: dict[str, HookCounts] = field(default_factory=dict)

    def count(self, name: str, result: ChildResult) -> None:
        c = self.by_name.setdefault(name, HookCounts())
        c.runs += 1
        if result.problem() is not None:
            c.failures += 1
        if result.timed_out:
            c.timeouts += 1


@dataclass
class _SlotFetch:
    fetching: bool = False
    next_at: float = 0.0          # monotonic time of the next attempt


@dataclass
class _JobHooks:
    keyword: str
    next_update: float | None = None
    updating: bool = False


class Runner(Protocol):
    """The resource manager, as far as the hooks start and end jobs."""

    def apply(self, outputs: list[Output]) -> None: ...

    def activate(self, job_id: JobId, claim_id: str, slot: str) -> bool: ...

    def launch(self, claim_id: str, slot_name: str) -> None: ...

    def finish(self, h: StarterHandle, final: dict[str, Any] | None) -> None: ...

    def slot_of(self, claim_id: str) -> str: ...

    def job(self, job_id: JobId) -> StarterHandle | None: ...


@dataclass
class HookPorts:
    """Everything the hooks use, and nothing more."""

    runner: Runner
    engine: PolicyEngine
    store: JobStore
    children: ChildRunner
    clock: Clock
    stats: MetricsStats
    config: Callable[[], Config]            # the daemon's configuration now
    starter_config: Callable[[], Config]    # read afresh as the STARTER
    set_status: Callable[..., None]         # the local queue's set_status
    stopping: Callable[[], bool]
    env: dict[str, str]
    uid: int
    started_at: float


class JobHooks:
    def __init__(self, ports: HookPorts) -> None:
        self.d = ports
        self.stats = HookStats()
        self.slots: dict[str, _SlotFetch] = {}
        self.jobs: dict[JobId, _JobHooks] = {}
        self.prepared: set[JobId] = set()
        self._bad_paths: set[str] = set()
        self._paths: dict[tuple[int, str, str], str | None] = {}
        self._keywords: dict[int, str | None] = {}
        self._enabled: bool | None = None       # any slot has a hook keyword
        self.starter_cfg: Config = self._starter_cfg()

    def _starter_cfg(self) -> Config:
        try:
            return self.d.starter_config()
        except CondorpyError as exc:
            log.warning("job hooks: cannot read the starter's configuration: %s", exc)
            return self.d.config()

    def reconfig(self) -> None:
        self._bad_paths.clear()
        self._paths.clear()
        self._keywords.clear()
        self._enabled = None
        self.starter_cfg = self._starter_cfg()
        for st in self.slots.values():
            st.next_at = 0.0

    # ------------------------------------------------------------ configuration
    def slot_keyword(self, slot_id: int) -> str | None:
        if slot_id not in self._keywords:
            self._keywords[slot_id] = self._slot_keyword(slot_id)
        return self._keywords[slot_id]

    def _slot_keyword(self, slot_id: int) -> str | None:
        cfg = self.d.config()
        kw = cfg.get(f"SLOT{slot_id}_JOB_HOOK_KEYWORD") or cfg.get("STARTD_JOB_HOOK_KEYWORD")
        return kw.strip() if kw and kw.strip() else None

    def job_keyword(self, ad: ClassAd) -> str | None:
        cfg = self.starter_cfg
        kw = cfg.get("STARTER_JOB_HOOK_KEYWORD")
        if not kw:
            v = ad.evaluate("HookKeyword")
            kw = v if isinstance(v, str) and v.strip() else None
            # A job may not name hooks the configuration lacks, and so slip past the
            # administrator's default keyword (as HTCondor's JobHookClientMgr).
            if kw is not None and not any(cfg.get(f"{kw.strip()}_HOOK_{k}")
                                          for k in _HOOK_TYPES):
                kw = None
        if not kw:
            kw = cfg.get("STARTER_DEFAULT_JOB_HOOK_KEYWORD")
        return kw.strip() if kw and kw.strip() else None

    def path(self, cfg: Config, keyword: str, kind: str) -> str | None:
        """The hook's path, checked once per configuration (as HTCondor caches it)."""
        key = (id(cfg), keyword, kind)
        if key not in self._paths:
            self._paths[key] = self._check_path(cfg, keyword, kind)
        return self._paths[key]

    def _check_path(self, cfg: Config, keyword: str, kind: str) -> str | None:
        knob = f"{keyword}_HOOK_{kind}"
        value = cfg.get(knob)
        if not value:
            return None
        value = value.strip()
        # As HTCondor's validateHookPath: an absolute path to an executable file.
        why = None
        if not os.path.isabs(value):
            why = "is not an absolute path"
        elif not os.path.isfile(value):
            why = "does not exist"
        elif not os.access(value, os.X_OK):
            why = "is not executable"
        if why is not None:
            if knob not in self._bad_paths:
                self._bad_paths.add(knob)
                where = cfg.where(knob)
                at = f" ({where[0]}:{where[1]})" if where else ""
                log.error("hook %s = %s%s %s: the hook is ignored", knob, value, at, why)
            return None
        return value

    def _timeout(self, cfg: Config, keyword: str, kind: str) -> float:
        try:
            t = cfg.get_float(f"{keyword}_HOOK_{kind}_TIMEOUT", DEFAULT_TIMEOUT_S)
        except CondorpyError as exc:
            log.error("%s", exc)
            return DEFAULT_TIMEOUT_S
        return t if t > 0 else DEFAULT_TIMEOUT_S

    def _args(self, cfg: Config, keyword: str, kind: str) -> list[str]:
        text = cfg.get(f"{keyword}_HOOK_{kind}_ARGS")
        return text.split() if text else []

    def _run(self, cfg: Config, keyword: str, kind: str, args: list[str], stdin: str,
             done: Callable[[ChildResult], None] | None = None,
             user: tuple[int, int] | None = None, cwd: str | None = None) -> bool:
        path = self.path(cfg, keyword, kind)
        if path is None:
            return False
        name = f"{keyword}_HOOK_{kind}"

        def finished(result: ChildResult) -> None:
            self.stats.count(name, result)
            problem = result.problem()
            self.d.stats.hook_run(kind, problem is None)
            if result.error is not None:
                log.warning("hook %s: %s", name, result.error)
            elif problem is not None:
                log.warning("hook %s (%s, pid %d) %s%s", name, path, result.pid, problem,
                            excerpt(" stderr: ", result.stderr))
            elif result.stderr.strip():
                log.info("hook %s (%s, pid %d) printed to stderr:%s", name, path,
                         result.pid, excerpt(" ", result.stderr))
            if done is not None:
                done(result)

        self.d.children.spawn(name, [path, *args, *self._args(cfg, keyword, kind)], finished,
                              stdin=stdin, timeout=self._timeout(cfg, keyword, kind),
                              env=hook_env(self.d.env), user=user, cwd=cwd or "/")
        return True

    # -------------------------------------------------------------- fetch work
    def step(self, now: float) -> None:
        """Run FETCH_WORK for every slot that is due (HTCondor's tryFetchWork)."""
        d = self.d
        if self._enabled is None:
            cfg = d.config()
            # a keyword is a name: any non-empty value turns the hooks on
            self._enabled = any(
                (n.upper() == "STARTD_JOB_HOOK_KEYWORD"
                 or re.fullmatch(r"SLOT\d+_JOB_HOOK_KEYWORD", n, re.I) is not None)
                and (cfg.get(n) or "").strip() != "" for n in cfg.names())
        if not self._enabled or d.stopping() or d.engine.machine.draining or \
                d.engine.machine.shutting_down:
            return
        for slot in list(d.engine.slots.values()):
            if slot.deleted or slot.kind == "dynamic":
                continue
            kw = self.slot_keyword(slot.slot_id)
            if kw is None or self.path(d.config(), kw, "FETCH_WORK") is None:
                continue
            st = self.slots.setdefault(slot.name, _SlotFetch())
            if st.fetching or now < st.next_at:
                continue
            delay = self._delay(slot.ad)
            # Only a slot that could take a job now (Unclaimed, resources left) asks.
            if slot.state is not State.UNCLAIMED or \
                    (slot.kind == "partitionable" and slot.resources.get("Cpus", 0) <= 0):
                st.next_at = now + 1.0
                continue
            if slot.ad.evaluate("START", None, d.engine.ctx) is False:
                st.next_at = now + max(delay, 1)
                continue
            st.fetching = True
            started = self._run(d.config(), kw, "FETCH_WORK", [], hook_stdin(slot.ad),
                                self._on_fetched(slot.name, kw))
            if not started:
                st.fetching = False

    def _on_fetched(self, slot_name: str, keyword: str) -> Callable[[ChildResult], None]:
        return lambda result: self._fetched(slot_name, keyword, result)

    def next_due(self) -> float | None:
        due = [st.next_at for st in self.slots.values() if not st.fetching]
        return min(due) if due else None

    def _delay(self, slot_ad: ClassAd) -> int:
        text = self.d.config().get("FetchWorkDelay")
        if not text:
            return DEFAULT_FETCH_DELAY_S
        ad = slot_ad.copy()
        try:
            ad.set_expr("FetchWorkDelay", text, source="FetchWorkDelay")
        except ClassAdError as exc:
            log.error("FetchWorkDelay: %s", exc)
            return DEFAULT_FETCH_DELAY_S
        v = ad.evaluate("FetchWorkDelay", None, self.d.engine.ctx)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return DEFAULT_FETCH_DELAY_S
        return max(0, int(v))

    def _fetched(self, slot_name: str, keyword: str, result: ChildResult) -> None:
        d = self.d
        now = d.clock.monotonic()
        st = self.slots.setdefault(slot_name, _SlotFetch())
        st.fetching = False
        slot = d.engine.slots.get(slot_name)
        delay = self._delay(slot.ad) if slot is not None else DEFAULT_FETCH_DELAY_S
        # HTCondor: the next try a FetchWorkDelay after this one ended (1 s when 0).
        st.next_at = now + (delay if delay > 0 else 1)
        source = f"{keyword}_HOOK_FETCH_WORK for {slot_name}"
        if result.error is not None or result.timed_out or result.overflow:
            return          # logged by _run; whatever it printed is not trusted
        try:
            ad = parse_reply_ad(result.stdout, source)
        except HookError as exc:
            log.warning("%s: reply discarded: %s", source, exc)
            return
        if ad is None:
            return          # no work
        if slot is None or slot.deleted:
            self._reply(keyword, False, ad, None, None)
            return
        try:
            job = check_fetched(ad, keyword, slot.kind == "partitionable", d.uid == 0, source)
        except HookError as exc:
            log.warning("%s: job refused: %s", source, exc)
            self._reply(keyword, False, ad, slot.ad, None)
            return
        if not isinstance(ad.evaluate("Owner"), str):
            ad["Owner"] = _user_name(d.uid)
        ad[FETCHED] = keyword
        if self._start(slot_name, job.ad, keyword):
            # A job started: ask again at once, as a d-slot that finished would.
            st.next_at = now

    def _start(self, slot_name: str, ad: ClassAd, keyword: str) -> bool:
        """Claim and activate the slot for fetched work through the engine, as the local
        matchmaker does; REPLY_FETCH says accept (with the claim id) or reject."""
        d = self.d
        slot = d.engine.slots[slot_name]
        now = d.clock.time()
        refused = slot.state is not State.UNCLAIMED
        if not refused and slot.kind == "partitionable":
            refused = isinstance(d.engine.layout.sized(slot.layer, ad, slot.ad), Refusal)
        claim_id = new_claim_id(d.started_at)
        if not refused:
            d.runner.apply(d.engine.request_claim(now, claim_id, ad, slot_name,
                                                  client=d.engine.hostname))
            refused = not d.engine.has_claim(claim_id)
        if refused:
            log.info("%s: fetched work refused by the slot's policy", slot_name)
            self._reply(keyword, False, ad, slot.ad, None)
            return False
        # A schedd's job ad handed on carries its own status and ids: here the job is
        # new to this daemon's store (which keeps an integer ProcId as it is).
        ad["JobStatus"] = 1
        proc = ad.get("ProcId")
        cluster = d.store.submit([ad])
        job_id = JobId(cluster, proc if isinstance(proc, int) and
                       not isinstance(proc, bool) else 0)
        claimed = d.runner.slot_of(claim_id)
        d.store.claims.record(claim_id, claimed, "claimed", job_id)
        rec = d.store.job(job_id)
        assert rec is not None
        self._reply(keyword, True, rec.ad, d.engine.slots[claimed].ad, claim_id)
        log.info("job %s: fetched by %s_HOOK_FETCH_WORK, claims %s", job_id, keyword, claimed)
        if not d.runner.activate(job_id, claim_id, claimed):
            d.store.claims.release(claim_id)
            d.set_status(job_id, JobStatus.REMOVED, reason="the slot would not start it")
            return False
        return True

    def _reply(self, keyword: str, accepted: bool, job: ClassAd, slot: ClassAd | None,
               claim_id: str | None) -> None:
        ads = (job,) if slot is None else (job, slot)
        self._run(self.d.config(), keyword, "REPLY_FETCH", ["accept" if accepted else "reject"],
                  hook_stdin(*ads, claim_id=claim_id))

    # ------------------------------------------------------------ starter hooks
    def prepare(self, rj: StarterHandle, rec: JobRecord, claim_id: str, slot_name: str) -> bool:
        """Run PREPARE_JOB_BEFORE_TRANSFER then PREPARE_JOB (those defined) before the
        job's starter is launched; True while they run (the daemon launches once they
        have said go)."""
        if rec.job_id in self.prepared:
            self.prepared.discard(rec.job_id)
            return False
        kw = self.job_keyword(rec.ad)
        if kw is None:
            return False
        self.jobs[rec.job_id] = _JobHooks(kw)
        kinds = [k for k in ("PREPARE_JOB_BEFORE_TRANSFER", "PREPARE_JOB")
                 if self.path(self.starter_cfg, kw, k) is not None]
        return self._prepare_next(rj, rec, claim_id, slot_name, kw, kinds)

    def _prepare_next(self, rj: StarterHandle, rec: JobRecord, claim_id: str, slot_name: str,
                      kw: str, kinds: list[str]) -> bool:
        if not kinds:
            return False
        kind, rest = kinds[0], kinds[1:]
        cwd = rec.ad.evaluate("Iwd")
        started = self._run(self.starter_cfg, kw, kind, [], hook_stdin(rec.ad),
                            lambda r: self._prepared(rec.job_id, claim_id, slot_name, r,
                                                     kind, rest),
                            user=_owner(rec.ad, self.d.uid),
                            cwd=cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None)
        if started and rj.phase is not Phase.PREPARING:
            rj.on_preparing()
        return started

    def _prepared(self, job_id: JobId, claim_id: str, slot_name: str,
                  result: ChildResult, kind: str, rest: list[str]) -> None:
        d = self.d
        rj = d.runner.job(job_id)
        if rj is None or rj.claim_id != claim_id:
            return
        if not d.engine.has_claim(claim_id) or rj.leaving:
            # The slot was taken back, or the job removed, while the hook ran.
            d.runner.finish(rj, None)
            return
        problem = result.problem()
        if problem is not None:
            sub = result.exit_code if result.exit_code is not None else 0
            d.runner.finish(rj, {"HoldReason": f"{_kw_of(self, job_id)}_HOOK_{kind} {problem}",
                           "HoldReasonCode": HOLD_PREPARE_FAILED, "HoldReasonSubCode": sub})
            return
        try:
            out = parse_reply_ad(result.stdout, f"{kind} for job {job_id}")
        except HookError as exc:
            d.runner.finish(rj, {"HoldReason": str(exc), "HoldReasonCode": HOLD_PREPARE_FAILED})
            return
        if out is not None:
            verdict, code, msg = hook_status(out)
            if verdict is HookVerdict.HOLD:
                d.runner.finish(rj, {"HoldReason": msg or f"HookStatusCode {code}",
                               "HoldReasonCode": HOLD_PREPARE_FAILED,
                               "HoldReasonSubCode": code})
                return
            if verdict is HookVerdict.REQUEUE:
                log.info("job %s: %s sends it back (%d: %s)", job_id, kind, code, msg)
                rj.evicted = True
                d.runner.finish(rj, None)
                return
            attrs = {k: out.evaluate(k) for k in out.keys()
                     if k.lower() not in ("hookstatuscode", "hookstatusmessage")}
            attrs = {k: v for k, v in attrs.items() if isinstance(v, (bool, int, float, str))}
            if attrs:
                d.store.update(job_id, attrs)
        rec = d.store.job(job_id)
        if rest and rec is not None and \
                self._prepare_next(rj, rec, claim_id, slot_name, _kw_of(self, job_id), rest):
            return
        rj.on_prepared()
        self.prepared.add(job_id)
        d.runner.launch(claim_id, slot_name)

    def usage(self, rj: StarterHandle, usage: dict[str, Any]) -> None:
        """A usage report from the job's starter: UPDATE_JOB_INFO on HTCondor's schedule."""
        job_id = rj.job_id
        if job_id is None:
            return          # a pool's job: its shadow runs its hooks
        hooks = self.jobs.get(job_id)
        if hooks is None:
            rec = self.d.store.job(job_id)
            kw = self.job_keyword(rec.ad) if rec is not None else None
            if kw is None or self.path(self.starter_cfg, kw, "UPDATE_JOB_INFO") is None:
                return
            hooks = self.jobs[job_id] = _JobHooks(kw)
        now = self.d.clock.monotonic()
        if hooks.next_update is None:
            hooks.next_update = now + initial_update_interval(self.starter_cfg)
        if now < hooks.next_update or hooks.updating:
            return
        hooks.next_update = now + update_interval(self.starter_cfg)
        rec = self.d.store.job(job_id)
        if rec is None:
            return
        ad = rec.ad.copy()
        ad["JobState"] = "Suspended" if rj.phase is Phase.SUSPENDED else "Running"
        if rj.job_pid is not None:
            ad["JobPid"] = rj.job_pid
        for k, v in usage.items():
            if isinstance(v, (bool, int, float, str)):
                ad[k] = v
        hooks.updating = True

        def done(_r: ChildResult) -> None:
            hooks.updating = False
        if not self._run(self.starter_cfg, hooks.keyword, "UPDATE_JOB_INFO", [],
                         hook_stdin(ad), done, user=_owner(rec.ad, self.d.uid)):
            hooks.updating = False

    def outcome(self, rj: StarterHandle, rec: JobRecord | None, status: JobStatus, reason: str,
                code: int, subcode: int) -> tuple[JobStatus, str, int, int]:
        """A fetched job never goes back to the local queue: its source requeues it."""
        if rec is not None and status is JobStatus.IDLE and \
                isinstance(rec.ad.evaluate(FETCHED), str):
            return (JobStatus.REMOVED, "fetched work is not requeued here: it goes back "
                    "to its source", 0, 0)
        return status, reason, code, subcode

    def job_ended(self, rj: StarterHandle, rec: JobRecord | None, status: JobStatus,
                  attrs: dict[str, Any]) -> None:
        """The job left its slot: EVICT_CLAIM for evicted fetched work, JOB_EXIT with how
        it left, and a fetch at once on the slot it came from."""
        if rj.job_id is None:
            return
        self.prepared.discard(rj.job_id)
        self.jobs.pop(rj.job_id, None)
        if rec is None:
            return
        d = self.d
        ad = rec.ad.copy()
        for k, v in attrs.items():
            ad[k] = v
        # Evicted: taken off its slot (or its starter lost) rather than ended on its own.
        after = rj.stop.status if rj.stop is not None else None
        evicted = after is None and status is not JobStatus.HELD and \
            (rj.evicted or ("ExitCode" not in attrs and "ExitSignal" not in attrs))
        fetched_kw = rec.ad.evaluate(FETCHED)
        slot = d.engine.slots.get(rj.slot)
        if evicted and isinstance(fetched_kw, str) and slot is not None:
            self._run(d.config(), fetched_kw, "EVICT_CLAIM", [],
                      hook_stdin(ad, slot.ad, claim_id=rj.claim_id))
        if after is JobStatus.REMOVED:
            how = ExitHow.REMOVE
        elif status is JobStatus.HELD:
            how = ExitHow.HOLD
        elif evicted:
            how = ExitHow.EVICT
        else:
            how = ExitHow.EXIT
        kw = self.job_keyword(rec.ad)
        if kw is not None and rj.launched is not None:
            code = attrs.get("ExitCode")
            sig = attrs.get("ExitSignal")
            ad["ExitReason"] = {ExitHow.EXIT: "exited", ExitHow.REMOVE: "removed",
                                ExitHow.HOLD: "held", ExitHow.EVICT: "evicted"}[how]
            ad["ExitBySignal"] = isinstance(sig, int) and attrs.get("ExitBySignal") is True
            if isinstance(sig, int):
                ad["ExitSignal"] = sig
            if isinstance(code, int):
                ad["ExitCode"] = code
            started = rec.ad.evaluate("JobCurrentStartDate")
            if isinstance(started, int):
                ad["JobDuration"] = max(0.0, d.clock.time() - started)
            self._run(self.starter_cfg, kw, "JOB_EXIT", [how.value], hook_stdin(ad),
                      user=_owner(rec.ad, d.uid))
        if isinstance(fetched_kw, str):
            parent = rj.slot.split("_")[0]
            st = self.slots.get(parent)
            if st is not None and not st.fetching:
                st.next_at = d.clock.monotonic()


def _kw_of(hooks: JobHooks, job_id: JobId) -> str:
    h = hooks.jobs.get(job_id)
    return h.keyword if h is not None else "?"


def excerpt(lead: str, text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return ""
    return lead + (text[:300] + "..." if len(text) > 300 else text)


def hook_env(env: dict[str, str]) -> dict[str, str]:
    # The daemon's service environment is not the hook's business.
    return {k: v for k, v in env.items() if k not in ("NOTIFY_SOCKET", "INVOCATION_ID",
                                                      "LISTEN_FDS", "LISTEN_PID")}


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _owner(ad: ClassAd, daemon_uid: int) -> tuple[int, int] | None:
    """The job's user, for hooks the starter would run as that user (only when the
    daemon is root and can switch)."""
    if daemon_uid != 0:
        return None
    owner = ad.evaluate("Owner")
    if not isinstance(owner, str):
        return None
    try:
        pw = pwd.getpwnam(owner)
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid
