"""The narrow ports through which the resource manager acts on the world: each a small
Protocol with exactly what it uses, so that tests hand it fakes (a launcher that starts
nothing, a starter channel that records what it was told) and the daemon hands it the
real things (the fork server, the starters' sockets, the pool link, the job store)."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ContextManager, Mapping, Protocol

from condorpy.classad import ClassAd
from condorpy.queue.jobstore import JobId, JobRecord, JobStatus, StarterRecord
from condorpy.startd.forkserver import ForkServer, same_process
from condorpy.startd.forkserver_wire import LaunchRequest, Launched
from condorpy.startd.job_end import Outcome
from condorpy.startd.starter_handle import Origin, StarterHandle
from condorpy.startd.starters import kill_quietly

log = logging.getLogger("condorpy.startd")


class Launcher(Protocol):
    """Starts starters and tells whether one still runs."""

    def launch(self, request: LaunchRequest) -> Launched: ...

    def release(self, launched: Launched) -> None: ...

    def alive(self, launched: Launched) -> bool: ...

    def kill(self, pid: int) -> None: ...


@dataclass
class ForkLauncher:
    """The launcher port over the preloaded fork server."""

    server: ForkServer

    def launch(self, request: LaunchRequest) -> Launched:
        try:
            return self.server.launch(request)
        finally:
            while self.server.late:
                log.warning("%s", self.server.late.pop(0))

    def release(self, launched: Launched) -> None:
        self.server.release(launched.pid, wait=False)

    def alive(self, launched: Launched) -> bool:
        return same_process(launched.pid, launched.start_ticks, launched.boot_id)

    def kill(self, pid: int) -> None:
        kill_quietly(pid, signal.SIGKILL)


class StarterChannel(Protocol):
    """The starters' control sockets. What a starter sends comes back through
    :meth:`ResourceManager.on_starter_io`."""

    def connect(self, origin: Origin, socket_path: str) -> bool: ...

    def send(self, origin: Origin, command: str) -> bool: ...

    def close(self, origin: Origin) -> None: ...


class PoolSide(Protocol):
    """What the resource manager asks of the link to an HTCondor pool."""

    def owns(self, engine_claim: str) -> bool: ...

    def launch(self, host: Any, eid: str, slot: str) -> None: ...

    def job_name(self, engine_claim: str) -> str | None: ...

    def job_ended(self, eid: str, final: dict[str, object] | None, evicted: bool,
                  told: Callable[[], None]) -> None: ...

    def job_update(self, eid: str, attrs: dict[str, object]) -> None: ...


class JobRows(Protocol):
    """The job store, as far as running jobs go."""

    def job(self, job_id: JobId) -> JobRecord | None: ...

    def update(self, job_id: JobId, attrs: Mapping[str, Any]) -> None: ...

    def end_job(self, job_id: JobId, attrs: Mapping[str, Any], status: JobStatus, *,
                reason: str | None = None, code: int | None = None,
                subcode: int | None = None, claim_id: str | None = None) -> JobRecord: ...

    def start_job(self, job_id: JobId, starter: StarterRecord, *,
                  claim_id: str | None = None, remote_host: str | None = None) -> JobRecord: ...

    @property
    def starters(self) -> StarterRows: ...

    @property
    def claims(self) -> ClaimRows: ...

    def deferred(self) -> ContextManager[None]: ...

    def after_commit(self, done: Callable[[], None],
                     undone: Callable[[], None] | None = None) -> None: ...

    def flush(self) -> None: ...


class StarterRows(Protocol):
    """The job store's starter rows (``store.starters``), for re-adoption."""

    def record(self, starter: StarterRecord) -> None: ...

    def forget(self, job_id: JobId) -> None: ...

    def all(self) -> list[StarterRecord]: ...


class ClaimRows(Protocol):
    """The job store's local claim rows (``store.claims``)."""

    def release(self, claim_id: str) -> None: ...


class QueuePort(Protocol):
    """The local schedd (:mod:`condorpy.queue.matchmaker`), as running jobs need it."""

    def set_status(self, job_id: JobId, status: JobStatus, **why: Any) -> None: ...

    def job_back(self, rec: JobRecord) -> None: ...

    def wake(self) -> None: ...

    def job_updated(self, job_id: JobId) -> None: ...

    def at_exit(self, ad: ClassAd) -> Outcome | None: ...


class HooksPort(Protocol):
    """The job hooks (:mod:`condorpy.startd.hooks`) around a local job's run."""

    def prepare(self, handle: StarterHandle, rec: JobRecord, claim_id: str,
                slot_name: str) -> bool: ...

    def usage(self, handle: StarterHandle, usage: dict[str, Any]) -> None: ...

    def outcome(self, handle: StarterHandle, rec: JobRecord | None, status: JobStatus,
                reason: str, code: int, subcode: int) -> Outcome: ...

    def job_ended(self, handle: StarterHandle, rec: JobRecord | None, status: JobStatus,
                  attrs: dict[str, Any]) -> None: ...


class NoHooks:
    """No job hooks at all."""

    def prepare(self, handle: StarterHandle, rec: JobRecord, claim_id: str,
                slot_name: str) -> bool:
        return False

    def usage(self, handle: StarterHandle, usage: dict[str, Any]) -> None:
        pass

    def outcome(self, handle: StarterHandle, rec: JobRecord | None, status: JobStatus,
                reason: str, code: int, subcode: int) -> Outcome:
        return status, reason, code, subcode

    def job_ended(self, handle: StarterHandle, rec: JobRecord | None, status: JobStatus,
                  attrs: dict[str, Any]) -> None:
        pass
