"""A pool claim as the job store keeps it for a restart (``docs/pool.md``, "Pool jobs
across a daemon restart"), the store's rows of them and the command port the claim
ids name.

Before a job of a pool claim starts, the claim (full claim id with its key, the
schedd's address and alive interval, the request and job ads, the slot, the lease,
what its output transfer needs) is written to the job store (``pool_claims``, one row
per claim); the row goes when the claim ends or the shadow has the job's exit. The row
holds the claim's key, so the store is made readable by its owner only and the row is
never logged.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError
from condorpy.pool.server import parse_claim_id
from condorpy.pool.shadow import SessionInfo
from condorpy.startd.poolside.transfer import Scratch, remove_scratch

if TYPE_CHECKING:
    from condorpy.startd.poolside.claims import PoolJob

log = logging.getLogger("condorpy.startd.pool")

PORT_KEY = "pool_command_port"


@dataclass(frozen=True)
class StoredClaim:
    """What re-creating a pool claim with its running job needs."""

    claim_id: str              # the full claim id: a secret
    target: str                # the slot the claim was requested for (a p-slot, or static)
    slot: str                  # the slot the job ran in
    schedd: str
    alive_interval: int
    request_ad: str            # old ClassAd syntax
    job_ad: str
    shadow: str
    number: int                # the pool job's number (its job directory, its starter)
    lease: int                 # JobLeaseDuration; 0: no reconnect
    last_contact: float        # wall time of the shadow's last word
    final: dict[str, Any] | None = None    # the job's end, not yet heard by its shadow
    # file transfer (transfer.py): what the output transfer needs after a restart;
    # the session key and the TransferKey are secrets, as the claim id is
    scratch: str = ""                     # the job's scratch directory; "": no transfer
    executable: str = ""
    catalog: dict[str, list[int]] | None = None     # the input's files: (mtime, size)
    transfer_session: dict[str, str] | None = field(default=None, repr=False)
    transfer_socket: str = ""
    transfer_key: str = field(default="", repr=False)

    @property
    def eid(self) -> str:
        """The engine's name for the claim: its session id."""
        return parse_claim_id(self.claim_id).session_id

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "StoredClaim":
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        names = {f.name for f in dataclasses.fields(cls)}
        rec = cls(**{k: v for k, v in raw.items() if k in names})
        if not isinstance(rec.claim_id, str) or not isinstance(rec.number, int):
            raise ValueError("a claim id and a job number are needed")
        if not all(isinstance(v, str) for v in (rec.scratch, rec.executable,
                                                 rec.transfer_socket, rec.transfer_key)):
            raise ValueError("the file-transfer fields are not strings")
        if rec.scratch and not os.path.isabs(rec.scratch):
            raise ValueError("the scratch directory is not an absolute path")
        if rec.catalog is not None and not (isinstance(rec.catalog, dict) and all(
                isinstance(v, list) and len(v) == 2 and
                all(isinstance(n, int) for n in v) for v in rec.catalog.values())):
            raise ValueError("the input catalog is damaged")
        if rec.transfer_session is not None and not (
                isinstance(rec.transfer_session, dict) and
                set(rec.transfer_session) == {"sid", "info", "key"} and
                all(isinstance(v, str) for v in rec.transfer_session.values())):
            raise ValueError("the file-transfer session is damaged")
        return rec

    def files(self) -> Scratch | None:
        """The job's scratch as the output transfer needs it; None: its files do not
        travel (or the scratch is gone)."""
        if not self.scratch or not os.path.isdir(self.scratch):
            return None
        return Scratch(Path(self.scratch), self.executable,
                       {k: (v[0], v[1]) for k, v in (self.catalog or {}).items()})

    def session(self) -> SessionInfo | None:
        t = self.transfer_session
        return None if t is None else SessionInfo(t["sid"], t["info"], t["key"])

    def drop_scratch(self) -> None:
        """The claim has ended for good: nobody takes the job's outputs any more."""
        if self.scratch and os.path.isdir(self.scratch):
            remove_scratch(Path(self.scratch))


def transfer_fields(job: "PoolJob") -> dict[str, Any]:
    """The stored-claim fields of ``job``'s file transfer (``StoredClaim``)."""
    out: dict[str, Any] = {}
    if job.files is not None:
        out.update(scratch=str(job.files.path), executable=job.files.executable,
                   catalog={k: list(v) for k, v in job.files.catalog.items()})
    if job.transfer_session is not None:
        t = job.transfer_session
        out["transfer_session"] = {"sid": t.sid, "info": t.info, "key": t.key}
    for attr, name in (("TransferSocket", "transfer_socket"),
                       ("TransferKey", "transfer_key")):
        v = job.ad.get(attr)
        if isinstance(v, str):
            out[name] = v
    return out


def lease_of(ad: ClassAd) -> int:
    """The job lease a shadow reconnects within: HTCondor's shadow tries only for a job
    with a ``GlobalJobId`` and a positive ``JobLeaseDuration``
    (``RemoteResource::supportsReconnect``)."""
    lease = ad.get("JobLeaseDuration")
    if not isinstance(ad.get("GlobalJobId"), str) or isinstance(lease, bool) or \
            not isinstance(lease, (int, float)) or lease <= 0:
        return 0
    return int(lease)


class ClaimRows(Protocol):
    """The part of the job store that keeps stored claims (``store.pool``)."""

    @property
    def path(self) -> str: ...

    def put(self, claim: str, record: str) -> None: ...

    def forget(self, claim: str) -> None: ...

    def all(self) -> list[tuple[str, str]]: ...


class Settings(Protocol):
    """The pool side's small settings in the job store (``store.pool``)."""

    def setting(self, key: str) -> int | None: ...

    def set_setting(self, key: str, value: int) -> None: ...


class StoredRows:
    """The stored claims' rows in the job store (none while there is no store)."""

    def __init__(self, store_of: "Callable[[], ClaimRows | None]" = lambda: None) -> None:
        self.store_of = store_of

    def put(self, rec: StoredClaim) -> bool:
        """Write ``rec`` (one row, atomically); False: no store to write to. A failing
        write raises the store's error."""
        store = self.store_of()
        if store is None:
            return False
        _protect(store)
        store.put(rec.eid, rec.to_json())
        return True

    def forget(self, eid: str) -> None:
        store = self.store_of()
        if store is None:
            return
        try:
            store.forget(eid)
        except CondorpyError as exc:
            log.error("pool: cannot forget the stored claim %s: %s", eid, exc)


def _protect(store: ClaimRows) -> None:
    """The rows hold claim keys: the database and its journal are the owner's only."""
    for suffix in ("", "-wal", "-shm"):
        try:
            os.chmod(store.path + suffix, 0o600)
        except OSError:
            pass


def stored(store: ClaimRows) -> dict[int, StoredClaim]:
    """The stored claims by their job's number; a damaged row is dropped, logged."""
    out: dict[int, StoredClaim] = {}
    for eid, text in store.all():
        try:
            rec = StoredClaim.from_json(text)
            rec.eid
        except (ValueError, TypeError) as exc:
            log.error("pool: the stored claim %s is damaged (%s); dropped", eid, exc)
            store.forget(eid)
            continue
        out[rec.number] = rec
    return out


def previous_port(store: Settings) -> int:
    """The command port an earlier daemon had: the claim ids its shadows hold name it."""
    return store.setting(PORT_KEY) or 0


def set_port(store: Settings, port: int) -> None:
    store.set_setting(PORT_KEY, port)
