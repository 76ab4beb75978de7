"""The startd's daemon ad ("StartD"), beside its slot ads: how the pool's tools find an
execution point by host name. Sans-I/O: ads in, command generators out.

Facts (htcondor/htcondor 23.9.6 ``ResMgr.cpp`` ``publish_daemon_ad``,
``final_update_daemon_ad``, ``send_updates_and_clear_dirty``; ``startd_main.cpp``
``ENABLE_STARTD_DAEMON_AD``, default ``auto``; ``collector_engine.cpp`` ``collect``;
``daemon.cpp`` ``Daemon::getDaemonInfo``; and the ads a 23.9.6 startd gives the
reference pool's collector):

- the startd sends, before its slot ads, one more ``UPDATE_STARTD_AD`` (0) holding a
  single public ad, ``MyType = "StartD"``, ``Name`` the daemon's name (the host's full
  name), ``Machine``, ``MyAddress``, ``StartdIpAddr``, the machine-wide attributes
  (``Arch``, ``OpSys*``, ``Total*``, ``Detected*``, ``CondorVersion``, ...), the
  in-use totals and ``DaemonStartTime``; no private ad follows (the collector reads
  none for this type). Its slot ads then carry ``HasStartDaemonAd = true``; without
  it the collector makes a daemon ad of its own from slot 1's ad;
- at shutdown, after the slots, ``INVALIDATE_STARTD_ADS`` (13) with a query ad whose
  ``TargetType`` is ``"StartD"`` (``Requirements = TARGET.Name == "<name>"``,
  ``Name``, ``MyAddress``) removes it;
- a tool given a host name (no ``@``) asks the collector for startd ads with
  ``Machine == "<full host name>"`` and takes the first ad's ``MyAddress``
  (``condor_vacate <host>``, ``condor_drain <host>``, ``condor_status -direct
  <host>``, ``condor_config_val -startd -name <host>``); a name with a dot is taken
  as the full host name without a DNS lookup (``get_fqdn_from_hostname``).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable

from condorpy.classad import ClassAd
from condorpy.pool import collector
from condorpy.pool.cedar import Writer
from condorpy.pool.security import ClientPolicy, Op, Session
from condorpy.pool.wire_ad import put_classad

STARTD_DAEMON_ADTYPE = "StartD"
HAS_DAEMON_AD = "HasStartDaemonAd"

# Attributes that describe one slot, its claim or its job, never the daemon.
_SLOT_ATTRS = frozenset(a.lower() for a in (
    "Name", "Activity", "State", "SlotID", "SlotType", "SlotTypeID", "Cpus", "Memory",
    "Disk", "GPUs", "VirtualMemory", "Requirements", "Rank", "Start", "CurrentRank",
    "LoadAvg", "CondorLoadAvg", "KeyboardIdle", "ConsoleIdle", "PartitionableSlot",
    "DynamicSlot", "SlotDynamic", "NumDynamicSlots", "ParentSlotId", "TargetType",
    "WithinResourceLimits", "MachineMaxVacateTime", "LastHeardFrom",
    "AuthenticatedIdentity", "AuthenticationMethod", "UpdatesHistory", "UpdatesLost",
    "UpdatesSequenced", "UpdatesTotal", "UpdateSequenceNumber", "PublicClaimId",
    "GlobalJobId", "Owner", "AccountingGroup", "RetirementTimeRemaining",
    HAS_DAEMON_AD))
_SLOT_PREFIXES = ("entered", "claim", "job", "remote", "child", "assigned", "totalslot",
                  "totalclaim", "totaljob", "totaltime", "preempting", "rank",
                  "_condor_priv")


def _is_slot_attr(name: str) -> bool:
    low = name.lower()
    if low in _SLOT_ATTRS or low.startswith(_SLOT_PREFIXES):
        return True
    # policy expressions (START, PREEMPT, WANT_VACATE, ...) are published upper case
    return name == name.upper() and any(c.isalpha() for c in name)


def startd_ad(slot_ads: Iterable[ClassAd], address: str, start_time: int) -> ClassAd | None:
    """The daemon ad of a startd whose slots advertise ``slot_ads`` (None: no slots).
    Its name is the one the slots carry after their ``slotN@`` (the host's full name,
    or STARTD_NAME's ``name@host``); ``Machine`` stays the host's."""
    ads = list(slot_ads)
    if not ads:
        return None
    # a static or partitionable slot (not a d-slot) carries every machine-wide fact
    base = next((a for a in ads if a.get("DynamicSlot") is not True
                 and a.get("SlotType") != "Dynamic"), ads[0])
    ad = ClassAd()
    for name, expr in base.items():
        if not _is_slot_attr(name):
            ad[name] = expr
    host = str(base.get("Machine") or "")
    ad["MyType"] = STARTD_DAEMON_ADTYPE
    ad["Name"] = str(base.get("Name") or "").partition("@")[2] or host
    ad["Machine"] = host
    ad["MyAddress"] = address
    ad["StartdIpAddr"] = address
    ad["DaemonStartTime"] = start_time
    ad["IsLocalStartd"] = False
    for res, attr in (("Cpus", "Cpus"), ("Memory", "Memory"), ("Disk", "Disk")):
        used: float = 0
        for a in ads:
            v = a.get(attr)
            if a.get("State") in ("Claimed", "Preempting") and isinstance(v, (int, float)):
                used += v
        ad[f"TotalInUse{res}"] = float(used) if res == "Cpus" else int(used)
    return ad


def name_of(ad: ClassAd) -> str:
    return str(ad.get("Name") or "")


def invalidation_ad(name: str, address: str) -> ClassAd:
    q = collector.invalidation_ad(name, address)
    q["TargetType"] = STARTD_DAEMON_ADTYPE
    return q


def update(ad: ClassAd, policy: ClientPolicy, peer: str, reuse: Session | None = None
           ) -> Generator[Op, bytes | None, tuple[Session, object]]:
    """``UPDATE_STARTD_AD`` with the daemon ad alone: no private ad follows."""
    def body(w: Writer) -> None:
        put_classad(w, ad, private=False)
    return collector.command(collector.UPDATE_STARTD_AD, policy, peer, body, reuse=reuse)


def invalidate(name: str, address: str, policy: ClientPolicy, peer: str,
               reuse: Session | None = None
               ) -> Generator[Op, bytes | None, tuple[Session, object]]:
    return collector.command(collector.INVALIDATE_STARTD_ADS, policy, peer,
                             lambda w: put_classad(w, invalidation_ad(name, address)),
                             reuse=reuse)
