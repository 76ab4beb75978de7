"""The commands that talk to a running daemon: `submit`, `rm`, `hold`, `release`,
`vacate`, `drain`, `off`, `on`, `reconfig`, `restart`. Each sends one request over the control
socket (submit: its requests over one connection) (found through the configuration, see :mod:`condorpy.startd.paths`) and prints
the answer; an unreachable daemon is one clear line."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from condorpy.cli.parsing import tool_parser
from condorpy.config import load_config
from condorpy.classad import ClassAd
from condorpy.errors import CondorpyError, SubmitError
from condorpy.inputs import read_text
from condorpy.startd.client import Connection, DaemonUnreachable, call
from condorpy.startd.reconfig_report import EXIT_RESTART_NEEDED, ReconfigReport
from condorpy.startd.paths import client_socket
from condorpy.queue.submit import (LocalFS, SubmitDescription, count_jobs, read_description,
                                   submit_ads)
from condorpy.queue.submit_container import ContainerOptions
from condorpy.queue.submit_parts import parts
from condorpy.queue.submit_checks import check_executables, unused_lines


class UsageError(CondorpyError):
    pass


def _config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")


def _call(config: str | None, command: str, args: dict[str, Any]) -> Any:
    cfg = load_config(config)
    return call(client_socket(cfg), command, args)


def submit_parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy submit",
                    "submit jobs to the local queue (like condor_submit)")
    _config_arg(p)
    p.add_argument("file", help="submit description file ('-' for standard input)")
    return p


def submit_main(argv: list[str]) -> int:
    args = submit_parser().parse_args(argv)
    source = "<stdin>" if args.file == "-" else args.file
    text = read_text(args.file, f"the submit description {source}")
    # condor_submit's checks, before anything is queued: lines nothing reads are
    # warnings, a bad description or executable an error
    desc = read_description(text, source)
    for warning in unused_lines(desc):
        print(f"condorpy submit: {warning}", file=sys.stderr)
    cfg = load_config(args.config)
    path = client_socket(cfg)
    env = dict(os.environ)
    # one connection for the whole submission: the daemon drops what it staged of it
    # if the connection ends before the last part (this client killed or interrupted)
    with Connection(path) as conn:
        cluster = int(conn.call("new_cluster", {}))
        # made and sent a part at a time (condorpy.queue.submit_parts): neither end
        # holds a large submission whole, and the daemon queues it all or nothing
        total = count_jobs(text, source, cluster_id=cluster, submit_dir=os.getcwd(),
                           env=env)
        ads = submit_ads(text, source, cluster_id=cluster, owner=getpass.getuser(),
                         submit_dir=os.getcwd(), qdate=int(time.time()), env=env,
                         uid_domain=cfg.get("UID_DOMAIN") or "localhost",
                         filesystem_domain=cfg.get("FILESYSTEM_DOMAIN") or None,
                         container=ContainerOptions.from_config(cfg))
        got: Any = None
        try:
            for part in parts(cluster, total, _checked(desc, ads)):
                got = conn.call("submit", part)
        except SubmitError:
            # between two requests: said at once rather than left to the close
            conn.call("submit", {"cluster": cluster, "abort": True})
            raise
    print("Submitting job(s)" + "." * int(got["count"]))
    print(f"{got['count']} job(s) submitted to cluster {got['cluster']}.")
    return 0


def _checked(desc: SubmitDescription, ads: Iterable[ClassAd]) -> Iterator[ClassAd]:
    """``ads``, each executable checked as condor_submit does before it is sent."""
    seen: set[str] = set()
    for ad in ads:
        cmd = ad.evaluate("Cmd")
        if not (isinstance(cmd, str) and cmd in seen):
            check_executables(desc, [ad], LocalFS())
            if isinstance(cmd, str):
                seen.add(cmd)
        yield ad


def _job_selection(p: argparse.ArgumentParser) -> None:
    _config_arg(p)
    p.add_argument("targets", nargs="*", metavar="ID|OWNER",
                   help="cluster, cluster.proc, or owner")
    p.add_argument("-constraint", "--constraint", metavar="EXPR",
                   help="the jobs whose ad satisfies EXPR")
    p.add_argument("-all", "--all", action="store_true", help="every job you may manage")
    p.add_argument("-reason", "--reason", metavar="TEXT",
                   help="the reason recorded in the job ad and the user log")


def _selection(args: argparse.Namespace, prog: str) -> dict[str, Any]:
    ids = [t for t in args.targets if t[:1].isdigit()]
    owners = [t for t in args.targets if not t[:1].isdigit()]
    if not ids and not owners and args.constraint is None and not args.all:
        raise UsageError(f"{prog}: name jobs (CLUSTER, CLUSTER.PROC or OWNER), "
                         f"-constraint EXPR, or -all")
    out: dict[str, Any] = {"ids": ids, "owners": owners}
    if args.constraint is not None:
        out["constraint"] = args.constraint
    elif args.all:
        out["constraint"] = "true"
    if args.reason:
        out["reason"] = args.reason
    return out


_JOB_COMMANDS = {"rm": "remove jobs from the queue, ending those that run (like condor_rm)",
                 "hold": "put jobs on hold, ending those that run (like condor_hold)",
                 "release": "release held jobs (like condor_release)"}


def _job_parser(command: str) -> argparse.ArgumentParser:
    p = tool_parser(f"condorpy {command}", _JOB_COMMANDS[command])
    _job_selection(p)
    return p


def rm_parser() -> argparse.ArgumentParser:
    return _job_parser("rm")


def hold_parser() -> argparse.ArgumentParser:
    return _job_parser("hold")


def release_parser() -> argparse.ArgumentParser:
    return _job_parser("release")


def _job_command(command: str, verb: str, argv: list[str]) -> int:
    args = _job_parser(command).parse_args(argv)
    done = _call(args.config, command, _selection(args, f"condorpy {command}"))
    if not done:
        print(f"condorpy {command}: no matching jobs found", file=sys.stderr)
        return 1
    for job in done:
        print(f"Job {job} {verb}")
    return 0


def rm_main(argv: list[str]) -> int:
    return _job_command("rm", "marked for removal", argv)


def hold_main(argv: list[str]) -> int:
    return _job_command("hold", "held", argv)


def release_main(argv: list[str]) -> int:
    return _job_command("release", "released", argv)


def vacate_parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy vacate", "give slots back to their owner (like "
                                       "condor_vacate): jobs retire "
                                       "(MAXJOBRETIREMENTTIME), then are evicted")
    _config_arg(p)
    p.add_argument("-fast", "--fast", action="store_true", help="hard-kill the jobs at once")
    p.add_argument("slots", nargs="*", metavar="SLOT",
                   help="the slots to vacate, by name (default: every slot)")
    return p


def vacate_main(argv: list[str]) -> int:
    args = vacate_parser().parse_args(argv)
    _call(args.config, "vacate", {"slots": args.slots, "fast": args.fast})
    print("Sent \"Vacate" + ("-Fast" if args.fast else "") + "\" command to startd")
    return 0


def drain_parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy drain", "drain this machine (like condor_drain)")
    _config_arg(p)
    how = p.add_mutually_exclusive_group()
    how.add_argument("-graceful", dest="how", action="store_const", const="graceful",
                     help="let jobs run out their retirement time, then evict them "
                          "(the default)")
    how.add_argument("-quick", dest="how", action="store_const", const="quick",
                     help="evict jobs at once, within their vacate time")
    how.add_argument("-fast", dest="how", action="store_const", const="fast",
                     help="hard-kill jobs at once")
    done = p.add_mutually_exclusive_group()
    done.add_argument("-resume-on-completion", dest="done", action="store_const",
                      const="resume", help="take jobs again once drained")
    done.add_argument("-exit-on-completion", dest="done", action="store_const",
                      const="exit", help="shut the daemon down once drained")
    p.add_argument("-reason", metavar="TEXT", help="advertise TEXT as the reason")
    p.add_argument("-check", metavar="EXPR",
                   help="refuse the drain unless EXPR is true for every slot")
    p.add_argument("-start", metavar="EXPR",
                   help="the START expression while draining")
    p.add_argument("-cancel", action="store_true", help="cancel the drain")
    p.add_argument("-request-id", dest="request_id", metavar="ID",
                   help="with -cancel: the drain request to cancel")
    return p


def drain_main(argv: list[str]) -> int:
    args = drain_parser().parse_args(argv)
    if args.cancel:
        _call(args.config, "cancel_drain", {"request_id": args.request_id})
        print("Sent request to cancel draining")
        return 0
    got = _call(args.config, "drain", {
        "how": args.how or "graceful", "on_completion": args.done or "nothing",
        "reason": args.reason, "check": args.check, "start": args.start})
    print(f"Sent request to drain the startd. With request id {got['request_id']}")
    return 0


def _shutdown_modes(p: argparse.ArgumentParser, graceful: str, fast: str,
                    peaceful: str) -> None:
    """condor_off's and condor_restart's -graceful/-fast/-peaceful, with each
    command's words for what follows."""
    how = p.add_mutually_exclusive_group()
    for name, text in (("graceful", graceful), ("fast", fast), ("peaceful", peaceful)):
        how.add_argument(f"-{name}", dest="how", action="store_const", const=name,
                         help=text)


