"""The starter's side of the shadow protocol (remote system calls), sans-I/O.

After ``ACTIVATE_CLAIM`` is answered OK, the same connection (still on the claim
session's AES-GCM) carries the starter's calls to the shadow: the starter asks, the
shadow answers. A call is ``int number`` and its arguments in one message; the answer
``int rval`` (then ``int errno`` when negative) and any result, in one message
(htcondor/htcondor ``condor_starter.V6.1/NTsenders.cpp``, ``condor_shadow.V6.1/
NTreceivers.cpp``, numbers from ``condor_includes/condor_sys.h``; exit reasons from
``condor_includes/exit.h``).

For a vanilla job on a shared file system the sequence is ``get_job_info`` (the job
ad), ``register_starter_info`` (where and what the starter is), ``begin_execution``
(the shadow writes the execute event), the job runs, then ``job_exit`` (wait
status, exit reason, the final ad: ``ExitCode`` or ``ExitBySignal``/``ExitSignal``,
usage).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from condorpy.classad import ClassAd
from condorpy.errors import PoolError, WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import Op, Receive, Send
from condorpy.pool.wire_ad import get_classad, put_classad

T = TypeVar("T")

GET_JOB_INFO = -63
JOB_EXIT = -65
REGISTER_STARTER_INFO = -77
BEGIN_EXECUTION = -78
REGISTER_JOB_INFO = -81
GET_SEC_SESSION_INFO = 288
ULOG = 284
ULOG_REMOTE_ERROR = 21
NAMES = {ULOG: "ulog", GET_SEC_SESSION_INFO: "get_sec_session_info", GET_JOB_INFO: "get_job_info", JOB_EXIT: "job_exit",
         REGISTER_STARTER_INFO: "register_starter_info",
         BEGIN_EXECUTION: "begin_execution", REGISTER_JOB_INFO: "register_job_info"}

# exit reasons (exit.h)
JOB_EXITED = 100
JOB_KILLED = 102
JOB_COREDUMPED = 103
JOB_SHOULD_REQUEUE = 107
JOB_SHOULD_HOLD = 112


def call(number: int, peer: str, args: Callable[[Writer], object] | None = None,
         result: Callable[[Reader], T] | None = None
         ) -> Generator[Op, bytes | None, T | None]:
    """One remote call; a negative answer raises PoolError with the shadow's errno."""
    name = NAMES.get(number, str(number))
    w = Writer(crypto=True).put_int(number)
    if args is not None:
        args(w)
    yield Send(w.payload())
    payload = yield Receive(f"the shadow's answer to {name}")
    assert payload is not None
    r = Reader(payload, peer, crypto=True)
    rval = r.get_int(f"the result of {name}")
    if rval < 0:
        err = r.get_int(f"the errno of {name}") if r.remaining else 0
        raise PoolError(f"the shadow answered {name} with {rval} (errno {err})", peer=peer)
    out = result(r) if result is not None else None
    r.end(f"the answer to {name}")
    return out


def get_job_info(peer: str) -> Generator[Op, bytes | None, ClassAd]:
    ad = yield from call(GET_JOB_INFO, peer, result=lambda r: get_classad(r, "the job ad"))
    if ad is None:
        raise WireError("get_job_info returned no job ad", peer=peer)
    return ad


def register_starter_info(peer: str, info: ClassAd) -> Generator[Op, bytes | None, None]:
    yield from call(REGISTER_STARTER_INFO, peer, args=lambda w: put_classad(w, info))


@dataclass(frozen=True)
class SessionInfo:
    """One security session the shadow made for the starter: its id, its policy
    (``[Encryption="YES";...]``) and its key, as text (``get_sec_session_info``)."""

    sid: str
    info: str
    key: str = field(repr=False)


