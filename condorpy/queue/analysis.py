"""``condorpy q -analyze`` and ``-better-analyze``: why a job does (not) run, laid out
as condor_q's analysis.

Nothing here evaluates on its own: every value comes from the policy explain
machinery (:func:`condorpy.policy.explain.judge_match` for the whole match of a job
with a slot, :func:`~condorpy.policy.explain.explain_tree` for the parts of a slot's
START and Requirements) and from the engine's evaluation context, over the slot ads
the daemon advertises. Pure: the engine, job ads and slot views in, text out.

Where the layout differs from condor_q 23's (docs/queue.md says so to the reader):
the steps of the clause table are numbered one by one, each clause of the job's
Requirements is shown whole (HTCondor drops some it judges uninteresting), a running
job says in which slot it runs, and for the slots that refuse a job its START and
Requirements are opened part by part (what condor_q leaves to -reverse).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Sequence

from condorpy.classad import ClassAd, Expr
from condorpy.classad import ast
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.explain import (MatchJudgement, SlotView, explain_tree, judge_match,
                                     render)
from condorpy.queue.formats import ScheddLabel

WIDTH = 80          # condor_q wraps the Requirements at its console width (80 in a pipe)
INDENT = 4
# units condor_q writes after the request attributes it lists, and after the slot's
_UNITS = {"requestdisk": "kb", "requestmemory": "mb"}
_TARGET_UNITS = {"disk": "kb", "memory": "mb"}
_RUNNING = (2, 6, 7)


@dataclass(frozen=True)
class Tally:
    """How the slots (dynamic ones aside, as condor_q counts) take a job."""
    slots: int = 0
    rejected_by_job: int = 0
    reject_job: int = 0
    exhausted: int = 0
    running_yours: int = 0
    serving_others: int = 0
    available: int = 0
    job_matches_some: bool = False
    both_match_some: bool = False


def _int(ad: ClassAd, attr: str) -> int | None:
    v = ad.evaluate(attr)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _str(ad: ClassAd, attr: str) -> str | None:
    v = ad.evaluate(attr)
    return v if isinstance(v, str) else None


def job_label(ad: ClassAd) -> str:
    """``1.000``, as condor_q names a job in its analysis (and ``001.000`` in the
    summary line)."""
    return f"{_int(ad, 'ClusterId') or 0}.{_int(ad, 'ProcId') or 0:03d}"


def _strip(node: Any) -> Any:
    while isinstance(node, ast.Paren):
        node = node.inner
    return node


def _chain(node: Any, op: str, through_parens: bool) -> list[Any]:
    """The operands of a chain of ``op`` (``a && b && c``), left to right; with
    ``through_parens`` a parenthesised chain of the same operator is opened too."""
    out: list[Any] = []
    stack = [node]
    while stack:
        n = stack.pop()
        inner = _strip(n) if through_parens else n
        if isinstance(inner, ast.Binary) and inner.op == op:
            stack.append(inner.right)
            stack.append(inner.left)
        else:
            out.append(n)
    return out


def clauses(expr: Expr) -> list[Any]:
    """The conditions a Requirements expression reduces to: its conjuncts, nested
    ``&&`` opened through their parentheses, each without its outer parentheses."""
    return [_strip(n) for n in _chain(expr.node, "&&", through_parens=True)]


def pretty(expr: Expr, width: int = WIDTH, indent: int = INDENT) -> str:
    """The expression over lines of at most ``width`` columns as condor_q lays it out:
    its conjuncts filled into lines, each line ending in ``&&``; a conjunct too long
    for a line of its own, a parenthesised ``a || b``, is broken after each ``||`` with
    the rest indented two more, and the next conjuncts follow on its last line. The
    first line carries no indent: the caller writes it."""
    parts = [str(n) for n in _chain(expr.node, "&&", through_parens=False)]
    lines: list[str] = []
    line = ""
    for i, text in enumerate(parts):
        text += " &&" if i < len(parts) - 1 else ""
        candidate = f"{line} {text}" if line else text
        if indent + len(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        pieces = text.split(" || ") if text.startswith("(") else [text]
        if indent + len(text) <= width or len(pieces) == 1:
            line = text
            continue
        lines.append(pieces[0] + " ||")
        lines.extend(f"  {p} ||" for p in pieces[1:-1])
        line = "  " + pieces[-1]
    lines.append(line)
    return ("\n" + " " * indent).join(lines)


def referenced_job_attrs(job: ClassAd, name: str = "Requirements") -> list[str]:
    """The job's own attributes that ``name`` refers to, directly or through other
    job attributes, sorted as condor_q lists them (the attribute itself aside)."""
    seen: set[str] = {name.lower()}
    found: dict[str, str] = {}
    todo = [job.lookup(name)]
    while todo:
        expr = todo.pop()
        if expr is None:
            continue
        nodes = [expr.node]
        while nodes:
            n = nodes.pop()
            if isinstance(n, ast.AttrRef) and n.scope_kind != "target":
                key = n.name.lower()
                inner = job.lookup(n.name)
                if key not in seen and inner is not None:
                    seen.add(key)
                    found[key] = n.name
                    todo.append(inner)
            nodes.extend(n.children())
    return sorted(found.values(), key=str.lower)


def referenced_slot_attrs(job: ClassAd, slot: ClassAd, name: str = "Requirements"
                          ) -> list[str]:
    """The slot's attributes that the job's ``name`` refers to (``TARGET.Memory``, or
    ``OpSys`` that the job does not define), through the job's own attributes too."""
    mine = {a.lower() for a in referenced_job_attrs(job, name)} | {name.lower()}
    found: dict[str, str] = {}
    for attr in [name, *referenced_job_attrs(job, name)]:
        expr = job.lookup(attr)
        nodes = [expr.node] if expr is not None else []
        while nodes:
            n = nodes.pop()
            if isinstance(n, ast.AttrRef) and (n.scope_kind == "target" or (
                    n.scope_kind == "" and n.name.lower() not in mine and
                    job.lookup(n.name) is None)) and slot.lookup(n.name) is not None:
                found.setdefault(n.name.lower(), n.name)
            nodes.extend(n.children())
    return sorted(found.values(), key=str.lower)


