"""`condorpy qedit`: change attributes of queued jobs (like condor_qedit).

The command line is condor_qedit's: a restriction list (job and cluster ids, or one
owner, and the -jobids, -owner and -constraint options), then the edits, as
``ATTR VALUE`` pairs or ``ATTR=VALUE`` words. A value is read as a ClassAd
expression, so a string needs its quotes (``'"text"'``), and the word after an
attribute name is its value even when it begins with ``-``. Argparse cannot read
that grammar, so the words are read here; the parser below describes them for
``-help`` and the manual page.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from condorpy.cli.parsing import tool_parser, wants_help
from condorpy.errors import CondorpyError, QueueError

DONE = "Transaction failed.  No attributes were set."
DAEMON_FAILED = "Queue transaction failed.  No attributes were set."


def parser() -> argparse.ArgumentParser:
    p = tool_parser("condorpy qedit",
                    "change attributes of jobs in the local queue (like condor_qedit): "
                    "the job's owner may change its own jobs' attributes, a queue "
                    "superuser (root, the daemon's user, CONDORPY_ADMIN_GROUP) any "
                    "job's; immutable and secure attributes (ClusterId, ProcId, Owner, "
                    "JobStatus, ...) are refused, protected ones are for superusers only")
    p.add_argument("-config", "--config", metavar="FILE",
                   help="configuration file (default: $CONDOR_CONFIG, then "
                        "/etc/condorpy/condor_config)")
    p.add_argument("-constraint", metavar="EXPR",
                   help="edit the jobs whose ad satisfies EXPR (alone: only your own "
                        "jobs, unless you are a queue superuser)")
    p.add_argument("-owner", metavar="OWNER", help="edit the jobs OWNER owns")
    p.add_argument("-jobids", metavar="ID,...",
                   help="edit the jobs in this comma-separated list of ids")
    p.add_argument("-edits", metavar="FILE",
                   help="read edits from FILE ('-': standard input), a ClassAd in the "
                        "long form (ATTR = VALUE lines) or the new form ([ ... ]); "
                        "-edits:long and -edits:new say which")
    p.add_argument("-dry-run", action="store_true",
                   help="say whether the edit would be allowed, and change nothing")
    p.add_argument("restriction", metavar="ID|OWNER", nargs="*",
                   help="a job id (CLUSTER.PROC), a cluster id (CLUSTER) or one owner "
                        "name: the jobs to edit; given before the edits")
    p.add_argument("edits", metavar="ATTR VALUE", nargs="*",
                   help="the edits: ATTR VALUE pairs or ATTR=VALUE words; VALUE is a "
                        "ClassAd expression (quote a string: '\"text\"')")
    return p


class UsageError(CondorpyError):
    pass


@dataclass
class QeditLine:
    """What a condor_qedit command line asks for."""

    ids: list[str] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    constraint: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    edit_files: list[tuple[str, str]] = field(default_factory=list)   # (form, file)
    config: str | None = None
    dry_run: bool = False


_TAKES_VALUE = {"-config": "config", "--config": "config", "-constraint": "constraint",
                "-owner": "owner", "-jobids": "jobids"}


def read_line(argv: list[str]) -> QeditLine:
    """condor_qedit's reading of its words: options anywhere; the first bare word (when
    no -constraint, -owner or -jobids came before it) names the jobs (ids: it and the
    id words that follow; otherwise one owner); every other bare word is an edit."""
    line = QeditLine()
    restricted = False
    i = 0
    in_edit = False          # the previous bare word was an attribute awaiting its value
    while i < len(argv):
        word = argv[i]
        if in_edit:
            line.words.append(word)
            in_edit = False
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            key = _TAKES_VALUE.get(word)
            if word.split(":")[0] == "-edits":
                form = word.partition(":")[2] or "auto"
                if form not in ("auto", "long", "new"):
                    raise UsageError(f"{word}: the form is auto, long or new")
                if i + 1 >= len(argv):
                    raise UsageError(f"{word} requires a filename as an argument")
                line.edit_files.append((form, argv[i + 1]))
                i += 2
                continue
            if word in ("-dry-run", "--dry-run"):
                line.dry_run = True
                i += 1
                continue
            if key is None:
                raise UsageError(f"{word} is not a valid option")
            if i + 1 >= len(argv):
                raise UsageError(f"{word} requires an argument")
            value = argv[i + 1]
            if key == "config":
                line.config = value
            elif key == "constraint":
                line.constraint.append(value)
                restricted = True
            elif key == "owner":
                line.owners.append(value)
                restricted = True
            else:
                line.ids.extend(x for x in value.replace(",", " ").split() if x)
                restricted = True
            i += 2
            continue
        if not restricted:
            restricted = True
            if word[:1].isdigit():
                line.ids.append(word)
                while i + 1 < len(argv) and argv[i + 1][:1].isdigit():
                    i += 1
                    line.ids.append(argv[i])
            else:
                line.owners.append(word)
            i += 1
            continue
        line.words.append(word)
        in_edit = "=" not in word
        i += 1
    return line


def _constraint(parts: list[str]) -> str | None:
    if not parts:
        return None
    return " && ".join(f"({c})" for c in parts) if len(parts) > 1 else parts[0]


def read_edits(form: str, path: str) -> list[tuple[str, str]]:
    """The attributes of the ClassAd in ``path`` as edits: each one's expression text."""
    from condorpy.classad import ClassAd
    from condorpy.errors import ClassAdError
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError):
        raise UsageError(f"Can't open file of edits: {path}") from None
    new = form == "new" or (form == "auto" and text.lstrip().startswith("["))
    try:
        ad = ClassAd.parse_new(text, path) if new else ClassAd.parse_old(text, path)
    except ClassAdError as exc:
        raise UsageError(f"Unable to read file of edits: {path}: {exc}") from None
    out = [(name, str(ad.lookup(name))) for name in ad.keys()]
    if not out:
        raise UsageError(f"Unable to read file of edits: {path}")
    return out


