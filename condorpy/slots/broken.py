"""Broken slots: resources a job's end could not give back, as HTCondor advertises them.

A slot is broken when its job left processes that survive the final kill (with
``STARTD_LEFTOVER_PROCS_BREAK_SLOTS``), or when cleaning up after it failed (the
sandbox, the cgroup or the job's disk volume could not be removed). Its resources are
then lent to no other job: a broken dynamic slot is deleted but what it held is not
returned to its partitionable slot, whose ``TotalSlot*`` shrink by it and which
advertises the loss as ``BrokenSlot*``. The daemon ad lists every broken thing
(``BrokenReasons``, ``<tag>BrokenReason``, ``BrokenContextAds``).

HTCondor keeps a slot broken until the daemon restarts; condorpy mends it once the
cause goes (the leftover processes are gone, a retried cleanup succeeds): the
resources go back to the partitionable slot and the attributes disappear.

Pure: the ledger is told what broke and what mended; it reads no clock and no process.
Other parts (the starter's reaping, the per-job disk volumes) break and mend slots
through the small :class:`BrokenSlotPort`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Iterable, Mapping, Protocol

from condorpy.classad import ClassAd, parse_expr
from condorpy.slots.resources import Resources


class BrokenCode(IntEnum):
    """HTCondor's ``SlotBrokenCode`` values."""

    NO_RESOURCES = 1        # not enough resources to provision the slot
    BIND_FAILED = 2         # non-fungible resources could not be assigned
    NO_EXECUTE_DIR = 3      # no usable execute directory
    UNCLEAN = 4             # cleaning up after the job failed (sandbox)
    UNCLEAN_VOLUME = 5      # the job's logical volume could not be removed
    HUNG_PROCESSES = 6      # job processes survived the final kill
    HUNG_CGROUP = 7         # the job's cgroup could not be removed


@dataclass(frozen=True)
class BrokenCause:
    """Why a slot is broken: HTCondor's code and a one-line reason for people."""

    code: BrokenCode
    reason: str

    @staticmethod
    def of(code: BrokenCode) -> "BrokenCause":
        """The cause with HTCondor's reason for ``code``."""
        return BrokenCause(code, REASONS.get(code, REASONS[BrokenCode.UNCLEAN]))

    @staticmethod
    def leftover_processes(pids: Iterable[int]) -> "BrokenCause":
        shown = sorted(pids)
        return BrokenCause(BrokenCode.HUNG_PROCESSES,
                           f"{len(shown)} job process(es) survived the final kill "
                           f"(pids {', '.join(map(str, shown[:8]))}"
                           f"{' ...' if len(shown) > 8 else ''})")

    @staticmethod
    def cleanup_failed(what: str) -> "BrokenCause":
        return BrokenCause(BrokenCode.UNCLEAN, f"cleanup failed: {what}")

    @staticmethod
    def cgroup_not_removed(path: str) -> "BrokenCause":
        return BrokenCause(BrokenCode.HUNG_CGROUP, f"job cgroup {path} could not be removed")

    @staticmethod
    def volume_not_removed(volume: str) -> "BrokenCause":
        return BrokenCause(BrokenCode.UNCLEAN_VOLUME,
                           f"job volume {volume} could not be removed")


# HTCondor's fixed SlotBrokenReason for each cause a job's end leaves (its startd's);
# the details (pids, volume) go in the item's context.
REASONS = {
    BrokenCode.UNCLEAN: "Could not clean up after job",
    BrokenCode.UNCLEAN_VOLUME: "Could not clean up Logical Volume",
    BrokenCode.HUNG_PROCESSES: "Could not terminate all job processes",
    BrokenCode.HUNG_CGROUP: "Could not cleanup CGroup for slot",
}

# HTCondor's starter exit statuses that may break a slot (exit.h); the starter's own
# copy is condorpy.starter.exit_report.StarterExit (a test holds them equal).
EXIT_IMMORTAL_LVM = 15
EXIT_IMMORTAL_JOB_PROCESS = 16
EXIT_CGROUP_LOCKED = 18


@dataclass(frozen=True)
class BreakRules:
    """The knobs that say which clean-up failures break a slot."""

    leftover_procs: bool = False    # STARTD_LEFTOVER_PROCS_BREAK_SLOTS (false since 24.5.2)
    volume_failure: bool = True     # LVM_CLEANUP_FAILURE_MAKES_BROKEN_SLOT (true, 25.5.1)


@dataclass(frozen=True)
class LeftBehind:
    """What a starter's report says it left, as the startd found it when it looked:
    its exit status, and whether each thing is still there."""

    exit_code: int
    processes: bool = False     # a reported job process is still the same live process
    volume: bool = False        # the job's volume still exists
    cgroup: bool = False        # the job's cgroup still exists


def cleanup_cause(left: LeftBehind, rules: BreakRules) -> BrokenCause | None:
    """Whether a starter's end breaks its slot, and why, as HTCondor's startd decides
    when it reaps the starter: a volume that could not be removed (and is still there)
    breaks it with LVM_CLEANUP_FAILURE_MAKES_BROKEN_SLOT; job processes still alive
    only with STARTD_LEFTOVER_PROCS_BREAK_SLOTS; a cgroup that could not be removed
    although no process was left in it, always. Anything else (a sandbox not
    removed) breaks nothing: it is logged."""
    if left.exit_code == EXIT_IMMORTAL_LVM and left.volume and rules.volume_failure:
        return BrokenCause.of(BrokenCode.UNCLEAN_VOLUME)
    if left.processes and rules.leftover_procs:
        return BrokenCause.of(BrokenCode.HUNG_PROCESSES)
    if left.exit_code == EXIT_CGROUP_LOCKED and left.cgroup:
        return BrokenCause.of(BrokenCode.HUNG_CGROUP)
    return None


