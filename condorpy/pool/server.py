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

:func:`serve_handshake` serves claim sessions only; the daemon's command port runs
:func:`condorpy.pool.secserver.serve`, which takes these and also the sessions the
pool's tools negotiate.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Generator
from dataclasses import dataclass

from condorpy.classad import ClassAd
from condorpy.errors import SecurityError, WireError
from condorpy.pool import claims
from condorpy.pool.aesgcm import hkdf_key
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import DC_AUTHENTICATE, Op, Receive, Send, StartCrypto, resume
from condorpy.pool.wire_ad import get_classad, put_classad


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
    return hkdf_key(parse_claim_id(claim_id).key.encode("ascii", "replace"))


@dataclass(frozen=True)
class Inbound:
    """A command that arrived on an authorised session: its number, the session id and
    the command's first message."""

    command: int
    session_id: str
    payload: bytes


def serve_handshake(peer: str, session_key: Callable[[str], bytes | None], version: str
                    ) -> Generator[Op, bytes | None, Inbound]:
    first = yield Receive("a command")
    assert first is not None
    r = Reader(first, peer)
    cmd = r.get_int("the command number")
    if cmd != DC_AUTHENTICATE:
        raise SecurityError(f"command {cmd} without a security session refused", peer=peer)
    ad = get_classad(r, "the security request", max_attrs=200)
    r.end("the security request")
    use = ad.get("UseSession")
    if not (isinstance(use, str) and use.upper() == "YES"):
        raise SecurityError("a new security session was asked for; condorpy serves "
                            "claim sessions only", peer=peer)
    sid = ad.get("Sid")
    command = ad.get("Command")
    if not isinstance(sid, str) or not isinstance(command, int) or isinstance(command, bool):
        raise WireError("the session request lacks Sid or Command", peer=peer)
    key = session_key(sid)
    want_reply = ad.get("ResumeResponse") is True
    if key is None:
        if want_reply:
            reply = ClassAd()
            reply["ReturnCode"] = "SID_NOT_FOUND"
            yield Send(put_classad(Writer(), reply).payload())
        raise SecurityError(f"unknown session for command {command}", peer=peer)
    if want_reply:
        reply = ClassAd()
        reply["ReturnCode"] = "AUTHORIZED"
        reply["RemoteVersion"] = version
        reply["Nonce"] = base64.b64encode(os.urandom(33)).decode("ascii")
        yield Send(put_classad(Writer(), reply).payload())
    yield StartCrypto(key)
    payload = yield Receive(f"the message of command {command}")
    assert payload is not None
    return Inbound(command, sid, payload)


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
