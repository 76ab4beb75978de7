"""`condorpy policy simulate|explain`: rehearse and explain the startd policy."""

from __future__ import annotations

import argparse
import json
import sys

from condorpy.errors import CondorpyError, TimelineError
from condorpy.inputs import read_text
from condorpy.cli.policy_settings import settings_from_file, settings_from_text
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.settings import PolicySettings
from condorpy.policy.simulate import Simulation, parse_timeline


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="condorpy policy",
                                description="simulate and explain the startd policy")
    sub = p.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run the policy engine over a timeline")
    sim.add_argument("-config", "--config", dest="config", help="configuration file")
    sim.add_argument("--timeline", required=True, help="JSON-lines timeline ('-' for stdin)")
    sim.add_argument("--until", type=float, help="stop the virtual clock at this time")
    ex = sub.add_parser("explain", help="show why a policy expression has its value")
    ex.add_argument("-config", "--config", dest="config", help="configuration file")
    ex.add_argument("--job", help="job ad (old ClassAd format or JSON object)")
    ex.add_argument("--set", action="append", default=[], metavar="ATTR=VALUE",
                    help="set a machine attribute (e.g. KeyboardIdle=30)")
    ex.add_argument("--slot", help="only this slot")
    ex.add_argument("name", nargs="?", default="START", help="expression (default START)")
    return p


def load_settings(config: str | None, this_host: bool = False) -> PolicySettings:
    if config is None:
        return settings_from_text("", "<defaults>", this_host=this_host)
    return settings_from_file(config, this_host=this_host)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    # A simulation runs on a fixed virtual machine; explain looks at this one.
    settings = load_settings(args.config, this_host=args.command == "explain")
    if args.command == "simulate":
        return _simulate(settings, args.timeline, args.until)
    from condorpy.policy.explain import explain_command
    return explain_command(settings, args.name, args.job, args.set, args.slot)


def _simulate(settings: PolicySettings, timeline: str, until: float | None) -> int:
    source = "<stdin>" if timeline == "-" else timeline
    lines = read_text(timeline, on_os_error=lambda why: TimelineError(
        f"cannot read timeline {timeline}: {why}")).splitlines()
    entries = parse_timeline(lines, source)
    engine = PolicyEngine(settings)
    out = sys.stdout
    try:
        for rec in Simulation(engine, entries, source, until).run():
            out.write(json.dumps(rec) + "\n")
    except CondorpyError:
        out.flush()
        raise
    return 0
