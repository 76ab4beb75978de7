"""`condorpy policy simulate|explain`: rehearse and explain the startd policy.

Both go down the one path every front end shares (:mod:`condorpy.startd.core`):
the same configuration search, layout, slot ads and engine as ``status --offline`` and
the daemon. ``simulate`` runs on a virtual clock and, unless ``--inventory`` pins
another machine, on the fixed virtual host of :mod:`condorpy.machine.virtual`;
``explain`` looks at this machine as measured now or, when a daemon answers on the
control socket, at the slot ads that daemon advertises (saying which on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys

from condorpy.classad import ClassAd
from condorpy.cli.parsing import add_help, tool_parser
from condorpy.clock import ManualClock, SystemClock
from condorpy.config import load_config
from condorpy.errors import ConfigError, CondorpyError, TimelineError
from condorpy.inputs import read_text
from condorpy.policy.engine import PolicyEngine
from condorpy.policy.explain import explain_command
from condorpy.policy.simulate import Simulation, parse_timeline
from condorpy.startd.client import DaemonUnreachable, call
from condorpy.startd.core import Host, load_core
from condorpy.startd.paths import client_socket

_SIMULATE_HELP = """\
Replay a JSON-lines timeline against the configuration on a virtual clock that starts
at 0 (UTC), and print every state change and action as JSON lines.

The configuration is found as by every command (-config FILE, else $CONDOR_CONFIG,
else /etc/condorpy/condor_config, then _CONDOR_* variables). The slots, their ads and
the policy are built by the same code as `condorpy status --offline`; only the machine
is pinned so that a timeline gives the same answer on every host: unless --inventory
names a machine snapshot, it is a virtual host detected as 1 CPU, 1024 MB of memory,
1048576 KB of disk, no load and no owner activity, which NUM_CPUS, MEMORY, DISK and the
other knobs then size as they would a real machine. Its custom resources are those the
configuration defines without reading the host (MACHINE_RESOURCE_<name>, GPU discovery
with -simulate). docs/policy.md lists the timeline's events and their arguments.
"""


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy policy", "simulate and explain the startd policy")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="simulate or explain")
    sim = sub.add_parser("simulate", help="run the policy engine over a timeline",
                         description=_SIMULATE_HELP, add_help=False,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    add_help(sim)
    sim.add_argument("-config", "--config", dest="config", help="configuration file")
    sim.add_argument("--timeline", required=True, help="JSON-lines timeline ('-' for stdin)")
    sim.add_argument("--until", type=float, help="stop the virtual clock at this time")
    sim.add_argument("--inventory", metavar="FILE",
                     help="a JSON machine snapshot to run on instead of the virtual host")
    ex = sub.add_parser("explain", help="show why a policy expression has its value",
                        add_help=False,
                        description="Show why policy expressions (START by default) "
                                    "have their values in each slot, part by part.")
    add_help(ex)
    ex.add_argument("-config", "--config", dest="config", help="configuration file")
    ex.add_argument("--job", help="job ad (old ClassAd format or JSON object): judge the "
                                  "whole match of this job with each slot")
    ex.add_argument("--set", action="append", default=[], metavar="ATTR=VALUE",
                    help="override a measured machine attribute (e.g. KeyboardIdle=30)")
    ex.add_argument("--slot", help="only this slot")
    ex.add_argument("--inventory", metavar="FILE",
                    help="a JSON machine snapshot to use instead of measuring this one "
                         "(implies --offline)")
    ex.add_argument("--offline", action="store_true",
                    help="explain the slots as computed from the configuration, even "
                         "when a daemon runs (implied by --set and --inventory)")
    ex.add_argument("names", nargs="*", metavar="NAME",
                    help="attributes or policy expressions to explain (default START)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.command == "simulate":
        core = load_core(args.config, host=Host.VIRTUAL, inventory_path=args.inventory)
        engine = core.engine(ManualClock(0.0))
        return _simulate(engine, args.timeline, args.until)
    core = load_core(args.config, inventory_path=args.inventory)
    engine = core.engine(SystemClock())
    live = _live_slots(args)
    return explain_command(engine, args.names or ["START"], args.job, args.set, args.slot,
                           live=live)


def _live_slots(args: argparse.Namespace) -> list[ClassAd] | None:
    """The running daemon's slot ads, or None (computed slots); says which on stderr,
    since a daemon's slots can differ from the configuration's (state, claims, what
    its d-slots took, the measurements it last made)."""
    def note(text: str) -> None:
        print(f"condorpy policy explain: {text}", file=sys.stderr)

    if args.offline or args.set or args.inventory:
        why = "--offline" if args.offline else "--set" if args.set else "--inventory"
        note(f"slots computed from the configuration ({why})")
        return None
    try:
        path = client_socket(load_config(args.config))
    except ConfigError as exc:
        # explain needs no daemon: a configuration that places none is explained alone
        note(f"slots computed from the configuration: it places no daemon ({exc})")
        return None
    try:
        got = call(path, "status", {})
    except DaemonUnreachable as exc:
        note(f"slots computed from the configuration: no daemon answers ({exc})")
        return None
    note(f"the running daemon's live slot ads (from {path})")
    return [ClassAd.parse_old(t, source="the daemon's slots") for t in got["ads"]]


def _simulate(engine: PolicyEngine, timeline: str, until: float | None) -> int:
    source = "<stdin>" if timeline == "-" else timeline
    lines = read_text(timeline, on_os_error=lambda why: TimelineError(
        f"cannot read timeline {timeline}: {why}")).splitlines()
    entries = parse_timeline(lines, source)
    out = sys.stdout
    try:
        for rec in Simulation(engine, entries, source, until).run():
            out.write(json.dumps(rec) + "\n")
    except CondorpyError:
        out.flush()
        raise
    return 0