def off_parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy off", "shut the daemon down, ending its jobs "
                                    "(like condor_off -startd)")
    _config_arg(p)
    _shutdown_modes(p, graceful="give running jobs their retirement and vacate time, "
                                "then stop (the default)",
                    fast="hard-kill running jobs and stop at once",
                    peaceful="take no new jobs and stop once the running ones end")
    return p


def off_main(argv: list[str]) -> int:
    args = off_parser().parse_args(argv)
    _call(args.config, "off", {"how": args.how or "graceful"})
    print("Sent \"Kill-Daemon\" command for \"startd\"")
    return 0


def on_parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy on", "start the daemon if it is not running "
                                   "(like condor_on -startd)")
    _config_arg(p)
    return p


def on_main(argv: list[str]) -> int:
    args = on_parser().parse_args(argv)
    try:
        _call(args.config, "ping", {})
        print("condorpy startd is already running")
        return 0
    except DaemonUnreachable:
        pass
    argv2 = [sys.executable, "-m", "condorpy", "startd"]
    if args.config:
        argv2 += ["-config", args.config]
    import subprocess
    rc = subprocess.call(argv2)
    if rc == 0:
        print("Sent \"Spawn-Daemon\" command for \"startd\"")
    return rc


def reconfig_parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy reconfig",
                    "make the daemon re-read its configuration; exit status 3 when "
                    "knobs changed that take effect only at a restart")
    _config_arg(p)
    return p


