"""`condorpy watch-q`: follow jobs' progress from their job event logs (like
condor_watch_q).

The queue is asked once which jobs to follow (yours, or those of ``-users``,
``-clusters``, ``-batches``) and where their event logs are (``log =`` in the submit
description); from then on only the logs are read, as condor_watch_q does. On a
terminal the table is redrawn in place; otherwise it is printed again each time it
changes. ``-exit GROUPER,STATUS[,CODE]`` ends it with CODE once the condition holds;
^C ends it with 0, and so does finding no jobs to follow. The layout is that of
HTCondor 23.9's condor_watch_q (the reference pool's).
"""

from __future__ import annotations

import argparse
import datetime
import getpass
import os
import shutil
import sys
import time
from typing import Any

from condorpy.cli.parsing import tool_parser
from condorpy.queue import watch

READ_LIMIT = 1 << 20        # bytes of one log read a pass: a huge log is caught up on


class _Exit(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        try:
            cond = watch.ExitCondition.parse(str(values))
        except ValueError as exc:
            parser.error(str(exc))
        got = getattr(namespace, self.dest, None) or []
        setattr(namespace, self.dest, [*got, cond])


def _switch(p: argparse.ArgumentParser, name: str, dest: str, default: bool | None,
            what: str) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument(f"-{name}", dest=dest, action="store_true", default=default,
                   help=f"show {what}" + (" (the default)" if default else ""))
    g.add_argument(f"-no-{name}", dest=dest, action="store_false",
                   help=f"do not show {what}")


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy watch-q",
                    "follow the progress of jobs from their job event logs (like "
                    "condor_watch_q): your own jobs unless -users, -clusters, -batches or "
                    "-files say otherwise")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")
    p.add_argument("-users", nargs="+", metavar="USER", help="follow these users' jobs")
    p.add_argument("-clusters", nargs="+", type=int, metavar="CLUSTER_ID",
                   help="follow the jobs of these clusters")
    p.add_argument("-larger-than", dest="since", type=int, metavar="CLUSTER_ID",
                   help="follow only clusters from CLUSTER_ID on")
    p.add_argument("-files", nargs="+", metavar="FILE",
                   help="follow the jobs in these job event logs")
    p.add_argument("-batches", nargs="+", metavar="BATCH_NAME",
                   help="follow the jobs with these JobBatchName values")
    p.add_argument("-exit", action=_Exit, metavar="GROUPER,JOB_STATUS[,EXIT_STATUS]",
                   help="end once GROUPER (all, any, none) of the jobs are in JOB_STATUS "
                        "(active, done, idle, held), with EXIT_STATUS (default 0); may be "
                        "given more than once, the first met ends it")
    p.add_argument("-interval", type=float, default=2.0, metavar="SECONDS",
                   help="seconds between reads of the logs (default: %(default)s)")
    p.add_argument("-groupby", choices=("batch", "log", "cluster"), default="batch",
                   help="one row per batch name (the default), event log or cluster")
    p.add_argument("-summary-type", choices=("totals", "percentages"), default="totals",
                   help="the summary line as counts (the default) or percentages")
    _switch(p, "table", "table", True, "the table")
    _switch(p, "progress", "progress", True, "the total progress bar")
    _switch(p, "row-progress", "row_progress", True, "a progress bar on each row")
    _switch(p, "summary", "summary", True, "the summary line")
    _switch(p, "updated-at", "updated_at", True, "when the display was last updated")
    _switch(p, "refresh", "refresh", None,
            "the display redrawn in place (the default on a terminal; otherwise each "
            "change is printed below the last)")
    _switch(p, "abbreviate", "abbreviate", True,
            "each directory of a log's path (-groupby log) cut to a short prefix that "
            "tells it from its neighbours")
    _switch(p, "color", "color", None, "colours (accepted; the display has none)")
    return p