def _slot_attrs(job: ClassAd, slot: SlotView) -> str:
    lines = []
    for a in referenced_slot_attrs(job, slot.ad):
        canonical = next((k for k, _ in slot.ad.items() if k.lower() == a.lower()), a)
        unit = _TARGET_UNITS.get(a.lower())
        lines.append(f"    TARGET.{canonical} = {slot.ad.lookup(a)}" +
                     (f" ({unit})" if unit else ""))
    if not lines:
        return ""
    return f"\n{_str(slot.ad, 'Name') or slot.name} has the following attributes:\n\n" + \
        "\n".join(lines) + "\n"


def _attr_line(job: ClassAd, name: str) -> str:
    expr = job.lookup(name)
    unit = _UNITS.get(name.lower())
    canonical = next((k for k, _ in job.items() if k.lower() == name.lower()), name)
    return f"    {canonical} = {expr}" + (f" ({unit})" if unit else "")


def clause_table(engine: PolicyEngine, job: ClassAd, slots: Sequence[SlotView]) -> str:
    """How many slots satisfy each condition of the job's Requirements."""
    expr = job.lookup("Requirements")
    if expr is None:
        return ""
    rows = ["         Slots", "Step    Matched  Condition", "-----  --------  ---------"]
    for i, node in enumerate(clauses(expr)):
        part = Expr.from_node(node)
        matched = sum(1 for s in slots
                      if part.evaluate(my=job, target=s.ad, ctx=engine.ctx) is True)
        rows.append(f"{f'[{i}]':<5}  {matched:>8}  {node}")
    return "\n".join(rows) + "\n"


# A container job's runtime clause: what the job wants, the slot attribute that offers
# it, and the runtime's name for the note.
_RUNTIMES = (("WantDocker", "HasDocker", "Docker"),
             ("WantContainer", "HasContainer", "a container runtime"))


def runtime_note(job: ClassAd, slots: Sequence[SlotView]) -> str:
    """Why no slot takes a docker or container job, when none advertises the runtime
    it wants: the clause table shows a 0 for it, this says what that 0 means."""
    for want, has, what in _RUNTIMES:
        if job.evaluate(want) is not True:
            continue
        if any(s.ad.evaluate(has) is True for s in slots):
            return ""
        reasons = sorted({r for s in slots
                          if isinstance(r := s.ad.evaluate("DockerOfflineReason"), str)})
        note = (f"No slot advertises {has} = true: the job wants {what}, which no slot "
                "here offers now")
        if reasons:
            note += f" (DockerOfflineReason: {'; '.join(reasons)})"
        return note + ".\n"
    return ""


def tally(engine: PolicyEngine, job: ClassAd, slots: Sequence[SlotView]
          ) -> tuple[Tally, list[tuple[SlotView, MatchJudgement]]]:
    """The summary counts, and the slots whose own side refuses the job (with the
    judgement of each) for the detail that follows the table."""
    user = _str(job, "User")
    counts: dict[str, Any] = dict(slots=0, rejected_by_job=0, reject_job=0, exhausted=0,
                                  running_yours=0, serving_others=0, available=0)
    matches_some = both_some = False
    refusing: list[tuple[SlotView, MatchJudgement]] = []
    for s in slots:
        if s.kind == "dynamic":
            continue        # judged through its partitionable slot, as condor_q does
        counts["slots"] += 1
        j = judge_match(engine, s, job)
        if j.job_requirements is not True:
            counts["rejected_by_job"] += 1
            continue
        matches_some = True
        remote = _str(s.ad, "RemoteUser")
        if j.start is not True or j.slot_requirements is not True or \
                (remote is None and not j.claimable):
            counts["reject_job"] += 1
            refusing.append((s, j))
            continue
        both_some = True
        if remote is not None:
            counts["running_yours" if remote == user else "serving_others"] += 1
        elif not j.fits:
            counts["exhausted"] += 1
            refusing.append((s, j))
        else:
            counts["available"] += 1
    return Tally(**counts, job_matches_some=matches_some,
                 both_match_some=both_some), refusing


