"""`condorpy startd [-config FILE] [-f]`: run the execution point daemon.

Without -f it detaches (a new session, no terminal) as HTCondor daemons do, once the
configuration has been read and checked, so a bad configuration is reported here
with its file and line and exit status 1, never by a half-started daemon."""

from __future__ import annotations

import argparse

from condorpy.startd.core import load_core
from condorpy.startd.daemon import Startd, daemonize
from condorpy.startd.metrics import metrics_address


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="condorpy startd",
                                description="run the condorpy execution point daemon")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")
    p.add_argument("-f", "--foreground", action="store_true",
                   help="stay in the foreground and log to standard error too")
    args = p.parse_args(argv)
    core = load_core(args.config)   # a bad configuration fails here, before detaching
    metrics_address(core.config)
    if not args.foreground:
        daemonize()
    daemon = Startd(args.config, foreground=args.foreground)
    daemon.start()
    return daemon.run()
