"""The server side of a CEDAR command connection, sans-I/O: claim sessions.

A schedd or shadow reaches an execution point over the security session carried in
the claim id the execution point published (htcondor/htcondor ``claim.cpp``,
``condor_claimid_parser.h``, ``condor_secman.cpp`` ``CreateNonNegotiatedSecuritySession``,
``daemon_command.cpp`` resume path):

- a claim id is ``<address>#<birth>#<seq>#[policy]<key>``; the session id is all before
  the last ``#``, the AES key is HKDF-SHA256 (salt ``htcondor``, info ``keygen``) of
  the key's ASCII text;
- the client sends ``int 60010`` (DC_AUTHENTICATE) and an ad with ``UseSession =
  "YES"``, ``Sid``, ``Command``, a ``Nonce`` and, from peers that know the session's
  version is at least 9.9, ``ResumeResponse = true``; the server then answers an ad
  ``ReturnCode = "AUTHORIZED"`` (or ``"SID_NOT_FOUND"``), ``RemoteVersion``, its own
  ``Nonce``, EOM, in the clear; both switch to AES-GCM with the session key, and the
  command's own message follows.

The daemon's command port serves these sessions (and the ones the pool's tools
negotiate) in :func:`condorpy.pool.secserver.serve`; this module holds the claim id's
parts and the client side.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from condorpy.pool import claims
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import Op, Receive, Send, resume


@dataclass(frozen=True)
class ClaimIdParts:
    session_id: str
    info: str
    key: str


def parse_claim_id(claim_id: str) -> ClaimIdParts:
    sid, sep, tail = claim_id.rpartition("#")
    if not sep or not sid:
        raise ValueError("a claim id has the form <address>#<birth>#<seq>#[info]key")
    info = ""
    if tail.startswith("["):
        end = tail.find("]")
        if end < 0:
            raise ValueError("unterminated session info in a claim id")
        info, tail = tail[1:end], tail[end + 1:]
    return ClaimIdParts(sid, info, tail)


def claim_session_key(claim_id: str) -> bytes:
    # cryptography (~8 MB of the daemon's memory) loads with the first pool session, not
    # at import: an EP without a pool never needs it
    from condorpy.pool.aesgcm import hkdf_key

    return hkdf_key(parse_claim_id(claim_id).key.encode("ascii", "replace"))


def resume_session(command: int, claim_id: str, peer: str, version: str = ""
                   ) -> Generator[Op, bytes | None, None]:
    """The client side of the same exchange: start ``command`` on the session carried in
    ``claim_id`` (what a schedd does to reach a slot, and a startd to send ALIVE)."""
    yield from resume(command, parse_claim_id(claim_id).session_id,
                      claim_session_key(claim_id), peer, version)


def alive(claim_id: str, peer: str, version: str = "") -> Generator[Op, bytes | None, int]:
    """``ALIVE`` (441), execution point to schedd on the claim's session: the claim id;
    the answer is the schedd's alive interval, or -1 for a claim it no longer knows
    (``claim.cpp`` ``sendAlive``, ``schedd.cpp`` ``receive_startd_alive``)."""
    yield from resume_session(claims.ALIVE, claim_id, peer, version)
    yield Send(Writer(crypto=True).put_secret(claim_id).payload())
    payload = yield Receive("the answer to ALIVE")
    assert payload is not None
    r = Reader(payload, peer, crypto=True)
    answer = r.get_int("the answer to ALIVE")
    r.end("the answer to ALIVE")
    return answer


def release_claim(claim_id: str, peer: str, version: str = ""
                  ) -> Generator[Op, bytes | None, None]:
    """``RELEASE_CLAIM`` (443), execution point to schedd on the claim's session: the
    claim id, no answer. HTCondor's startd sends it whenever it ends a claim the schedd
    did not end itself (``claim.cpp`` ``Claim::vacate``), so the schedd drops its match
    at once instead of trying to run its next job on a claim that is gone."""
    yield from resume_session(claims.RELEASE_CLAIM, claim_id, peer, version)
    yield Send(Writer(crypto=True).put_secret(claim_id).payload())
