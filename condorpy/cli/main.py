"""`condorpy` command dispatcher.

Each subcommand lives in its own module ``condorpy.cli.<module>`` exposing
``main(argv: list[str]) -> int``; modules are imported only when their command runs,
so a broken or slow import in one tool never affects another.
"""

from __future__ import annotations

import importlib
import os
import sys

from condorpy.errors import CondorpyError

COMMANDS: dict[str, tuple[str, str]] = {
    "classad": ("condorpy.cli.classad_cmd", "evaluate and convert ClassAds"),
    "config-val": ("condorpy.cli.config_val", "print configuration values (like condor_config_val)"),
    "status": ("condorpy.cli.status_cmd", "show this machine's slot ads (like condor_status)"),
    "policy": ("condorpy.cli.policy_cmd", "simulate and explain the startd policy"),
    "starter": ("condorpy.cli.starter_cmd", "run one job under a starter"),
}


def _usage() -> str:
    lines = ["usage: condorpy COMMAND [ARGS ...]", "", "commands:"]
    for name, (_, help_) in COMMANDS.items():
        lines.append(f"  {name:<12} {help_}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        from condorpy import __version__
        print(f"condorpy {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"condorpy: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(COMMANDS[name][0])
        return int(module.main(rest) or 0)
    except CondorpyError as exc:
        print(f"condorpy {name}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never a traceback to a user unless asked for
        if os.environ.get("CONDORPY_DEBUG"):
            raise
        print(f"condorpy {name}: internal error: {type(exc).__name__}: {exc}\n"
              "(set CONDORPY_DEBUG=1 for a traceback, and please report it)", file=sys.stderr)
        return 70
