"""`condorpy` command dispatcher.

Each subcommand lives in its own module ``condorpy.cli.<module>`` exposing
``main(argv: list[str]) -> int``; modules are imported only when their command runs,
so a broken or slow import in one tool never affects another.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING

from condorpy.errors import CondorpyError

if TYPE_CHECKING:
    import argparse

COMMANDS: dict[str, tuple[str, str]] = {
    "classad": ("condorpy.cli.classad_cmd", "evaluate and convert ClassAds"),
    "config-val": ("condorpy.cli.config_val", "print configuration values (like condor_config_val)"),
    "status": ("condorpy.cli.status_cmd", "show this machine's slot ads (like condor_status)"),
    "policy": ("condorpy.cli.policy_cmd", "simulate and explain the startd policy"),
    "starter": ("condorpy.cli.starter_cmd", "run one job under a starter"),
    "startd": ("condorpy.cli.startd_cmd", "run the execution point daemon"),
    "submit": ("condorpy.cli.daemon_cmds:submit_main", "submit jobs (like condor_submit)"),
    "q": ("condorpy.cli.queue_cmds:q_main", "show the job queue (like condor_q)"),
    "history": ("condorpy.cli.queue_cmds:history_main", "show finished jobs (like "
                "condor_history)"),
    "who": ("condorpy.cli.queue_cmds:who_main", "show the running jobs (like condor_who)"),
    "rm": ("condorpy.cli.daemon_cmds:rm_main", "remove jobs (like condor_rm)"),
    "hold": ("condorpy.cli.daemon_cmds:hold_main", "hold jobs (like condor_hold)"),
    "release": ("condorpy.cli.daemon_cmds:release_main", "release held jobs"),
    "vacate": ("condorpy.cli.daemon_cmds:vacate_main", "vacate slots (like condor_vacate)"),
    "drain": ("condorpy.cli.daemon_cmds:drain_main", "drain the machine (like condor_drain)"),
    "off": ("condorpy.cli.daemon_cmds:off_main", "shut the daemon down (like condor_off)"),
    "on": ("condorpy.cli.daemon_cmds:on_main", "start the daemon (like condor_on)"),
    "reconfig": ("condorpy.cli.daemon_cmds:reconfig_main", "re-read the configuration"),
    "qedit": ("condorpy.cli.qedit_cmd", "change attributes of queued jobs (like condor_qedit)"),
    "watch-q": ("condorpy.cli.watch_q", "follow jobs' progress from their event logs (like "
                "condor_watch_q)"),
    "tail": ("condorpy.cli.tail_cmd", "show a running job's output (like condor_tail)"),
    "restart": ("condorpy.cli.daemon_cmds:restart_main", "restart the daemon, keeping "
                "running jobs (like condor_restart)"),
    "store": ("condorpy.cli.store_cmd", "recover a damaged job store (store salvage)"),
}


def _usage() -> str:
    lines = ["usage: condorpy COMMAND [ARGS ...]", "", "commands:"]
    for name, (_, help_) in COMMANDS.items():
        lines.append(f"  {name:<12} {help_}")
    return "\n".join(lines)


def _import_quietly(module_name: str) -> object:
    """The command's module, imported without the collector: an import makes tens of
    thousands of objects and no garbage, and collecting while it runs costs a command
    line a tenth of its start-up. What it made is then frozen out of later collections
    (a long-running daemon's too: its modules live as long as it does). Only for the
    process's own command line: a caller in the same process keeps its collector as
    it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(module_name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


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
        module_name, _, func = COMMANDS[name][0].partition(":")
        # as the program (not called by other code): no collections while importing
        module = _import_quietly(module_name) if argv is None else \
            importlib.import_module(module_name)
        return int(getattr(module, func or "main")(rest) or 0)
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


def parser_for(name: str) -> "argparse.ArgumentParser":
    """The argparse definition of command ``name``: what its -help prints and its
    manual page is made from. A command ``module:NAME_main`` defines it as
    ``module:NAME_parser()``, a command ``module`` (whose entry is ``main``) as
    ``module:parser()``."""
    module_name, _, func = COMMANDS[name][0].partition(":")
    builder = func.removesuffix("_main") + "_parser" if func else "parser"
    made = getattr(importlib.import_module(module_name), builder)()
    return made  # type: ignore[no-any-return]
