"""Arguments and job selection shared by ``condorpy q``, ``history``, ``rm``, ``hold`` and
``release``, as condor_q and its siblings read them.

Positional arguments are job ids (``C`` or ``C.P``) or owner names; a job matches when
it matches any of them. ``-constraint EXPR`` (repeatable) must hold as well, and so must
the state that ``-hold``, ``-run`` or ``-idle`` asks for (``-run`` takes running,
transferring-output and suspended jobs, as condor_q does). Pure: argument lists and ads
in, a :class:`Query` and selected ads out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Sequence

from condorpy.classad import Budget, CallContext, ClassAd, Expr, parse_expr
from condorpy.errors import CondorpyError
from condorpy.inputs import shorten
from condorpy.queue.printf import FormatItem

Command = Literal["q", "history", "rm", "hold", "release"]
Output = Literal["batch", "nobatch", "hold", "run", "totals", "long", "json", "af",
                 "format", "analyze", "better-analyze"]

_ID = re.compile(r"^(\d+)(?:\.(\d+))?$")
# condor_q takes any leading part of an option at least this long (-const, -nob, ...)
_OPTIONS: dict[str, int] = {
    "constraint": 5, "af": 2, "autoformat": 5, "long": 1, "json": 2, "nobatch": 3,
    "batch": 2, "hold": 2, "held": 4, "run": 1, "idle": 3, "limit": 3, "totals": 3,
    "match": 1, "all": 3, "reason": 3, "wide": 1, "format": 1, "allusers": 2,
    "all-users": 2, "userlog": 1, "file": 2, "forwards": 4, "backwards": 1,
    "analyze": 2, "analyse": 2, "better-analyze": 2, "better-analyse": 2,
    "stream-results": 2,
}
_BY_COMMAND: dict[str, set[str]] = {
    "q": {"constraint", "af", "long", "json", "nobatch", "batch", "hold", "run", "idle",
          "limit", "totals", "wide", "format", "allusers", "userlog", "analyze",
          "better-analyze", "stream-results"},
    "history": {"constraint", "af", "long", "json", "limit", "wide", "format", "file",
                "forwards", "backwards"},
    "rm": {"constraint", "all"},
    "hold": {"constraint", "all", "reason"},
    "release": {"constraint", "all"},
}
_ALIASES = {"autoformat": "af", "held": "hold", "match": "limit", "all-users": "allusers",
            "analyse": "analyze", "better-analyse": "better-analyze"}


def option_words(command: Command) -> frozenset[str]:
    """The options ``command`` takes, as words without their dash, aliases included
    (each may be shortened as :data:`_OPTIONS` allows): what its help must list."""
    return frozenset(n for n in _OPTIONS if _ALIASES.get(n, n) in _BY_COMMAND[command])


class QueryArgumentError(CondorpyError):
    """A command-line argument of q/history/rm/hold/release is wrong; names it."""

    def __init__(self, message: str, *, argument: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}")


@dataclass(frozen=True)
class JobId:
    cluster: int
    proc: int | None = None   # None: the whole cluster

    def matches(self, cluster: int | None, proc: int | None) -> bool:
        return cluster == self.cluster and (self.proc is None or proc == self.proc)

    def __str__(self) -> str:
        return str(self.cluster) if self.proc is None else f"{self.cluster}.{self.proc}"


@dataclass(frozen=True)
class Query:
    """What a command line asks for. ``output`` is the layout (``batch`` is condor_q's
    default; condor_history and the job-changing commands ignore it unless it is
    ``long``, ``json`` or ``af``)."""

    command: Command
    ids: tuple[JobId, ...] = ()
    owners: tuple[str, ...] = ()
    constraints: tuple[Expr, ...] = ()
    status: int | None = None          # -hold 5, -idle 1; -run is RUN_STATES
    run: bool = False
    output: Output = "batch"
    attrs: tuple[str, ...] = ()        # -af arguments, each an attribute or expression
    limit: int | None = None
    all_jobs: bool = False             # rm/hold/release -all
    reason: str | None = None          # condor_hold -reason
    formats: tuple[FormatItem, ...] = ()   # -format (and -af beside it), in order
    wide: bool = False                 # -wide: never cut a row to the terminal
    width: int | None = None           # -wide:N: cut rows to N - 1 characters
    all_users: bool = False            # q -allusers
    userlog: str | None = None         # q -userlog FILE
    history_file: str | None = None    # history -file FILE
    forwards: bool = False             # history -forwards: oldest first
    stream_results: bool = False       # q -stream-results: rows as they come

    def matches(self, ad: ClassAd, ctx: CallContext | None = None) -> bool:
        """Whether ``ad`` is selected; the constraints are evaluated in ``ctx`` (with its
        budget: QueryArgumentError naming the constraint when it runs out)."""
        if self.ids or self.owners:
            cluster, proc = _int(ad, "ClusterId"), _int(ad, "ProcId")
            owner = ad.evaluate("Owner")
            if not (any(i.matches(cluster, proc) for i in self.ids)
                    or (isinstance(owner, str) and owner in self.owners)):
                return False
        if self.run and _int(ad, "JobStatus") not in RUN_STATES:
            return False
        if self.status is not None and _int(ad, "JobStatus") != self.status:
            return False
        for c in self.constraints:
            ok = c.evaluate(my=ad, ctx=ctx) is True
            if ctx is not None and ctx.budget is not None and ctx.budget.exceeded:
                raise QueryArgumentError(
                    f"evaluation exceeded its budget ({ctx.budget.describe()})",
                    argument=f"-constraint {shorten(str(c))!r}")
            if not ok:
                return False
        return True

    def select(self, ads: Sequence[ClassAd], budget: Budget | None = None
               ) -> list[ClassAd]:
        """The matching ads in the given order, at most ``limit`` of them. The
        constraints' evaluations over all the ads share ``budget`` (by default a
        user's)."""
        ctx = CallContext(budget=budget or Budget.for_user())
        out: list[ClassAd] = []
        for ad in ads:
            if self.limit is not None and len(out) >= self.limit:
                break
            if self.matches(ad, ctx):
                out.append(ad)
        return out


