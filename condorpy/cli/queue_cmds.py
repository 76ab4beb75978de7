"""`condorpy q`, `condorpy history` and `condorpy who`: fetch ads from the running
daemon and print them in HTCondor's layouts."""

from __future__ import annotations

import getpass
import os
import sys
from typing import TYPE_CHECKING, Any, Sequence

from condorpy.classad import ClassAd
from condorpy.cli.parsing import wants_help
from condorpy.clock import SystemClock
from condorpy.config import KnobReader, load_config
from condorpy.slots.status_format import render_autoformat, render_json, render_long
from condorpy.startd.client import call, stream
from condorpy.startd.paths import client_socket
from condorpy.cli.q_output import QueuePrinter
from condorpy.queue.projection import af_projection, q_projection
from condorpy.queue.query import Query, parse_query
from condorpy.queue.formats import (QueueLayout, ScheddLabel, render_history,
                                    render_queue, render_who)
from condorpy.queue.printf import render_format
from condorpy.queue.who_long import render_who_long

if TYPE_CHECKING:
    import argparse

# q and history read their arguments as condor_q does (queue/query.py: any option
# shortened to a few letters, -af taking the words up to the next option), which
# argparse cannot; the parsers below describe them, for -help and the manual page,
# and a test keeps them in step with what query.py takes.
_SELECTION = "ID|OWNER"
_SELECTION_HELP = "a cluster (C), a job (C.P) or an owner; a job matches any of them"


def _described(prog: str, description: str) -> "argparse.ArgumentParser":
    from condorpy.cli.parsing import tool_parser
    p = tool_parser(prog, description + " Options may be shortened, as condor_q's "
                    "(-const, -nob).")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")
    return p


def _output_options(p: "argparse.ArgumentParser") -> None:
    p.add_argument("-constraint", metavar="EXPR",
                   help="only jobs whose ad satisfies EXPR (repeatable: all must hold)")
    p.add_argument("-limit", "-match", metavar="N", help="at most N jobs")
    p.add_argument("-af", "-autoformat", metavar="EXPR", nargs="+",
                   help="print these attributes or expressions, one line per job")
    p.add_argument("-long", action="store_true", help="print whole job ads")
    p.add_argument("-json", action="store_true", help="print the job ads as JSON")
    p.add_argument("-format", nargs=2, metavar=("FMT", "EXPR"), action="append",
                   help="print EXPR of each job through the printf-style FMT (%%d %%s "
                        "%%f %%v %%V %%r, with flags and widths; \\n ends a line); "
                        "repeatable, the formats run together as condor_q's do")
    p.add_argument("-wide", action="store_true",
                   help="never cut rows (q cuts them to a terminal's width, as condor_q "
                        "does, history at 1024 characters); -wide:N cuts them at N "
                        "columns (q: N - 1, as condor_q)")


def q_parser() -> "argparse.ArgumentParser":
    p = _described("condorpy q", "Show the jobs in the local queue, like condor_q: by "
                   "default one line per batch of the caller's jobs.")
    p.add_argument("targets", nargs="*", metavar=_SELECTION, help=_SELECTION_HELP)
    _output_options(p)
    p.add_argument("-nobatch", action="store_true", help="one line per job")
    p.add_argument("-batch", action="store_true", help="one line per batch (the default)")
    p.add_argument("-totals", action="store_true", help="only the totals")
    p.add_argument("-hold", "-held", action="store_true",
                   help="only held jobs, with when and why they were held")
    p.add_argument("-run", action="store_true",
                   help="only running jobs, with the slot each runs in (HOST(S))")
    p.add_argument("-idle", action="store_true", help="only idle jobs, one line each")
    p.add_argument("-stream-results", action="store_true",
                   help="print each job's row as it arrives, its columns as wide as "
                        "their headings (the rows otherwise wait for the last job, so "
                        "that each column fits its widest cell); one row per job")
    p.add_argument("-allusers", "-all-users", action="store_true",
                   help="every user's jobs; without it (and without job ids or owners) "
                        "only the caller's, root's included, unless "
                        "CONDOR_Q_ONLY_MY_JOBS is false")
    p.add_argument("-userlog", metavar="FILE",
                   help="the jobs as the job event log FILE records them, read here "
                        "without asking the daemon")
    _analyze_options(p)
    return p


def _analyze_options(p: "argparse.ArgumentParser") -> None:
    p.add_argument("-analyze", "-analyse", action="store_true",
                   help="say why each selected job does not run (or that it runs, and "
                        "where): how many of the daemon's slots its Requirements reject, "
                        "how many reject it, are busy or are able to run it")
    p.add_argument("-better-analyze", "-better-analyse", action="store_true",
                   help="-analyze, with the job's Requirements clause by clause and how "
                        "many slots match each, the job attributes they use, and the "
                        "START and Requirements of each slot that refuses the job, part "
                        "by part")


