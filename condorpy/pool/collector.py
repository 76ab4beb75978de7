"""The collector's side of an execution point: slot ads in, slot ads out.

Facts (htcondor/htcondor ``dc_collector.cpp`` ``finishUpdate``, ``ResMgr.cpp``,
``Resource.cpp`` ``publish_private``, ``collector.cpp``; checked against a real 23.9.6
collector, whose private ads were read back with ``QUERY_STARTD_PVT_ADS``):

- ``UPDATE_STARTD_AD`` (0): one message holding the public slot ad and then its
  private ad (``MyType``, ``Name``, ``MyAddress``, ``StartdIpAddr``, ``ClaimId`` and
  ``Capability``); the collector keys both by ``Name`` and ``MyAddress`` and gives the
  private one only to the negotiator, which needs its ``ClaimId`` to match the slot.
  No reply.
- ``INVALIDATE_STARTD_ADS`` (13): a query ad (``MyType = "Query"``, ``TargetType =
  "Machine"``, ``Requirements = TARGET.Name == "<name>"``, ``Name``, ``MyAddress``)
  removes a slot's ads. No reply.
- ``QUERY_STARTD_ADS`` (5) / ``QUERY_STARTD_PVT_ADS`` (10): a query ad; the reply is,
  per ad, ``int 1`` and the ad, then ``int 0``, in one message.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from dataclasses import dataclass

from condorpy.classad import ClassAd
from condorpy.classad.ast import quote_string
from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import (ClientPolicy, Op, Receive, Send, Session,
                                    client_handshake, resume)
from condorpy.pool.wire_ad import get_classad, is_private, put_classad

UPDATE_STARTD_AD = 0
QUERY_STARTD_ADS = 5
QUERY_STARTD_PVT_ADS = 10
INVALIDATE_STARTD_ADS = 13


@dataclass(frozen=True)
class SlotAds:
    """What the collector is told about one slot."""

    name: str
    public: ClassAd
    private: ClassAd


def new_claim_id(address: str, birthdate: int, seq: int, short_version: str) -> str:
    """A claim id as HTCondor's startd makes them (``claim.cpp`` ``newIdString`` and the
    ``ClaimId`` constructor): ``<address>#<startd birth>#<sequence>#[session policy]key``,
    the key 64 random hex characters. The bracketed policy and the key define the
    security session a schedd and shadow use to reach this slot."""
    policy = (f'[Integrity="YES";Encryption="YES";ShortVersion="{short_version}";'
              'CryptoMethods="AES";CryptoMethodsList="AES";]')
    return f"{address}#{birthdate}#{seq}#{policy}{os.urandom(32).hex()}"


def slot_ads(ad: ClassAd, address: str, claim_id: str) -> SlotAds:
    """The public and private ads for a slot whose current ad is ``ad``."""
    public = ClassAd()
    for name, expr in ad.items():
        if not is_private(name):
            public[name] = expr
    public["MyType"] = "Machine"
    public["TargetType"] = "Job"
    public["MyAddress"] = address
    public["StartdIpAddr"] = address
    # the daemon has an ad of its own (daemon_ad.py): the collector makes none from slot 1
    public["HasStartDaemonAd"] = True
    # condorpy's starter side speaks HTCondor's file transfer (filetransfer.py), which
    # condor_submit's default Requirements ask of a machine in another
    # FILESYSTEM_DOMAIN; every file travels on an AES-GCM session, so per-file
    # encryption is always had. No transfer plugins: no HasFileTransferPluginMethods,
    # so jobs with URLs to fetch do not match here.
    public["HasFileTransfer"] = True
    public["HasPerFileEncryption"] = True
    name = str(ad.get("Name") or "")
    private = ClassAd()
    private["MyType"] = "Machine"
    private["Name"] = name
    private["MyAddress"] = address
    private["StartdIpAddr"] = address
    private["ClaimId"] = claim_id
    private.set_expr("Capability", "ClaimId")
    return SlotAds(name, public, private)


def invalidation_ad(name: str, address: str) -> ClassAd:
    q = ClassAd()
    q["MyType"] = "Query"
    q["TargetType"] = "Machine"
    q.set_expr("Requirements", f"TARGET.Name == {_quote(name)}")
    q["Name"] = name
    q["MyAddress"] = address
    return q


def _quote(s: str) -> str:
    return quote_string(s, '"')


def command(cmd: int, policy: ClientPolicy, peer: str, body: Callable[[Writer], object],
            reply: Callable[[Reader], object] | None = None, reuse: Session | None = None
            ) -> Generator[Op, bytes | None, tuple[Session, object]]:
    """One command to a collector: the handshake (or the resumption of the session
    ``reuse`` an earlier handshake made), the command's message, its reply."""
    if reuse is not None and reuse.sid and reuse.key:
        session = yield from resume(cmd, reuse.sid, reuse.key, peer, policy.version)
    else:
        session = yield from client_handshake(cmd, policy, peer)
    w = Writer(crypto=session.encrypted)
    if session.raw:
        w.put_int(cmd)
    body(w)
    yield Send(w.payload())
    result: object = None
    if reply is not None:
        payload = yield Receive(f"the reply to command {cmd}")
        assert payload is not None
        r = Reader(payload, peer, crypto=session.encrypted)
        result = reply(r)
        r.end(f"the reply to command {cmd}")
    return session, result


def update(ads: SlotAds, policy: ClientPolicy, peer: str, reuse: Session | None = None
           ) -> Generator[Op, bytes | None, tuple[Session, object]]:
    def body(w: Writer) -> None:
        put_classad(w, ads.public, private=False)
        put_classad(w, ads.private)
    return command(UPDATE_STARTD_AD, policy, peer, body, reuse=reuse)


def invalidate(name: str, address: str, policy: ClientPolicy, peer: str,
               reuse: Session | None = None
               ) -> Generator[Op, bytes | None, tuple[Session, object]]:
    return command(INVALIDATE_STARTD_ADS, policy, peer,
                   lambda w: put_classad(w, invalidation_ad(name, address)), reuse=reuse)


def query(cmd: int, constraint: str, policy: ClientPolicy, peer: str,
          limit: int = 100_000) -> Generator[Op, bytes | None, tuple[Session, object]]:
    """``QUERY_STARTD_ADS`` or ``QUERY_STARTD_PVT_ADS``; the result is a list of ads."""
    q = ClassAd()
    q["MyType"] = "Query"
    q["TargetType"] = "Machine"
    q.set_expr("Requirements", constraint)

    def read(r: Reader) -> list[ClassAd]:
        out: list[ClassAd] = []
        while r.get_int("the more-ads flag"):
            if len(out) >= limit:
                raise WireError(f"more than {limit} ads in a query reply", peer=peer)
            out.append(get_classad(r, f"ad {len(out) + 1} of the query reply"))
        return out
    return command(cmd, policy, peer, lambda w: put_classad(w, q), read)
