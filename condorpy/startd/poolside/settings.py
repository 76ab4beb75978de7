"""The pool knobs: which collector, how to talk to it, the command port and who may
use it. UPDATE_INTERVAL is the policy engine's setting (it also paces the policy
cycle), read there once."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from condorpy.config import Config
from condorpy.pool import secserver
from condorpy.pool.security import ClientPolicy, client_policy
from condorpy.pool.sinful import Address, parse_address
from condorpy.slots.ads import CONDOR_VERSION


@dataclass(frozen=True)
class PoolSettings:
    collector: Address
    policy: ClientPolicy
    interface: str
    port: int
    accept_claims: bool = False
    # who may run which command on the command port (ALLOW_*/DENY_*, SEC_<LEVEL>_*)
    server: secserver.ServerPolicy | None = None
    # how long a starter waits for its shadow's answer (HTCondor's syscall socket
    # timeout): the shadow may take the job's exit only once its schedd answers
    upload_timeout: float = 300.0
    # the alias= of the advertised address (HOST_ALIAS, by default FULL_HOSTNAME)
    alias: str = ""


def pool_settings(cfg: Config) -> PoolSettings | None:
    """The pool this configuration joins, or None when it names no collector."""
    text = (cfg.get("COLLECTOR_HOST") or "").strip()
    if not text:
        return None
    first = text.replace(",", " ").split()[0]
    addr = parse_address(first, source="COLLECTOR_HOST")
    if addr.port == 0:
        raise cfg.invalid("COLLECTOR_HOST", "a collector address with its port (port 0 "
                          "means a personal collector's random port)")
    iface = (cfg.get("NETWORK_INTERFACE") or "*").strip()
    return PoolSettings(
        collector=addr,
        policy=client_policy(cfg, CONDOR_VERSION),
        interface="" if iface == "*" else iface,
        port=cfg.get_int("STARTD_PORT", 0),
        # An execution point in a pool runs the pool's jobs, as HTCondor's startd does;
        # False advertises the slots (Requirements = false) without taking work.
        accept_claims=cfg.get_bool("CONDORPY_POOL_ACCEPT_CLAIMS", True),
        server=secserver.server_policy(cfg),
        upload_timeout=float(max(cfg.knob_int("STARTER_UPLOAD_TIMEOUT"), 1)),
        alias=(cfg.get("HOST_ALIAS") or "").strip())


def local_ip(settings: PoolSettings) -> str:
    """The address peers reach this daemon at: NETWORK_INTERFACE, else the local end of
    a route to the collector (no packet is sent)."""
    if settings.interface:
        return settings.interface
    try:
        infos = socket.getaddrinfo(settings.collector.host, settings.collector.port,
                                   type=socket.SOCK_DGRAM)
        family, _, _, _, sockaddr = infos[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect(sockaddr)
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"