def reconfig_main(argv: list[str]) -> int:
    args = reconfig_parser().parse_args(argv)
    report = ReconfigReport.from_reply(_call(args.config, "reconfig", {"report": True}))
    print("Sent \"Reconfig\" command to startd")
    for name in report.changed:
        print(f"  changed: {name}")
    if report.layout:
        print(f"  {report.layout}")
    said = report.restart_line()
    if said is not None:
        print(f"condorpy reconfig: warning: {said}", file=sys.stderr)
        return EXIT_RESTART_NEEDED
    return 0


# How long `condorpy restart` waits for the new daemon to answer: its start re-reads
# the configuration, measures the machine and re-adopts every running job.
RESTART_WAIT_S = 120.0


def restart_parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy restart",
                    "restart the daemon in place (like condor_restart -startd); "
                    "running jobs keep running and the new daemon re-adopts them, "
                    "unless -graceful, -fast or -peaceful says to end them first")
    _config_arg(p)
    _shutdown_modes(p, graceful="first end running jobs as `condorpy off -graceful` does "
                                "(retirement, then vacate time), then restart",
                    fast="first hard-kill running jobs, then restart",
                    peaceful="take no new jobs, and restart once the running ones end")
    p.add_argument("-nowait", "--nowait", action="store_true",
                   help="do not wait for the new daemon to answer")
    return p


def restart_main(argv: list[str]) -> int:
    args = restart_parser().parse_args(argv)
    how = args.how or "keep"
    cfg = load_config(args.config)
    path = client_socket(cfg)
    old = call(path, "restart", {"how": how})
    print("Sent \"Restart\" command for \"startd\"")
    if how != "keep" or args.nowait:
        return 0        # it restarts when its jobs have ended: maybe much later
    new = _wait_restarted(path, old, RESTART_WAIT_S)
    if new is None:
        print(f"condorpy restart: error: no new daemon answered on {path}; its log "
              f"(StartLog, or the journal under systemd) says why", file=sys.stderr)
        return 1
    print(f"condorpy startd restarted (pid {new['pid']}); {new.get('running', 0)} "
          f"running job(s) kept")
    return 0


def _wait_restarted(path: Path, old: dict[str, Any], within: float) -> dict[str, Any] | None:
    """The new daemon's ping, once one that is not ``old`` answers on ``path``; None
    after ``within`` seconds, or once the old daemon's process has been gone for
    RESTART_GONE_S with no other answering (its restart failed)."""
    end = time.monotonic() + within
    gone_since: float | None = None
    while (now := time.monotonic()) < end:
        try:
            got = call(path, "ping", {}, timeout=max(end - now, 0.1))
        except DaemonUnreachable:
            got = None
        # restarted in place, the pid may be the same: its start time is not
        if isinstance(got, dict) and got.get("since") != old.get("since"):
            return got
        if _exists(old.get("pid")):
            gone_since = None
        elif gone_since is None:
            gone_since = now
        elif now - gone_since > RESTART_GONE_S:
            return None
        time.sleep(0.1)
    return None


# A supervisor (systemd's Restart=, RestartSec=5s) may start another daemon when the
# restarted one fails: the wait goes on this long after the old process is gone.
RESTART_GONE_S = 15.0


def _exists(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return True         # not known: wait the whole time
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True         # someone else's process, running
    return True