RUN_STATES = (2, 6, 7)   # running, transferring output, suspended


def _int(ad: ClassAd, attr: str) -> int | None:
    value = ad.evaluate(attr)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _option(arg: str, command: Command) -> str | None:
    """The option an argument names, or None for a positional one."""
    if not arg.startswith("-") or arg == "-":
        return None
    word = arg.lstrip("-").lower()
    if word.startswith("wide:"):
        word = "wide"
    for name, least in _OPTIONS.items():
        # the first of this command's options that the word abbreviates: -b is
        # history's -backwards, -ba q's -batch
        if len(word) >= least and name.startswith(word):
            canonical = _ALIASES.get(name, name)
            if canonical in _BY_COMMAND[command]:
                return canonical
    raise QueryArgumentError(f"not an option of condorpy {command}", argument=arg)


def parse_query(argv: Sequence[str], command: Command) -> Query:
    """Read a command line (without the command name) into a :class:`Query`."""
    ids: list[JobId] = []
    owners: list[str] = []
    constraints: list[Expr] = []
    attrs: list[str] = []
    output: Output | None = None
    status: int | None = None
    run = all_jobs = False
    limit: int | None = None
    reason: str | None = None
    state_arg: str | None = None
    formats: list[FormatItem] = []
    wide = all_users = forwards = stream_results = False
    width: int | None = None
    userlog: str | None = None
    history_file: str | None = None

    def set_output(value: Output, arg: str) -> None:
        nonlocal output
        if output is not None and output != value:
            raise QueryArgumentError(f"cannot be combined with -{output}", argument=arg)
        output = value

    def set_state(arg: str) -> None:
        nonlocal state_arg
        if state_arg is not None:
            raise QueryArgumentError(f"cannot be combined with {state_arg}", argument=arg)
        state_arg = arg

    i = 0
    while i < len(argv):
        arg = argv[i]
        name = _option(arg, command)
        i += 1

        def value() -> str:
            nonlocal i
            if i >= len(argv):
                raise QueryArgumentError("needs a value", argument=arg)
            i += 1
            return argv[i - 1]

        if name is None:
            m = _ID.match(arg)
            if m:
                ids.append(JobId(int(m.group(1)),
                                 int(m.group(2)) if m.group(2) is not None else None))
            elif re.match(r"^[A-Za-z_][\w.@-]*$", arg):
                owners.append(arg)
            else:
                raise QueryArgumentError("neither a job id (C or C.P) nor an owner name",
                                         argument=arg)
        elif name == "constraint":
            text = value()
            constraints.append(parse_expr(text, source=f"{arg} {text!r}"))
        elif name == "af":
            if output != "format":
                set_output("af", arg)
            # the arguments up to the next option are attributes or expressions
            before = len(attrs)
            while i < len(argv) and not (argv[i].startswith("-") and len(argv[i]) > 1
                                         and not argv[i][1].isdigit()):
                text = argv[i]
                parse_expr(text, source=f"-af argument {text!r}")
                attrs.append(text)
                formats.append(FormatItem(None, text))
                i += 1
            if len(attrs) == before:
                raise QueryArgumentError("needs at least one attribute or expression",
                                         argument=arg)
        elif name == "format":
            if i + 1 >= len(argv):
                raise QueryArgumentError("needs a format and an attribute or expression "
                                         "(-format '%d\\n' ClusterId)", argument=arg)
            fmt, text = argv[i], argv[i + 1]
            i += 2
            parse_expr(text, source=f"-format argument {text!r}")
            if output == "af":
                output = None      # -af beside -format: the items print in order
            set_output("format", arg)
            formats.append(FormatItem(fmt, text))
        elif name == "wide":
            wide = True
            if ":" in arg:
                text = arg.split(":", 1)[1]
                if not text.isdigit() or int(text) < 1:
                    raise QueryArgumentError(f"{text!r} is not a positive width",
                                             argument=arg)
                width, wide = int(text), False
        elif name == "allusers":
            all_users = True
        elif name == "stream-results":
            stream_results = True
        elif name == "userlog":
            userlog = value()
        elif name == "file":
            history_file = value()
        elif name == "forwards":
            forwards = True
        elif name == "backwards":
            forwards = False
        elif name == "limit":
            text = value()
            if not text.isdigit() or int(text) < 1:
                raise QueryArgumentError(f"{text!r} is not a positive number", argument=arg)
            limit = int(text)
        elif name == "reason":
            reason = value()
        elif name == "all":
            all_jobs = True
        elif name == "long":
            set_output("long", arg)
        elif name == "json":
            set_output("json", arg)
        elif name == "totals":
            set_output("totals", arg)
        elif name == "batch":
            set_output("batch", arg)
        elif name == "nobatch":
            set_output("nobatch", arg)
        elif name in ("analyze", "better-analyze"):
            set_output(name, arg)  # type: ignore[arg-type]
        elif name == "hold":
            set_state(arg)
            status = 5
        elif name == "idle":
            set_state(arg)
            status = 1
        elif name == "run":
            set_state(arg)
            run = True

    if command in ("rm", "hold", "release"):
        if not (ids or owners or constraints or all_jobs):
            raise QueryArgumentError("name jobs (ids, owners or -constraint) or give -all",
                                     argument=f"condorpy {command}")
        if all_jobs and (ids or owners):
            raise QueryArgumentError("cannot be combined with job ids or owners",
                                     argument="-all")

    if stream_results and output == "batch":
        # condor_q: a batch's row needs all its jobs
        raise QueryArgumentError("cannot be combined with -batch", argument="-stream-results")
    if stream_results and output is None and state_arg is None:
        output = "nobatch"
    if command == "q" and output in (None, "batch", "nobatch") and state_arg is not None:
        # condor_q: -hold and -run have layouts of their own; -idle lists job by job
        if status == 5:
            output = "hold"
        elif run:
            output = "run"
        elif output is None:
            output = "nobatch"
    return Query(command=command, ids=tuple(ids), owners=tuple(owners),
                 constraints=tuple(constraints), status=status, run=run,
                 output=output or "batch", attrs=tuple(attrs), limit=limit,
                 all_jobs=all_jobs, reason=reason,
                 formats=tuple(formats) if output == "format" else (), wide=wide,
                 width=width, all_users=all_users, userlog=userlog,
                 history_file=history_file, forwards=forwards,
                 stream_results=stream_results)
