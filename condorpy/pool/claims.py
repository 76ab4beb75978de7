"""The claim commands a schedd and shadow send an execution point: typed records in,
reply bytes out. Sans-I/O; the daemon decides (through its policy engine).

Wire shapes (htcondor/htcondor ``dc_startd.cpp`` ``ClaimStartdMsg``, ``activateClaim``,
``deactivateClaim``; ``command.cpp`` on the startd's side):

- ``REQUEST_CLAIM`` (442): secret claim id, the request (job) ad, string scheduler
  address, int alive interval, and, from some schedds, int n and n secret extra
  claim ids. Reply, one message: for each slot claimed, ``int 7``, secret claim id,
  the slot ad (when the request ad has ``_condor_SEND_CLAIMED_AD``); then ``int 1``
  (OK), or, for a partitionable slot and ``_condor_SEND_LEFTOVERS``, ``int 5``, the
  partitionable slot's new claim id (secret) and its ad; or ``int 0`` (refused).
- ``ACTIVATE_CLAIM`` (444): secret claim id, int starter version, the job ad. Reply
  ``int 1`` (OK), ``int 0`` (NOT_OK) or ``int 2`` (try again), then, when the job ad
  asks with ``_condor_send_activation_failure_ad``, a failure ad; EOM.
- ``DEACTIVATE_CLAIM`` (403), ``_FORCIBLY`` (404), ``_JOB_DONE`` (413): secret claim id.
  Reply: an ad with ``Start`` (whether the claim may be used again).
- ``RELEASE_CLAIM`` (443): secret claim id. No reply.
"""

from __future__ import annotations

from dataclasses import dataclass

from condorpy.classad import ClassAd
from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.wire_ad import get_classad, put_classad

DEACTIVATE_CLAIM = 403
DEACTIVATE_CLAIM_FORCIBLY = 404
DEACTIVATE_CLAIM_JOB_DONE = 413
ALIVE = 441
REQUEST_CLAIM = 442
RELEASE_CLAIM = 443
ACTIVATE_CLAIM = 444
NOT_OK = 0
OK = 1
TRY_AGAIN = 2
REPLY_LEFTOVERS_SECRET = 5
REPLY_SLOT_AD = 7
MAX_EXTRA_CLAIMS = 1024
DEACTIVATES = (DEACTIVATE_CLAIM, DEACTIVATE_CLAIM_FORCIBLY, DEACTIVATE_CLAIM_JOB_DONE)
CLAIM_COMMANDS = (REQUEST_CLAIM, RELEASE_CLAIM, ACTIVATE_CLAIM) + DEACTIVATES


@dataclass(frozen=True)
class RequestClaim:
    claim_id: str
    ad: ClassAd
    scheduler_addr: str
    alive_interval: int
    extra_claims: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActivateClaim:
    claim_id: str
    starter_version: int
    ad: ClassAd


@dataclass(frozen=True)
class ClaimIdOnly:
    """DEACTIVATE_CLAIM*, RELEASE_CLAIM: just the claim id."""

    command: int
    claim_id: str


ClaimCommand = RequestClaim | ActivateClaim | ClaimIdOnly


def parse(command: int, r: Reader) -> ClaimCommand:
    """The command's message; raises WireError naming the peer if it is malformed."""
    name = {REQUEST_CLAIM: "REQUEST_CLAIM", ACTIVATE_CLAIM: "ACTIVATE_CLAIM",
            RELEASE_CLAIM: "RELEASE_CLAIM"}.get(command, f"command {command}")
    if command not in CLAIM_COMMANDS:
        raise WireError(f"command {command} is not one an execution point takes",
                        peer=r.peer)
    cid = r.get_secret(f"the claim id of {name}")
    out: ClaimCommand
    if command == REQUEST_CLAIM:
        ad = get_classad(r, f"the request ad of {name}")
        addr = r.get_str(f"the scheduler address of {name}")
        alive = r.get_int(f"the alive interval of {name}")
        extra: list[str] = []
        if r.remaining:
            n = r.get_int(f"the extra claim count of {name}")
            if not 0 <= n <= MAX_EXTRA_CLAIMS:
                raise WireError(f"{name} claims {n} extra claims", peer=r.peer)
            extra = [r.get_secret(f"extra claim {i + 1} of {name}") for i in range(n)]
        out = RequestClaim(cid, ad, addr, alive, tuple(extra))
    elif command == ACTIVATE_CLAIM:
        version = r.get_int(f"the starter version of {name}")
        ad = get_classad(r, f"the job ad of {name}")
        out = ActivateClaim(cid, version, ad)
    else:
        out = ClaimIdOnly(command, cid)
    r.end(f"the message of {name}")
    return out


@dataclass(frozen=True)
class ClaimGranted:
    claim_id: str
    slot_ad: ClassAd


def request_claim_reply(w: Writer, granted: list[ClaimGranted], ok: bool,
                        leftovers: ClaimGranted | None = None) -> Writer:
    for g in granted:
        w.put_int(REPLY_SLOT_AD).put_secret(g.claim_id)
        put_classad(w, g.slot_ad, private=False)
    if not ok:
        return w.put_int(NOT_OK)
    if leftovers is not None:
        w.put_int(REPLY_LEFTOVERS_SECRET).put_secret(leftovers.claim_id)
        return put_classad(w, leftovers.slot_ad, private=False)
    return w.put_int(OK)


def activate_reply(w: Writer, code: int, failure: ClassAd | None = None) -> Writer:
    w.put_int(code)
    if failure is not None:
        put_classad(w, failure)
    return w


def deactivate_reply(w: Writer, start: bool) -> Writer:
    ad = ClassAd()
    ad["Start"] = start
    return put_classad(w, ad)