def abbreviate(path: str) -> str:
    """Each directory of ``path`` cut to one character more than the prefix its
    directory's entries share (condor_watch_q's -abbreviate); the file name whole."""
    parts: list[str] = []
    head = path
    while True:
        up, tail = os.path.split(head)
        if up == head or tail == head:
            parts.insert(0, head)
            break
        parts.insert(0, tail)
        head = up
    out: list[str] = []
    so_far = ""
    for part in parts[:-1]:
        so_far = os.path.expanduser(os.path.join(so_far, part))
        if part in ("~", "."):
            out.append(part)
            continue
        try:
            names = os.listdir(os.path.dirname(so_far))
        except OSError:
            out.append(part)
            continue
        common = "" if len(names) == 1 else os.path.commonprefix(names)
        out.append(part[:len(common) + 1])
    out.append(parts[-1])
    return os.path.join(*out)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _discover(args: argparse.Namespace) -> tuple[dict[str, None], watch.Tracker] | None:
    """The logs to read and a tracker primed with what the queue says of the jobs;
    None when there is nothing to follow."""
    users = args.users
    if users is None and args.clusters is None and args.files is None and args.batches is None:
        users = [getpass.getuser()]
    terms = [f"Owner == {_quote(u)}" for u in users or []]
    terms += [f"ClusterId == {int(c)}" for c in args.clusters or []]
    terms += [f"JobBatchName == {_quote(b)}" for b in args.batches or []]
    logs: dict[str, None] = {os.path.abspath(f): None for f in args.files or []}
    batch_names: dict[int, str | None] = {}
    only: set[int] | None = set(args.clusters) if args.clusters else None
    if terms:
        from condorpy.classad import ClassAd
        from condorpy.config import load_config
        from condorpy.startd.client import call
        from condorpy.startd.paths import client_socket
        got = call(client_socket(load_config(args.config)), "q",
                   {"constraint": " || ".join(terms)})
        warned: set[int] = set()
        for text in got.get("ads", []):
            ad = ClassAd.parse_old(text)
            cluster = ad.evaluate("ClusterId")
            if not isinstance(cluster, int):
                continue
            name = ad.evaluate("JobBatchName")
            batch_names[cluster] = name if isinstance(name, str) else None
            if args.batches:
                only = (only or set()) | {cluster}
            log = ad.evaluate("UserLog")
            if not isinstance(log, str) or not log:
                if cluster not in warned:
                    warned.add(cluster)
                    print(f"WARNING: Cluster {cluster} does not have a job event log file "
                          f"(set log=<path> in the submit description)", file=sys.stderr)
                continue
            iwd = ad.evaluate("Iwd")
            if not os.path.isabs(log) and isinstance(iwd, str):
                log = os.path.join(iwd, log)
            logs[os.path.abspath(log)] = None
    if not logs:
        return None
    return logs, watch.Tracker(batch_names=batch_names, only=only, since=args.since)


class _Logs:
    """The logs, each read on from where the last read stopped."""

    def __init__(self, paths: dict[str, None]) -> None:
        self.offsets: dict[str, int] = {}
        self.parsers: dict[str, watch.EventParser] = {}
        for path in paths:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                why = "File path does not exist" if not os.path.exists(path) else \
                    exc.strerror
                print(f"WARNING: Could not open event log at {path} for reading, so it "
                      f"will be ignored. Reason: {why}", file=sys.stderr)
                continue
            self.offsets[path] = 0
            self.parsers[path] = watch.EventParser()

    def read(self, tracker: watch.Tracker) -> None:
        for path, offset in self.offsets.items():
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read(READ_LIMIT)
            except OSError:
                continue
            self.offsets[path] = offset + len(data)
            tracker.add(path, self.parsers[path].feed(data.decode("utf-8", "replace")))


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.clusters is not None and args.since is not None:
        print("ERROR: Use of both -clusters and -larger-than flag is prohibited.",
              file=sys.stderr)
        return 1
    found = _discover(args)
    if found is None:
        print("WARNING: No jobs found, exiting...", file=sys.stderr)
        return 0
    paths, tracker = found
    logs = _Logs(paths)
    conditions: list[watch.ExitCondition] = args.exit or []
    tty = sys.stdout.isatty()
    refresh = tty if args.refresh is None else (args.refresh and tty)
    show = watch.Display(table=args.table, progress=args.progress,
                         row_progress=args.row_progress, summary=args.summary,
                         percentages=args.summary_type == "percentages",
                         updated_at=args.updated_at)
    home, cwd = os.path.expanduser("~"), os.getcwd()
    shorten = abbreviate if args.abbreviate else (lambda p: p)
    last: str | None = None
    last_now = ""
    try:
        while True:
            logs.read(tracker)
            now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            columns, rows = shutil.get_terminal_size()
            text = watch.screen(tracker, args.groupby, show, columns, now,
                                lambda p: shorten(watch.nice_path(p, home, cwd)),
                                rows if refresh else None)
            if not refresh:
                text += "\n..."
            if not conditions:
                text += "\nInput ^C to exit"
            if refresh:
                if last is not None:
                    # back over what was drawn last, blank it, and draw again there
                    shown = last.splitlines()
                    up = f"\033[{len(shown)}A\r"
                    sys.stdout.write(up + "\n".join(" " * len(ln) for ln in shown) + "\n" + up)
                print(text, flush=True)
            elif last is None or text.replace(now, "") != last.replace(last_now, ""):
                print(text, flush=True)
            last, last_now = text, now
            for cond in conditions:
                if cond.met(tracker.states()):
                    print(f'Exiting with code {cond.code} because of condition "{cond}" '
                          f"at {now}", flush=True)
                    return cond.code
            time.sleep(max(0.05, args.interval))
    except KeyboardInterrupt:
        return 0
