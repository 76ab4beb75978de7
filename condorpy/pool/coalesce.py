"""``COALESCE_SLOTS``, what a schedd sends an execution point for ``condor_now``:
typed record in, reply bytes out. Sans-I/O; the policy engine decides (``coalesce``).

Facts (htcondor/htcondor 23.9.6 ``schedd.cpp`` ``reassign_slot_handler``,
``pccc.cpp``, ``startd_main.cpp``, ``command.cpp`` ``command_coalesce_slots``,
``command_strings.h``; and the reference pool's 23.9.6 schedd and startd, whose logs
show it for a single victim too):

- ``condor_now <now-job> <victim>...`` asks the schedd (``REASSIGN_SLOT``); the
  schedd has each victim's shadow vacate it fast (``DEACTIVATE_CLAIM_FORCIBLY``) and
  keeps the claims; once every victim's shadow has exited it sends the startd
  ``COALESCE_SLOTS`` (522, DAEMON level) on the security session of one of the claims,
  whether there is one victim or several;
- the message: a command ad whose private ``ClaimIdList`` holds the claim ids,
  separated by commas (and spaces), then the now-job's ad as the resource request,
  EOM;
- the reply, one message: an ad with ``Result`` (``"Success"``, ``"Failure"``,
  ``"InvalidRequest"``, ``"InvalidState"``) and ``ErrorString``, or, on success, the
  new claim's private ``ClaimId``; then the new slot's ad (empty on failure), whose
  ``MyAddress`` the schedd reaches it at;
- ``InvalidState`` (a slot not idle yet: its starter is still on its way out) makes
  the schedd ask again a second later, 20 times at most; the other failures end the
  attempt. On success the schedd starts the now-job on the new claim (a shadow,
  ``ACTIVATE_CLAIM``), as on any claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from condorpy.classad import ClassAd
from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.wire_ad import get_classad, put_classad

COALESCE_SLOTS = 522
MAX_CLAIMS = 1024
SUCCESS = "Success"
FAILURE = "Failure"
INVALID_REQUEST = "InvalidRequest"
INVALID_STATE = "InvalidState"


@dataclass(frozen=True)
class Coalesce:
    claim_ids: tuple[str, ...]        # without repeats, in the order given
    ad: ClassAd                       # the now-job's ad


def parse(r: Reader) -> Coalesce:
    """The command's message; raises WireError naming the peer if it is malformed."""
    command = get_classad(r, "the command ad of COALESCE_SLOTS")
    job = get_classad(r, "the resource request of COALESCE_SLOTS")
    r.end("the message of COALESCE_SLOTS")
    text = command.get("ClaimIdList")
    if not isinstance(text, str):
        raise WireError("COALESCE_SLOTS without a ClaimIdList", peer=r.peer)
    ids = tuple(dict.fromkeys(t for t in text.replace(",", " ").split() if t))
    if not ids:
        raise WireError("COALESCE_SLOTS with an empty ClaimIdList", peer=r.peer)
    if len(ids) > MAX_CLAIMS:
        raise WireError(f"COALESCE_SLOTS names {len(ids)} claims", peer=r.peer)
    return Coalesce(ids, job)


def reply(w: Writer, result: str, error: str = "", claim_id: str | None = None,
          slot_ad: ClassAd | None = None) -> Writer:
    ad = ClassAd()
    ad["Result"] = result
    if error:
        ad["ErrorString"] = error
    if claim_id is not None:
        ad["ClaimId"] = claim_id            # private: travels as a secret
    put_classad(w, ad)
    return put_classad(w, slot_ad if slot_ad is not None else ClassAd(), private=False)
