"""The pool's tools on the command port (condor_status -direct, condor_vacate,
condor_drain, condor_config_val, condor_ping), through the local CLI's own handler."""

from __future__ import annotations

import logging
from collections.abc import Callable

from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError, PoolError
from condorpy.pool import admin, secserver
from condorpy.pool.cedar import Writer
from condorpy.startd.poolside.shadow import JobHost

log = logging.getLogger("condorpy.startd.pool")


def answer(cmd: admin.AdminCommand, inbound: secserver.Authorized, peer: str,
           host: JobHost | None, public_ads: Callable[[], list[ClassAd]],
           slot_named: Callable[[str], str | None]) -> Writer | None:
    """The reply to an administration command (None: it has none)."""
    w = Writer(crypto=inbound.crypto)
    what = admin.NAMES.get(inbound.command, str(inbound.command))
    log.info("pool: %s from %s at %s", what, inbound.user, peer)
    if isinstance(cmd, (admin.Nop, admin.SecQuery)):
        # condor_ping: the handshake authorised it; nothing runs
        return admin.sec_query_reply(w) if isinstance(cmd, admin.SecQuery) else None
    if isinstance(cmd, admin.Query):
        return admin.query_reply(w, cmd.ad, public_ads())
    if host is None:
        raise PoolError(f"{what} from {peer}: this daemon takes no commands")
    if isinstance(cmd, admin.ConfigVal):
        out = host.pool_command("config_val", {"names": [cmd.name]}, inbound.user)
        value = out.get(cmd.name, {}).get("value") if isinstance(out, dict) else None
        log.info("pool: %s %s from %s: %s", what, cmd.name, peer,
                 "defined" if isinstance(value, str) else "not defined")
        return admin.config_reply(w, value if isinstance(value, str) else None)
    try:
        if isinstance(cmd, admin.Vacate):
            slots: list[str] = []
            if cmd.slot is not None:
                slot = slot_named(cmd.slot)
                if slot is None:
                    log.warning("pool: %s from %s: no slot %s here", what, peer, cmd.slot)
                    return None
                slots = [slot]
            host.pool_command("vacate", {"slots": slots, "fast": cmd.fast}, inbound.user)
            return None
        if isinstance(cmd, admin.Drain):
            if cmd.on_completion.startswith("unsupported"):
                return admin.result_reply(w, False, error="condorpy drains with "
                                          "nothing, resume or exit on completion")
            out = host.pool_command("drain", {
                "how": cmd.how, "on_completion": cmd.on_completion,
                "reason": cmd.reason or f"by command (user {inbound.user})",
                "check": cmd.check, "start": cmd.start}, inbound.user)
            rid = out.get("request_id") if isinstance(out, dict) else None
            return admin.result_reply(w, True, str(rid) if rid else None)
        host.pool_command("cancel_drain", {"request_id": cmd.request_id}, inbound.user)
        return admin.result_reply(w, True)
    except (CondorpyError, ValueError, TypeError) as exc:
        log.warning("pool: %s from %s refused: %s", what, peer, exc)
        if isinstance(cmd, admin.Vacate):
            return None
        return admin.result_reply(w, False, error=str(exc))
