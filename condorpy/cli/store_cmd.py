"""`condorpy store salvage [-config FILE] [-o NEW] [STORE]`: recover a damaged job store.

The daemon refuses to start on a job store it cannot read whole. With the daemon
stopped, `salvage` copies every job (queued or in the history), starter record and
claim that still reads into a new store, and says how many it kept and which it lost.
Without -o the new store takes the damaged one's place, which is moved aside as
condorpy_queue.sqlite3.bad-<time> (kept, never deleted); with -o it is written to NEW
and the damaged store is left as it is.

Exit status: 0 when every row read, 3 when some were lost (the output names the jobs
it could), 1 when nothing could be salvaged or the store is in use."""

from __future__ import annotations

import argparse
import os
import sys

from condorpy.cli.parsing import add_help, tool_parser
from condorpy.errors import QueueError


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy store", "inspect and recover the daemon's job store")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="salvage")
    sv = sub.add_parser("salvage", add_help=False,
                        help="copy what still reads of a damaged job store into a new one",
                        description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    add_help(sv)
    sv.add_argument("-config", "--config", metavar="FILE",
                    help="configuration file whose SPOOL holds the store (default: "
                         "$CONDOR_CONFIG, then /etc/condorpy/condor_config)")
    sv.add_argument("-o", "-output", "--output", metavar="NEW", dest="output",
                    help="write the salvaged store to NEW (a file that must not exist) "
                         "and leave the damaged store untouched")
    sv.add_argument("store", nargs="?", metavar="STORE",
                    help="the damaged store file (default: condorpy_queue.sqlite3 in "
                         "the configuration's SPOOL)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    from condorpy.queue.store_salvage import salvage
    path = args.store or _configured_store(args.config)
    try:
        report = salvage(path, output=args.output)
    except OSError as exc:
        raise QueueError(f"salvage failed: {exc.strerror or exc}",
                         path=exc.filename or path) from None
    for src, dst in report.set_aside:
        print(f"moved the damaged {src} aside to {dst} (kept)")
    queued, done = report.kept.get("jobs", 0), report.kept.get("history", 0)
    print(f"salvaged {report.source} into {report.target}: kept {queued} queued "
          f"job(s) and {done} finished job(s) in the history")
    others = {t: n for t, n in report.kept.items() if t not in ("jobs", "history") and n}
    if others:
        print("kept " + ", ".join(f"{n} {t} row(s)" for t, n in others.items()))
    if report.lost_ids:
        shown = ", ".join(report.lost_ids[:20])
        more = f" and {len(report.lost_ids) - 20} more" if len(report.lost_ids) > 20 else ""
        print(f"lost {len(report.lost_ids)} job(s): {shown}{more}")
    bad = {t: n for t, n in report.unreadable.items() if n}
    if bad:
        print("unreadable: " + ", ".join(f"{t} ({n} damaged stretch(es) or row(s))"
                                         for t, n in bad.items()))
    if not report.damaged:
        print("nothing was lost: every row read")
    print(f"the next cluster id is {report.next_cluster}")
    return 0 if not report.damaged else 3


def _configured_store(config: str | None) -> str:
    from condorpy.queue.store_db import DB_NAME
    from condorpy.startd.core import load_core
    from condorpy.startd.paths import daemon_paths
    core = load_core(config)
    paths, _notes = daemon_paths(core.config, dict(os.environ))
    return os.path.join(paths.spool, DB_NAME)


if __name__ == "__main__":     # pragma: no cover
    sys.exit(main(sys.argv[1:]))