def still_broken(code: BrokenCode, left: LeftBehind) -> bool:
    """Whether the cause of a slot broken with ``code`` still holds. HTCondor mends a
    slot once its volume is removed; condorpy also once the leftover processes are
    gone or the cgroup is removed. Other causes hold until the daemon restarts."""
    if code is BrokenCode.UNCLEAN_VOLUME:
        return left.volume
    if code is BrokenCode.HUNG_PROCESSES:
        return left.processes
    if code is BrokenCode.HUNG_CGROUP:
        return left.cgroup
    return True


@dataclass(frozen=True)
class BrokenItem:
    """One broken slot: its name, its partitionable parent (None for a static slot),
    the cause, what it held, when it broke (wall time) and the context HTCondor keeps
    (``BROKEN_SLOT_CONTEXT_ATTRS``: JobId, RemoteUser, RemoteScheddName)."""

    slot: str
    parent: str | None
    cause: BrokenCause
    resources: Resources
    since: int = 0
    context: Mapping[str, Any] = field(default_factory=dict)


class BrokenSlotPort(Protocol):
    """What another part uses to break and mend slots (the starter's reaping, the
    per-job disk volumes): ``report_broken`` once a cause is seen, ``mend`` once it
    has gone. Both are idempotent."""

    def report_broken(self, item: BrokenItem) -> None: ...

    def mend(self, slot: str, code: BrokenCode | None = None) -> BrokenItem | None: ...


class BrokenLedger:
    """The broken slots of one machine, and what each partitionable slot lost."""

    def __init__(self) -> None:
        self._items: dict[str, BrokenItem] = {}

    def report_broken(self, item: BrokenItem) -> None:
        """Break ``item.slot``. Only the first cause of a slot is kept (as HTCondor
        keeps the first context): a second report of a broken slot changes nothing."""
        self._items.setdefault(item.slot, item)

    def mend(self, slot: str, code: BrokenCode | None = None) -> BrokenItem | None:
        """The cause has gone: ``slot`` is no longer broken (only if its cause has
        ``code``, when given). Returns the item mended, whose resources its parent
        takes back, or None."""
        item = self._items.get(slot)
        if item is None or (code is not None and item.cause.code is not code):
            return None
        del self._items[slot]
        return item

    def is_broken(self, slot: str) -> bool:
        return slot in self._items

    def get(self, slot: str) -> BrokenItem | None:
        return self._items.get(slot)

    @property
    def items(self) -> list[BrokenItem]:
        return sorted(self._items.values(), key=lambda i: (i.since, i.slot))

    def lost(self, parent: str) -> Resources:
        """What partitionable slot ``parent`` lost to its broken dynamic slots."""
        total = Resources()
        for item in self._items.values():
            if item.parent == parent:
                total = total + item.resources
        return total

    # -------------------------------------------------------------- ad attributes
    def slot_attrs(self, slot: str) -> dict[str, Any]:
        """A broken slot's own attributes (none for a slot that is not broken): its
        code and reason, no resource to offer, and the reason as its Requirements so
        that no job matches it."""
        item = self._items.get(slot)
        if item is None:
            return {}
        out: dict[str, Any] = {"SlotBrokenCode": int(item.cause.code),
                               "SlotBrokenReason": item.cause.reason,
                               "Cpus": 0, "Memory": 0,
                               "Requirements": item.cause.reason}
        for name in sorted(item.resources.custom):
            out[name] = 0
        return out

    def pslot_attrs(self, parent: str, given: Resources) -> dict[str, Any]:
        """A partitionable slot's ``BrokenSlot*`` and shrunk ``TotalSlot*``, from what
        it was ``given``; none when it lost nothing."""
        lost = self.lost(parent)
        out: dict[str, Any] = {}
        for name, was, gone in (("Cpus", given.cpus, lost.cpus),
                                ("Memory", given.memory_mb, lost.memory_mb),
                                ("Disk", given.disk_kb, lost.disk_kb),
                                *((n, given.custom.get(n, 0), v)
                                  for n, v in sorted(lost.custom.items()))):
            if gone > 0:
                out[f"BrokenSlot{name}"] = _whole(gone)
                out[f"TotalSlot{name}"] = _whole(max(0, was - gone))
        return out

    def daemon_attrs(self) -> dict[str, Any]:
        """The startd daemon ad's view: ``<tag>BrokenReason`` per item, the list of
        those names as ``BrokenReasons`` and the context ads as ``BrokenContextAds``
        (ClassAd list expressions of attribute references, as HTCondor writes them)."""
        out: dict[str, Any] = {}
        reasons: list[str] = []
        contexts: list[str] = []
        for item in self.items:
            reasons.append(f"{item.slot}BrokenReason")
            out[f"{item.slot}BrokenReason"] = item.cause.reason
            ctx = ClassAd()
            ctx["Id"] = item.slot
            ctx["Code"] = int(item.cause.code)
            if item.since:
                ctx["Time"] = item.since
            ctx["Reason"] = item.cause.reason
            for name, value in item.context.items():
                ctx[name] = value
            out[f"{item.slot}BrokenContext"] = ctx
            contexts.append(f"{item.slot}BrokenContext")
        if reasons:
            out["BrokenReasons"] = parse_expr("{" + ",".join(reasons) + "}")
            out["BrokenContextAds"] = parse_expr("{" + ",".join(contexts) + "}")
        return out


def _whole(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v