def main(argv: list[str]) -> int:
    if wants_help(argv):
        parser().print_help()
        return 0
    from condorpy.queue.edit import EditRules, Protection, check_name, parse_value, split_edits
    try:
        line = read_line(argv)
        if not line.ids and not line.owners and not line.constraint:
            raise UsageError("there were no jobs specified: use -constraint, a job id or "
                             "an owner to say which jobs to edit")
        edits = [e for form, path in line.edit_files for e in read_edits(form, path)]
        edits += split_edits(line.words)
        if not edits:
            raise UsageError("no attributes specified")
    except (UsageError, QueueError) as exc:
        print(f"condorpy qedit: {exc}", file=sys.stderr)
        print(parser().format_usage(), end="", file=sys.stderr)
        return 1
    from condorpy.config import load_config
    cfg = load_config(line.config)
    rules = EditRules.from_knobs(cfg.get)
    failed = False
    for attr, text in edits:
        try:
            check_name(attr)
        except QueueError:
            print(f"Update aborted, illegal attribute-name specified for attribute "
                  f"\"{attr}\".", file=sys.stderr)
            failed = True
            break
        try:
            parse_value(attr, text)
        except QueueError as exc:
            print(f"Update aborted, illegal value for : {attr}\n  {exc}", file=sys.stderr)
            failed = True
            break
    if not failed:
        # each attribute once, in name order, as condor_qedit reports them
        for attr in sorted({a for a, _ in edits}):
            kind = rules.protection(attr)
            # protected ones go to the daemon, which knows whether you are a superuser
            if kind in (Protection.IMMUTABLE, Protection.SECURE):
                print(f"Update of {kind.value} attribute \"{attr}\" is not allowed.",
                      file=sys.stderr)
                failed = True
    if failed:
        print(DONE, file=sys.stderr)
        return 1
    args: dict[str, Any] = {"ids": line.ids, "owners": line.owners,
                            "attrs": [a for a, _ in edits], "values": [v for _, v in edits],
                            "dry_run": line.dry_run}
    constraint = _constraint(line.constraint)
    if constraint is not None:
        args["constraint"] = constraint
    from condorpy.startd.client import RequestRefused, call
    from condorpy.startd.paths import client_socket
    try:
        got = call(client_socket(cfg), "qedit", args)
    except RequestRefused as exc:
        print(str(exc).removeprefix("qedit: "), file=sys.stderr)
        print(DAEMON_FAILED, file=sys.stderr)
        return 1
    tag = "Can " if line.dry_run else ""
    count = int(got.get("count", 0)) if isinstance(got, dict) else 0
    for attr, _ in edits:
        print(f"{tag}Set attribute \"{attr}\" for {count or 'all'} matching jobs.")
    return 0
