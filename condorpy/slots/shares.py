"""Reading `SLOT_TYPE_<N>` values: what share of each resource a slot type asks for.

The manual accepts a blanket fraction (``1/4``, ``25%``), comma lists of
``resource=amount`` with an optional blanket default, ``auto``, absolute amounts (with
size units for memory, disk and swap), and, inside ``@=`` blocks, one resource per line
with a device constraint (``GPUs = 2 : Capability >= 8.0``). This module turns that
text into a :class:`SlotTypeSpec`; it knows nothing about the machine's sizes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from condorpy.errors import LayoutError

CPUS = "Cpus"
MEMORY = "Memory"
DISK = "Disk"
SWAP = "Swap"
STANDARD = (CPUS, MEMORY, DISK, SWAP)

# The manual: "The first letter of the attribute name distinguishes between these."
_FIRST_LETTER = {"c": CPUS, "r": MEMORY, "m": MEMORY, "d": DISK, "s": SWAP, "v": SWAP}

# Unit multipliers into each resource's base unit (memory MiB, disk and swap KiB).
_UNIT_POWER = {"K": 1, "M": 2, "G": 3, "T": 4}
_BASE_POWER = {MEMORY: 2, DISK: 1, SWAP: 1}


class ShareKind(Enum):
    AUTO = "auto"          # an even part of what explicit shares leave
    FRACTION = "fraction"  # a part of the machine's total
    ABSOLUTE = "absolute"  # an amount in the resource's base unit


@dataclass(frozen=True)
class Share:
    kind: ShareKind
    value: float = 0.0
    constraint: str | None = None  # for device resources: which devices qualify
    text: str = "auto"             # as written, for error messages

    @staticmethod
    def auto() -> "Share":
        return Share(ShareKind.AUTO)


@dataclass(frozen=True)
class SlotTypeSpec:
    """The parsed value of one `SLOT_TYPE_<N>`: explicit shares plus the blanket default."""

    shares: dict[str, Share] = field(default_factory=dict)  # canonical resource -> share
    default: Share = field(default_factory=Share.auto)
    source: str = ""                                        # e.g. "SLOT_TYPE_2"

    def share_for(self, resource: str) -> Share:
        return self.shares.get(resource, self.default)


def canonical_resource(name: str, custom_names: tuple[str, ...], source: str) -> str:
    """Map a name as written in a slot type to a resource: custom names first, since
    a custom resource such as ``Cogs`` would otherwise be read as cpus."""
    lowered = name.strip().lower()
    for custom in custom_names:
        if custom.lower() == lowered:
            return custom
    if lowered and lowered[0] in _FIRST_LETTER:
        return _FIRST_LETTER[lowered[0]]
    known = ", ".join(("cpus", "memory", "disk", "swap") + custom_names)
    raise LayoutError(f"{source}: unknown resource {name.strip()!r} (this machine has {known})",
                      resource=name.strip())


_NUMBER = r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+"
_ABS_RE = re.compile(rf"^({_NUMBER})\s*([KMGT]?)B?$", re.IGNORECASE)
_FRACTION_RE = re.compile(rf"^({_NUMBER})\s*/\s*({_NUMBER})$")
_PERCENT_RE = re.compile(rf"^({_NUMBER})\s*%$")


def parse_amount(text: str, resource: str | None, source: str) -> Share:
    """One amount: ``auto``, ``1/2``, ``50%``, ``128``, ``4G``. ``resource`` is None for
    the blanket default, which must be relative since it applies to every resource."""
    raw = text.strip()
    where = f"{source}: {resource + '=' if resource else ''}{raw}"
    if raw.lower() == "auto":
        return Share(ShareKind.AUTO, text=raw)
    if m := _PERCENT_RE.match(raw):
        value = float(m.group(1)) / 100.0
        return _checked_fraction(value, raw, where, resource)
    if m := _FRACTION_RE.match(raw):
        denominator = float(m.group(2))
        if denominator == 0:
            raise LayoutError(f"{where}: division by zero", resource=resource)
        return _checked_fraction(float(m.group(1)) / denominator, raw, where, resource)
    if m := _ABS_RE.match(raw):
        if resource is None:
            raise LayoutError(f"{where}: a value without a resource name must be a fraction, "
                              "a percentage or auto", resource=resource)
        number, unit = float(m.group(1)), m.group(2).upper()
        if unit:
            if resource not in _BASE_POWER:
                raise LayoutError(f"{where}: {resource} takes a plain count, not a size",
                                  resource=resource)
            number *= 1024 ** (_UNIT_POWER[unit] - _BASE_POWER[resource])
        return Share(ShareKind.ABSOLUTE, number, text=raw)
    raise LayoutError(f"{where}: not an amount (expected auto, N/M, N%, or a number)",
                      resource=resource)


def _checked_fraction(value: float, raw: str, where: str, resource: str | None) -> Share:
    if not 0.0 <= value <= 1.0:
        raise LayoutError(f"{where}: a share must lie between 0 and 100%", resource=resource)
    return Share(ShareKind.FRACTION, value, text=raw)


def _tokens(text: str) -> list[str]:
    """Split a slot type into items. A line holding a constraint is one item, since
    the constraint may itself contain commas."""
    items: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if _has_constraint(line):
            items.append(line)
        else:
            items.extend(part.strip() for part in line.split(",") if part.strip())
    return items


def _has_constraint(item: str) -> bool:
    name, eq, rest = item.partition("=")
    return bool(eq) and ":" in rest


def parse_slot_type(text: str, custom_names: tuple[str, ...] = (), source: str = "SLOT_TYPE") \
        -> SlotTypeSpec:
    """Parse the value of a `SLOT_TYPE_<N>` knob. An empty value means all ``auto``."""
    shares: dict[str, Share] = {}
    default = Share.auto()
    default_seen = False
    for item in _tokens(text):
        name, eq, rest = item.partition("=")
        if not eq:
            if default_seen:
                raise LayoutError(f"{source}: more than one blanket share ({item!r})")
            default, default_seen = parse_amount(item, None, source), True
            continue
        resource = canonical_resource(name, custom_names, source)
        constraint: str | None = None
        amount = rest
        if ":" in rest:
            amount, _, constraint_text = rest.partition(":")
            constraint = constraint_text.strip() or None
            if resource in STANDARD:
                raise LayoutError(f"{source}: only device resources take a constraint, "
                                  f"not {resource} ({item!r})", resource=resource)
        share = parse_amount(amount, resource, source)
        if resource == CPUS and share.kind is ShareKind.ABSOLUTE and share.value != int(share.value):
            raise LayoutError(f"{source}: cpus={amount.strip()}: whole cpus only", resource=CPUS)
        if constraint is not None:
            share = Share(share.kind, share.value, constraint, share.text)
        if resource in shares:
            raise LayoutError(f"{source}: {resource} is given twice", resource=resource)
        shares[resource] = share
    return SlotTypeSpec(shares, default, source)
