"""condor_status's layouts of slot ads: the default table (and ``-wide``), the
``-claimed`` table, ``-compact`` (one row per machine), the totals under each
(``-total``: the totals alone) and ``-format``. Pure: ads in, text out.

HTCondor 23.9.6's condor_status in the reference pool is the oracle for the columns,
widths and totals; docs/status.md lists where condorpy differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from condorpy.classad import ClassAd, Error, Undefined, format_value, parse_expr

_NORMAL_HEADER = ("Total", "Owner", "Claimed", "Unclaimed", "Matched", "Preempting",
                  "Drain", "Backfill", "BkIdle")
_NORMAL_WIDTHS = (5, 5, 7, 9, 7, 10, 6, 8, 6)
_STATE_COLUMN = {"Owner": 1, "Claimed": 2, "Unclaimed": 3, "Matched": 4, "Preempting": 5,
                 "Drained": 6, "Backfill": 7}
# the one-letter codes of condor_status -compact's ST column
_STATE_LETTER = {"Owner": "O", "Unclaimed": "U", "Matched": "M", "Claimed": "C",
                 "Preempting": "P", "Shutdown": "S", "Delete": "X", "Backfill": "F",
                 "Drained": "D"}
_ACTIVITY_LETTER = {"Idle": "i", "Busy": "b", "Retiring": "r", "Vacating": "v",
                    "Suspended": "s", "Benchmarking": "e", "Killing": "k", "Cleaning": "c"}


@dataclass(frozen=True)
class StatusView:
    """What the command line asked to see."""
    compact: bool = False
    claimed: bool = False
    avail: bool = False
    wide: bool = False
    totals_only: bool = False


# --- values -------------------------------------------------------------------------

def _text(ad: ClassAd, attr: str, default: str = "") -> str:
    value = ad.evaluate(attr)
    if value is Undefined or value is Error:
        return default
    return value if isinstance(value, str) else str(format_value(value))


def _number(ad: ClassAd, attr: str) -> float | None:
    value = ad.evaluate(attr)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _flag(ad: ClassAd, attr: str) -> bool:
    return ad.evaluate(attr) is True


def _duration(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 86400}+{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _dynamic(ad: ClassAd) -> bool:
    return _flag(ad, "DynamicSlot") or _text(ad, "SlotType") == "Dynamic"


def _partitionable(ad: ClassAd) -> bool:
    return _flag(ad, "PartitionableSlot") or _text(ad, "SlotType") == "Partitionable"


# --- selection ----------------------------------------------------------------------

def select(ads: Sequence[ClassAd], view: StatusView) -> list[ClassAd]:
    """The slots a mode shows: -avail the unclaimed ones with cpus and memory left,
    -claimed the claimed ones; -compact rows are machines, so it keeps the
    partitionable and static slots (their dynamic slots are rolled into them)."""
    out = []
    for ad in ads:
        state = _text(ad, "State")
        if view.avail and not (state == "Unclaimed" and (_number(ad, "Cpus") or 0) > 0
                               and (_number(ad, "Memory") or 0) > 0):
            continue
        if view.claimed:
            if view.compact:
                if not ((state == "Claimed" and not _dynamic(ad)) or
                        (_number(ad, "NumDynamicSlots") or 0) > 0 or
                        (_partitionable(ad) and _children(ad, ads))):
                    continue
            elif state != "Claimed":
                continue
        elif view.compact and _dynamic(ad):
            continue
        out.append(ad)
    return out


def slot_matches(ad: ClassAd, name: str) -> bool:
    """A name on condor_status's command line: the slot's Name or its Machine; a slot
    name without ``@host`` names that slot of this machine."""
    full, machine = _text(ad, "Name"), _text(ad, "Machine")
    return name in (full, machine) or full.split("@", 1)[0] == name


def _children(pslot: ClassAd, ads: Sequence[ClassAd]) -> list[ClassAd]:
    """The dynamic slots carved from ``pslot`` (slot1_2@host from slot1@host)."""
    name = _text(pslot, "Name")
    short, _, host = name.partition("@")
    prefix = short + "_"
    return [a for a in ads if _dynamic(a) and _text(a, "Name").startswith(prefix)
            and _text(a, "Name").partition("@")[2] == host]


# --- tables -------------------------------------------------------------------------

def _join(cells: Sequence[str], widths: Sequence[int], right: set[int]) -> str:
    return " ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                    for i, c in enumerate(cells))


def _normal_table(ads: Sequence[ClassAd], now: float, wide: bool) -> list[str]:
    rows = []
    for ad in ads:
        load = _number(ad, "CondorLoadAvg")
        mem = _number(ad, "Memory")
        entered = _number(ad, "EnteredCurrentActivity")
        # the time in the activity as of the ad's own clock, as condor_status counts it
        at = _number(ad, "MyCurrentTime") or _number(ad, "LastHeardFrom") or now
        rows.append((_text(ad, "Name", "[???]"), _text(ad, "OpSys", "[???]"),
                     _text(ad, "Arch", "[???]"), _text(ad, "State", "[???]"),
                     _text(ad, "Activity", "[???]"),
                     f"{load:.3f}" if load is not None else "[???]",
                     str(int(mem)) if mem is not None else "[???]",
                     _duration(at - entered) if entered is not None else "[???]"))
    header = ("Name", "OpSys", "Arch", "State", "Activity", "LoadAv", "Mem",
              "ActivityTime" if wide else "ActvtyTime")
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(len(header))]
    mins = (34 if wide else 18, 10, 6, 9, 8, 6, 4, 12 if wide else 11)
    widths = [max(w, m) for w, m in zip(widths, mins)]
    # condor_status right-aligns the numbers but heads the Mem column from the left
    out = [_join(header, widths, {5, 7}).rstrip(), ""]
    out.extend(_join(r, widths, {5, 6, 7}).rstrip() for r in rows)
    return out


def _claimed_table(ads: Sequence[ClassAd], wide: bool) -> list[str]:
    rows = []
    for ad in ads:
        load = _number(ad, "CondorLoadAvg")
        rows.append((_text(ad, "Name", "[???]"), _text(ad, "OpSys", "[???]"),
                     _text(ad, "Arch", "[???]"),
                     f"{load:.3f}" if load is not None else "[???]",
                     _text(ad, "RemoteUser", "[???]"), _text(ad, "ClientMachine", "[???]")))
    header = ("Name", "OpSys", "Arch", "LoadAv", "RemoteUser", "ClientMachine")
    # each column as wide as its longest value, never narrower than condor_status's;
    # every line padded to the last column
    mins = (34 if wide else 15, 11, 6, 6, 20, 16)
    widths = [max([m, len(header[i])] + [len(r[i]) for r in rows])
              for i, m in enumerate(mins)]
    return [_join(header, widths, {3}), ""] + [_join(r, widths, {3}) for r in rows]


# --- -compact -----------------------------------------------------------------------

def platform(ad: ClassAd) -> str:
    """condor_status's Platform: the architecture (x64 for X86_64) and OpSysAndVer
    (OpSysShortName on Windows)."""
    opsys = _text(ad, "OpSysShortName") if _text(ad, "OpSys") == "WINDOWS" \
        else _text(ad, "OpSysAndVer")
    if not opsys:
        return ""
    arch = {"X86_64": "x64", "X86": "x86"}.get(_text(ad, "Arch"), _text(ad, "Arch"))
    return f"{arch}/{opsys}"


def _code(state: str, activity: str) -> str:
    return _STATE_LETTER.get(state, " ") + _ACTIVITY_LETTER.get(activity, " ")


def _merge_codes(codes: Sequence[str]) -> str:
    """Slots of one row in one state show its letters; differing ones a ``*``."""
    if not codes:
        return "  "
    first = codes[0]
    return "".join(first[i] if all(c[i] == first[i] for c in codes) else "*"
                   for i in range(2))


@dataclass
class _CompactRow:
    machine: str
    label: str                   # the machine, or "   slotN" for its next slot type
    platform: str
    slots: int
    tag: str
    cpus: float | None
    gpus: float | None
    total_mb: float | None
    free_cpus: float
    free_mb: float
    load: float | None
    code: str
    starts: float | None
    max_slot_mb: float | None
    users: list[str]


def _slot_type(ad: ClassAd) -> int:
    return abs(int(_number(ad, "SlotTypeID") or 0))


def _compact_row(ad: ClassAd, every: Sequence[ClassAd]) -> _CompactRow:
    machine = _text(ad, "Machine")
    mem = _number(ad, "Memory") or 0.0
    state, activity = _text(ad, "State"), _text(ad, "Activity")
    busy = state in ("Claimed", "Matched", "Preempting")
    if _partitionable(ad):
        kids = _children(ad, every)
        code = _code(state, activity)
        if kids:
            child = _merge_codes([_code(_text(k, "State"), _text(k, "Activity"))
                                  for k in kids])
            if (_number(ad, "Cpus") or 0) < 0.1 and code == "Ui":
                code = child          # an exhausted p-slot shows its d-slots' state
            code = "".join(a if a == b else "*" for a, b in zip(code, child))
        users = sorted({u for k in kids if (u := _text(k, "RemoteUser"))})
        row = _CompactRow(machine, machine, platform(ad), len(kids), " ",
                          _number(ad, "TotalSlotCpus"), _number(ad, "TotalSlotGPUs"),
                          _number(ad, "TotalSlotMemory"), _number(ad, "Cpus") or 0.0,
                          mem, None, code, None,
                          max((_number(k, "Memory") or 0.0 for k in kids), default=None),
                          users)
    else:
        user = _text(ad, "RemoteUser")
        row = _CompactRow(machine, machine, platform(ad), 1, "S",
                          _number(ad, "TotalSlotCpus"), _number(ad, "TotalSlotGPUs"),
                          _number(ad, "TotalSlotMemory"),
                          0.0 if busy else _number(ad, "Cpus") or 0.0,
                          0.0 if busy else mem, None, _code(state, activity), None,
                          mem, [user] if user else [])
    total_load, total_cpus = _number(ad, "TotalLoadAvg"), _number(ad, "TotalCpus")
    row.load = total_load / total_cpus if total_load is not None and total_cpus else None
    starts = _number(ad, "RecentJobStarts")
    row.starts = starts / 20.0 if starts is not None else None
    return row


def _compact_rows(ads: Sequence[ClassAd], every: Sequence[ClassAd]) -> list[_CompactRow]:
    """One row per machine and slot type, in the order of the machines' names and the
    types' ids; a machine's second slot type on is labelled by its first slot's name."""
    rows: dict[tuple[str, int], _CompactRow] = {}
    for ad in sorted(ads, key=lambda a: (_text(a, "Machine"), _slot_type(a))):
        key = (_text(ad, "Machine"), _slot_type(ad))
        row = _compact_row(ad, every)
        have = rows.get(key)
        if have is None:
            if any(k[0] == key[0] for k in rows):
                row.label = "   " + _text(ad, "Name").split("@", 1)[0]
            rows[key] = row
            continue
        # another slot of the same machine and type, folded into its row as
        # condor_status folds it: the slots, free cpus and memory, job starts and
        # largest slot add up; Cpus, Gpus and TotalGb stay those of the first slot
        have.slots += row.slots
        have.free_cpus += row.free_cpus
        have.free_mb += row.free_mb
        have.code = _merge_codes([have.code, row.code])
        if row.starts is not None:
            have.starts = (have.starts or 0.0) + row.starts
        if row.max_slot_mb is not None:
            have.max_slot_mb = max(have.max_slot_mb or 0.0, row.max_slot_mb)
        have.users = sorted(set(have.users) | set(row.users))
    return list(rows.values())