def _refusals(engine: PolicyEngine, job: ClassAd,
              refusing: list[tuple[SlotView, MatchJudgement]]) -> str:
    out = io.StringIO()
    for s, j in refusing:
        out.write(f"\nSlot {s.name}" + (f" ({s.state})" if s.state else "") +
                  f" refuses job {job_label(job)}:\n\n")
        if not j.claimable:
            out.write(f"{s.name}: the slot is {j.state} now and takes no claim\n")
        render(s.name, "START", explain_tree(engine, s.ad, "START", job), j.start, out)
        render(s.name, "Requirements", explain_tree(engine, s.ad, "Requirements", job),
               j.slot_requirements, out)
        out.write(f"{s.name}: the request fits = {j.fit}\n")
    return out.getvalue()


def _status(job: ClassAd) -> str:
    status = _int(job, "JobStatus")
    if status in _RUNNING:
        where = _str(job, "RemoteHost")
        return "Job is running." + (f"\n\nRemote host: {where}" if where else "")
    if status == 5:
        why = _str(job, "HoldReason")
        return "Job is held." + (f"\n\nHold reason: {why}" if why else "")
    if status == 3:
        return "Job is removed."
    if status == 4:
        return "Job is completed."
    return ""


def _matches(job: ClassAd, ctime: Any) -> str:
    """condor_q's lines on the negotiator's last verdicts, where the job has them."""
    last = _int(job, "LastMatchTime") or 0
    rejected = _int(job, "LastRejMatchTime") or 0
    out = ""
    if last:
        out += f"Last successful match: {ctime(last)}\n"
    elif rejected:
        out += "No successful match recorded.\n"
    if rejected > last:
        out += f"Last failed match: {ctime(rejected)}\n\n"
        reason = _str(job, "LastRejMatchReason")
        if reason is not None:
            out += f"Reason for last match failure: {reason}\n"
    return out


def _summary(job: ClassAd, t: Tally) -> str:
    n = job_label(job)
    c, _, p = n.partition(".")
    out = (f"\n{int(c):03d}.{p}:  Run analysis summary ignoring user priority.  "
           f"Of {t.slots} machines,\n"
           f"  {t.rejected_by_job:5d} are rejected by your job's requirements\n"
           f"  {t.reject_job:5d} reject your job because of their own requirements\n")
    if t.exhausted:
        out += f"  {t.exhausted:5d} are exhausted partitionable slots\n"
    out += (f"  {t.running_yours:5d} match and are already running your jobs\n"
            f"  {t.serving_others:5d} match but are serving other users\n"
            f"  {t.available:5d} are able to run your job\n")
    if not t.job_matches_some:
        out += ("\nWARNING:  Be advised:\n"
                "   No machines matched the jobs's constraints\n")
    elif not t.both_match_some:
        out += ("\nWARNING:  Be advised:\n"
                "   Job did not match any machines's constraints\n"
                "   The slots' START and Requirements above say which part refuses it;\n"
                "   condorpy policy explain --job FILE --slot NAME opens one slot's.\n")
    return out


def analyze_job(engine: PolicyEngine, job: ClassAd, slots: Sequence[SlotView], *,
                better: bool, ctime: Any) -> str:
    """One job's analysis; ``ctime`` writes an epoch as condor_q does."""
    label = job_label(job)
    status = _status(job)
    out = ""
    req = job.lookup("Requirements")
    if req is not None and (better or not status):
        out += f"The Requirements expression for job {label} is\n\n" \
               f"{' ' * INDENT}{pretty(req)}\n\n"
        if better:
            attrs = referenced_job_attrs(job)
            out += f"Job {label} defines the following attributes:\n\n"
            out += "".join(_attr_line(job, a) + "\n" for a in attrs)
            if len(slots) == 1:
                # one slot: its side of the conditions too, as condor_q shows it
                out += _slot_attrs(job, slots[0])
            out += f"\nThe Requirements expression for job {label} reduces to these " \
                   "conditions:\n\n"
            out += clause_table(engine, job, slots)
            note = runtime_note(job, slots)
            out += f"\n{note}" if note else ""
        out += "\n"
    t, refusing = tally(engine, job, slots)
    if better and refusing and not status:
        out += _refusals(engine, job, refusing)
    if status:
        c, _, p = label.partition(".")
        out += f"\n{int(c):03d}.{p}:  {status}\n\n"
    matches = _matches(job, ctime)
    out += matches
    if status and matches:
        out += "\n"
    out += _summary(job, t)
    return out + "\n"


def analyze(engine: PolicyEngine, jobs: Sequence[ClassAd], slots: Sequence[SlotView], *,
            schedd: ScheddLabel, better: bool, ctime: Any) -> str:
    """condor_q -analyze (``better``: -better-analyze) of ``jobs`` against ``slots``."""
    address = schedd.address
    if "?" in address:
        address = address[:address.index("?")] + "?..."
    out = f"\n\n-- Schedd: {schedd.name} : {address}\n"
    return out + "".join(analyze_job(engine, j, slots, better=better, ctime=ctime)
                         for j in jobs)
