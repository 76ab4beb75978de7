"""Building a slot's machine ClassAd from its resources, the machine and a status.

Pure: the clock (``now``), the state and the measurements come in as arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from condorpy.classad import ClassAd
from condorpy.slots.carving import device_ad
from condorpy.slots.inventory import MachineInventory
from condorpy.slots.load import IdlePolicy, slot_idle_times
from condorpy.slots.model import Slot
from condorpy.slots.resources import Resources


@dataclass(frozen=True)
class SlotStatus:
    """What the policy engine knows about a slot now; the defaults are a fresh slot."""

    state: str = "Unclaimed"
    activity: str = "Idle"
    entered_state: float | None = None      # None: ``now``
    entered_activity: float | None = None   # None: ``entered_state``
    condor_load: float = 0.0                # CPU load of the slot's job
    current_rank: float = 0.0


@dataclass(frozen=True)
class Measurements:
    """Machine-wide readings taken by the probes."""

    total_load_avg: float = 0.0
    keyboard_idle: int = 0
    console_idle: int = 0

    @staticmethod
    def from_inventory(inventory: MachineInventory) -> "Measurements":
        return Measurements(inventory.total_load_avg, inventory.keyboard_idle,
                            inventory.console_idle)


@dataclass(frozen=True)
class SlotConfigAttrs:
    """Configuration-defined parts of one slot's ad (already resolved for its SlotID)."""

    start: str = "True"
    rank: str = "0.0"
    # STARTD_ATTRS + STARTD_EXPRS + SLOT<N>_STARTD_ATTRS, each with its (SLOT<N>_) value
    custom: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AdSettings:
    hostname: str
    uid_domain: str
    filesystem_domain: str
    idle: IdlePolicy = field(default_factory=IdlePolicy)
    slot_attrs: tuple[str, ...] = ()                       # STARTD_SLOT_ATTRS
    per_slot: Mapping[int, SlotConfigAttrs] = field(default_factory=dict)  # by SlotID
    started_at: float = 0.0                                # the startd's start time
    # STARTD_HEALTH_EXPRS made into (attribute, expression): Healthy, HealthExprs,
    # HealthFactor (condorpy.slots.health); Healthy then joins Requirements
    health: tuple[tuple[str, str], ...] = ()
    # the startd's name (STARTD_NAME made valid, :func:`daemon_name`): the slots are
    # slotN@<name>; empty: the host's, as a startd without STARTD_NAME names them
    daemon_name: str = ""

    def config_for(self, slot_id: int) -> SlotConfigAttrs:
        return self.per_slot.get(slot_id, SlotConfigAttrs())


# Requirements of a p-slot: START, and the job must fit in what is left.
_WITHIN_LIMITS = ("(MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && "
                  "TARGET.RequestMemory <= MY.Memory && TARGET.RequestDisk <= MY.Disk{custom})")


def device_attr_name(resource: str, device_id: str) -> str:
    """The attribute that holds a device's property ad, named as HTCondor's startd names
    it: ``<resource>_<id>`` with every other character than a letter, digit or ``_``
    made ``_`` (runs of them one), e.g. ``GPUs_GPU_a0223334``."""
    return re.sub(r"__+", "_", re.sub(r"[^A-Za-z0-9_]", "_", f"{resource}_{device_id.strip()}"))


# The HTCondor release whose semantics condorpy follows. Job Requirements written by
# condor_submit compare against it (e.g. the 25.12 disk clause), so it is advertised
# as HTCondor's own startd does, with condorpy named in the build part.
HTCONDOR_VERSION = "25.14.1"
CONDOR_VERSION = f"$CondorVersion: {HTCONDOR_VERSION} 2025-01-01 BuildID: condorpy $"
CONDOR_PLATFORM = "$CondorPlatform: X86_64-Linux $"


