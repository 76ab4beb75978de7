"""`policy explain`: a policy expression's value with the tree of its parts.

Each sub-expression is evaluated in the slot's scope (the job, if given, as TARGET),
and the parts that made the whole False or Undefined are marked, so "why won't this
machine run my job?" is answered at a glance. References to other policy expressions
of the slot ad (IS_OWNER -> START) are opened one level down. Given a job, the whole
match is judged as the startd judges a claim: START, the job's Requirements against
the slot, the slot's Requirements against the job, and whether the request fits.
Evaluation reads the engine's clock, as every policy evaluation does.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any, TextIO

from condorpy.classad import ClassAd, Expr, format_value
from condorpy.classad import ast
from condorpy.classad.formats import parse_old_nonempty
from condorpy.errors import ClassAdError, PolicyError
from condorpy.inputs import loads_json, read_text
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.evaluation import Error, Undefined, load_ad
from condorpy.slots.model import Refusal

BAD_MARK = "✗"     # this part made its parent False
UNDEF_MARK = "?"   # this part made its parent Undefined or Error


@dataclass(frozen=True)
class ExplainLine:
    depth: int
    mark: str          # "", BAD_MARK or UNDEF_MARK
    value: Any
    text: str


def _bad(v: Any) -> bool:
    return v is False or v is Undefined or v is Error


def _show(v: Any) -> str:
    return str(format_value(v))


_SIZE_UNITS = ("KB", "MB", "GB", "TB", "PB")
_BINARY = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def show_amount(v: float, unit: str = "") -> str:
    """An amount as an administrator reads it: the exact number in the unit of its
    attribute (Memory in MB, Disk in KB), and from 1024 of them up the same in binary
    units: ``1048576 KB (1 GiB)``, never ``1.04858e+06``."""
    exact = str(int(v)) if v == int(v) else format_value(float(v))
    if unit not in _SIZE_UNITS:
        return f"{exact} {unit}".rstrip()
    step = _SIZE_UNITS.index(unit)
    size = abs(float(v))
    if size < 1024:
        return f"{exact} {unit}"
    while size >= 1024 and step < len(_BINARY) - 1:
        size /= 1024
        step += 1
    return f"{exact} {unit} ({size:.4g} {_BINARY[step]})"


def explain_tree(engine: PolicyEngine, ad: ClassAd, name: str,
                 target: ClassAd | None) -> list[ExplainLine]:
    """The explanation of attribute ``name`` of ``ad`` (empty when there is no tree)."""
    expr = ad.lookup(name)
    if expr is None:
        return []
    lines: list[ExplainLine] = []
    opened: set[str] = {name.lower()}

    def value_of(node: Any) -> Any:
        return Expr.from_node(node).evaluate(my=ad, target=target, ctx=engine.ctx)

    def walk(node: Any, depth: int, parent_value: Any, parent_bad: bool) -> None:
        while isinstance(node, ast.Paren):
            node = node.children()[0]
        if isinstance(node, ast.Literal):
            return
        v = value_of(node)
        mark = ""
        if parent_bad and _bad(v) and (v is parent_value or (v is False and
                                                             parent_value is False)):
            mark = BAD_MARK if v is False else UNDEF_MARK
        elif parent_bad and _bad(v) and parent_value is not False:
            mark = UNDEF_MARK
        lines.append(ExplainLine(depth, mark, v, str(node)))
        kids = _operands(node)
        opens = False
        if isinstance(node, ast.AttrRef) and node.scope_kind != "target":
            ref = node.name.lower()
            inner = ad.lookup(node.name)
            if inner is not None and ref not in opened and \
                    not isinstance(inner.node, ast.Literal):
                opened.add(ref)
                kids, opens = (inner.node,), True
        # Below a fine node nothing is to blame; show one level for context only. A
        # policy expression that is False or Undefined is always opened.
        blame = bool(mark) or (depth == 0 and _bad(v)) or (opens and _bad(v))
        if depth >= _MAX_DEPTH:
            return
        for kid in kids:
            if blame or depth < 1:
                walk(kid, depth + 1, v, blame)

    walk(expr.node, 0, None, True)
    return lines


# Operators whose chains read the same however they are grouped: a START listing 3,000
# owners is one level of 3,000 alternatives, not 3,000 nested levels.
_FLAT_OPS = frozenset({"||", "&&", "+", "*"})
# The parser refuses nesting deeper than 200, and references open one level each: a
# tree deeper than this is not read by a person anyway.
_MAX_DEPTH = 64


def _operands(node: Any) -> tuple[Any, ...]:
    if not isinstance(node, ast.Binary) or node.op not in _FLAT_OPS:
        return tuple(node.children())
    out: list[Any] = []
    n: Any = node
    while isinstance(n, ast.Binary) and n.op == node.op:
        out.append(n.right)
        n = n.left
    out.append(n)
    out.reverse()
    return tuple(out)


def render(slot: str, name: str, lines: list[ExplainLine], value: Any, out: TextIO) -> None:
    out.write(f"{slot}: {name} = {_show(value)}\n")
    _render_lines(lines, out)


def _parse_set(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise PolicyError(f"--set wants ATTR=VALUE, not {item!r}")
        k, v = item.split("=", 1)
        k, v = k.strip(), v.strip()
        try:
            out[k] = loads_json(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def _load_job(engine: PolicyEngine, path: str) -> ClassAd:
    source = "<stdin>" if path == "-" else path
    text = read_text(path, f"job ad {path}", on_os_error=lambda why: PolicyError(
        f"cannot read job ad {path}: {why}"))
    if text.lstrip().startswith("{"):
        try:
            data = loads_json(text)
        except json.JSONDecodeError as exc:
            raise PolicyError(f"job ad {path}: not JSON: {exc.msg} (line {exc.lineno})") \
                from None
        except RecursionError:
            raise PolicyError(f"job ad {path}: JSON nested too deeply") from None
        if not isinstance(data, dict):
            raise PolicyError(f"job ad {path}: a job ad must be a JSON object")
        if not data:
            raise PolicyError(f"job ad {source}: the job ad is empty: no attributes")
        ad: ClassAd = load_ad(engine.backend, data, f"job ad {path}")
        return ad
    return parse_old_nonempty(text, source)


@dataclass(frozen=True)
class SlotView:
    """A slot as explain sees it: computed by this engine, or as a running daemon
    advertises it (then with its state, which only the daemon knows)."""
    name: str
    ad: Any
    kind: str                  # static | partitionable | dynamic
    layer: Any = None          # the slot layer's record, for carving a p-slot
    state: str | None = None   # "Owner/Idle", from the daemon; None when computed


_KINDS = {"partitionable": "partitionable", "dynamic": "dynamic"}
# States in which a slot takes a new claim (a Backfill slot gives way to one).
_CLAIMABLE = ("Unclaimed", "Backfill")


def live_views(engine: PolicyEngine, ads: Sequence[Any]) -> list[SlotView]:
    """The slots of a running daemon, from the ads it advertises."""
    out = []
    for ad in ads:
        name = str(ad.evaluate("Name")).split("@", 1)[0]
        kind = _KINDS.get(str(ad.evaluate("SlotType")).lower(), "static")
        computed = engine.slots.get(name)
        out.append(SlotView(name, ad, kind,
                            computed.layer if computed is not None else None,
                            f"{ad.evaluate('State')}/{ad.evaluate('Activity')}"))
    return out


def explain_command(engine: PolicyEngine, names: list[str], job: str | None,
                    sets: list[str], slot: str | None, out: TextIO | None = None,
                    live: Sequence[Any] | None = None) -> int:
    """Explain ``names`` in each slot: the slots this engine computes from the
    configuration, or, given ``live``, the slot ads a running daemon advertises."""
    out = out or sys.stdout
    engine.cycle(engine.now)
    if sets:
        if live is not None:
            raise PolicyError("--set changes the computed slots, not a running daemon's")
        # --set is what the user wants each slot to see, whatever the slot layer
        # would have made of the machine's measurement (SLOTS_CONNECTED_TO_*, ...).
        values = _parse_set(sets)
        for name in list(engine.slots):
            engine.set(engine.now, values, slot=name)
        engine.cycle(engine.now)
    job_ad = _load_job(engine, job) if job else None
    views = live_views(engine, live) if live is not None else \
        [SlotView(s.name, s.ad, s.kind, s.layer) for s in engine.slots.values()]
    shown = [v for v in views if slot is None or v.name == slot]
    if not shown:
        known = ", ".join(v.name for v in views)
        raise PolicyError(f"no slot named {slot!r} (this machine has {known})", slot=slot)
    for s in shown:
        if s.state is not None:
            out.write(f"{s.name}: the daemon has it {s.state}\n")
        for name in names:
            value = engine.backend.evaluate(s.ad, name, job_ad)
            render(s.name, name, explain_tree(engine, s.ad, name, job_ad), value, out)
        if job_ad is not None:
            _judge_match(engine, s, job_ad, names, out)
    return 0


@dataclass(frozen=True)
class MatchJudgement:
    """Each part of a match as the startd judges a claim by a job: the slot's START
    and Requirements against the job, the job's Requirements against the slot,
    whether the request fits and whether the slot's state takes a claim now."""
    start: Any
    job_requirements: Any
    slot_requirements: Any
    fit: str                     # "true", "true (...)" or "false (why)"
    state: str | None            # the daemon's State, when known

    @property
    def claimable(self) -> bool:
        return self.state is None or self.state in _CLAIMABLE

    @property
    def fits(self) -> bool:
        return self.fit == "true" or self.fit.startswith("true")

    def failed(self) -> list[str]:
        out = []
        if not self.claimable:
            # the daemon's own view: however the expressions come out, a slot in Owner
            # (or claimed, draining, ...) takes no new claim now
            out.append(f"the slot is {self.state} now")
        if self.start is not True:
            out.append("START")
        if self.job_requirements is not True:
            out.append("the job's Requirements")
        if self.slot_requirements is not True:
            out.append("the slot's Requirements")
        if not self.fits:
            out.append("the request's size")
        return out


