"""Slot ads from the engine's state: what the engine decided (state, activity, claim,
job times, Requirements) written into each slot's ad, and the ads read out as the
daemon advertises them."""

from __future__ import annotations

from typing import Any, Iterable

from condorpy.classad import ClassAd
from condorpy.policy.engine_state import EngineState
from condorpy.policy.evaluation import Error, Undefined, plain
from condorpy.policy.readings import Readings
from condorpy.policy.records import Slot
from condorpy.policy.states import State

_MATCHED, _PREEMPTING, _CLAIMED = State.MATCHED, State.PREEMPTING, State.CLAIMED


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class AdPublisher:
    """Writes the engine's decisions into the slot ads and reads the ads out."""

    def __init__(self, st: EngineState, readings: Readings) -> None:
        self._st = st
        self._readings = readings

    def publish_state(self, slot: Slot) -> None:
        st = self._st
        put, attr = st.put, st.backend.evaluate
        put(slot, "State", slot.state.value)
        put(slot, "Activity", slot.activity.value)
        put(slot, "EnteredCurrentState", int(slot.entered_state))
        put(slot, "EnteredCurrentActivity", int(slot.entered_activity))
        for key, total in slot.totals.items():
            put(slot, f"TotalTime{key}", int(total))
        claim = slot.claim
        job = claim.job if claim else None
        put(slot, "JobStart", int(job.start) if job else Undefined)
        put(slot, "CurrentRank", claim.rank if claim else 0.0)
        put(slot, "ClaimId", claim.id if claim else Undefined)
        self.publish_client(slot)
        put(slot, "JobUniverse", job.universe if job else Undefined)
        self.publish_job_attrs(slot)
        self.publish_counters(slot)

    def publish_client(self, slot: Slot) -> None:
        """Who holds the claim and which job runs on it, as HTCondor's startd publishes
        them (Claim::publish): RemoteUser and RemoteOwner are the request's User
        (RemoteOwner falls back to its Owner), ClientMachine the claiming schedd's
        host, JobId (``cluster.proc``) and GlobalJobId the running job's; each is
        undefined when there is no claim, and the job's when no job runs."""
        st = self._st
        put, attr = st.put, st.backend.evaluate
        claim = slot.claim
        user = attr(claim.ad, "User", None) if claim else None
        owner = user if isinstance(user, str) else \
            attr(claim.ad, "Owner", None) if claim else None
        put(slot, "RemoteUser", user if isinstance(user, str) else Undefined)
        put(slot, "RemoteOwner", owner if isinstance(owner, str) else Undefined)
        put(slot, "ClientMachine", claim.client if claim and claim.client else Undefined)
        job = claim.job if claim else None
        job_id: Any = Undefined
        global_id: Any = Undefined
        if job is not None:
            cluster, proc = attr(job.ad, "ClusterId", None), attr(job.ad, "ProcId", None)
            if _count(cluster) and cluster > 0:
                job_id = f"{cluster}.{proc if _count(proc) and proc >= 0 else 0}"
            gid = attr(job.ad, "GlobalJobId", None)
            global_id = gid if isinstance(gid, str) else Undefined
        put(slot, "JobId", job_id)
        put(slot, "GlobalJobId", global_id)

    def publish_job_attrs(self, slot: Slot) -> None:
        """The job attributes a claimed or preempting slot carries (STARTD_JOB_ATTRS,
        SYSTEM_STARTD_JOB_ATTRS: ImageSize, MemoryUsage, ResidentSetSize, DiskUsage
        ...), as they stand in the claim's job ad, expressions as expressions; once the
        claim is gone they are undefined."""
        st = self._st
        claim = slot.claim
        now: dict[str, Any] = {}
        if claim is not None and (slot.state is _CLAIMED or slot.state is _PREEMPTING):
            lookup = st.backend.lookup
            for name in st.settings.job_attrs:
                value = lookup(claim.ad, name)
                if value is not None:
                    now[name] = value
        for name in slot.job_attrs:
            if name not in now:
                st.put(slot, name, Undefined)
        for name, value in now.items():
            st.put(slot, name, value)
        slot.job_attrs = frozenset(now)

    def publish_counters(self, slot: Slot) -> None:
        """Run and suspension times of the current job and claim, up to ``now``."""
        st = self._st
        put, now = st.put, st.now
        claim = slot.claim
        job = claim.job if claim else None
        run = job.run_time(now) if job else 0.0
        susp = (job.suspended_total + (now - job.suspended_since
                                       if job.suspended_since is not None else 0.0)
                if job else 0.0)
        put(slot, "TotalJobRunTime", int(run) if job else Undefined)
        put(slot, "TotalJobSuspendTime", int(susp) if job else Undefined)
        put(slot, "TotalClaimRunTime", int(claim.run_total + run) if claim else Undefined)
        put(slot, "TotalClaimSuspendTime",
            int(claim.suspend_total + susp) if claim else Undefined)
        put(slot, "ClaimStartTime", int(claim.created) if claim else Undefined)

    def publish_requirements(self, slot: Slot) -> None:
        """Requirements as the state allows: the slot layer's (START, and for a p-slot
        the resource limits) normally; False while Matched, Preempting or shutting
        down; the drain's start expression while draining."""
        st = self._st
        machine = st.machine
        broken = st.broken.get(slot.name)
        if broken is not None:      # a broken slot matches nothing: HTCondor puts the reason
            st.put(slot, "Requirements", broken.cause.reason)
        elif slot.state is _MATCHED or slot.state is _PREEMPTING or machine.shutting_down:
            st.put(slot, "Requirements", False)
        elif machine.draining:
            st.put_expr(slot, "Requirements", machine.drain_start or "False")
        else:
            st.put_expr(slot, "Requirements", slot.requirements)

    def cross_slot_attrs(self, slots: list[Slot]) -> None:
        """STARTD_SLOT_ATTRS: each slot's values copied into every ad as the slot
        layer's builder does (undefined and error values are left out)."""
        st = self._st
        attrs = st.layout.settings.slot_attrs
        if not attrs:
            return
        values: list[tuple[str, Any]] = []
        for other in slots:
            prefix = other.name
            for attr in attrs:
                v = st.backend.evaluate(other.ad, attr, None)
                if v is not Undefined and v is not Error:
                    values.append((f"{prefix}_{attr}", v))
        for slot in slots:
            for k, v in values:
                st.put(slot, k, v)

    # ---------------------------------------------------------------- reading
    def _stamped(self) -> list[Slot]:
        """Every live slot, its ad brought up to ``now`` for reading."""
        st = self._st
        live = st.live()
        self.cross_slot_attrs(live)
        for slot in live:
            self._readings.measure(slot)
            self.publish_counters(slot)
            st.put(slot, "MyCurrentTime", int(st.now))
        return live

    def ads(self) -> list[ClassAd]:
        return [slot.ad.copy() for slot in self._stamped()]

    def snapshot(self, names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        b = self._st.backend
        out: dict[str, dict[str, Any]] = {}
        for slot in self._stamped():
            keys = list(names) if names is not None else list(b.names(slot.ad))
            out[slot.name] = {k: plain(b.evaluate(slot.ad, k, None)) for k in keys}
        return out