def clock_attrs(now: float, utc_offset: int) -> tuple[int, int]:
    """(ClockMin, ClockDay) at ``now`` in a zone ``utc_offset`` seconds east of UTC:
    minutes since local midnight, and the day of the week from Sunday = 0."""
    local = int(now) + utc_offset
    return (local // 60) % 1440, (local // 86400 + 4) % 7   # 1970-01-01 was a Thursday


def machine_ad(inventory: MachineInventory, settings: AdSettings, *, now: float,
               measurements: Measurements, total_condor_load_avg: float,
               num_slots: int, utc_offset: int = 0) -> ClassAd:
    """The attributes every slot of the machine shares; slot ads start from a copy."""
    ad = ClassAd()
    ad["MyType"] = "Machine"
    ad["TargetType"] = "Job"
    ad["CondorVersion"] = CONDOR_VERSION
    ad["CondorPlatform"] = CONDOR_PLATFORM
    # the host the slot names carry (FULL_HOSTNAME): the pool's tools find a startd by
    # host name through Machine (condor_vacate <host>, condor_config_val -name <host>)
    ad["Machine"] = settings.hostname
    for key, value in inventory.facts.items():
        if key != "Machine":
            ad[key] = value
    ad["UidDomain"] = settings.uid_domain
    ad["FileSystemDomain"] = settings.filesystem_domain
    # as HTCondor's startd has them from its starter: condorpy's starter transfers
    # files for its local queue and the daemon for a pool's shadow (every file on an
    # AES-GCM session there); no transfer plugins, so no HasFileTransferPluginMethods
    ad["HasFileTransfer"] = True
    ad["HasPerFileEncryption"] = True
    ad["TotalSlots"] = num_slots
    ad["TotalCpus"] = inventory.cpus
    ad["TotalMemory"] = inventory.memory_mb
    ad["TotalDisk"] = inventory.disk_kb
    ad["TotalVirtualMemory"] = inventory.swap_kb
    ad["DetectedCpus"] = inventory.detected_cpus or inventory.cpus
    ad["DetectedMemory"] = inventory.detected_memory_mb or inventory.memory_mb
    if inventory.detected_cores:
        ad["DetectedCores"] = inventory.detected_cores
    if inventory.detected_physical_cpus:
        ad["DetectedPhysicalCpus"] = inventory.detected_physical_cpus
    for name, res in inventory.custom.items():
        total = len(res.ids) if res.ids else res.count
        ad[f"Total{name}"] = _whole(total)
        ad[f"Detected{name}"] = _whole(total)
        for key, value in res.extra_attrs.items():
            ad[key] = value
    ad["TotalLoadAvg"] = round(measurements.total_load_avg, 6)
    ad["TotalCondorLoadAvg"] = round(total_condor_load_avg, 6)
    ad["ClockMin"], ad["ClockDay"] = clock_attrs(now, utc_offset)
    ad["MyCurrentTime"] = int(now)
    for attr, text in settings.health:
        ad.set_expr(attr, text)
    return ad


def build_slot_ad(slot: Slot, available: Resources, inventory: MachineInventory,
                  settings: AdSettings, status: SlotStatus, *, now: float,
                  measurements: Measurements, load_avg: float, condor_load_avg: float,
                  total_condor_load_avg: float, num_slots: int, num_dynamic: int = 0,
                  extra: Mapping[str, Any] | None = None,
                  base: ClassAd | None = None) -> ClassAd:
    """The ClassAd ``slot`` advertises. ``available`` is what it has free (for a p-slot,
    what its d-slots left; otherwise its whole allocation). ``base`` is the
    :func:`machine_ad` for the same inputs, when the caller builds many slots."""
    ad = base.copy() if base is not None else machine_ad(
        inventory, settings, now=now, measurements=measurements,
        total_condor_load_avg=total_condor_load_avg, num_slots=num_slots)
    ad["Name"] = f"{slot.name}@{settings.daemon_name or settings.hostname}"
    ad["SlotID"] = slot.slot_id
    ad["SlotTypeID"] = slot.type_id
    ad["SlotType"] = slot.kind.value
    if slot.is_partitionable:
        ad["PartitionableSlot"] = True
        ad["NumDynamicSlots"] = num_dynamic
    if slot.is_dynamic:
        ad["DynamicSlot"] = True
        ad["DSlotId"] = slot.sub_id

    given = slot.resources
    ad["Cpus"] = available.cpus
    ad["Memory"] = available.memory_mb
    ad["Disk"] = available.disk_kb
    ad["VirtualMemory"] = available.swap_kb
    ad["TotalSlotCpus"] = given.cpus
    ad["TotalSlotMemory"] = given.memory_mb
    ad["TotalSlotDisk"] = given.disk_kb

    custom_limits = put_custom_resources(ad, given, available, inventory)

    keyboard, console = slot_idle_times(slot.slot_id, measurements.keyboard_idle,
                                        measurements.console_idle, settings.idle, now,
                                        settings.started_at)
    ad["KeyboardIdle"] = keyboard
    ad["ConsoleIdle"] = console
    ad["LoadAvg"] = round(load_avg, 6)
    ad["CondorLoadAvg"] = round(condor_load_avg, 6)

    entered_state = int(status.entered_state if status.entered_state is not None else now)
    ad["State"] = status.state
    ad["Activity"] = status.activity
    ad["EnteredCurrentState"] = entered_state
    ad["EnteredCurrentActivity"] = int(status.entered_activity
                                       if status.entered_activity is not None else entered_state)
    ad["CurrentRank"] = status.current_rank

    config = settings.config_for(slot.slot_id)
    ad.set_expr("Start", config.start)
    ad.set_expr("Rank", config.rank)
    # NO_JOB_NETWORKING: only a job that says it needs no network (want_job_networking
    # = false) matches, as HTCondor adds to WithinResourceLimits
    offline = " && (TARGET.WantJobNetworking =?= false)" \
        if ad.get("HasJobNetworking", True) is False else ""
    # as HTCondor's startd: an unhealthy machine matches no new work
    healthy = "Healthy && " if settings.health else ""
    if slot.is_partitionable:
        limits = _WITHIN_LIMITS.format(custom="".join(f" && {c}" for c in custom_limits)
                                       + offline)
        ad.set_expr("WithinResourceLimits", limits)
        ad.set_expr("Requirements", healthy + "START && (WithinResourceLimits)")
    else:
        ad.set_expr("Requirements", healthy + "START" + offline)
    for attr, text in config.custom:
        ad.set_expr(attr, text)
    for key, value in (extra or {}).items():
        ad[key] = value
    return ad


def put_custom_resources(ad: ClassAd, given: Resources, available: Resources,
                         inventory: MachineInventory) -> list[str]:
    """Set each custom resource's slot attributes in ``ad`` (TotalSlot<name>, <name>,
    Assigned<name>, the held devices' property ads, Available<name>); returns the
    p-slot resource-limit clauses they imply."""
    custom_limits = []
    for name, res in inventory.custom.items():
        ad[f"TotalSlot{name}"] = _whole(given.custom.get(name, 0))
        ad[name] = _whole(available.custom.get(name, 0))
        if res.ids:
            held = available.devices.get(name, ())
            ad[f"Assigned{name}"] = ",".join(held)
            if res.properties:
                for device in held:
                    ad[device_attr_name(name, device)] = device_ad(
                        device, res.properties.get(device, {}))
                # what every held device shares is also the slot's own <resource>_<prop>
                for prop, value in shared_properties(held, res.properties).items():
                    ad[f"{name}_{prop}"] = value
                # references to the property ads, for countMatches()-style matching
                ad.set_expr(f"Available{name}",
                            "{" + ", ".join(device_attr_name(name, d) for d in held) + "}")
        custom_limits.append(f"(TARGET.Request{name} ?: 0) <= MY.{name}")
    return custom_limits


def shared_properties(held: tuple[str, ...] | list[str],
                      properties: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The properties whose value every held device has (none when none is held)."""
    if not held:
        return {}
    first = properties.get(held[0], {})
    return {k: v for k, v in first.items()
            if all(k in properties.get(d, {}) and properties[d][k] == v for d in held[1:])}


def _whole(value: float) -> int | float:
    return int(value) if value == int(value) else value

