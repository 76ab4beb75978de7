"""`policy explain`: a policy expression's value with the tree of its parts.

Each sub-expression is evaluated in the slot's scope (the job, if given, as TARGET),
and the parts that made the whole False or Undefined are marked, so "why won't this
machine run my job?" is answered at a glance. References to other policy expressions
of the slot ad (IS_OWNER -> START) are opened one level down.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

from condorpy.errors import PolicyError
from condorpy.inputs import loads_json, read_text
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.evaluation import CLOCK_ATTR, Error, Undefined, load_ad
from condorpy.policy.settings import PolicySettings

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
    try:
        from condorpy.classad import format_value
        return str(format_value(v))
    except Exception:
        if v is Undefined:
            return "undefined"
        if v is Error:
            return "error"
        if v is True or v is False:
            return "true" if v else "false"
        return json.dumps(v) if isinstance(v, str) else str(v)


def _text(node: Any) -> str:
    return str(node).replace(CLOCK_ATTR, "time()")


def explain_tree(ad: Any, name: str, target: Any | None) -> list[ExplainLine]:
    """The explanation of attribute ``name`` of ``ad`` (empty when there is no tree)."""
    try:
        from condorpy.classad import Expr
        from condorpy.classad import ast
    except Exception:
        return []
    expr = ad.lookup(name) if hasattr(ad, "lookup") else None
    if expr is None or not hasattr(expr, "node"):
        return []
    lines: list[ExplainLine] = []
    opened: set[str] = {name.lower()}

    def value_of(node: Any) -> Any:
        return Expr.from_node(node).evaluate(my=ad, target=target)

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
        lines.append(ExplainLine(depth, mark, v, _text(node)))
        kids = node.children()
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
        for kid in kids:
            if blame or depth < 1:
                walk(kid, depth + 1, v, blame)

    walk(expr.node, 0, None, True)
    return lines


def render(slot: str, name: str, lines: list[ExplainLine], value: Any, out: TextIO) -> None:
    out.write(f"{slot}: {name} = {_show(value)}\n")
    for ln in lines[1:] if lines else []:
        pad = "  " * ln.depth
        mark = f"{ln.mark} " if ln.mark else "  "
        out.write(f"{pad}{mark}{_show(ln.value):<10} {ln.text}\n")


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


def _load_job(engine: PolicyEngine, path: str) -> Any:
    text = read_text(path, f"job ad {path}", on_os_error=lambda why: PolicyError(
        f"cannot read job ad {path}: {why}"))
    if text.lstrip().startswith("{"):
        try:
            data = loads_json(text)
        except json.JSONDecodeError as exc:
            raise PolicyError(f"job ad {path}: not JSON: {exc.msg} (line {exc.lineno})") \
                from None
        return load_ad(engine.backend, data, f"job ad {path}")
    from condorpy.classad import ClassAd
    return ClassAd.parse_old(text, source=path)


def explain_command(settings: PolicySettings, name: str, job: str | None,
                    sets: list[str], slot: str | None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    engine = PolicyEngine(settings, now=float(int(time.time())))
    engine.set(engine.now, _parse_set(sets))
    engine.cycle(engine.now)
    job_ad = _load_job(engine, job) if job else None
    shown = 0
    for s in list(engine.slots.values()):
        if slot is not None and s.name != slot:
            continue
        value = engine.backend.evaluate(s.ad, name, job_ad)
        render(s.name, name, explain_tree(s.ad, name, job_ad), value, out)
        shown += 1
    if not shown:
        raise PolicyError(f"no slot named {slot!r}", slot=slot)
    return 0
