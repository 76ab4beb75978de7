"""``condorpy config-val``: print configuration values, like condor_config_val."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Sequence

from condorpy import __version__
from condorpy.cli.parsing import tool_parser
from condorpy.config import Config, load_config
from condorpy.config.summary import config_files, render_summary
from condorpy.errors import ConfigError
from condorpy.machine.facts import lazy_probed_facts
from condorpy.startd.client import call
from condorpy.startd.paths import client_socket


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy config-val",
                    "Print the expanded value of configuration knobs.")
    p.add_argument("-config", "--config", dest="config", metavar="FILE",
                   help="read FILE instead of $CONDOR_CONFIG or /etc/condorpy/condor_config; "
                        "alone (or before a knob name rather than a path) print the "
                        "configuration files read, in order, as condor_config_val -config "
                        "does (the headings on stderr, the files on stdout)")
    # what a -config that names no file becomes (_normalised)
    p.add_argument(_LIST_FLAG, dest="list_files", action="store_true",
                   help=argparse.SUPPRESS)
    p.add_argument("-root-config", "--root-config", dest="root_config", metavar="FILE",
                   help="read FILE instead of $CONDOR_CONFIG or /etc/condorpy/condor_config "
                        "(condor_config_val's name for it)")
    p.add_argument("-summary", "--summary", action="store_true",
                   help="print the settings that differ from their defaults, grouped by "
                        "the file that made them")
    p.add_argument("-verbose", "--verbose", "-v", action="store_true",
                   help="also show where each knob is defined and its raw value")
    p.add_argument("-dump", "--dump", nargs="?", const="", default=None, metavar="REGEX",
                   help="print every knob (whose name matches REGEX) as NAME = value")
    p.add_argument("-raw", "--raw", action="store_true",
                   help="print values as written, without macro expansion")
    p.add_argument("-subsystem", "--subsystem", default="STARTD",
                   help="subsystem for prefixed names such as STARTD.X (default STARTD)")
    p.add_argument("-local-name", "--local-name", dest="localname", default=None,
                   help="local name for prefixed names such as NAME.X")
    p.add_argument("-startd", "--startd", action="store_true",
                   help="ask the running daemon for the values it runs with")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="the knobs to print (with -dump: a regular expression)")
    return p


# what -config alone stands for: list the files rather than name one
_LIST_FLAG = "--list-config-files"


def _is_knob_word(word: str) -> bool:
    """Whether the word after -config is a knob name (condor_config_val -config NAME)
    rather than the file to read: a name has no slash and is no file here."""
    return ("/" not in word and not os.path.exists(word)
            and re.fullmatch(r"[A-Za-z_][\w.]*", word) is not None)


def _normalised(argv: Sequence[str]) -> list[str]:
    """-config that names no file (last, before another option or before a knob name)
    lists the files read, as condor_config_val -config."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "-config" and (i + 1 == len(out) or out[i + 1].startswith("-")
                                 or _is_knob_word(out[i + 1])):
            out[i] = _LIST_FLAG
    return out


def _print_sources(cfg: Config) -> None:
    main_file, local = config_files(cfg)
    sys.stderr.write("Configuration source:\n")
    sys.stderr.flush()
    print(f"\t{main_file}", flush=True)
    if local:
        sys.stderr.write("Local configuration source:\n" if len(local) == 1
                         else "Local configuration sources:\n")
        sys.stderr.flush()
        for path in local:
            print(f"\t{path}", flush=True)
        sys.stderr.write("\n")
        sys.stderr.flush()


def _from_daemon(args: argparse.Namespace) -> int:
    """condor_config_val -startd: the values the running daemon uses (after its last
    reconfig), which may differ from the files now."""
    cfg = load_config(args.config)
    got = call(client_socket(cfg), "config_val", {"names": args.names})
    status = 0
    for name in args.names:
        item = got.get(name) or {}
        if item.get("value") is None:
            print(f"Not defined: {name}", file=sys.stderr)
            status = 1
            continue
        print(item["value"])
        if args.verbose:
            print(f" # at: {item.get('where') or '<Default>'}")
    return status


def _value(cfg: Config, name: str, raw: bool) -> str | None:
    """The text to print, None for "Not defined". Like condor_config_val, a knob set to
    nothing (or to macros that expand to nothing) is not defined, and its built-in
    default does not show through; -raw prints the empty text as written."""
    if raw:
        return cfg.raw(name)
    return cfg.get(name)


def _provenance(cfg: Config, name: str) -> list[str]:
    loc = cfg.where(name)
    if loc is None:
        at = "<Default>"
    elif loc[1] > 0:
        at = f"{loc[0]}, line {loc[1]}"
    else:
        at = loc[0]
    return [f" # at: {at}", f" # raw: {cfg.raw(name) or ''}"]


def main(argv: list[str]) -> int:
    args = parser().parse_args(_normalised(argv))
    list_files = args.list_files
    if args.root_config is not None:
        args.config = args.root_config
    if args.startd:
        return _from_daemon(args)
    if args.dump:
        try:
            re.compile(args.dump, re.I)
        except re.error as exc:
            raise ConfigError(f"-dump {args.dump!r} is not a valid regular expression: "
                              f"{exc}") from None
    cfg = load_config(args.config, subsystem=args.subsystem, localname=args.localname,
                      detected=lazy_probed_facts())
    for warning in cfg.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if list_files:
        _print_sources(cfg)
    if args.summary:
        sys.stdout.write(render_summary(cfg, __version__))
        sys.stdout.flush()
    out: list[str] = []
    if args.dump is not None:
        for name, _ in cfg.items(args.dump or None):
            # a dump lists every name set, empty ones as "NAME = "
            shown = _value(cfg, name, args.raw) or ""
            out.append(f"{name} = {shown}")
            if args.verbose:
                out.extend(_provenance(cfg, name))
    status = 0
    for name in args.names:
        value = _value(cfg, name, args.raw)
        if value is None:
            sys.stdout.write("".join(line + "\n" for line in out))
            out = []
            sys.stdout.flush()
            print(f"Not defined: {name}", file=sys.stderr)
            status = 1
            if args.verbose and cfg.raw(name) is not None:
                # set, but to nothing: still say where, as condor_config_val does
                out.extend(_provenance(cfg, name))
            continue
        if args.verbose:
            out.append(f"{name} = {value}")
            out.extend(_provenance(cfg, name))
        else:
            out.append(value)
    if args.dump is None and not args.names and (list_files or args.summary):
        return status
    if args.dump is None and not args.names:
        print("condorpy config-val: give a NAME, -dump, -summary or -config", file=sys.stderr)
        return 2
    sys.stdout.write("".join(line + "\n" for line in out))
    return status