def judge_match(engine: PolicyEngine, slot: SlotView, job_ad: ClassAd) -> MatchJudgement:
    """The match of ``job_ad`` with ``slot``, part by part (what explain --job and
    condorpy q -analyze report)."""
    b = engine.backend
    return MatchJudgement(
        start=b.evaluate(slot.ad, "START", job_ad),
        job_requirements=b.evaluate(job_ad, "Requirements", slot.ad),
        slot_requirements=b.evaluate(slot.ad, "Requirements", job_ad),
        fit=_fit(engine, slot, job_ad),
        state=slot.state.split("/")[0] if slot.state is not None else None)


def _judge_match(engine: PolicyEngine, slot: SlotView, job_ad: ClassAd, shown: list[str],
                 out: TextIO) -> None:
    """The rest of the match the startd would judge for a claim by this job."""
    j = judge_match(engine, slot, job_ad)
    if "start" not in {n.lower() for n in shown}:
        render(slot.name, "START", explain_tree(engine, slot.ad, "START", job_ad), j.start,
               out)
    out.write(f"{slot.name}: the job's Requirements = {_show(j.job_requirements)}\n")
    _render_lines(explain_tree(engine, job_ad, "Requirements", slot.ad), out)
    render(slot.name, "Requirements", explain_tree(engine, slot.ad, "Requirements", job_ad),
           j.slot_requirements, out)
    out.write(f"{slot.name}: the request fits = {j.fit}\n")
    failed = j.failed()
    verdict = "matches" if not failed else "does not match: " + ", ".join(failed)
    out.write(f"{slot.name}: the job {verdict}\n")


