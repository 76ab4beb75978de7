"""``condorpy status --offline``: the slot ads this machine would advertise at start-up.

    condorpy status --offline [-config FILE] [-l] [-af ATTR ...] [-constraint EXPR] [-json]

The ads are the policy engine's after its first evaluation, built down the one path
every front end shares (:mod:`condorpy.startd.core`). The machine is measured by the
probes unless ``--inventory FILE`` (or the environment variable ``CONDORPY_INVENTORY``)
names a JSON machine snapshot, which pins it for tests and demonstrations.
"""

from __future__ import annotations

import argparse
import sys

from condorpy.classad import parse_expr
from condorpy.cli.parsing import tool_parser
from condorpy.cli.queue_cmds import live_status
from condorpy.clock import SystemClock
from condorpy.errors import CondorpyError
from condorpy.slots.status_format import (render_autoformat, render_json, render_long,
                                          render_table)
from condorpy.startd.core import load_core


class StatusUsageError(CondorpyError):
    pass


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy status", "show this machine's slot ads (like condor_status)")
    p.add_argument("--offline", "-offline", action="store_true",
                   help="compute the ads from the configuration and the machine, "
                        "without a running daemon")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="read this configuration file instead of CONDOR_CONFIG")
    p.add_argument("-l", "-long", "--long", dest="long", action="store_true",
                   help="print whole ads")
    p.add_argument("-af", "-autoformat", dest="af", nargs="+", metavar="EXPR",
                   help="print these expressions' values (attributes or any ClassAd "
                        "expression), one line per slot")
    p.add_argument("-constraint", "--constraint", metavar="EXPR",
                   help="only slots whose ad satisfies EXPR")
    p.add_argument("-json", "--json", dest="json", action="store_true",
                   help="print the ads as JSON")
    p.add_argument("--inventory", metavar="FILE", help=argparse.SUPPRESS)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    chosen = sum(bool(x) for x in (args.long, args.af, args.json))
    if chosen > 1:
        raise StatusUsageError("choose one of -l, -af and -json")
    if not args.offline:
        constraint = parse_expr(args.constraint, source="-constraint") \
            if args.constraint else None
        return live_status(args.config, args.long, args.af, constraint, args.json)
    clock = SystemClock()
    core = load_core(args.config, inventory_path=args.inventory)
    engine = core.engine(clock)
    engine.cycle(engine.now)
    now = engine.now
    ads = engine.ads()
    if args.constraint:
        constraint = parse_expr(args.constraint, source="-constraint")
        ads = [ad for ad in ads if constraint.evaluate(my=ad) is True]
    if args.long:
        out = render_long(ads)
    elif args.af:
        out = render_autoformat(ads, args.af)
    elif args.json:
        out = render_json(ads)
    else:
        out = render_table(ads, now) if ads else ""
    sys.stdout.write(out)
    return 0
