"""Run timelines through the code path of `condorpy policy simulate`."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from condorpy.cli import policy_cmd
from tests.policy.engines import ONE_DESKTOP_SLOT

TIMELINES = Path(__file__).parent / "timelines"


def simulate(tmp: Path, config: str, timeline: list[dict[str, Any]] | str,
             until: float | None = None, *, layout: bool = True) -> list[dict[str, Any]]:
    """Write config and timeline to files, run the CLI, return its JSON records.

    Unless ``layout`` is False, the machine is one static slot connected to the
    keyboard and console (:data:`ONE_DESKTOP_SLOT`) where the configuration does not
    lay out slots itself."""
    conf = tmp / "policy.conf"
    if layout and not any(k in config.upper() for k in ("NUM_SLOTS", "SLOT_TYPE_",
                                                        "PARTITIONABLE")):
        config = ONE_DESKTOP_SLOT + config
    conf.write_text(config)
    tl = tmp / "timeline.jsonl"
    if isinstance(timeline, str):
        tl.write_text(timeline)
    else:
        tl.write_text("\n".join(json.dumps(x) for x in timeline) + "\n")
    argv = ["simulate", "-config", str(conf), "--timeline", str(tl)]
    if until is not None:
        argv += ["--until", str(until)]
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert policy_cmd.main(argv) == 0
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def run_file(tmp: Path, name: str, until: float | None = None) -> list[dict[str, Any]]:
    """A timeline from tests/policy/timelines/NAME.jsonl with its NAME.conf."""
    conf = TIMELINES / f"{name}.conf"
    return simulate(tmp, conf.read_text() if conf.exists() else "",
                    (TIMELINES / f"{name}.jsonl").read_text(), until)


def changes(records: list[dict[str, Any]], slot: str = "slot1",
            benchmarks: bool = False) -> list[str]:
    """The transition keys a slot took, in order (benchmark runs left out unless asked)."""
    return [r["transition"] for r in records
            if r.get("slot") == slot and "state" in r
            and (benchmarks or r["transition"] not in ("3", "4"))]


def states(records: list[dict[str, Any]], slot: str = "slot1") -> list[tuple[Any, str, str]]:
    return [(r["t"], r["state"], r["activity"]) for r in records
            if r.get("slot") == slot and "state" in r and r["transition"] not in ("3", "4")]


def actions(records: list[dict[str, Any]], slot: str | None = None) -> list[tuple[Any, str]]:
    return [(r["t"], r["action"]) for r in records
            if "action" in r and (slot is None or r["slot"] == slot)]


def find(records: list[dict[str, Any]], **want: Any) -> list[dict[str, Any]]:
    return [r for r in records if all(r.get(k) == v for k, v in want.items())]


def snapshots(records: list[dict[str, Any]], slot: str = "slot1") -> list[dict[str, Any]]:
    return [r["ad"] for r in records if r.get("slot") == slot and "ad" in r]