def _blank(value: float | None, fmt: str, width: int) -> str:
    return format(value, fmt) if value is not None else " " * width


def _compact_table(ads: Sequence[ClassAd], every: Sequence[ClassAd], claimed: bool
                   ) -> list[str]:
    rows = _compact_rows(ads, every)
    mach_w = max([12 if not claimed else 7] + [len(r.label) for r in rows])
    plat_w = max([8] + [len(r.platform) for r in rows])
    if claimed:
        users = [", ".join(r.users) for r in rows]
        users_w = max([len("Users")] + [len(u) for u in users])
        out = [f"{'Machine':<{mach_w}} {'Platform':<{plat_w}} Slots {'Users':<{users_w}}", ""]
        out += [f"{r.label:<{mach_w}} {r.platform:<{plat_w}} {r.slots:4d}{r.tag} "
                f"{u:<{users_w}}" for r, u in zip(rows, users)]
        return out
    out = [f"{'Machine':<{mach_w}} {'Platform':<{plat_w}} Slots Cpus Gpus  TotalGb "
           f"FreCpu  FreeGb  CpuLoad ST Jobs/Min MaxSlotGb", ""]
    for r in rows:
        load = f"{r.load:7.2f}" if r.load is not None else " " * 7
        starts = f"{r.starts:8.2f}" if r.starts is not None else f"{'_':<8}"
        biggest = f"{r.max_slot_mb / 1024:9.2f}" if r.max_slot_mb is not None \
            else f"{'*':<9}"
        total_gb = r.total_mb / 1024 if r.total_mb is not None else None
        out.append(f"{r.label:<{mach_w}} {r.platform:<{plat_w}} {r.slots:4d}{r.tag} "
                   f"{_blank(r.cpus, '4.0f', 4)} {_blank(r.gpus, '4.0f', 4)} "
                   f"{_blank(total_gb, '8.2f', 8)} {int(r.free_cpus):6d} {r.free_mb / 1024:8.2f} {load} {r.code:<2} "
                   f"{starts} {biggest}")
    return out