def _fit(engine: PolicyEngine, slot: SlotView, job_ad: ClassAd) -> str:
    """Whether the job's request fits the slot: a p-slot is asked what it would carve
    (request rounding, consumption policies and devices included); a static or dynamic
    slot compares RequestCpus/Memory/Disk with what it has."""
    layer = slot.layer
    if slot.kind == "partitionable" and layer is not None:
        got = engine.layout.sized(layer, job_ad, slot.ad)
        if isinstance(got, Refusal):
            return f"false ({got.reason})"
        if slot.state is not None:
            # carved from the whole slot as configured; the daemon's p-slot has only
            # what its d-slots left
            short = [f"the d-slot's {have} {show_amount(want, unit)} > {have} "
                     f"{show_amount(left, unit)} left"
                     for have, want, unit in (("Cpus", got.cpus, ""),
                                              ("Memory", got.memory_mb, "MB"),
                                              ("Disk", got.disk_kb, "KB"))
                     for left in [_number(engine.backend.evaluate(slot.ad, have, None))]
                     if left is not None and want > left]
            if short:
                return "false (" + "; ".join(short) + ")"
        return (f"true (a d-slot of {show_amount(got.cpus)} Cpus, "
                f"{show_amount(got.memory_mb, 'MB')} memory, "
                f"{show_amount(got.disk_kb, 'KB')} disk)")
    short = []
    for req, have, unit in (("RequestCpus", "Cpus", ""), ("RequestMemory", "Memory", "MB"),
                            ("RequestDisk", "Disk", "KB")):
        want = engine.backend.evaluate(job_ad, req, slot.ad)
        got = engine.backend.evaluate(slot.ad, have, None)
        if isinstance(want, (int, float)) and isinstance(got, (int, float)) \
                and not isinstance(want, bool) and want > got:
            short.append(f"{req} {show_amount(want, unit)} > {have} {show_amount(got, unit)}")
    return "true" if not short else "false (" + "; ".join(short) + ")"


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def render_lines(lines: list[ExplainLine], out: TextIO) -> None:
    """The parts of an explanation below its first line, indented by depth."""
    _render_lines(lines, out)


def _render_lines(lines: list[ExplainLine], out: TextIO) -> None:
    for ln in lines[1:] if lines else []:
        pad = "  " * ln.depth
        mark = f"{ln.mark} " if ln.mark else "  "
        out.write(f"{pad}{mark}{_show(ln.value):<10} {ln.text}\n")
