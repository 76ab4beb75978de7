"""The shadow's reconnect commands, sans-I/O (``CA_CMD``: one ClassAd each way).

Facts (htcondor/htcondor ``src/condor_daemon_client/daemon.cpp`` ``sendCACmd``,
``dc_startd.cpp`` ``locateStarter``, ``dc_starter.cpp`` ``reconnect``,
``src/condor_startd.V6/command.cpp`` ``command_classad_handler``/``caLocateStarter``,
``src/condor_starter.V6.1/jic_shadow.cpp`` ``JICShadow::reconnect``): DaemonCore
command ``CA_CMD`` (1200) on the claim's security session; the request is one ClassAd
(``MyType = "Command"``, ``TargetType = "Reply"``, ``Command`` naming the sub-command,
private attributes such as ``ClaimId`` included) and EOM; the reply one ClassAd with
``Result = "Success"``, or ``"Failure"`` and an ``ErrorString``, and EOM.

condorpy does not take jobs back yet (it tells shadows ``HasReconnect = False``, so a
23.9.6 shadow never asks); a request that comes anyway gets HTCondor's failure reply
instead of a dropped connection.
"""

from __future__ import annotations

from dataclasses import dataclass

from condorpy.classad import ClassAd
from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.wire_ad import get_classad, put_classad

CA_CMD = 1200
LOCATE_STARTER = "CA_LOCATE_STARTER"
RECONNECT_JOB = "CA_RECONNECT_JOB"
SUCCESS = "Success"
FAILURE = "Failure"
# a reconnect request holds a dozen attributes; far more is not a shadow talking
MAX_REQUEST_ATTRS = 256


@dataclass(frozen=True)
class CaRequest:
    """One ``CA_CMD`` request: its sub-command and what names the job."""

    command: str
    claim_id: str | None
    global_job_id: str | None
    ad: ClassAd


def _text(ad: ClassAd, name: str, what: str, peer: str) -> str | None:
    value = ad.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise WireError(f"{what}: {name} is not a string", peer=peer)
    return value


def parse_request(r: Reader) -> CaRequest:
    """The request's message; a malformed one raises WireError naming the peer."""
    what = "the CA_CMD request"
    ad = get_classad(r, what, max_attrs=MAX_REQUEST_ATTRS)
    r.end(f"the message of {what}")
    command = _text(ad, "Command", what, r.peer)
    if not command:
        raise WireError(f"{what} names no Command", peer=r.peer)
    return CaRequest(command, _text(ad, "ClaimId", what, r.peer),
                     _text(ad, "GlobalJobId", what, r.peer), ad)


def request(command: str, claim_id: str, global_job_id: str) -> Writer:
    """A request as HTCondor's shadow sends it (for tests and a future client)."""
    ad = ClassAd()
    ad["MyType"] = "Command"
    ad["TargetType"] = "Reply"
    ad["Command"] = command
    ad["ClaimId"] = claim_id
    ad["GlobalJobId"] = global_job_id
    return put_classad(Writer(crypto=True), ad)


def failure(w: Writer, error: str) -> Writer:
    ad = ClassAd()
    ad["Result"] = FAILURE
    ad["ErrorString"] = error
    return put_classad(w, ad, private=False)


def success(w: Writer, info: ClassAd) -> Writer:
    """``info``: for CA_LOCATE_STARTER the starter's ``StarterIpAddr``; for
    CA_RECONNECT_JOB the starter-info ad."""
    ad = info.copy()
    ad["Result"] = SUCCESS
    return put_classad(w, ad, private=False)


def refusal(req: CaRequest) -> str:
    """Why this daemon answers ``req`` with a failure: it keeps no job for a shadow
    across a restart (docs/pool.md, "Pool jobs across a daemon restart")."""
    if req.command == LOCATE_STARTER:
        return "no starter for this job: this execution point does not reconnect jobs"
    if req.command == RECONNECT_JOB:
        return "this starter does not reconnect jobs"
    return f"unsupported CA command {req.command}"
