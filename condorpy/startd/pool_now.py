"""condor_now against this daemon: a pool schedd's ``COALESCE_SLOTS``
(:mod:`condorpy.pool.coalesce`) answered by the policy engine's ``coalesce``, the
same slots and claims local and pool jobs use (``docs/pool.md``).

The schedd has vacated its victim jobs and holds their claims; it names them, on the
security session of one of them, with the now-job's ad. The engine ends the claims,
gives their d-slots' resources back to the partitionable slot and carves one d-slot
for the now-job, claimed at once; that claim gets a claim id of its own (a new
security session), which goes back with the slot's ad. The schedd then activates it
as any claim, and keeps it alive as the victims' claims were (their schedd address
and alive interval carry over).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from condorpy.errors import SecurityError
from condorpy.policy.records import CoalesceRefused
from condorpy.pool import claims, coalesce, collector
from condorpy.pool.cedar import Writer
from condorpy.pool.server import parse_claim_id

if TYPE_CHECKING:
    from condorpy.startd.pool_link import PoolLink

log = logging.getLogger("condorpy.startd.pool")


def _session(claim_id: str) -> str:
    try:
        return parse_claim_id(claim_id).session_id
    except ValueError:
        return ""


def serve(link: "PoolLink", cmd: coalesce.Coalesce, session_id: str, peer: str) -> Writer:
    """The reply to ``COALESCE_SLOTS`` that came on claim session ``session_id``."""
    from condorpy.startd.pool_link import engine_id
    w = Writer(crypto=True)
    if session_id not in {_session(c) for c in cmd.claim_ids}:
        # a claim's session speaks for that claim only
        raise SecurityError("COALESCE_SLOTS names no claim of the session it came on",
                            peer=peer)
    unknown = [c for c in cmd.claim_ids if c not in link.pool_claims]
    if unknown:
        log.info("pool: COALESCE_SLOTS from %s refused: %s is no claim of this daemon",
                 peer, _session(unknown[0]) or "<malformed>")
        return coalesce.reply(w, coalesce.INVALID_REQUEST,
                              "can't find slot with given claim ID")
    new = link._mint()
    out = link.engine.coalesce(link.clock.time(), [engine_id(c) for c in cmd.claim_ids],
                               engine_id(new), cmd.ad)
    link.apply(out)
    refused = next((o for o in out if isinstance(o, CoalesceRefused)), None)
    if refused is not None or not link.engine.has_claim(engine_id(new)):
        link.sessions.pop(_session(new), None)
        why = refused.reason if refused is not None else "Unable to coalesce any slots"
        result = (coalesce.INVALID_STATE if refused is not None and refused.retry
                  else coalesce.FAILURE if refused is None or refused.reason.startswith(
                      "machine is") else coalesce.INVALID_REQUEST)
        log.info("pool: COALESCE_SLOTS from %s: %s (%s)", peer, why, result)
        return coalesce.reply(w, result, why)
    first = link.pool_claims[cmd.claim_ids[0]]
    for cid in cmd.claim_ids:
        # the victims' claims are spent (the engine ended them); so are their sessions,
        # once this connection, which already holds its key, is done
        link.pool_claims.pop(cid, None)
        link.next_alive.pop(cid, None)
        link.next_refresh.pop(cid, None)
        link.sessions.pop(_session(cid), None)
        for slot, c in list(link.claim_ids.items()):
            if c == cid:
                del link.claim_ids[slot]
    link.pool_claims[new] = claims.RequestClaim(new, cmd.ad, first.scheduler_addr,
                                                first.alive_interval)
    slot = next(s.name for s in link.engine.slots.values()
                if s.claim is not None and s.claim.id == engine_id(new))
    link.claim_ids[slot] = new
    link._fresh_claim_ids = True
    ad = collector.slot_ads(link._ads()[slot], link.address, new).public
    log.info("pool: %d claim(s) of %s coalesced into %s for job %s.%s", len(cmd.claim_ids),
             first.scheduler_addr, slot, cmd.ad.get("ClusterId"), cmd.ad.get("ProcId"))
    return coalesce.reply(w, coalesce.SUCCESS, claim_id=new, slot_ad=ad)
