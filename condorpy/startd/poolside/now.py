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
from collections.abc import Callable

from condorpy.classad import ClassAd
from condorpy.errors import SecurityError
from condorpy.policy.records import CoalesceRefused
from condorpy.pool import claims, coalesce, collector
from condorpy.pool.cedar import Writer
from condorpy.startd.poolside.claims import ClaimTable, client_host, engine_id, session_of

log = logging.getLogger("condorpy.startd.pool")


def serve(table: ClaimTable, slot_ads: Callable[[], dict[str, ClassAd]],
          cmd: coalesce.Coalesce, session_id: str, peer: str) -> Writer:
    """The reply to ``COALESCE_SLOTS`` that came on claim session ``session_id``."""
    w = Writer(crypto=True)
    if session_id not in {session_of(c) for c in cmd.claim_ids}:
        # a claim's session speaks for that claim only
        raise SecurityError("COALESCE_SLOTS names no claim of the session it came on",
                            peer=peer)
    unknown = [c for c in cmd.claim_ids if table.by_claim_id(c) is None]
    if unknown:
        log.info("pool: COALESCE_SLOTS from %s refused: %s is no claim of this daemon",
                 peer, session_of(unknown[0]) or "<malformed>")
        return coalesce.reply(w, coalesce.INVALID_REQUEST,
                              "can't find slot with given claim ID")
    engine = table.engine
    new = table.mint()
    out = engine.coalesce(table.clock.time(), [engine_id(c) for c in cmd.claim_ids],
                          engine_id(new), cmd.ad, client=client_host(peer))
    table.apply(out)
    refused = next((o for o in out if isinstance(o, CoalesceRefused)), None)
    if refused is not None or not engine.has_claim(engine_id(new)):
        table.spend(new)
        why = refused.reason if refused is not None else "Unable to coalesce any slots"
        result = (coalesce.INVALID_STATE if refused is not None and refused.retry
                  else coalesce.FAILURE if refused is None or refused.reason.startswith(
                      "machine is") else coalesce.INVALID_REQUEST)
        log.info("pool: COALESCE_SLOTS from %s: %s (%s)", peer, why, result)
        return coalesce.reply(w, result, why)
    first = table.by_claim_id(cmd.claim_ids[0])
    assert first is not None
    schedd, alive_interval = first.request.scheduler_addr, first.request.alive_interval
    for cid in cmd.claim_ids:
        # the victims' claims are spent (the engine ended them); so are their sessions,
        # once this connection, which already holds its key, is done
        table.drop(engine_id(cid), f"coalesced for job {cmd.ad.get('ClusterId')}."
                   f"{cmd.ad.get('ProcId')}")
    table.grant(new, claims.RequestClaim(new, cmd.ad, schedd, alive_interval))
    slot = next(s.name for s in engine.slots.values()
                if s.claim is not None and s.claim.id == engine_id(new))
    table.publish_claimed(slot, engine_id(new))
    table.changed()
    ad = collector.slot_ads(slot_ads()[slot], table.address, new).public
    log.info("pool: %d claim(s) of %s coalesced into %s for job %s.%s", len(cmd.claim_ids),
             schedd, slot, cmd.ad.get("ClusterId"), cmd.ad.get("ProcId"))
    return coalesce.reply(w, coalesce.SUCCESS, claim_id=new, slot_ad=ad)