def history_parser() -> "argparse.ArgumentParser":
    p = _described("condorpy history", "Show the jobs that left the local queue, newest "
                   "first, like condor_history.")
    p.add_argument("targets", nargs="*", metavar=_SELECTION, help=_SELECTION_HELP)
    _output_options(p)
    p.add_argument("-file", metavar="FILE",
                   help="read the jobs from FILE, a history file in HTCondor's format "
                        "(ads each ended by a '*** ' line), not from the daemon")
    p.add_argument("-forwards", action="store_true", help="oldest first")
    p.add_argument("-backwards", action="store_true", help="newest first (the default)")
    return p


def who_parser() -> "argparse.ArgumentParser":
    from condorpy.cli.parsing import tool_parser
    p = tool_parser("condorpy who", "Show the jobs running on this machine, like "
                    "condor_who: who owns each, whose schedd sent it, its slot, its "
                    "run time, its process and its directory. Nothing is printed when "
                    "no job runs, as condor_who prints nothing.")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")
    p.add_argument("-long", "-l", action="store_true",
                   help="print the whole ad of each slot that runs a job, as condor_who "
                        "-long (nothing when no job runs)")
    return p


def _split_config(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """``-config FILE`` (or ``--config``) from anywhere on the line, the rest as it is."""
    rest: list[str] = []
    config: str | None = None
    it = iter(argv)
    for arg in it:
        if arg in ("-config", "--config"):
            config = next(it, None)
            if config is None:
                raise SystemExit(f"{arg} needs a file name")
        elif arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return config, rest


def _fetch(config: str | None, command: str, args: dict[str, Any]) -> Any:
    return call(client_socket(load_config(config)), command, args)


def _ads(texts: list[str], source: str) -> list[ClassAd]:
    return [ClassAd.parse_old(t, source=source) for t in texts]


def _other_output(query: Query, ads: list[ClassAd]) -> str | None:
    if query.output == "long":
        return render_long(ads)
    if query.output == "json":
        return render_json(ads)
    if query.output == "af":
        return render_autoformat(ads, query.attrs)
    if query.output == "format":
        return render_format(ads, query.formats)
    return None


def q_main(argv: list[str]) -> int:
    if wants_help(argv):
        q_parser().print_help()
        return 0
    config, rest = _split_config(argv)
    query = parse_query(rest, "q")
    if query.userlog is not None:
        return _q_userlog(query)
    cfg = load_config(config)
    me = only_my_jobs(query, cfg)
    if query.output in ("analyze", "better-analyze"):
        from condorpy.cli.analyze import analyze_main
        got = call(client_socket(cfg), "q", {})
        every = _ads(got["ads"], "the daemon's queue")
        chosen = query.select([ad for ad in every if me is None or _owner(ad) == me])
        return analyze_main(config, query, chosen,
                            ScheddLabel(got["schedd"], got["address"]))
    # printed as it comes (cli/q_output.py); the daemon sends only what the output
    # and the selection read of each ad
    names = q_projection(query)
    with stream(client_socket(cfg), "q", {"projection": names} if names else {}) as got:
        printer = QueuePrinter(query, sys.stdout,
                               schedd=ScheddLabel(got.head["schedd"], got.head["address"]),
                               now=float(got.head["now"]),
                               utc_offset=SystemClock().utc_offset, layout=_layout(query),
                               me=me, width=_terminal_width(query))
        for part in got.parts():
            printer.take(_ads(part, "the daemon's queue"))
        printer.finish()
    return 0


def history_main(argv: list[str]) -> int:
    if wants_help(argv):
        history_parser().print_help()
        return 0
    config, rest = _split_config(argv)
    query = parse_query(rest, "history")
    if query.history_file is not None:
        return _history_file(query)
    # oldest first reads the whole history: the daemon hands it out newest first
    got = _fetch(config, "history", _pushed_down(query) if not query.forwards else
                 {k: v for k, v in _pushed_down(query).items() if k != "limit"})
    every = _ads(got["ads"], "the daemon's history")
    chosen = query.select(every[::-1] if query.forwards else every)
    if query.limit is not None:
        chosen = chosen[:query.limit]
    out = _other_output(query, chosen)
    if out is None:
        out = render_history(chosen, utc_offset=SystemClock().utc_offset,
                             width=_history_width(query))
    sys.stdout.write(out)
    return 0


def _pushed_down(query: Query) -> dict[str, Any]:
    """The selection and limit as the daemon's history takes them, so that it reads
    only as far as needed; the ads that come back are selected here again, which
    changes nothing."""
    ids = [f"ClusterId == {i.cluster}" + (f" && ProcId == {i.proc}" if i.proc is not None
                                          else "") for i in query.ids]
    ids += [f'Owner == "{o}"' for o in query.owners]
    parts = [" || ".join(f"({s})" for s in ids)] if ids else []
    parts += [str(c) for c in query.constraints]
    args: dict[str, Any] = {}
    if parts:
        args["constraint"] = " && ".join(f"({p})" for p in parts)
    if query.limit is not None:
        args["limit"] = query.limit
    return {**args, **_projection(query)}


def _projection(query: Query) -> dict[str, Any]:
    """Only what -af prints and the selection reads, where that is all the output
    needs: the daemon sends those attributes (and what they refer to) alone."""
    names = af_projection(query)
    return {"projection": names} if names else {}


def _layout(query: Query) -> QueueLayout:
    if query.output in ("nobatch", "hold", "run", "totals"):
        return query.output  # type: ignore[return-value]
    return "batch"


def _owner(ad: ClassAd) -> object:
    return ad.evaluate("Owner")


def only_my_jobs(query: Query, cfg: KnobReader) -> str | None:
    """Whose jobs a plain ``q`` shows: the caller's, as condor_q since 8.5, unless
    jobs or owners are named, -allusers is given or CONDOR_Q_ONLY_MY_JOBS is false.
    root is no exception: condor_q run by root shows root's own jobs (none, on a
    schedd that runs no job as root) and says so in a "Total for" line."""
    if query.ids or query.owners or query.all_users:
        return None
    if not cfg.knob_bool("CONDOR_Q_ONLY_MY_JOBS"):
        return None
    return user_name()


def user_name() -> str:
    """The caller's name by its uid, as HTCondor's tools take it (not $USER, which
    su and sudo may leave as another's)."""
    import pwd
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return getpass.getuser()


def _terminal_width(query: Query) -> int | None:
    """The width rows are cut to: -wide:N's, else the terminal's when the output is
    one and -wide is not given (condor_q's habit); None never cuts."""
    if query.width is not None:
        return query.width
    if query.wide or not sys.stdout.isatty():
        return None
    import shutil
    return shutil.get_terminal_size().columns


def _history_width(query: Query) -> int | None:
    """condor_history's cut: at 1024 characters, -wide:N at N, -wide never."""
    if query.width is not None:
        return query.width
    return None if query.wide else 1024


def _q_userlog(query: Query) -> int:
    """``q -userlog FILE``: the jobs as the job event log records them, read here
    without asking the daemon, as condor_q -userlog reads them."""
    from condorpy.queue.userlog_ads import userlog_ads
    path = query.userlog or ""
    clock = SystemClock()
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        sys.stdout.flush()
        print(f"\nCan't open user log: {path}", file=sys.stderr)
        return 1
    now = clock.time()
    ads = userlog_ads(text, path=path, owner=user_name(), now=now,
                      utc_offset=clock.utc_offset)
    chosen = query.select(ads)
    out = _other_output(query, chosen)
    if out is None:
        out = render_queue(chosen, schedd=f"Userlog: {path}", now=now,
                           utc_offset=clock.utc_offset, layout=_layout(query),
                           width=_terminal_width(query))
    sys.stdout.write(out)
    return 0


def _history_file(query: Query) -> int:
    """``history -file FILE``: the jobs in a history file in HTCondor's format (ads
    each ended by a ``*** `` banner line), newest first unless -forwards."""
    from condorpy.queue.history_file import history_ads
    path = query.history_file or ""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        # condor_history prints its heading before it finds the file missing
        if query.output not in ("long", "json", "af", "format"):
            sys.stdout.write(render_history([], utc_offset=SystemClock().utc_offset))
            sys.stdout.flush()
        print(f"Error opening history file {path}: {exc.strerror}", file=sys.stderr)
        return 1
    ads = history_ads(text, source=path)
    chosen = query.select(ads if query.forwards else ads[::-1])
    out = _other_output(query, chosen)
    if out is None:
        out = render_history(chosen, utc_offset=SystemClock().utc_offset,
                             width=_history_width(query))
    sys.stdout.write(out)
    return 0


def who_main(argv: list[str]) -> int:
    if wants_help(argv):
        who_parser().print_help()
        return 0
    config, rest = _split_config(argv)
    # condor_who takes any leading part of -long
    long = [a for a in rest if a == "--long" or (len(a) > 1 and "-long".startswith(a))]
    rest = [a for a in rest if a not in long]
    if rest:
        raise SystemExit(f"condorpy who: unexpected argument {rest[0]!r} "
                         f"(condorpy who -help lists the options)")
    got = _fetch(config, "who", {})
    ads = _ads(got["ads"], "the daemon's slots")
    if long:
        sys.stdout.write(render_who_long(ads))
        return 0
    dirs = got.get("job_dirs")
    # condor_who names the startd's pid only when it found the startd by its pid
    # (-pid, -allpids), not by the log directory as it does by default
    sys.stdout.write(render_who(ads, job_dirs=dirs if isinstance(dirs, dict) else None))
    return 0