# --- totals -------------------------------------------------------------------------

def _label_width(keys: Sequence[str], wide: bool) -> int:
    return max([len("Total")] + [len(k) for k in keys]) + (0 if wide else 2)


def _state_totals(ads: Sequence[ClassAd], key: Callable[[ClassAd], str], wide: bool
                  ) -> list[str]:
    groups: dict[str, list[int]] = {}
    for ad in ads:
        counts = groups.setdefault(key(ad), [0] * len(_NORMAL_HEADER))
        state, activity = _text(ad, "State"), _text(ad, "Activity")
        column = _STATE_COLUMN.get(state)
        if column is None:
            continue
        counts[0] += 1
        counts[column] += 1
        if state == "Backfill" and activity == "Idle":
            counts[8] += 1
    totals = [sum(c[i] for c in groups.values()) for i in range(len(_NORMAL_HEADER))]
    width = _label_width(list(groups), wide)

    def row(label: str, cells: Sequence[Any]) -> str:
        return label.rjust(width) + "".join(
            " " + str(c).rjust(w) for c, w in zip(cells, _NORMAL_WIDTHS))

    out = [row("", _NORMAL_HEADER), ""]
    out += [row(label, groups[label]) for label in sorted(groups)]
    return out + ["", row("Total", totals)]


