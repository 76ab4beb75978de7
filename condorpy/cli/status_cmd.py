"""``condorpy status``: this machine's slot ads, as condor_status shows a pool's.

    condorpy status [--offline] [-config FILE] [-compact] [-total] [-avail | -claimed]
        [-wide] [-broken] [-l | -af EXPR ... | -json | -format FMT EXPR ...]
        [-constraint EXPR] [-health[y][:verbose]]
        [NAME ...]

Without ``--offline`` the ads are the running daemon's (one ``status`` request over
the control socket). With it they are the policy engine's after its first evaluation,
built down the one path every front end shares (:mod:`condorpy.startd.core`); the
machine is measured by the probes unless ``--inventory FILE`` (or the environment
variable ``CONDORPY_INVENTORY``) names a JSON machine snapshot, which pins it for tests
and demonstrations. Exit status as condor_status's: 0, also when no slot is shown;
1 for a name that is neither a slot nor this machine, a bad option or argument, or no
daemon to ask.
"""

from __future__ import annotations

import argparse
import sys
from condorpy.classad import ClassAd, parse_expr
from condorpy.cli.parsing import tool_parser
from condorpy.errors import CondorpyError
from condorpy.queue.status_layouts import (StatusView, render_format, render_status,
                                           select, slot_matches)
from condorpy.queue.status_health import render_health
from condorpy.slots.status_format import (render_autoformat, render_broken, render_json,
                                          render_long)


class StatusUsageError(CondorpyError):
    pass


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy status", "Show this machine's slot ads, like condor_status: "
                    "by default a table of the slots and their totals by Arch/OpSys.")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="only these slots: a slot's name (slot1_2 or slot1_2@host) or "
                        "the machine's name (all its slots)")
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
    p.add_argument("-format", dest="format", nargs=2, action="append",
                   metavar=("FMT", "EXPR"),
                   help="print EXPR's value printf-style (%%s %%d %%f %%x %%v %%V ...); "
                        "repeatable, the pieces of one slot printed one after the other "
                        "with nothing added (end FMT with \\n for a line per slot); a "
                        "value that is undefined or does not convert prints nothing")
    p.add_argument("-constraint", "--constraint", metavar="EXPR",
                   help="only slots whose ad satisfies EXPR")
    p.add_argument("-json", "--json", dest="json", action="store_true",
                   help="print the ads as JSON")
    p.add_argument("-compact", action="store_true",
                   help="one row per machine, dynamic slots rolled into their "
                        "partitionable slot (Slots, Cpus, free cpus and memory, load, "
                        "ST state/activity codes, job starts, largest slot)")
    p.add_argument("-total", "-totals", dest="total", action="store_true",
                   help="print only the totals table")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("-avail", action="store_true",
                      help="only unclaimed slots that have cpus and memory left")
    mode.add_argument("-claimed", action="store_true",
                      help="only claimed slots, with who holds each (RemoteUser, "
                           "ClientMachine); totals of benchmarks and load")
    p.add_argument("-broken", dest="broken", action="store_true",
                   help="only broken slots: their name, SlotBrokenCode and "
                        "SlotBrokenReason")
    p.add_argument("-wide", action="store_true",
                   help="do not cut names to fit 80 columns")
    p.add_argument("--inventory", metavar="FILE", help=argparse.SUPPRESS)
    return p


def _health_option(argv: list[str]) -> tuple[list[str], int]:
    """condor_status's ``-healthy[:verbose]`` (any prefix from ``-heal``), taken out of
    ``argv``: 0 absent, 1 unhealthy machines only, 2 every machine."""
    rest, mode = [], 0
    for arg in argv:
        word, _, option = arg.lstrip("-").partition(":")
        if arg.startswith("-") and len(word) >= 4 and "healthy".startswith(word):
            mode = 2 if option and "verbose".startswith(option) else 1
        else:
            rest.append(arg)
    return rest, mode


def main(argv: list[str]) -> int:
    argv, health = _health_option(argv)
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        # condor_status answers a bad option with exit status 1 (argparse's is 2)
        return 1 if exc.code == 2 else int(exc.code or 0)
    chosen = sum(bool(x) for x in (args.long, args.af, args.json, args.format))
    if chosen > 1:
        raise StatusUsageError("choose one of -l, -af, -format and -json")
    constraint = parse_expr(args.constraint, source="-constraint") \
        if args.constraint else None
    every, now = _live(args.config) if not args.offline else _offline(args)
    if args.compact and args.total:
        print("condorpy status: -compact is ignored with -total, as condor_status "
              "ignores it", file=sys.stderr)
    view = StatusView(compact=args.compact and not args.total, claimed=args.claimed,
                      avail=args.avail, wide=args.wide, totals_only=args.total)
    ads = list(every)
    if args.names:
        unknown = [n for n in args.names if not any(slot_matches(a, n) for a in every)
                   and not _this_host(n, every)]
        if unknown:
            raise StatusUsageError(f"unknown host or slot {unknown[0]!r} (this machine "
                                   f"has {', '.join(_names(every)) or 'no slots'})")
        ads = [a for a in ads if any(slot_matches(a, n) for n in args.names)]
    if constraint is not None:
        ads = [ad for ad in ads if constraint.evaluate(my=ad) is True]
    if args.broken:
        ads = [ad for ad in ads if ad.evaluate("SlotBrokenReason") not in (None, "")
               and isinstance(ad.evaluate("SlotBrokenReason"), str)]
    if health and not (args.long or args.af or args.json or args.format):
        sys.stdout.write(render_health(ads, verbose=health == 2))
        return 0
    if args.broken and not (args.long or args.af or args.json or args.format):
        out = render_broken(ads)
    elif args.long or args.af or args.json or args.format:
        # the ads chosen by the mode and names, in the form asked
        ads = select(ads, StatusView(avail=args.avail, claimed=args.claimed))
        out = render_long(ads) if args.long else render_autoformat(ads, args.af) \
            if args.af else render_json(ads) if args.json else render_format(ads, args.format)
    else:
        out = render_status(select(ads, view), every, now, view)
    sys.stdout.write(out)
    return 0


def _names(ads: list[ClassAd]) -> list[str]:
    return [str(a.evaluate("Name")) for a in ads]


def _this_host(name: str, ads: list[ClassAd]) -> bool:
    """``slot9@host`` or ``host``: this machine, though no slot has that name now (a
    dynamic slot that has gone): nothing to show, not an error."""
    host = name.rpartition("@")[2]
    return any(a.evaluate("Machine") == host for a in ads)


def _live(config: str | None) -> tuple[list[ClassAd], float]:
    from condorpy.config import load_config
    from condorpy.startd.client import DaemonUnreachable, call
    from condorpy.startd.paths import client_socket
    try:
        got = call(client_socket(load_config(config)), "status", {})
    except DaemonUnreachable as exc:
        raise DaemonUnreachable(f"{exc}; `condorpy status --offline` shows the ads this "
                                f"machine would advertise") from None
    ads = [ClassAd.parse_old(t, source="the daemon's slots") for t in got["ads"]]
    return ads, float(got["now"])


def _offline(args: argparse.Namespace) -> tuple[list[ClassAd], float]:
    from condorpy.clock import SystemClock
    from condorpy.startd.core import load_core
    core = load_core(args.config, inventory_path=args.inventory)
    engine = core.engine(SystemClock())
    engine.cycle(engine.now)
    return list(engine.ads()), engine.now
