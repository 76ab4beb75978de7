"""`condorpy startd [-config FILE] [-f] [-fresh-queue]`: run the execution point daemon.

Without -f it detaches (a new session, no terminal) as HTCondor daemons do, once the
configuration has been read and checked, so a bad configuration is reported here
with its file and line and exit status 1, never by a half-started daemon.

A job store that is there but unusable (empty, unreadable, damaged, not condorpy's) is
never taken for an empty queue: the daemon exits with status 78 (EX_CONFIG, which the
systemd unit does not restart on) and one line naming the file, unless -fresh-queue
says to move it aside and start with an empty queue. A store a newer condorpy wrote
(a higher schema version) is refused the same way, and -fresh-queue keeps it."""

from __future__ import annotations

import argparse
import os
import sys

from condorpy.cli.parsing import tool_parser
from condorpy.startd.core import load_core
from condorpy.startd.daemon import Startd, daemonize, restart_in_place
from condorpy.queue.jobstore import DB_NAME, HistoryLimits, StoreTooNew, StoreUnusable
from condorpy.startd.metrics import metrics_address
from condorpy.startd.paths import daemon_paths
from condorpy.queue.store_check import inspect_files
from condorpy.queue.store_errors import StoreDamaged

# sysexits.h's EX_CONFIG; systemd/condorpy.service names it in RestartPreventExitStatus=
EXIT_STORE_REFUSED = 78


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy startd", "run the condorpy execution point daemon")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")
    p.add_argument("-f", "--foreground", action="store_true",
                   help="stay in the foreground and log to standard error too")
    p.add_argument("-fresh-queue", "--fresh-queue", action="store_true",
                   help="if the job store is there but unusable (empty, unreadable, "
                        "damaged), move it aside as condorpy_queue.sqlite3.bad-<time> and "
                        "start with an empty queue (a sound store is kept as it is)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    core = load_core(args.config)   # a bad configuration fails here, before detaching
    metrics_address(core.config)
    HistoryLimits.from_config(core.config)
    if not args.fresh_queue:
        # Seen from the files alone, before detaching, so that the refusal reaches
        # whoever started the daemon (the daemon checks again, SQLite included).
        paths, _notes = daemon_paths(core.config, dict(os.environ))
        _exists, problem = inspect_files(os.path.join(paths.spool, DB_NAME))
        if problem is not None:
            return _refused(problem)
    if not args.foreground:
        daemonize()
    try:
        daemon = Startd(args.config, foreground=args.foreground,
                        fresh_queue=args.fresh_queue)
        daemon.start()
    except (StoreUnusable, StoreDamaged, StoreTooNew) as exc:   # a bad row, too
        return _refused(exc)
    rc = daemon.run()
    if daemon.restart_requested:      # condorpy restart: this process, anew
        restart_in_place(sys.orig_argv, sys.executable)
    return rc


def _refused(exc: StoreUnusable | StoreDamaged | StoreTooNew) -> int:
    print(f"condorpy startd: error: {exc}", file=sys.stderr)
    return EXIT_STORE_REFUSED