def _run_totals(ads: Sequence[ClassAd], key: Callable[[ClassAd], str], wide: bool
                ) -> list[str]:
    """The totals under -claimed: machines, their benchmarks and mean load; an ad
    without Mips, KFlops or LoadAvg is counted as condor_status counts it (with 0)
    and said to be malformed."""
    groups: dict[str, list[float]] = {}
    malformed = 0
    for ad in ads:
        g = groups.setdefault(key(ad), [0, 0, 0, 0.0])
        values = [_number(ad, "Mips"), _number(ad, "KFlops"), _number(ad, "LoadAvg")]
        malformed += any(v is None for v in values)
        g[0] += 1
        for i, v in enumerate(values, 1):
            g[i] += v or 0
    totals = [sum(g[i] for g in groups.values()) for i in range(4)]
    width = _label_width(list(groups), wide)

    def row(label: str, g: Sequence[float]) -> str:
        mean = g[3] / g[0] if g[0] else 0.0
        return (f"{label:>{width}}{int(g[0]):9d}  {int(g[1]):11d}  {int(g[2]):11d}"
                f"   {mean:.3f}")

    out = [f"{'':>{width}}{'Machines':>9}  {'MIPS':>11}  {'KFLOPS':>11}  "
           f"{'AvgLoadAvg':>11}", ""]
    out += [row(label, groups[label]) for label in sorted(groups)]
    out += ["", row("Total", totals)]
    if malformed:
        out += ["", f"{'':>{width}}(Omitted {malformed} malformed ads in computed "
                    "attribute totals)", ""]
    return out


