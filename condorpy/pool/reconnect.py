"""The shadow's reconnect commands, sans-I/O (``CA_CMD``: one ClassAd each way).

Facts (htcondor/htcondor ``src/condor_daemon_client/daemon.cpp`` ``sendCACmd``,
``dc_startd.cpp`` ``locateStarter``, ``dc_starter.cpp`` ``reconnect``,
``src/condor_startd.V6/command.cpp`` ``command_classad_handler``/``caLocateStarter``,
``src/condor_starter.V6.1/jic_shadow.cpp`` ``JICShadow::reconnect``): DaemonCore
command ``CA_CMD`` (1200) on the claim's security session; the request is one ClassAd
(``MyType = "Command"``, ``TargetType = "Reply"``, ``Command`` naming the sub-command,
private attributes such as ``ClaimId`` included) and EOM; the reply one ClassAd with
``Result = "Success"``, or ``"Failure"`` and an ``ErrorString``, and EOM.

What the startd answers ``CA_LOCATE_STARTER`` with: the claim's starter's address
(``StarterIpAddr``; condorpy's starter side lives in the daemon, so its own command
address) and ``Result``. ``CA_RECONNECT_JOB`` goes to that address on the same claim
session; it carries the shadow's ``ShadowIpAddr``, ``ShadowVersion``, ``UidDomain``,
``TransferKey`` and ``TransferSocket`` and is answered with the starter-info ad (as
``register_starter_info`` sends it) and ``Result``; the connection then carries the
starter's calls to the shadow (``condorpy/startd/poolside/reconnect.py``).
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


def request(command: str, claim_id: str | None, global_job_id: str | None,
            **extra: str) -> Writer:
    """A request as HTCondor's shadow sends it (for tests and a future client)."""
    ad = ClassAd()
    ad["MyType"] = "Command"
    ad["TargetType"] = "Reply"
    ad["Command"] = command
    if claim_id is not None:
        ad["ClaimId"] = claim_id
    if global_job_id is not None:
        ad["GlobalJobId"] = global_job_id
    for k, v in extra.items():
        ad[k] = v
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


def located(w: Writer, starter_addr: str, info: ClassAd) -> Writer:
    """The startd's answer to CA_LOCATE_STARTER: where the job's starter listens."""
    ad = info.copy()
    ad["StarterIpAddr"] = starter_addr
    return success(w, ad)