def get_sec_session_info(peer: str
                         ) -> Generator[Op, bytes | None, tuple[SessionInfo, SessionInfo]]:
    """The reconnect and file-transfer sessions (``get_sec_session_info``, 288): two
    strings of starter preferences (empty, as HTCondor's starter sends), answered by
    six strings (``NTreceivers.cpp``, ``jic_shadow.cpp`` initMatchSecuritySession)."""
    def args(w: Writer) -> None:
        w.put_string("").put_string("")

    def result(r: Reader) -> tuple[SessionInfo, SessionInfo]:
        v = [r.get_str(f"session string {i + 1} of get_sec_session_info")
             for i in range(6)]
        return SessionInfo(v[0], v[1], v[2]), SessionInfo(v[3], v[4], v[5])
    out = yield from call(GET_SEC_SESSION_INFO, peer, args=args, result=result)
    if out is None:
        raise WireError("get_sec_session_info returned nothing", peer=peer)
    return out


def hold(peer: str, job: ClassAd, reason: str, code: int, subcode: int
         ) -> Generator[Op, bytes | None, None]:
    """Tell the shadow the job must be held: a critical ``RemoteErrorEvent`` through
    ``ulog`` (284), which the shadow writes to the user log and turns into the hold
    (``Error from <host>: <reason>``, ``pseudo_ulog``), as HTCondor's starter does
    (``JICShadow::notifyStarterError``); ``job_exit`` alone carries no reason."""
    ad = ClassAd()
    ad["MyType"] = "RemoteErrorEvent"
    ad["EventTypeNumber"] = ULOG_REMOTE_ERROR
    for attr, wire in (("ClusterId", "Cluster"), ("ProcId", "Proc")):
        v = job.evaluate(attr)
        ad[wire] = v if isinstance(v, int) else 0
    ad["Subproc"] = 0
    ad["Daemon"] = "STARTER"
    # no ExecuteHost: the shadow puts the slot's name in ("Error from slot1_1@...")
    ad["ErrorMsg"] = reason
    ad["CriticalError"] = 1
    ad["HoldReasonCode"] = code
    ad["HoldReasonSubCode"] = subcode
    yield from call(ULOG, peer, args=lambda w: put_classad(w, ad))


def begin_execution(peer: str) -> Generator[Op, bytes | None, None]:
    yield from call(BEGIN_EXECUTION, peer)


def register_job_info(peer: str, update: ClassAd) -> Generator[Op, bytes | None, None]:
    """A running job's news: ``JobState`` ("Running", "Suspended") and usage."""
    yield from call(REGISTER_JOB_INFO, peer, args=lambda w: put_classad(w, update))


def exit_status(final: dict[str, Any], killed: bool, evicted: bool = False
                ) -> tuple[int, int, ClassAd]:
    """(wait status, exit reason, final ad) for ``job_exit`` from a starter's final ad;
    ``killed``: the shadow asked for it (deactivation), ``evicted``: this execution
    point's policy took the slot back, so the job goes back to the queue (as it does
    when the starter's final ad names a ``VacateReason``)."""
    ad = ClassAd()
    for k, v in final.items():
        if isinstance(v, (bool, int, float, str)):
            ad[k] = v
    if final.get("ExitBySignal") is True and isinstance(final.get("ExitSignal"), int):
        sig = int(final["ExitSignal"])
        status = sig & 0x7F
        reason = JOB_KILLED if killed else JOB_EXITED
    else:
        code = final.get("ExitCode")
        code = code if isinstance(code, int) else 0
        status = (code & 0xFF) << 8
        reason = JOB_EXITED
        ad["ExitBySignal"] = False
        ad["ExitCode"] = code
    if "HoldReasonCode" in final:
        reason = JOB_SHOULD_HOLD
    elif not killed and (evicted or "VacateReason" in final):
        # the starter's own requeue (a container runtime failure, the node out of
        # memory) carries its reason in the final ad: the job goes back, not done
        reason = JOB_SHOULD_REQUEUE
    return status, reason, ad


def job_exit(peer: str, status: int, reason: int, ad: ClassAd
             ) -> Generator[Op, bytes | None, None]:
    def args(w: Writer) -> None:
        w.put_int(status).put_int(reason)
        put_classad(w, ad)
    yield from call(JOB_EXIT, peer, args=args)