def _arch_opsys(ad: ClassAd) -> str:
    return f"{_text(ad, 'Arch', '?')}/{_text(ad, 'OpSys', '?')}"


def _compact_counted(ads: Sequence[ClassAd], every: Sequence[ClassAd]) -> list[ClassAd]:
    """The slots -compact's totals count: a partitionable slot's dynamic slots, and the
    partitionable slot itself while it has cpus left."""
    out: list[ClassAd] = []
    for ad in ads:
        if _partitionable(ad):
            out.extend(_children(ad, every))
            if (_number(ad, "Cpus") or 0) >= 0.1:
                out.append(ad)
        else:
            out.append(ad)
    return out


def render_status(ads: Sequence[ClassAd], every: Sequence[ClassAd], now: float,
                  view: StatusView) -> str:
    """The table of ``ads`` (chosen by :func:`select` from ``every``) and its totals,
    or the totals alone; nothing at all when no slot is chosen, as condor_status."""
    if not ads:
        return ""
    compact = view.compact and not view.totals_only
    if view.claimed:
        key = platform if compact else _arch_opsys
        counted = _compact_counted(ads, every) if compact else list(ads)
        totals = _run_totals([a for a in counted if _text(a, "State") == "Claimed"]
                             if compact else counted, key, view.wide)
    elif compact:
        totals = _state_totals(_compact_counted(ads, every), platform, view.wide)
    else:
        totals = _state_totals(ads, _arch_opsys, view.wide)
    if view.totals_only:
        return "\n" + "\n".join(totals) + "\n"
    if compact:
        table = _compact_table(ads, every, view.claimed)
    elif view.claimed:
        table = _claimed_table(ads, view.wide)
    else:
        table = _normal_table(ads, now, view.wide)
    return "\n".join(table + [""] + totals) + "\n"


# --- -format ------------------------------------------------------------------------

_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?([diouxXeEfFgGcsvV])")


def _formatted(fmt: str, value: Any) -> str | None:
    """``fmt`` with its one conversion filled from ``value`` as condor_status's
    -format fills it, or None when the value does not convert (then nothing of this
    -format is printed, as condor_status prints nothing)."""
    m = _SPEC.search(fmt.replace("%%", "\0\0"))
    if m is None:
        return fmt.replace("%%", "%")
    conv = m.group(4)
    if value is Undefined or value is Error:
        return None
    arg: Any
    if conv in "diouxXc":
        if isinstance(value, bool):
            arg = int(value)
        elif isinstance(value, (int, float)):
            arg = int(value)
        else:
            return None
    elif conv in "eEfFgG":
        if isinstance(value, bool):
            arg = float(value)
        elif isinstance(value, (int, float)):
            arg = float(value)
        else:
            return None
    elif conv == "V":
        conv, arg = "s", str(format_value(value))
    else:
        conv, arg = "s", value if isinstance(value, str) else str(format_value(value))
    spec = "%" + m.group(1) + m.group(2) + (f".{m.group(3)}" if m.group(3) else "") + conv
    if conv == "u":
        spec, arg = spec[:-1] + "d", abs(arg)
    before = fmt[:m.start()].replace("%%", "%")
    after = fmt[m.end():].replace("%%", "%")
    return before + str(spec % arg) + after


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


def unescape(fmt: str) -> str:
    """The backslash escapes condor_status reads in a -format string (``\\n``)."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), fmt)


def render_format(ads: Sequence[ClassAd], items: Sequence[tuple[str, str]]) -> str:
    """``-format FMT EXPR`` (repeatable): per slot, each FMT filled with its
    expression's value, printf-style, with no separator added and no header or
    totals."""
    exprs = [(unescape(fmt), parse_expr(text, source=f"-format argument {text!r}"))
             for fmt, text in items]
    out = []
    for ad in ads:
        for fmt, expr in exprs:
            piece = _formatted(fmt, expr.evaluate(my=ad))
            if piece is not None:
                out.append(piece)
    return "".join(out)
