"""`condorpy tail`: the end of a running job's stdout or stderr (like condor_tail).

The daemon reads the file the job writes and answers only its owner or root (see
:mod:`condorpy.startd.job_tail`); this command asks for the last ``-maxbytes`` bytes
and, with ``-f``, asks again from where it stopped until the job ends or you press
^C. Errors, and their exit status 1, are condor_tail's: ``No such job: 1.0``,
``Job 1.0 is not running.``
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
from typing import Any

from condorpy.cli.parsing import tool_parser

FOLLOW_INTERVAL_S = 1.0


def _maxbytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"maxbytes ({text}) is not valid")
    return value


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy tail", "show the end of a running job's standard output "
                                     "or error (like condor_tail); only the job's owner "
                                     "or root may read it")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")
    p.add_argument("-maxbytes", type=_maxbytes, default=1024, metavar="N",
                   help="show at most N bytes, and with -f at most N a time "
                        "(default: %(default)s)")
    p.add_argument("-stderr", action="store_true",
                   help="the job's standard error instead of its standard output")
    p.add_argument("-no-stdout", action="store_true",
                   help="accepted for condor_tail's sake: with -stderr it changes nothing")
    p.add_argument("-f", "-follow", dest="follow", action="store_true",
                   help="keep showing what the job writes until it ends or you press ^C")
    p.add_argument("-auto-retry", action="store_true",
                   help="wait for a job that is not running yet, instead of failing")
    p.add_argument("job", metavar="JOBID", help="the job: CLUSTER.PROC (CLUSTER means "
                                                "CLUSTER.0)")
    return p


def _write(chunk: dict[str, Any]) -> None:
    data = base64.b64decode(str(chunk.get("data", "")))
    if data:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.no_stdout and not args.stderr:
        print("No file transfer specified.", file=sys.stderr)
        return 1
    cluster, dot, proc = args.job.partition(".")
    if not cluster.isdigit() or (dot and not proc.isdigit()):
        print(f"Invalid Job ID: {args.job}", file=sys.stderr)
        return 1
    from condorpy.config import load_config
    from condorpy.startd.client import RequestRefused, call
    from condorpy.startd.paths import client_socket
    path = client_socket(load_config(args.config))
    request: dict[str, Any] = {"id": args.job, "stderr": args.stderr,
                               "maxbytes": args.maxbytes, "offset": None}
    shown = False
    while True:
        try:
            chunk = call(path, "tail", request)
        except RequestRefused as exc:
            message = str(exc).removeprefix("tail: ")
            retry = message.endswith("is not running.") and not shown and args.auto_retry
            if retry:
                time.sleep(2)
                continue
            if shown and args.follow:
                return 0        # followed until the job ended
            print(message, file=sys.stderr)
            return 1
        _write(chunk)
        shown = True
        if not args.follow:
            return 0
        request["offset"] = chunk.get("offset")
        if chunk.get("offset", 0) >= chunk.get("size", 0):
            time.sleep(FOLLOW_INTERVAL_S)
